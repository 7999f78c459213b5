"""What every retriever is: `search(queries, k)` returning, per query, (chunk id, score) pairs ranked
by score descending with ties broken by chunk id, so runs are reproducible."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..names import Ranking


class Retriever(Protocol):
    name: str

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]: ...


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> Ranking:
    """The k best (id, score) pairs: score descending, then id ascending (deterministic ties)."""
    n = len(ids)
    k = min(k, n)
    if k <= 0:
        return []
    if k < n:
        # everything scoring at least the k-th best score competes (ties at the cut included)
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = sorted(cand.tolist(), key=lambda i: (-float(scores[i]), ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in order]
