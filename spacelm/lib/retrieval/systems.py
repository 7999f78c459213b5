"""Retrieval: BM25 (bm25s), dense (sentence-transformers + FAISS), hybrid (reciprocal-rank
fusion) and second stages over a first-stage pool: a cross-encoder reranker (query and passage
read together), bi-encoder rescoring (the cosine of a second embedding model) or an LLM reranker.

Every retriever answers ``search(queries, k) -> [[(chunk_id, score), ...], ...]``, ranked by
score descending with ties broken by chunk_id, so runs are reproducible.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
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
class LabelledSet:
    """A labelled retrieval set a team has, in BEIR layout (`corpus.jsonl`, `queries.jsonl`,
    `qrels/<split>.tsv` or `qrels.tsv`), whose `split` queries train the cross-encoder: a passage
    graded `min_grade` or more is a positive (at most `max_positives` per query), one graded lower (or
    a BM25 neighbour left ungraded) a negative. Its queries must never be the ones a study evaluates on;
    `split` "test" is refused (a folder with a single `qrels.tsv` is read whatever the split)."""

    name: str = ""
    path: str = ""
    split: str = "train"
    min_grade: int = 1
    max_queries: int | None = None  # a seeded sample of the split's queries (None: all)
    max_positives: int = 2  # per query, the highest graded first (TREC DL grades dozens per query)
    # a set a clone may lack (evaluation data kept outside the repository): when its folder is missing
    # the model trains without it, and `check`, the stage's summary and the report say so
    optional: bool = False


@dataclass
class RerankerTraining:
    """How the suite trains the cross-encoder named `trained:<name>` (stage `train-reranker`): the
    question writer writes `questions` synthetic questions over corpus chunks that no evaluation
    question comes from (`split`: hold out each evaluation question's source chunk and `neighbours`
    chunks either side, or whole documents), a question is kept when BM25 ranks its source chunk
    in its top `filter_top_n` (round-trip filter, as UDAPDR/InPars filter), and each kept question
    gets its chunk as the positive and `negatives` BM25 neighbours (top `negative_depth`) that hold
    no part of the source span; plus the `labelled` sets. Fine-tuned from `base_model` on CPU."""

    base_model: str = "embedded:minilm"
    questions: int = 200
    writer: Literal["question_writer", "generator", "judge"] = "question_writer"
    # "writer": the writer writes `questions` new questions; "synth_copies": the questions synth wrote
    # and rejected as copies of their chunk (no evaluation question comes from their chunks; a copy is
    # unfit to evaluate retrieval, not to teach which chunk answers it), at most `questions` of them,
    # with no model call
    questions_from: Literal["writer", "synth_copies"] = "writer"
    # pseudo-queries cut from the training chunks with no model call: a sentence of 8-30 words is the
    # query, its chunk without that sentence the positive, BM25 neighbours outside the chunk and the
    # chunks either side the negatives (not used to fit BM25's weight: the chunk still holds the sentence)
    pseudo_queries: int = 0
    split: Literal["chunk", "document"] = "chunk"
    neighbours: int = 1
    filter_top_n: int = 20
    negatives: int = 4
    negative_depth: int = 30
    labelled: list[LabelledSet] = field(default_factory=list)
    epochs: int = 1
    batch_size: int = 16  # pairs per step at least: whole query groups are added until it is reached
    learning_rate: float = 2e-5
    warmup_share: float = 0.1
    max_length: int = 256
    # the weight of BM25's score mixed into the trained cross-encoder's when it reranks (see
    # `mix_scores`): "fit" picks it from 0, 0.1, ..., 1 on `dev_share` of the training queries held
    # back from training (their positive's nDCG@10 among its negatives), or a number in [0, 1]
    bm25_weight: Literal["fit"] | float = "fit"
    dev_share: float = 0.15

    def problems(self) -> list[tuple[str, str]]:
        """(key under `retrieval.reranker.train`, what is wrong and the fix) for every bad value."""
        out = []
        for key, value, low in (
            ("questions", self.questions, 0),
            ("pseudo_queries", self.pseudo_queries, 0),
            ("neighbours", self.neighbours, 0),
            ("filter_top_n", self.filter_top_n, 0),
            ("negatives", self.negatives, 1),
            ("negative_depth", self.negative_depth, 1),
            ("epochs", self.epochs, 1),
            ("batch_size", self.batch_size, 1),
            ("max_length", self.max_length, 16),
        ):
            if value < low:
                out.append((key, f"must be >= {low}, got {value!r}"))
        if self.negative_depth < self.negatives:
            out.append(("negative_depth", f"must be >= negatives ({self.negatives}), got {self.negative_depth}"))
        if not 0 < self.learning_rate < 1:
            out.append(("learning_rate", f"must be between 0 and 1, got {self.learning_rate!r}"))
        if self.bm25_weight != "fit" and not 0 <= self.bm25_weight <= 1:
            out.append(("bm25_weight", f"must be 'fit' or a number in [0, 1], got {self.bm25_weight!r}"))
        if not 0 < self.dev_share < 0.5:
            out.append(("dev_share", f"must be in (0, 0.5), got {self.dev_share!r}"))
        if not 0 <= self.warmup_share < 1:
            out.append(("warmup_share", f"must be in [0, 1), got {self.warmup_share!r}"))
        names = [s.name for s in self.labelled]
        for i, s in enumerate(self.labelled):
            if not s.name or not s.path:
                out.append((f"labelled[{i}]", "needs a name and a path (a BEIR-format folder)"))
            if s.max_positives < 1:
                out.append((f"labelled[{i}].max_positives", f"must be >= 1, got {s.max_positives!r}"))
            if s.split == "test":
                out.append((f"labelled[{i}].split", "is 'test', the split studies evaluate on; train on 'train'"))
        if len(set(names)) != len(names):
            out.append(("labelled", f"names must be unique, got {names}"))
        if self.questions == 0 and not self.labelled and not self.pseudo_queries:
            out.append(
                (
                    "questions",
                    "is 0, pseudo_queries is 0 and no labelled set is named: the reranker would have nothing to learn",
                )
            )
        return out


@dataclass
class RerankerConfig:
    """The second stage. `kind`: "cross-encoder" (query and passage read together, one score per
    pair; `model` is `trained:<name>` for the one the suite trains, see :class:`RerankerTraining`),
    "biencoder" (bi-encoder rescoring: the cosine of a second embedding model, not a reranker in
    the paper's sense), "llm" (the judge's expected grade) or "none". `precision` "int8" runs a
    cross-encoder's linear layers in dynamic int8 (faster on CPU; measure its scores)."""

    kind: Literal["biencoder", "cross-encoder", "llm", "none"] = "biencoder"
    model: str = "embedded:mpnet"
    batch_size: int = 16
    query_prefix: str = ""
    passage_prefix: str = ""
    precision: Literal["fp32", "int8"] = "fp32"
    train: RerankerTraining = field(default_factory=RerankerTraining)


