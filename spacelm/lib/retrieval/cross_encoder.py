"""Training the cross-encoder reranker on the team's own corpus (the UDAPDR / InPars recipe).

The suite's question writer writes questions over corpus chunks that no evaluation question comes
from; a question is kept when BM25 finds its source chunk again (round-trip filter); it is paired
with its chunk (label 1) and with BM25 neighbours holding no part of the source span (label 0).
Labelled sets a team has (BEIR layout) add their own pairs. A MiniLM (or mpnet) encoder is then
fine-tuned on CPU, each query's positives against its negatives.

Evaluation never leaks into training: :func:`held_out` takes every evaluation question's source
chunk, every chunk overlapping its evidence span and `neighbours` chunks either side (or whole
documents) out of the corpus before anything is written or mined, and :func:`check_no_leak` refuses
a training set holding any of them, or an evaluation question's text.

The model trained is a :class:`SegmentCosineCrossEncoder`: query and passage read together, scored
by the cosine of the two segments' mean states (a fresh classifier head over a sentence-embedding
checkpoint does not learn within a CPU budget; see the class).

Pure functions of their inputs but for :func:`bm25_rankings` (builds an index) and
:func:`train_cross_encoder` (torch)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bm25 import BM25Config
from .rerankers.settings import RerankerTraining
from .segment_cosine import SegmentCosineCrossEncoder


class LeakError(ValueError):
    """A training set holds an evaluation chunk or an evaluation question."""


@dataclass(frozen=True)
class TrainingPair:
    """One (query, passage) pair with its label (1.0 relevant, 0.0 not) and where it came from."""

    query_id: str
    query: str
    passage_id: str
    passage: str
    label: float
    source: str  # "synthetic" or a labelled set's name


@dataclass(frozen=True)
class HeldOut:
    """What training may not see: chunk ids and the evaluation questions' normalised texts."""

    chunk_ids: frozenset[str]
    question_keys: frozenset[str]
    split: str
    n_questions: int
    n_documents: int  # documents holding at least one held-out chunk

    def to_dict(self) -> dict:
        return {
            "split": self.split,
            "questions": self.n_questions,
            "chunks": len(self.chunk_ids),
            "documents": self.n_documents,
            "chunk_ids": sorted(self.chunk_ids),
        }


@dataclass(frozen=True)
class TrainResult:
    """What a training run did: pairs, optimiser steps, time, and the mean loss of its first and last tenth."""

    pairs: int
    steps: int
    epochs: int
    seconds: float
    pairs_per_second: float
    loss_first: float
    loss_last: float
    bm25_weight: float = 0.0  # BM25's weight in the reranking score (fitted on the dev queries, or set)
    dev_queries: int = 0  # training queries held back to fit it
    dev_curve: tuple = ()  # (weight, dev nDCG@10) per weight tried


def question_key(text: str) -> str:
    """A question's text reduced to lower-case letters, digits and single spaces (for equality)."""
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", str(text).lower()).split())


def _rng(*parts) -> random.Random:
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


# --------------------------------------------------------------------------- the split
def _by_doc(chunks: Sequence) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in sorted(chunks, key=lambda c: (c.doc_id, c.char_start, c.chunk_id)):
        out.setdefault(c.doc_id, []).append(c)
    return out


def overlapping(chunks_of_doc: Sequence, start: int, end: int) -> list[str]:
    """Ids of the chunks (of one document) sharing at least one character with [start, end)."""
    return [c.chunk_id for c in chunks_of_doc if c.char_start < end and start < c.char_end]


