"""The dense retriever: a bi-encoder (sentence-transformers, or a GGUF embedding model) over a FAISS
index, with its settings; passages' embeddings are cached on disk so a long run resumes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..deps import require as _require
from ..names import Ranking
from ..progress import progress_bar, show_progress

CACHE_EVERY = 128  # passages a bi-encoder encodes between two writes to the embedding cache (a long run resumes)


@dataclass
class DenseConfig:
    model: str = "embedded:minilm"
    batch_size: int = 32
    query_prefix: str = ""
    passage_prefix: str = ""
    max_seq_length: int | None = None


def encode_projected(encode, texts: list[str], progress: str | None, batch: int, label: str) -> np.ndarray:
    """`encode(texts, progress)`, but when there are many texts the first batch is timed alone
    and the log says how long the rest will take at this machine's rate, before it starts."""
    import logging
    import time

    if len(texts) <= 8 * batch:
        return encode(texts, progress)
    t0 = time.perf_counter()
    first = encode(texts[:batch], None)
    rate = batch / max(time.perf_counter() - t0, 1e-9)
    logging.getLogger("spacelm").info(
        "cost: %s encodes %d passages at %.1f passages/s here: about %.0f s", label, len(texts), rate, len(texts) / rate
    )
    return np.concatenate([first, encode(texts[batch:], progress)])


class Encoder:
    """A sentence-transformers bi-encoder with an on-disk embedding cache keyed by model
    identity and text hash: each passage is encoded once per model, across runs."""

    def __init__(
        self,
        model: str,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
        cache_dir: Path | None = None,
        max_seq_length: int | None = None,
        device: str = "cpu",
    ):
        from ..llm.models import model_identity, resolve_model_path

        st = _require("sentence_transformers", "the dense retriever")
        self.spec = model
        self.device = device
        self.model = st.SentenceTransformer(resolve_model_path(model), device=device)
        if max_seq_length:
            self.model.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        ident = model_identity(model)
        self.key = hashlib.sha256(
            f"{ident.get('name')}|{ident.get('sha256')}|{self.model.max_seq_length}".encode()
        ).hexdigest()[:16]
        self.cache = None
        if cache_dir:
            from ..llm.cache import EmbeddingCache

            self.cache = EmbeddingCache(Path(cache_dir) / "embeddings.sqlite")
        self.encoded = 0  # passages actually run through the model (cache misses)

    def _encode(self, texts: list[str], progress: str | None) -> np.ndarray:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=bool(progress) and show_progress(),
        ).astype(np.float32)

    def encode_passages(self, texts: Sequence[str], progress: str | None = None) -> np.ndarray:
        texts = [self.passage_prefix + t for t in texts]
        if not self.cache:
            self.encoded += len(texts)
            return self._encode(texts, progress)
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = self.cache.get_many(self.key, hashes)
        miss = sorted({h: i for i, h in enumerate(hashes) if h not in found}.values())
        if miss:
            stored = 0  # misses encoded and written so far, in order: an interrupted run keeps them

            def encode_storing(block: list[str], progress: str | None) -> np.ndarray:
                nonlocal stored
                bar, parts = progress_bar(len(block), progress) if progress else None, []
                for start in range(0, len(block), CACHE_EVERY):
                    embs = self._encode(block[start : start + CACHE_EVERY], None)
                    done = miss[stored : stored + len(embs)]
                    self.cache.put_many(self.key, [(hashes[i], e) for i, e in zip(done, embs)])
                    stored += len(embs)
                    parts.append(embs)
                    if bar is not None:
                        bar.update(len(embs))
                if bar is not None:
                    bar.close()
                return np.concatenate(parts)

            embs = encode_projected(encode_storing, [texts[i] for i in miss], progress, self.batch_size, self.spec)
            for i, e in zip(miss, embs):
                found[hashes[i]] = e
            self.encoded += len(miss)
        return np.stack([found[h] for h in hashes]) if hashes else np.zeros((0, 1), np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts], None)


def make_encoder(
    model: str,
    batch_size: int = 32,
    query_prefix: str = "",
    passage_prefix: str = "",
    cache_dir: Path | None = None,
    max_seq_length: int | None = None,
    device: str = "cpu",
):
    """The encoder for a model spec: llama.cpp's embedding mode for GGUF embedding models
    (`gguf_embedding.GGUFEncoder`), sentence-transformers otherwise (on `device`)."""
    from .gguf_embedding import GGUFEncoder, is_gguf_embedding

    if is_gguf_embedding(model):
        return GGUFEncoder(model, batch_size, query_prefix, passage_prefix, cache_dir, max_seq_length)
    return Encoder(model, batch_size, query_prefix, passage_prefix, cache_dir, max_seq_length, device)


class DenseRetriever:
    """Normalised embeddings in an exact inner-product FAISS index (cosine similarity)."""

    name = "dense"

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.ids: list[str] = []
        self.index_ = None

    @classmethod
    def from_config(cls, cfg: DenseConfig, cache_dir: Path | None = None, device: str = "cpu") -> DenseRetriever:
        return cls(
            make_encoder(
                cfg.model, cfg.batch_size, cfg.query_prefix, cfg.passage_prefix, cache_dir, cfg.max_seq_length, device
            )
        )

    def index(
        self, ids: Sequence[str], texts: Sequence[str], progress: str | None = "encoding passages"
    ) -> DenseRetriever:
        faiss = _require("faiss", "the dense retriever (faiss-cpu)")
        self.ids = list(ids)
        embs = self.encoder.encode_passages(texts, progress)
        self.index_ = faiss.IndexFlatIP(embs.shape[1])
        self.index_.add(embs)
        return self

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        q = self.encoder.encode_queries(queries)
        k2 = min(len(self.ids), k + 10)  # a margin so ties at the cut are resolved by id
        scores, idx = self.index_.search(q, k2)
        out = []
        for s_row, i_row in zip(scores, idx):
            pairs = sorted(
                ((self.ids[i], float(s)) for s, i in zip(s_row, i_row) if i >= 0), key=lambda p: (-p[1], p[0])
            )
            out.append(pairs[:k])
        return out