# what a report calls each second stage: cosine rescoring is not a reranker in the paper's sense
SECOND_STAGE_NAMES = {
    "cross-encoder": "cross-encoder reranker",
    "biencoder": "bi-encoder rescoring",
    "llm": "LLM pointwise reranker",
    "none": "none",
}


def second_stage_name(kind: str) -> str:
    """The honest name of a second stage for reports ("bi-encoder rescoring", "cross-encoder reranker")."""
    return SECOND_STAGE_NAMES.get(kind, kind)


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


class CrossEncoderReranker:
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
        from ..llm.models import resolve_model_path

        _require("sentence_transformers", "the cross-encoder reranker")
        from .segment_cosine import load_cross_encoder

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


class LLMReranker:
    """Pointwise LLM reranker: the expected 0–3 relevance grade from the judge's option
    probabilities. Slow on CPU (~0.3 pairs/s with the 1.5B model): for GPU backends."""

    kind = "llm"

    def __init__(self, llm, texts: dict[str, str]):
        self.llm = llm
        self.texts = texts

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        from ..llm.prompting import relevance_messages
        from ..llm.scores import judgement_from, score_choices
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


def quantise_int8(cross_encoder) -> None:
    """Swap a loaded CrossEncoder's linear layers for dynamically quantised int8 ones, in place
    (PyTorch's CPU path; weights int8, activations quantised per batch)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch marks its quantised tensors deprecated; the path still runs
        from torch.ao.quantization import quantize_dynamic

        quantize_dynamic(cross_encoder.model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


def make_reranker(
    cfg: RerankerConfig,
    texts: dict[str, str],
    cache_dir: Path | None = None,
    llm=None,
    device: str = "cpu",
    bm25: BM25Config | None = None,
):
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