def held_out(chunks: Sequence, questions: Sequence[dict], split: str = "chunk", neighbours: int = 1) -> HeldOut:
    """The chunks training may not use, from the evaluation `questions` (rows with `source_chunk_id`,
    `doc_id`, `span_start`, `span_end`, `question`): `split` "chunk" holds out each question's source
    chunk, every chunk overlapping its evidence span, and `neighbours` chunks either side of those in
    document order; "document" every chunk of a document holding one. Unknown ids are ignored."""
    if split not in ("chunk", "document"):
        raise ValueError(f"retrieval.reranker.train.split {split!r}: use 'chunk' or 'document'")
    by_doc = _by_doc(chunks)
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    seeds: set[str] = set()
    for q in questions:
        src = q.get("source_chunk_id")
        if src in doc_of:
            seeds.add(src)
        doc, start, end = q.get("doc_id"), q.get("span_start"), q.get("span_end")
        if doc in by_doc and start is not None and end is not None:
            seeds.update(overlapping(by_doc[doc], int(start), int(end)))
    docs = {doc_of[c] for c in seeds}
    if split == "document":
        held = {c.chunk_id for d in docs for c in by_doc[d]}
    else:
        held = set(seeds)
        for doc in docs:
            order = [c.chunk_id for c in by_doc[doc]]
            for i, cid in enumerate(order):
                if cid in seeds:
                    held.update(order[max(0, i - neighbours) : i + neighbours + 1])
    keys = frozenset(question_key(q["question"]) for q in questions if q.get("question"))
    return HeldOut(frozenset(held), keys, split, len(questions), len(docs))


def training_pool(chunks: Sequence, held: HeldOut) -> list:
    """The chunks training may use: every chunk not held out."""
    return [c for c in chunks if c.chunk_id not in held.chunk_ids]


def check_no_leak(pairs: Sequence[TrainingPair], held: HeldOut) -> None:
    """LeakError when a training pair's passage is a held-out chunk or its query is an evaluation
    question's text; names a few of them and the fix."""
    chunks = sorted({p.passage_id for p in pairs if p.passage_id in held.chunk_ids})
    texts = sorted({p.query for p in pairs if question_key(p.query) in held.question_keys})
    if chunks or texts:
        raise LeakError(
            f"the reranker's training set holds {len(chunks)} evaluation chunk(s) {chunks[:3]} and "
            f"{len(texts)} evaluation question(s) {texts[:2]}: evaluation questions (the run's questions, the "
            "golden samples) must never enter training; drop the labelled set that holds them "
            "(retrieval.reranker.train.labelled) or report this as a bug in the split"
        )


# --------------------------------------------------------------------------- synthetic questions
def bm25_rankings(cfg: BM25Config, ids: Sequence[str], texts: Sequence[str], queries: Sequence[str], depth: int):
    """Each query's BM25 top-`depth` chunk ids over (ids, texts)."""
    from .bm25 import BM25Retriever

    if not queries:
        return []
    bm25 = BM25Retriever(cfg).index(ids, texts)
    return [[d for d, _ in r] for r in bm25.search(queries, depth)]


def round_trip_filter(records: list[dict], rankings: Sequence[Sequence[str]], top_n: int) -> None:
    """Keep a written question (`drop_reason` None) when its source chunk is in its BM25 top `top_n`
    (UDAPDR's and InPars's consistency filter); `rankings` align with those records. Sets `kept`,
    `rank_bm25` and `drop_reason` ("not_retrieved") in place; `top_n` 0 keeps every valid one."""
    valid = [r for r in records if r.get("drop_reason") is None]
    if len(valid) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings for {len(valid)} valid questions")
    for r, ranking in zip(valid, rankings):
        rank = next((i for i, d in enumerate(ranking, 1) if d == r["source_chunk_id"]), None)
        r["rank_bm25"] = rank
        r["kept"] = top_n == 0 or (rank is not None and rank <= top_n)
        r["drop_reason"] = None if r["kept"] else "not_retrieved"


def pick_negatives(ranking: Sequence[str], exclude: set[str], n: int, seed_parts: tuple) -> list[str]:
    """`n` of the ranked ids not in `exclude`, drawn at random (seeded by `seed_parts`) and kept in
    rank order; all of them when there are fewer."""
    cands = [d for d in ranking if d not in exclude]
    if len(cands) <= n:
        return cands
    picked = set(_rng(*seed_parts).sample(cands, n))
    return [d for d in cands if d in picked]


