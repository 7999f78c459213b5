"""Stage train-reranker (between synth and retrieve, when `retrieval.reranker.model` is
`trained:<name>`): the suite trains its cross-encoder reranker on the run's own corpus.

The question writer writes `retrieval.reranker.train.questions` questions over chunks no evaluation
question comes from (the run's questions and the golden samples are held out by source chunk and
evidence span, or by document); BM25's round-trip filter keeps those whose source chunk it finds;
each is paired with its chunk and with BM25 neighbours holding none of its span; the labelled sets
the config names add theirs; a check refuses any pair holding an evaluation chunk or question. The
model is fine-tuned from `train.base_model` and saved under the models folder
(``$SPACELM_MODELS_DIR/trained/<name>/``) with `spacelm_trained.json` (weights sha256, base model,
training data, fingerprint), `training_pairs.jsonl` (what it saw) and `held_out.json`. The stage's
stamp sits in that folder: the model is reused until an input (corpus, evaluation questions, writer,
seed, base model, labelled sets, settings, code) changes.

The models folder is shared by every clone and config that names the model, so the checkpoint a
retraining replaces is kept aside under the fingerprint of the inputs it was trained on
(``trained/.kept/<name>/<fingerprint>/``, the newest :data:`KEPT`): a run whose inputs are those
again restores it instead of training, whichever clone trained last."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import NamedTuple

from ..config import Config, ConfigError
from ..lib.datasets import fetch_hint
from ..lib.io import read_jsonl, sha256_file, write_json, write_jsonl
from ..lib.llm.models import TRAINED_META, TRAINED_WEIGHTS, is_trained, trained_folder, trained_name
from ..lib.retrieval.cross_encoder import (
    DevCorpus,
    HeldOut,
    TrainingPair,
    TrainResult,
    bm25_rankings,
    check_no_leak,
    held_out,
    labelled_pairs,
    overlapping,
    pair_counts,
    pseudo_query_pairs,
    question_key,
    round_trip_filter,
    synthetic_pairs,
    train_cross_encoder,
    training_pool,
)
from ..runner.base import CODE_RULE, ModelTurns, Stage, display_path, execute, fingerprint_of, read_stamp, stage_inputs
from ..runner.data import (
    chunks_path,
    documents_path,
    golden_path,
    golden_questions,
    load_chunks,
    load_questions,
    questions_path,
)

PAIRS_FILE = "training_pairs.jsonl"
HELD_OUT_FILE = "held_out.json"
KEPT = 3  # checkpoints kept aside per trained model, besides the one in use


def trains_reranker(cfg: Config) -> bool:
    """Whether a run of `cfg` trains a cross-encoder: a reranked system whose cross-encoder is `trained:<name>`."""
    rr = cfg.retrieval.reranker
    return (
        rr.kind == "cross-encoder"
        and is_trained(rr.model)
        and any(s.endswith("+rerank") for s in cfg.retrieval.systems)
    )


def model_folder(cfg: Config) -> Path:
    """The trained model's folder (the stage's outputs and stamp); ConfigError when `cfg` trains none."""
    if not trains_reranker(cfg):
        raise ConfigError(
            f"{cfg.source or '<config>'}: stage train-reranker trains the cross-encoder of a reranked system: set "
            "retrieval.reranker.kind: cross-encoder and retrieval.reranker.model: trained:<name> (now "
            f"{cfg.retrieval.reranker.kind}, {cfg.retrieval.reranker.model!r}), with an X+rerank system in "
            "retrieval.systems"
        )
    return trained_folder(trained_name(cfg.retrieval.reranker.model))


def outputs(cfg: Config) -> list[Path]:
    return [model_folder(cfg)]


def labelled_files(cfg: Config) -> list[Path]:
    """The files of every labelled set the config names (their change retrains the model)."""
    from ..lib.retrieval.beir import qrels_file

    out = []
    for s in cfg.retrieval.reranker.train.labelled:
        folder = cfg.path(s.path)
        out += [folder / "corpus.jsonl", folder / "queries.jsonl", qrels_file(folder, s.split)]
    return out


class TrainingSet(NamedTuple):
    """What the model is trained on, and what was held out of it."""

    pairs: list[TrainingPair]
    held: HeldOut
    records: list[dict]  # every synthetic question written, kept or dropped (with the reason)
    sources: list[dict]  # one per source: its identity (corpus, writer, labelled folder and split) and counts
    corpora: dict  # {source: DevCorpus}: what its held-back queries are ranked against to fit BM25's weight


def evaluation_questions(cfg: Config, chunks: list) -> list[dict]:
    """Every question a study of this run evaluates on: the run's questions (answerable or not) and
    the golden samples (once each: without synthetic questions the run evaluates on the golden ones)."""
    rows = load_questions(cfg, chunks, answerable=None) + golden_questions(cfg, chunks)
    return list({r["qid"]: r for r in rows}.values())


def synth_copies(cfg: Config, pool: list, n: int) -> list[dict]:
    """At most `n` of the questions synth wrote and rejected as copies of their chunk, on training
    chunks only (`pool`), in question-id order, ready for the round-trip filter (drop_reason None;
    `synth_drop_reason` keeps synth's)."""
    from ..lib.io import read_jsonl

    qp = questions_path(cfg)
    if not qp.is_file():
        raise ValueError(
            f"{qp}: retrieval.reranker.train.questions_from is synth_copies, but synth has written no questions "
            "here: run `spacelm synth` first, or use questions_from: writer"
        )
    ids = {c.chunk_id for c in pool}
    rows = sorted(
        (
            r
            for r in read_jsonl(qp)
            if r.get("drop_reason") == "copy" and r.get("question") and r.get("source_chunk_id") in ids
        ),
        key=lambda r: r["qid"],
    )
    return [dict(r, drop_reason=None, kept=False, synth_drop_reason="copy") for r in rows[:n]]


def write_questions(cfg: Config, pool: list, golden: list, held: HeldOut, turns: ModelTurns) -> list[dict]:
    """`train.questions` questions written by the configured writer over the training chunks (the
    synth prompts and few-shot examples), or taken from synth's copies (`questions_from`); a
    question equal to an evaluation question is dropped."""
    from ..lib.synth.questions import generate_questions, plan_generation

    t = cfg.retrieval.reranker.train
    if t.questions_from == "synth_copies":
        records = synth_copies(cfg, pool, t.questions)
    else:
        writing = dataclasses.replace(cfg.question_writing(), max_chunks=t.questions, sampling="stratified")
        plan = plan_generation(writing, pool, golden)
        try:
            records = turns.use(
                t.writer, lambda llm: generate_questions(writing, llm, plan), "reranker training questions"
            )
        finally:
            turns.release()
    for r in records:
        r["qid"] = "ce-" + r["qid"].removeprefix("syn-")
        if r["drop_reason"] is None and question_key(r["question"]) in held.question_keys:
            r["drop_reason"] = "evaluation_question"
    return records


def synthetic_set(cfg: Config, chunks: list, golden: list, held: HeldOut, turns: ModelTurns):
    """(records, pairs, source) of the synthetic questions: written, filtered, paired with negatives."""
    t = cfg.retrieval.reranker.train
    pool = training_pool(chunks, held)
    if not pool:
        raise ValueError(
            f"retrieval.reranker.train.split {t.split!r} holds out all {len(chunks)} chunks (every one is, or is next "
            "to, an evaluation question's evidence): use split 'chunk', fewer neighbours, or labelled sets only "
            "(questions: 0)"
        )
    records = write_questions(cfg, pool, golden, held, turns)
    valid = [r for r in records if r["drop_reason"] is None]
    depth = max(t.filter_top_n, t.negative_depth + 1)
    rankings = bm25_rankings(
        cfg.retrieval.bm25, [c.chunk_id for c in pool], [c.text for c in pool], [r["question"] for r in valid], depth
    )
    round_trip_filter(records, rankings, t.filter_top_n)
    kept_rankings = [rk[: t.negative_depth + 1] for r, rk in zip(valid, rankings) if r["kept"]]
    pairs = synthetic_pairs(records, pool, kept_rankings, t.negatives, cfg.seed)
    source = {
        "name": "synthetic",
        "corpus": display_path(cfg, chunks_path(cfg)),
        "corpus_sha256": sha256_file(chunks_path(cfg)),
        "training_chunks": len(pool),
        "writer": getattr(cfg.models, t.writer).model
        if t.questions_from == "writer"
        else cfg.models.question_writer.model,
        "writer_role": t.writer if t.questions_from == "writer" else "question_writer (synth's copies)",
        "questions_from": t.questions_from,
        "questions_written": len(records),
        "questions_kept": sum(bool(r.get("kept")) for r in records),
        "filter": f"BM25 round trip, source chunk in top {t.filter_top_n}" if t.filter_top_n else "none",
        "negatives": f"{t.negatives} of BM25 top {t.negative_depth}, none sharing the source span",
    }
    return records, pairs, source


def labelled_set(cfg: Config, spec) -> tuple[list[TrainingPair], DevCorpus, dict]:
    """(pairs, corpus, source) of one labelled set the config names; `corpus` is what its dev queries
    are ranked against when BM25's weight is fitted."""
    from ..lib.retrieval.beir import load_beir, qrels_file

    t = cfg.retrieval.reranker.train
    folder = cfg.path(spec.path)
    data = load_beir(folder, spec.split)
    pairs = labelled_pairs(
        data,
        spec.name,
        spec.min_grade,
        spec.max_queries,
        t.negatives,
        cfg.retrieval.bm25,
        t.negative_depth,
        cfg.seed,
        spec.max_positives,
    )
    qids = sorted({p.query_id for p in pairs})
    ids, texts = data.passages()
    carried = {(p.query_id, p.passage_id) for p in pairs}
    exclude = {
        q: {d for d, g in data.qrels.get(q, {}).items() if g >= spec.min_grade and (q, d) not in carried} for q in qids
    }
    corpus = DevCorpus(ids, texts, {q: e for q, e in exclude.items() if e})
    return (
        pairs,
        corpus,
        {
            "name": spec.name,
            "dir": display_path(cfg, folder),
            "split": spec.split,
            "min_grade": spec.min_grade,
            "queries": len(qids),
            "corpus_sha256": sha256_file(folder / "corpus.jsonl"),
            "qrels_sha256": sha256_file(qrels_file(folder, spec.split)),
            "query_ids": qids,
        },
    )


def compute(cfg: Config, chunks: list, questions: list[dict], golden: list, turns: ModelTurns) -> TrainingSet:
    """The training set: evaluation chunks held out, synthetic pairs (when `train.questions` > 0),
    the labelled sets' pairs; refused (LeakError) if any pair holds an evaluation chunk or question."""
    t = cfg.retrieval.reranker.train
    held = held_out(chunks, questions, t.split, t.neighbours)
    records, pairs, sources, corpora = [], [], [], {}
    if t.questions:
        records, pairs, source = synthetic_set(cfg, chunks, golden, held, turns)
        sources.append(source)
        corpora["synthetic"] = synthetic_corpus(chunks, held, records)
    if t.pseudo_queries:
        pool = training_pool(chunks, held)
        more = pseudo_query_pairs(pool, t.pseudo_queries, t.negatives, t.negative_depth, cfg.retrieval.bm25, cfg.seed)
        pairs += more
        sources.append(
            {
                "name": "pseudo",
                "corpus": display_path(cfg, chunks_path(cfg)),
                "training_chunks": len(pool),
                "queries_from": "a sentence of 8-30 words cut from a training chunk (no model call)",
                "negatives": f"{t.negatives} of BM25 top {t.negative_depth}, not the chunk or its neighbours",
            }
        )
    for spec in t.labelled:
        if spec.optional and not cfg.path(spec.path).is_dir():
            sources.append(
                {
                    "name": spec.name,
                    "dir": display_path(cfg, cfg.path(spec.path)),
                    "split": spec.split,
                    "skipped": f"folder not found (an optional set; {fetch_hint(cfg.path(spec.path))})",
                }
            )
            continue
        more, corpora[spec.name], source = labelled_set(cfg, spec)
        pairs += more
        sources.append(source)
    check_no_leak(pairs, held)
    counts = pair_counts(pairs)
    for s in sources:
        s.update(counts.get(s["name"], {"queries": 0, "positives": 0, "negatives": 0}))
    return TrainingSet(pairs, held, records, sources, corpora)


def synthetic_corpus(chunks: list, held: HeldOut, records: list[dict]) -> DevCorpus:
    """The training chunks, each kept question's pool leaving out the chunks that share its evidence span."""
    pool = training_pool(chunks, held)
    by_doc: dict[str, list] = {}
    for c in pool:
        by_doc.setdefault(c.doc_id, []).append(c)
    exclude = {
        r["qid"]: set(overlapping(by_doc.get(r["doc_id"], []), int(r["span_start"]), int(r["span_end"])))
        for r in records
        if r.get("kept")
    }
    return DevCorpus([c.chunk_id for c in pool], [c.text for c in pool], exclude)


def describe(cfg: Config, ts: TrainingSet, result: TrainResult, folder: Path) -> dict:
    """The trained model's record (`spacelm_trained.json`)."""
    from ..lib.llm.models import model_identity

    t = cfg.retrieval.reranker.train
    base = model_identity(t.base_model)
    inputs = stage_inputs(STAGE, cfg)
    return {
        "name": trained_name(cfg.retrieval.reranker.model),
        "spec": cfg.retrieval.reranker.model,
        "kind": "cross-encoder",
        "weights_file": TRAINED_WEIGHTS,
        "sha256": sha256_file(folder / TRAINED_WEIGHTS),
        "licence": f"that of {base.get('upstream') or t.base_model}",
        "base_model": {k: base.get(k) for k in ("name", "upstream", "sha256")},
        "fingerprint": fingerprint_of(inputs),
        "inputs": inputs,
        "seed": cfg.seed,
        "settings": dataclasses.asdict(t),
        "training": {
            "sources": ts.sources,
            "pairs": len(ts.pairs),
            "held_out": {k: v for k, v in ts.held.to_dict().items() if k != "chunk_ids"},
        },
        "result": dataclasses.asdict(result),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def kept_folder(cfg: Config, fingerprint: str) -> Path:
    """Where the checkpoint trained on inputs with `fingerprint` is kept aside while another is in use."""
    folder = model_folder(cfg)
    return folder.parent / ".kept" / folder.name / fingerprint


def kept_for(cfg: Config, inputs: dict) -> Path | None:
    """The kept checkpoint trained on exactly `inputs` (its stamp says so and its weights hash as its
    record), or None."""
    folder = kept_folder(cfg, fingerprint_of(inputs))
    try:
        stamp = json.loads((folder / STAGE.stamp_path(cfg).name).read_text())
        meta = json.loads((folder / TRAINED_META).read_text())
    except (OSError, ValueError):
        return None
    ok = stamp.get("state") == "complete" and stamp.get("code_rule") == CODE_RULE and stamp.get("inputs") == inputs
    return folder if ok and sha256_file(folder / TRAINED_WEIGHTS) == meta.get("sha256") else None


def keep_previous(cfg: Config) -> None:
    """Move the checkpoint in use aside under the fingerprint of its inputs (the complete stamp the
    building one names as `previous`), and drop the oldest beyond :data:`KEPT`."""
    folder, stamp = model_folder(cfg), read_stamp(STAGE, cfg) or {}
    prev = stamp.get("previous") if stamp.get("state") == "building" else None
    if not prev or prev.get("code_rule") != CODE_RULE or not (folder / TRAINED_META).is_file():
        return
    dest = kept_folder(cfg, prev["fingerprint"])
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    folder.rename(dest)
    write_json(dest / STAGE.stamp_path(cfg).name, prev)
    for old in sorted(dest.parent.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)[KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


def build(cfg: Config, out) -> dict:
    kept = kept_for(cfg, stage_inputs(STAGE, cfg))
    if kept is not None:  # trained on these very inputs before: restored, not trained again
        summary = json.loads((kept / STAGE.stamp_path(cfg).name).read_text())["summary"]
        staged = out(model_folder(cfg))
        kept.rename(staged)
        (staged / STAGE.stamp_path(cfg).name).unlink()
        keep_previous(cfg)
        drop = ("skipped", "seconds", "computed_seconds", "wall_seconds", "inputs")
        return {k: v for k, v in summary.items() if k not in drop} | {"restored_kept": kept.name}
    summary = train(cfg, out)
    keep_previous(cfg)
    return summary


def train(cfg: Config, out) -> dict:
    """Write the training set, train the model into `out(model_folder)` and record it."""
    from ..lib.llm.models import resolve_model_path
    from ..lib.synth.golden import load_golden

    t = cfg.retrieval.reranker.train
    bad = t.problems()
    if bad:
        key, why = bad[0]
        raise ValueError(f"{cfg.source or '<config>'}: retrieval.reranker.train.{key} {why}")
    chunks = load_chunks(cfg)
    questions = evaluation_questions(cfg, chunks)
    golden = load_golden(golden_path(cfg), min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    turns = ModelTurns(cfg, "train-reranker")
    ts = compute(cfg, chunks, questions, golden, turns)
    folder = out(model_folder(cfg))
    device = cfg.retrieval.resolved_device()
    result = train_cross_encoder(
        ts.pairs,
        resolve_model_path(t.base_model),
        t,
        cfg.seed,
        folder,
        "training the reranker",
        device,
        cfg.retrieval.bm25,
        ts.corpora,
    )
    meta = describe(cfg, ts, result, folder)
    write_json(folder / TRAINED_META, meta)
    write_json(folder / HELD_OUT_FILE, ts.held.to_dict())
    write_jsonl(folder / PAIRS_FILE, (pair_row(p) for p in ts.pairs))
    write_jsonl(folder / "synthetic_questions.jsonl", ts.records)
    identity = {
        "name": meta["spec"],
        "upstream": f"cross-encoder trained from {t.base_model}",
        "sha256": meta["sha256"],
        "base_model": meta["base_model"],
        "fingerprint": meta["fingerprint"],
    }
    return {
        "trained": meta["spec"],
        "base_model": t.base_model,
        "pairs": len(ts.pairs),
        "sources": [{k: v for k, v in s.items() if k != "query_ids"} for s in ts.sources],
        "held_out": meta["training"]["held_out"],
        "train_seconds": result.seconds,
        "device": device,
        "train_pairs_per_second": result.pairs_per_second,
        "loss_first": result.loss_first,
        "loss_last": result.loss_last,
        "bm25_weight": result.bm25_weight,
        "bm25_weight_fitted_on": f"{result.dev_queries} training queries held back" if result.dev_queries else None,
        "llm": turns.stats.get(t.writer),
        "model_identity": identity,
    }


def _sections(cfg: Config) -> list[str]:
    t = cfg.retrieval.reranker.train
    # questions the stage writes depend on the writer and synth's settings; synth's rejected copies
    # are read from the questions file, an input by its content
    writer = [f"models.{t.writer}", "synth"] if t.questions and t.questions_from == "writer" else []
    return ["retrieval.reranker.model", "retrieval.reranker.train", "retrieval.bm25", "seed", *writer]


def _models(cfg: Config) -> dict:
    t = cfg.retrieval.reranker.train
    m = {"base": t.base_model}
    if t.questions and t.questions_from == "writer":
        m["writer"] = getattr(cfg.models, t.writer).model
    return m


def _prompts(cfg: Config) -> list[str]:
    t = cfg.retrieval.reranker.train
    return [f"synth_{task}" for task in cfg.synth.tasks] if t.questions and t.questions_from == "writer" else []


STAGE = Stage(
    name="train-reranker",
    doc="train the cross-encoder reranker on the corpus (evaluation questions held out)",
    home=model_folder,
    outputs=outputs,
    build=build,
    after=("synth",),
    sections=_sections,
    reads=lambda cfg: [
        chunks_path(cfg),
        questions_path(cfg),
        golden_path(cfg),
        documents_path(cfg),
        *labelled_files(cfg),
    ],
    prompts=_prompts,
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)


def pair_row(p: TrainingPair) -> dict:
    """A training pair as `training_pairs.jsonl` keeps it: ids, query, label, source (no passage text)."""
    return {k: v for k, v in dataclasses.asdict(p).items() if k != "passage"}


def read_pairs(folder: Path) -> list[dict]:
    """The pairs a trained model saw, as :func:`pair_row` wrote them."""
    return read_jsonl(Path(folder) / PAIRS_FILE)
