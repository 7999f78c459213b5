"""Retrieval: the retrievers and rerankers (`systems`), IR metrics (`metrics`), BEIR folders
(`beir`), the GGUF embedding model (`gguf_embedding`), span-level gold (`span_gold`)."""
