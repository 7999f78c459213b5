"""BM25 over the chunk texts (bm25s), with its settings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..deps import require as _require
from ..names import Ranking
from .base import top_k


# `retrieval.bm25`, `.dense`, `.hybrid` and `.reranker` sections (defaults here)
@dataclass
class BM25Config:
    method: str = "lucene"
    k1: float = 1.2
    b: float = 0.75
    stemmer: str | None = "english"
    stopwords: str | None = "en"


class BM25Retriever:
    """bm25s over the chunk texts; stemming and stopwords from the config."""

    name = "bm25"

    def __init__(self, cfg: BM25Config):
        self.cfg = cfg
        self.ids: list[str] = []
        self.model = None

    def _stemmer(self):
        if not self.cfg.stemmer:
            return None
        Stemmer = _require("Stemmer", "BM25 stemming (PyStemmer)")
        return Stemmer.Stemmer(self.cfg.stemmer)

    def _tokenize(self, texts: Sequence[str], return_ids: bool):
        import bm25s

        return bm25s.tokenize(
            list(texts),
            stopwords=self.cfg.stopwords or None,
            stemmer=self._stemmer(),
            return_ids=return_ids,
            show_progress=False,
        )

    def index(self, ids: Sequence[str], texts: Sequence[str]) -> BM25Retriever:
        import logging

        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # a line per index built, on stderr, otherwise

        self.ids = list(ids)
        self.model = bm25s.BM25(method=self.cfg.method, k1=self.cfg.k1, b=self.cfg.b)
        self.model.index(self._tokenize(texts, True), show_progress=False)
        return self

    def save(self, path: Path) -> None:
        """Save the index with its parameters and chunk ids beside it (a self-describing index)."""
        path = Path(path)
        self.model.save(str(path), show_progress=False)
        (path / "spacelm_bm25.json").write_text(json.dumps({"params": asdict(self.cfg), "ids": self.ids}))

    @classmethod
    def load(cls, path: Path) -> BM25Retriever:
        import bm25s

        meta = json.loads((Path(path) / "spacelm_bm25.json").read_text())
        r = cls(BM25Config(**meta["params"]))
        r.ids = meta["ids"]
        r.model = bm25s.BM25.load(str(path), show_progress=False)
        return r

    def _score_rows(self, queries: Sequence[str]):
        """Yield each query's BM25 scores over all chunks (one row at a time: memory stays flat)."""
        vocab = self.model.vocab_dict
        for q in self._tokenize(queries, False):
            q_ids = [vocab[t] for t in q if t in vocab]
            yield self.model.get_scores_from_ids(q_ids) if q_ids else np.zeros(len(self.ids), dtype=np.float32)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """(n_queries, n_chunks) BM25 scores."""
        return np.stack(list(self._score_rows(queries))) if queries else np.zeros((0, len(self.ids)))

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [top_k(row, self.ids, k) for row in self._score_rows(queries)]
