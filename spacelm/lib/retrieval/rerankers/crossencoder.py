"""The cross-encoder reranker (query and passage read together), optionally mixed with BM25's score
at the weight its training fitted."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...deps import require as _require
from ..bm25 import BM25Config, BM25Retriever
from .base import Reranker


def zscores(xs: Sequence[float]) -> np.ndarray:
    """Scores centred on their mean and divided by their standard deviation (all 0 when constant)."""
    a = np.asarray(xs, dtype=float)
    sd = a.std()
    return (a - a.mean()) / sd if sd > 0 else np.zeros_like(a)


def mix_scores(cross: Sequence[float], bm25: Sequence[float], weight: float) -> list[float]:
    """One pool's cross-encoder scores interpolated with its BM25 scores: each z-normalised over the
    pool, then `(1 - weight) * cross + weight * bm25` (weight 0: the cross-encoder alone)."""
    if not weight:
        return [float(x) for x in cross]
    return [float(x) for x in (1 - weight) * zscores(cross) + weight * zscores(bm25)]


class CrossEncoderReranker(Reranker):
    """A true cross-encoder reading query and passage together: one relevance score per pair. `model`:
    `trained:<name>` (the segment-cosine model the suite trains, see `cross_encoder.py`), or any
    sentence_transformers.CrossEncoder: `embedded:<name>`, a folder or a hub name. `precision` "int8" quantises
    its linear layers dynamically (CPU). A pair is scored once per process (bm25+rerank and
    dense+rerank share most of their pools); `pairs` and `seconds` count the pairs it scored.

    A trained model carries the weight of BM25's score fitted on its training data (`bm25_weight`,
    0: none): each pool is then ranked by :func:`mix_scores` of the cross-encoder's and BM25's scores
    (BM25 over all `texts` with `bm25`'s settings, whatever the first stage was)."""

    kind = "cross-encoder"

    def __init__(
        self,
        model: str,
        texts: dict[str, str],
        batch_size: int = 16,
        precision: str = "fp32",
        device: str = "cpu",
        bm25: BM25Config | None = None,
    ):
        from ...llm.models import resolve_model_path

        _require("sentence_transformers", "the cross-encoder reranker")
        from ..segment_cosine import load_cross_encoder

        if precision == "int8" and device != "cpu":
            raise ValueError("retrieval.reranker.precision int8 runs on the CPU only: use fp32 with device cuda")
        self.device = device
        self.model = load_cross_encoder(resolve_model_path(model), device)
        if precision == "int8":
            quantise_int8(self.model)
        elif precision != "fp32":
            raise ValueError(f"retrieval.reranker.precision {precision!r}: use fp32 or int8")
        self.spec = model
        self.texts = texts
        self.batch_size = batch_size
        self.precision = precision
        self.pairs = 0
        self.seconds = 0.0
        self.scored: dict[tuple[str, str], float] = {}
        self.bm25_weight = float(getattr(self.model, "bm25_weight", 0.0) or 0.0)
        self.bm25_cfg = bm25 or BM25Config()
        self._bm25: BM25Retriever | None = None

    def bm25_scores(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        """Each pool's BM25 scores for its query, over an index of all the reranker's texts."""
        if self._bm25 is None:
            self._bm25 = BM25Retriever(self.bm25_cfg).index(list(self.texts), list(self.texts.values()))
            self._col = {d: i for i, d in enumerate(self._bm25.ids)}
        rows = self._bm25.scores(list(queries))
        return [[float(row[self._col[d]]) for d in pool] for row, pool in zip(rows, pools)]

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        cross = self.cross_scores(queries, pools)
        if not self.bm25_weight:
            return cross
        bm = self.bm25_scores(queries, pools)
        return [mix_scores(c, b, self.bm25_weight) for c, b in zip(cross, bm)]

    def cross_scores(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        """The cross-encoder's own score of each pool passage (no BM25 in it)."""
        import time

        todo = list(dict.fromkeys((q, d) for q, pool in zip(queries, pools) for d in pool if (q, d) not in self.scored))
        if todo:
            t0 = time.perf_counter()
            flat = self.model.predict(
                [(q, self.texts[d]) for q, d in todo], batch_size=self.batch_size, show_progress_bar=False
            )
            self.seconds += time.perf_counter() - t0
            self.pairs += len(todo)
            self.scored.update(zip(todo, (float(x) for x in flat)))
        return [[self.scored[(q, d)] for d in pool] for q, pool in zip(queries, pools)]


def quantise_int8(cross_encoder) -> None:
    """Swap a loaded CrossEncoder's linear layers for dynamically quantised int8 ones, in place
    (PyTorch's CPU path; weights int8, activations quantised per batch)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch marks its quantised tensors deprecated; the path still runs
        from torch.ao.quantization import quantize_dynamic

        quantize_dynamic(cross_encoder.model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
