"""Retrieval systems as a run assembles them: the settings of every retriever and of the second
stage, hybrid fusion (reciprocal rank), a first stage followed by a reranker, and
:func:`build_systems`, which indexes the chunks once per base retriever. The retrievers are in
`bm25.py` and `dense.py`, the second stages in `rerankers/`.

Every retriever answers ``search(queries, k) -> [[(chunk_id, score), ...], ...]``, ranked by
score descending with ties broken by chunk_id, so runs are reproducible.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..names import Ranking, reads_dense
from .base import Retriever
from .bm25 import BM25Config, BM25Retriever
from .dense import DenseConfig, DenseRetriever
from .rerankers import make_reranker
from .rerankers.settings import RerankerConfig


# --------------------------------------------------------------------------- settings
# each retriever's settings, read whole by the code below; the run's config holds them as its
# `retrieval.bm25`, `.dense`, `.hybrid` and `.reranker` sections (defaults here: BM25's and the
# dense retriever's live beside them, in bm25.py and dense.py)
@dataclass
class HybridConfig:
    rrf_k: int = 60
    depth: int = 100


@dataclass(frozen=True)
class RetrievalSetup:
    """What :func:`build_systems` builds: the named systems, each base retriever's settings, the
    reranker's, and its pool (a count or a share of the corpus, capped at `pool_max`, never
    fewer than the largest of `k_values`: see :func:`pool_size`)."""

    systems: tuple[str, ...]
    bm25: BM25Config
    dense: DenseConfig
    hybrid: HybridConfig
    reranker: RerankerConfig
    pool: int | float
    pool_max: int | None
    k_values: tuple[int, ...]
    device: str = "cpu"  # where torch models run: resolve_device("auto" | "cpu" | "cuda")


DEVICES = ("auto", "cpu", "cuda")


@functools.cache
def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False where torch is not installed); asked once per process."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(spec: str, has_cuda=None) -> str:
    """The torch device a model runs on: "auto" is "cuda" when torch sees a GPU, else "cpu";
    "cpu" and "cuda" are taken as given (the config check refuses "cuda" without a GPU)."""
    if spec not in DEVICES:
        raise ValueError(f"device {spec!r}: use one of {', '.join(DEVICES)}")
    if spec != "auto":
        return spec
    return "cuda" if (cuda_available() if has_cuda is None else has_cuda) else "cpu"


def rrf_fuse(rankings: Sequence[Ranking], k: int, rrf_k: int = 60) -> Ranking:
    """Reciprocal-rank fusion: score(d) = Σ_r 1 / (rrf_k + rank_r(d)), ranks from 1."""
    acc: dict[str, float] = {}
    for ranking in rankings:
        for rank, (doc, _) in enumerate(ranking, 1):
            acc[doc] = acc.get(doc, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(acc.items(), key=lambda p: (-p[1], p[0]))[:k]


class HybridRetriever:
    name = "hybrid"

    def __init__(self, retrievers: Sequence[Retriever], depth: int = 100, rrf_k: int = 60):
        self.retrievers = list(retrievers)
        self.depth = depth
        self.rrf_k = rrf_k

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        per = [r.search(queries, max(self.depth, k)) for r in self.retrievers]
        return [rrf_fuse([p[i] for p in per], k, self.rrf_k) for i in range(len(queries))]


class RerankedRetriever:
    """First stage → top-`pool` candidates → reranker → top-k."""

    def __init__(self, first: Retriever, reranker, pool: int = 100):
        self.first = first
        self.reranker = reranker
        self.pool = pool
        self.name = f"{first.name}+rerank"

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        pools = [[d for d, _ in r] for r in self.first.search(queries, max(self.pool, k))]
        scores = self.reranker.rescore(queries, pools)
        return [sorted(zip(pool, s), key=lambda p: (-p[1], p[0]))[:k] for pool, s in zip(pools, scores)]


def pool_size(pool: float, n_passages: int, k_values: Sequence[int] = (), pool_max: int | None = None) -> int:
    """The reranker's pool in passages: `pool` itself when it is a whole number, else that share
    of the corpus rounded up, at most `pool_max` (so the reranker's cost per question stops
    growing with the corpus); never fewer than the largest k, never more than the corpus."""
    n = int(pool) if isinstance(pool, int) else math.ceil(pool * n_passages)
    if pool_max:
        n = min(n, int(pool_max))
    return max(1, min(max([n, *k_values]), max(n_passages, 1)))


def identical_lists(
    rankings: dict, qids: Sequence[str], k: int, systems: tuple[str, str] = ("bm25+rerank", "dense+rerank")
) -> float | None:
    """Share of questions for which two systems return the same top-k in the same order: 1.0
    for the two reranked systems means the pool was so large the first stage did not matter."""
    a, b = (rankings.get(s) for s in systems)
    if a is None or b is None or not qids:
        return None
    same = [[d for d, _ in a[q][:k]] == [d for d, _ in b[q][:k]] for q in qids]
    return round(sum(same) / len(same), 4)


def build_systems(
    setup: RetrievalSetup,
    ids: Sequence[str],
    texts: Sequence[str],
    names: Sequence[str] | None = None,
    cache_dir: Path | None = None,
    llm=None,
) -> dict[str, Retriever]:
    """Index the chunks once per base retriever and assemble the named systems
    (bm25, dense, bm25+rerank, dense+rerank, hybrid, hybrid+rerank)."""
    names = list(names or setup.systems)
    base: dict[str, Retriever] = {}
    if any(n.startswith(("bm25", "hybrid")) for n in names):
        base["bm25"] = BM25Retriever(setup.bm25).index(ids, texts)
    if reads_dense(names):
        base["dense"] = DenseRetriever.from_config(setup.dense, cache_dir, setup.device).index(ids, texts)
    if any(n.startswith("hybrid") for n in names):
        base["hybrid"] = HybridRetriever([base["bm25"], base["dense"]], setup.hybrid.depth, setup.hybrid.rrf_k)
    reranker = None
    systems: dict[str, Retriever] = {}
    for n in names:
        if n.endswith("+rerank"):
            if reranker is None:
                reranker = make_reranker(
                    setup.reranker, dict(zip(ids, texts)), cache_dir, llm, setup.device, setup.bm25
                )
            systems[n] = RerankedRetriever(
                base[n.split("+")[0]], reranker, pool_size(setup.pool, len(ids), setup.k_values, setup.pool_max)
            )
        else:
            systems[n] = base[n]
    return systems
