"""Bi-encoder rescoring: the cosine of a second embedding model over the first stage's pool."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dense import Encoder
from .base import Reranker


class BiEncoderReranker(Reranker):
    """Bi-encoder rescoring: a pool rescored by the cosine of a second, stronger bi-encoder's
    normalised embeddings. Query and passage are encoded apart, so it is not a reranker in the
    paper's sense (reports call it "bi-encoder rescoring")."""

    kind = "biencoder"

    def __init__(self, encoder: Encoder, texts: dict[str, str]):
        self.encoder = encoder
        self.texts = texts

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        needed = sorted({d for pool in pools for d in pool})
        embs = dict(
            zip(
                needed,
                self.encoder.encode_passages([self.texts[d] for d in needed], "reranker: encoding pool passages"),
            )
        )
        q = self.encoder.encode_queries(queries)
        return [[float(np.dot(q[i], embs[d])) for d in pool] for i, pool in enumerate(pools)]
