"""The library: functions of data, with no knowledge of the run folder. Reading documents
(`documents`), chunking (`chunking`), retrieval (`retrieval`), IR metrics (`metrics`),
statistics (`stats`), tables (`tables`), golden samples (`golden`), BEIR folders (`beir`),
prompts (`prompting`), synthetic questions (`questions`), relevance grading (`relevance`),
answers (`answers`), reading judge answers (`judging`), model backends (`llm`), the embedded
models (`models`), the call and embedding caches (`cache`), and plots (`plots`)."""
