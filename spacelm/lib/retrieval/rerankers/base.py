"""The second stage's one contract: a reranker rescores each query's pool of passages."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence


class Reranker(ABC):
    """A second stage: `rescore(queries, pools)` gives one score per passage of each query's pool
    (a higher score ranks first). `kind` is its `retrieval.reranker.kind`; `texts` maps chunk ids
    to the passages it reads."""

    kind: str = ""
    texts: dict[str, str]

    @abstractmethod
    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        """Per query, a score for each chunk id of its pool, in the pool's order."""