def synthetic_pairs(
    records: Sequence[dict],
    pool: Sequence,
    rankings: Sequence[Sequence[str]],
    negatives: int,
    seed: int,
) -> list[TrainingPair]:
    """Each kept question with its source chunk (1.0) and `negatives` of its BM25 neighbours (0.0)
    that share no character with its evidence span; `rankings` align with the kept records and
    rank `pool` (the training chunks)."""
    text_of = {c.chunk_id: c.text for c in pool}
    by_doc = _by_doc(pool)
    kept = [r for r in records if r.get("kept")]
    if len(kept) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings for {len(kept)} kept questions")
    pairs = []
    for r, ranking in zip(kept, rankings):
        pos = r["source_chunk_id"]
        span = overlapping(by_doc.get(r["doc_id"], []), int(r["span_start"]), int(r["span_end"]))
        pairs.append(TrainingPair(r["qid"], r["question"], pos, text_of[pos], 1.0, "synthetic"))
        for d in pick_negatives(ranking, {pos, *span}, negatives, (seed, "negatives", r["qid"])):
            pairs.append(TrainingPair(r["qid"], r["question"], d, text_of[d], 0.0, "synthetic"))
    return pairs


# --------------------------------------------------------------------------- pseudo-queries
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


def cut_sentence(text: str, rng: random.Random) -> tuple[str, str] | None:
    """(sentence, the text without it): one sentence of 8-30 words, mostly letters, drawn at random
    from `text`; None when none qualifies or fewer than 20 words would be left."""
    sentences = [
        s.strip()
        for s in _SENTENCE_END.split(text)
        if 8 <= len(s.split()) <= 30 and sum(ch.isalpha() for ch in s) > 0.7 * len(s.strip())
    ]
    if not sentences:
        return None
    s = rng.choice(sentences)
    rest = " ".join(text.replace(s, " ").split())
    return (s, rest) if len(rest.split()) >= 20 else None


def pseudo_query_pairs(
    pool: Sequence, n: int, negatives: int, depth: int, bm25: BM25Config, seed: int
) -> list[TrainingPair]:
    """Training pairs cut from the corpus with no model call (source "pseudo"): for `n` training
    chunks drawn at random, a sentence of the chunk is the query and the chunk without that sentence
    the positive; the negatives are `negatives` of the sentence's BM25 top `depth` over `pool`,
    leaving out its chunk and the chunks either side (they may carry the same content)."""
    rng = _rng(seed, "pseudo")
    order = sorted(pool, key=lambda c: c.chunk_id)
    rng.shuffle(order)
    cut = []
    for c in order:
        got = cut_sentence(c.text, rng)
        if got:
            cut.append((c, *got))
        if len(cut) >= n:
            break
    rankings = bm25_rankings(bm25, [c.chunk_id for c in pool], [c.text for c in pool], [s for _, s, _ in cut], depth)
    text_of = {c.chunk_id: c.text for c in pool}
    by_doc = _by_doc(pool)
    pairs = []
    for (c, sentence, rest), ranking in zip(cut, rankings):
        doc = by_doc[c.doc_id]
        at = next(i for i, x in enumerate(doc) if x.chunk_id == c.chunk_id)
        near = {x.chunk_id for x in doc[max(0, at - 1) : at + 2]}
        negs = pick_negatives(ranking, near, negatives, (seed, "pseudo-negatives", c.chunk_id))
        if not negs:
            continue
        qid = f"pq-{c.chunk_id}"
        pairs.append(TrainingPair(qid, sentence, c.chunk_id, rest, 1.0, "pseudo"))
        pairs += [TrainingPair(qid, sentence, d, text_of[d], 0.0, "pseudo") for d in negs]
    return pairs


