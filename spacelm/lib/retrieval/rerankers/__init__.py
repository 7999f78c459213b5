"""Second stages, one per file: a cross-encoder reranker, bi-encoder rescoring and an LLM reranker,
each a :class:`Reranker`; :func:`make_reranker` builds the one a config names."""

from __future__ import annotations

from pathlib import Path

from ..bm25 import BM25Config
from ..dense import make_encoder
from .base import Reranker
from .biencoder import BiEncoderReranker
from .crossencoder import CrossEncoderReranker, mix_scores, quantise_int8, zscores
from .llm import LLMReranker
from .settings import RerankerConfig

__all__ = [
    "BiEncoderReranker",
    "CrossEncoderReranker",
    "LLMReranker",
    "Reranker",
    "make_reranker",
    "mix_scores",
    "quantise_int8",
    "zscores",
]


def make_reranker(
    cfg: RerankerConfig,
    texts: dict[str, str],
    cache_dir: Path | None = None,
    llm=None,
    device: str = "cpu",
    bm25: BM25Config | None = None,
) -> Reranker:
    if cfg.kind == "biencoder":
        return BiEncoderReranker(
            make_encoder(cfg.model, cfg.batch_size, cfg.query_prefix, cfg.passage_prefix, cache_dir, None, device),
            texts,
        )
    if cfg.kind == "cross-encoder":
        return CrossEncoderReranker(cfg.model, texts, cfg.batch_size, cfg.precision, device, bm25)
    if cfg.kind == "llm":
        if llm is None:
            raise ValueError("retrieval.reranker.kind 'llm' needs a judge model (models.judge)")
        return LLMReranker(llm, texts)
    raise ValueError(f"retrieval.reranker.kind {cfg.kind!r} builds no reranker")
