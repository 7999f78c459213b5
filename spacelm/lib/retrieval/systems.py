"""Retrieval: BM25 (bm25s), dense (sentence-transformers + FAISS), hybrid (reciprocal-rank
fusion) and second-stage rerankers over a first-stage pool.

Every retriever answers ``search(queries, k) -> [[(chunk_id, score), ...], ...]``, ranked by
score descending with ties broken by chunk_id, so runs are reproducible.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from ..deps import require as _require
from ..names import Ranking, reads_dense
from ..progress import progress_bar, show_progress

CACHE_EVERY = 128  # passages a bi-encoder encodes between two writes to the embedding cache (a long run resumes)


# --------------------------------------------------------------------------- settings
# each retriever's settings, read whole by the code below; the run's config holds them as its
# `retrieval.bm25`, `.dense`, `.hybrid` and `.reranker` sections (defaults here)
@dataclass
class BM25Config:
    method: str = "lucene"
    k1: float = 1.2
    b: float = 0.75
    stemmer: str | None = "english"
    stopwords: str | None = "en"


@dataclass
class DenseConfig:
    model: str = "embedded:minilm"
    batch_size: int = 32
    query_prefix: str = ""
    passage_prefix: str = ""
    max_seq_length: int | None = None


@dataclass
class HybridConfig:
    rrf_k: int = 60
    depth: int = 100


@dataclass
class RerankerConfig:
    kind: Literal["biencoder", "cross-encoder", "llm", "none"] = "biencoder"
    model: str = "embedded:mpnet"
    batch_size: int = 16
    query_prefix: str = ""
    passage_prefix: str = ""


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


# --------------------------------------------------------------------------- BM25
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
        import bm25s

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


# --------------------------------------------------------------------------- dense
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
    ):
        from ..llm.models import model_identity, resolve_model_path

        st = _require("sentence_transformers", "the dense retriever")
        self.spec = model
        self.model = st.SentenceTransformer(resolve_model_path(model), device="cpu")
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
):
    """The encoder for a model spec: llama.cpp's embedding mode for GGUF embedding models
    (`gguf_embedding.GGUFEncoder`), sentence-transformers otherwise."""
    from .gguf_embedding import GGUFEncoder, is_gguf_embedding

    if is_gguf_embedding(model):
        return GGUFEncoder(model, batch_size, query_prefix, passage_prefix, cache_dir, max_seq_length)
    return Encoder(model, batch_size, query_prefix, passage_prefix, cache_dir, max_seq_length)


class DenseRetriever:
    """Normalised embeddings in an exact inner-product FAISS index (cosine similarity)."""

    name = "dense"

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.ids: list[str] = []
        self.index_ = None

    @classmethod
    def from_config(cls, cfg: DenseConfig, cache_dir: Path | None = None) -> DenseRetriever:
        return cls(
            make_encoder(cfg.model, cfg.batch_size, cfg.query_prefix, cfg.passage_prefix, cache_dir, cfg.max_seq_length)
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


# --------------------------------------------------------------------------- hybrid
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


# --------------------------------------------------------------------------- rerankers
class BiEncoderReranker:
    """Rescore a pool with a second, stronger bi-encoder (cosine of normalised embeddings)."""

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


class CrossEncoderReranker:
    """A true cross-encoder (sentence_transformers.CrossEncoder) reading query and passage together."""

    kind = "cross-encoder"

    def __init__(self, model: str, texts: dict[str, str], batch_size: int = 16):
        from ..llm.models import resolve_model_path

        st = _require("sentence_transformers", "the cross-encoder reranker")
        self.model = st.CrossEncoder(resolve_model_path(model), device="cpu")
        self.texts = texts
        self.batch_size = batch_size

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        pairs = [(q, self.texts[d]) for q, pool in zip(queries, pools) for d in pool]
        flat = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False) if pairs else []
        out, pos = [], 0
        for pool in pools:
            out.append([float(x) for x in flat[pos : pos + len(pool)]])
            pos += len(pool)
        return out


class LLMReranker:
    """Pointwise LLM reranker: the expected 0–3 relevance grade from the judge's option
    probabilities. Slow on CPU (~0.3 pairs/s with the 1.5B model): for GPU backends."""

    kind = "llm"

    def __init__(self, llm, texts: dict[str, str]):
        self.llm = llm
        self.texts = texts

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        from ..judge.scores import judgement_from, score_choices
        from ..llm.prompting import relevance_messages
        from ..llm.types import Request

        reqs = [
            Request(messages=relevance_messages(q, self.texts[d]), choices=score_choices(0, 3), max_tokens=2)
            for q, pool in zip(queries, pools)
            for d in pool
        ]
        comps = self.llm.chat_many(reqs, progress="LLM reranking")
        out, pos = [], 0
        for pool in pools:
            scores = []
            for c in comps[pos : pos + len(pool)]:
                j = judgement_from(c, 0, 3)
                scores.append(j.expected if j.expected is not None else float(j.value if j.value is not None else -1))
            out.append(scores)
            pos += len(pool)
        return out


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


def make_reranker(cfg: RerankerConfig, texts: dict[str, str], cache_dir: Path | None = None, llm=None):
    if cfg.kind == "biencoder":
        return BiEncoderReranker(
            make_encoder(cfg.model, cfg.batch_size, cfg.query_prefix, cfg.passage_prefix, cache_dir), texts
        )
    if cfg.kind == "cross-encoder":
        return CrossEncoderReranker(cfg.model, texts, cfg.batch_size)
    if cfg.kind == "llm":
        if llm is None:
            raise ValueError("retrieval.reranker.kind 'llm' needs a judge model (models.judge)")
        return LLMReranker(llm, texts)
    raise ValueError(f"retrieval.reranker.kind {cfg.kind!r} builds no reranker")


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
        base["dense"] = DenseRetriever.from_config(setup.dense, cache_dir).index(ids, texts)
    if any(n.startswith("hybrid") for n in names):
        base["hybrid"] = HybridRetriever([base["bm25"], base["dense"]], setup.hybrid.depth, setup.hybrid.rrf_k)
    reranker = None
    systems: dict[str, Retriever] = {}
    for n in names:
        if n.endswith("+rerank"):
            if reranker is None:
                reranker = make_reranker(setup.reranker, dict(zip(ids, texts)), cache_dir, llm)
            systems[n] = RerankedRetriever(
                base[n.split("+")[0]], reranker, pool_size(setup.pool, len(ids), setup.k_values, setup.pool_max)
            )
        else:
            systems[n] = base[n]
    return systems