# --------------------------------------------------------------------------- labelled sets
def labelled_pairs(
    data,
    name: str,
    min_grade: int,
    max_queries: int | None,
    negatives: int,
    bm25: BM25Config,
    depth: int,
    seed: int,
    max_positives: int = 2,
) -> list[TrainingPair]:
    """Pairs from a labelled BEIR set (`beir.BeirData`): per query, up to `max_positives` passages
    graded `min_grade` or more (1.0; the highest grades first, ties drawn at random), and
    `negatives` per positive drawn from its passages graded lower, topped up from its BM25
    neighbours that carry no grade (0.0). `max_queries`: a seeded sample of the queries with a
    positive (None: all)."""
    ids, texts = data.passages()
    text_of = dict(zip(ids, texts))
    qids = sorted(q for q, rel in data.qrels.items() if any(g >= min_grade and d in text_of for d, g in rel.items()))
    if max_queries is not None and max_queries < len(qids):
        qids = sorted(_rng(seed, "labelled", name).sample(qids, max_queries))
    rankings = bm25_rankings(bm25, ids, texts, [data.queries[q] for q in qids], depth)
    pairs = []
    for q, ranking in zip(qids, rankings):
        rel = {d: g for d, g in data.qrels[q].items() if d in text_of}
        pos = sorted(d for d, g in rel.items() if g >= min_grade)
        _rng(seed, name, q, "positives").shuffle(pos)
        pos = sorted(sorted(pos, key=lambda d: -rel[d])[:max_positives])
        n_neg = negatives * len(pos)
        judged_neg = sorted(d for d, g in rel.items() if g < min_grade)
        neg = pick_negatives(judged_neg, set(), n_neg, (seed, name, q, "judged"))
        neg += pick_negatives(ranking, set(rel) | set(neg), n_neg - len(neg), (seed, name, q, "bm25"))
        pairs += [TrainingPair(q, data.queries[q], d, text_of[d], 1.0, name) for d in pos]
        pairs += [TrainingPair(q, data.queries[q], d, text_of[d], 0.0, name) for d in neg]
    return pairs


def pair_counts(pairs: Sequence[TrainingPair]) -> dict:
    """{source: {"queries", "positives", "negatives"}} of a training set."""
    out: dict = {}
    for p in pairs:
        row = out.setdefault(p.source, {"queries": set(), "positives": 0, "negatives": 0})
        row["queries"].add(p.query_id)
        row["positives" if p.label > 0.5 else "negatives"] += 1
    return {k: {**v, "queries": len(v["queries"])} for k, v in sorted(out.items())}


# --------------------------------------------------------------------------- the BM25 weight
def dev_split(pairs: Sequence[TrainingPair], share: float, seed: int) -> tuple[list, list]:
    """(train, dev): a seeded `share` of the query groups (source, query) held back from training,
    to fit BM25's weight on; none when there are fewer than 10 groups."""
    keys = sorted({(p.source, p.query_id) for p in pairs})
    n = round(share * len(keys)) if len(keys) >= 10 else 0
    dev = set(_rng(seed, "dev").sample(keys, n)) if n else set()
    return [p for p in pairs if (p.source, p.query_id) not in dev], [p for p in pairs if (p.source, p.query_id) in dev]


def _ndcg10(labels: Sequence[float], scores: Sequence[float]) -> float:
    import math

    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    dcg = sum(labels[i] / math.log2(r + 2) for r, i in enumerate(order[:10]))
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(sorted(labels, reverse=True)[:10]))
    return dcg / idcg if idcg else 0.0


def fit_bm25_weight(groups: Sequence[tuple], grid: Sequence[float] = tuple(i / 10 for i in range(11))):
    """(weight, curve): the weight of `grid` whose mix (`rerankers.mix_scores`) of each group's
    cross-encoder and BM25 scores gives the best mean nDCG@10 of its labels, the smallest on a tie;
    `groups` are (labels, cross scores, bm25 scores), one per query; `curve` is ((w, nDCG@10), ...)."""
    from .rerankers import mix_scores

    curve = []
    for w in grid:
        nd = [_ndcg10(lab, mix_scores(c, b, w) if w < 1 else list(b)) for lab, c, b in groups]
        curve.append((float(w), round(sum(nd) / max(1, len(nd)), 4)))
    best = max(curve, key=lambda wc: (wc[1], -wc[0]))
    return best[0], tuple(curve)


@dataclass(frozen=True)
class DevCorpus:
    """What a dev query of one source is ranked against when BM25's weight is fitted: the source's
    passages (the training chunks, or a labelled set's corpus), and per query the passages left out
    of its pool (chunks sharing a synthetic question's evidence span, graded positives a pair does
    not carry)."""

    ids: Sequence[str]
    texts: Sequence[str]
    exclude: dict = dataclasses.field(default_factory=dict)  # {query_id: set of passage ids}


def pool_groups(ce, dev: Sequence[TrainingPair], corpora: dict, bm25: BM25Config, depth: int) -> list[tuple]:
    """(labels, cross scores, bm25 scores) of each dev query over a pool as the reranker meets one:
    its BM25 top `depth` over its source's corpus (`corpora[source]`, a :class:`DevCorpus`) and its
    positives, less its excluded passages; a passage no pair marks positive counts as not relevant."""
    from .bm25 import BM25Retriever

    by_query: dict[tuple, list[TrainingPair]] = {}
    for p in dev:
        by_query.setdefault((p.source, p.query_id), []).append(p)
    pools = []  # (query, labels, passage texts, bm25 scores)
    for source in sorted({s for s, _ in by_query}):
        corpus = corpora.get(source)
        if corpus is None or not corpus.ids:
            continue
        index = BM25Retriever(bm25).index(corpus.ids, corpus.texts)
        text_of = dict(zip(corpus.ids, corpus.texts))
        col = {d: i for i, d in enumerate(index.ids)}
        keys = sorted(k for k in by_query if k[0] == source)
        rows = index.scores([by_query[k][0].query for k in keys])
        for k, row in zip(keys, rows):
            pos = {p.passage_id for p in by_query[k] if p.label > 0.5 and p.passage_id in col}
            top = [index.ids[i] for i in np.argsort(-row, kind="stable")[:depth]]
            left_out = corpus.exclude.get(k[1], set()) - pos
            ids = [d for d in dict.fromkeys([*top, *sorted(pos)]) if d not in left_out]
            if pos and len(ids) > 1:
                pools.append(
                    (
                        by_query[k][0].query,
                        [float(d in pos) for d in ids],
                        [text_of[d] for d in ids],
                        [float(row[col[d]]) for d in ids],
                    )
                )
    cross = ce.predict([(q, t) for q, _, texts, _ in pools for t in texts], batch_size=32) if pools else []
    out, at = [], 0
    for _, labels, texts, bm in pools:
        out.append((labels, [float(x) for x in cross[at : at + len(texts)]], bm))
        at += len(texts)
    return out


# --------------------------------------------------------------------------- training
def _batches(n: int, size: int, epochs: int, seed: int) -> list[list[int]]:
    """Index batches over `epochs` passes, each pass in its own seeded order."""
    out = []
    for e in range(epochs):
        order = list(range(n))
        _rng(seed, "epoch", e).shuffle(order)
        out += [order[i : i + size] for i in range(0, n, size)]
    return out


def _lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up to 1 over `warmup` steps, then linear decay to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def query_groups(pairs: Sequence[TrainingPair], size: int, epochs: int, seed: int) -> list[list[list[int]]]:
    """Batches of whole query groups (a query's positives with its negatives), each pass in its own
    seeded order; a batch takes groups until it holds at least `size` pairs."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault((p.source, p.query_id), []).append(i)
    usable = [g for g in groups.values() if any(pairs[i].label > 0.5 for i in g) and len(g) > 1]
    out = []
    for e in range(epochs):
        order = list(usable)
        _rng(seed, "epoch", e).shuffle(order)
        batch: list[list[int]] = []
        for g in order:
            batch.append(g)
            if sum(map(len, batch)) >= size:
                out.append(batch)
                batch = []
        if batch:
            out.append(batch)
    return out


def listwise_loss(logits, labels, groups: Sequence[int]):
    """Mean over query groups of the softmax cross-entropy of each group's positives among its pairs
    (`groups`: the groups' sizes, in the order of `logits`)."""
    import torch

    losses = []
    for lg, lab in zip(torch.split(logits, list(groups)), torch.split(labels, list(groups))):
        losses.append(-(torch.log_softmax(lg, 0) * lab).sum() / lab.sum())
    return torch.stack(losses).mean()


def train_cross_encoder(
    pairs: Sequence[TrainingPair],
    base_model_path: str,
    settings: RerankerTraining,
    seed: int,
    out_dir: Path,
    progress: str | None = None,
    device: str = "cpu",
    bm25: BM25Config | None = None,
    dev_corpora: dict | None = None,
) -> TrainResult:
    """Fine-tune a :class:`SegmentCosineCrossEncoder` started from the encoder at `base_model_path`
    on `pairs`: each query's positives against its negatives (listwise softmax cross-entropy at
    the model's scale; AdamW, linear warm-up and decay, gradients clipped at 1), then save it to
    `out_dir`. Seeded: the batch order and dropout follow `seed`. A query with no positive or no
    negative teaches nothing and is skipped.

    BM25's weight in the reranking score (`settings.bm25_weight`) is set, or fitted ("fit") on
    `settings.dev_share` of the training queries, held back from training, each ranked over its
    BM25 top `settings.negative_depth` in its source's corpus (`dev_corpora`, see :func:`pool_groups`;
    :func:`fit_bm25_weight`); the saved model carries it."""
    import torch

    from ..progress import progress_bar

    dev: list[TrainingPair] = []
    if settings.bm25_weight == "fit":
        pairs, dev = dev_split(pairs, settings.dev_share, seed)
        if not dev:
            logging.getLogger("spacelm").warning(
                "BM25's weight: fewer than 10 training queries, none held back to fit it; the cross-encoder "
                "ranks alone (weight 0); set retrieval.reranker.train.bm25_weight to a number to mix"
            )
    batches = query_groups(pairs, settings.batch_size, settings.epochs, seed)
    if not batches:
        raise ValueError("no training query has both a positive and a negative: nothing to train the cross-encoder on")
    torch.manual_seed(seed)
    ce = SegmentCosineCrossEncoder.from_encoder(base_model_path, settings.max_length).to(device)
    model = ce.model
    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=settings.learning_rate)
    warmup = int(settings.warmup_share * len(batches))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, warmup, len(batches)))
    n_pairs = sum(len(g) for b in batches for g in b)
    losses = []
    bar = progress_bar(len(batches), progress) if progress else None
    model.train()
    t0 = time.perf_counter()
    for step, batch in enumerate(batches):
        if step == 3:  # the first steps timed: what the whole training will take on this machine
            rate = 3 / max(time.perf_counter() - t0, 1e-9)
            logging.getLogger("spacelm").info(
                "cost: training the cross-encoder on %d pairs takes %d steps at %.2f steps/s here: about %.0f min",
                n_pairs,
                len(batches),
                rate,
                len(batches) / rate / 60,
            )
        flat = [pairs[i] for g in batch for i in g]
        logits = ce.logits([p.query for p in flat], [p.passage for p in flat])
        labels = torch.tensor([p.label for p in flat], dtype=torch.float32, device=logits.device)
        loss = listwise_loss(logits, labels, [len(g) for g in batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
        if bar is not None:
            bar.update(1)
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    model.eval()
    weight, curve, groups = (float(settings.bm25_weight) if settings.bm25_weight != "fit" else 0.0), (), []
    if settings.bm25_weight == "fit" and dev:
        groups = pool_groups(ce, dev, dev_corpora or {}, bm25 or BM25Config(), settings.negative_depth)
        if groups:
            weight, curve = fit_bm25_weight(groups)
    ce.bm25_weight = weight
    ce.to("cpu").save(Path(out_dir))
    tenth = max(1, len(losses) // 10)
    return TrainResult(
        pairs=n_pairs // settings.epochs,
        steps=len(batches),
        epochs=settings.epochs,
        seconds=round(seconds, 2),
        pairs_per_second=round(n_pairs / max(seconds, 1e-9), 2),
        loss_first=round(sum(losses[:tenth]) / tenth, 4),
        loss_last=round(sum(losses[-tenth:]) / tenth, 4),
        bm25_weight=weight,
        dev_queries=len(groups),
        dev_curve=curve,
    )
