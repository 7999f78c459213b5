"""Stage 2, synth: few-shot questions for every selected chunk × task, optional reference
answers, the retrieval filter, and the exports. Model calls are cached, so an interrupted
run resumes without repeating them."""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_jsonl
from ..lib.judge.relevance import grade_pairs
from ..lib.synth.checks import LABELS, premise_contexts
from ..lib.synth.golden import load_golden, locate_samples
from ..lib.synth.questions import (
    add_reference_answers,
    check_waves,
    export_beir,
    export_hf,
    fewshot_share,
    generate_questions,
    generate_unanswerable,
    golden_unanswerable,
    mark_unanswerable,
    plan_generation,
    plan_unanswerable,
    retention_table,
    skipped_sources,
    unanswerable_check_pairs,
    unanswerable_table,
)
from ..lib.synth.screening import (
    audit_table,
    golden_records,
    judge_checks,
    judge_requests,
    label_agreement,
    rejection_table,
    screen,
)
from ..runner.base import ModelTurns, Stage, execute
from ..runner.data import chunks_path, golden_path, load_chunks, questions_path, write_attribution


class SynthFiles(NamedTuple):
    """Every file the synth stage writes, by name (in the order the stamp lists them)."""

    questions: Path
    retention_csv: Path
    retention_md: Path
    rejections_csv: Path
    rejections_md: Path
    audit: Path
    golden_checks: Path
    unanswerable: Path
    beir: Path
    hf_dataset: Path
    attribution: Path


def outputs(cfg: Config) -> SynthFiles:
    d = cfg.synthetic_dir
    return SynthFiles(
        questions_path(cfg),
        d / names.RETENTION,
        d / names.RETENTION_MD,
        d / names.REJECTIONS,
        d / names.REJECTIONS_MD,
        d / names.QUESTION_AUDIT,
        d / names.GOLDEN_CHECKS,
        d / names.UNANSWERABLE,
        d / "beir",
        d / "hf_dataset",
        d / "ATTRIBUTION.md",
    )


@dataclass
class Synthesis:
    """What the synth stage computes: every question record (answerable, written unanswerable
    candidates, golden unanswerable), the candidates written, the check pairs graded, the golden
    samples screened by the same checks, the boilerplate chunks skipped ({chunk id: reason}) and the
    largest share of a task's prompts one few-shot example is in."""

    records: list[dict]
    unanswerable: list[dict]
    pairs_graded: int
    golden_screened: list[dict]
    skipped: dict
    fewshot_share: dict
    contexts: dict  # {chunk id: PremiseContext}, what the checks and the audit read


def compute(cfg: Config, chunks: list, golden: list, models: ModelTurns, found: dict | None = None) -> Synthesis:
    """Write the questions (and reference answers) with the question writer, screen them (and the
    golden samples, `found` {sample id: chunk id}, by the same checks), apply the retrieval filter,
    and write and check the unanswerable candidates (`models`: the writer and the judge taking turns)."""
    chunks_by_id = {c.chunk_id: c for c in chunks}
    writing = cfg.question_writing()
    skipped = skipped_sources(writing, chunks)
    contexts = premise_contexts(chunks, writing.checks.context_chunks, writing.checks.front_chars)
    plan = plan_generation(writing, chunks, golden, skipped)
    records = models.use("question_writer", lambda llm: generate_questions(writing, llm, plan), "questions")
    if cfg.synth.with_reference_answer:
        models.use(
            "question_writer",
            lambda llm: add_reference_answers(writing, llm, records, chunks_by_id),
            "reference answers",
        )
    if found is None:  # `spacelm plan` calls without it: locate the samples quietly (build warns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found, _ = locate_samples(golden, chunks, golden_path(cfg))
    gold = golden_records(golden, found, chunks_by_id)
    check_questions(writing.checks, contexts, records + gold, models)
    gold_una = golden_unanswerable(golden)
    una, n_pairs, filtered = [], 0, []

    def run_filter():
        filtered.append(True)
        return models.retrieval_filter(chunks, records)

    try:
        if cfg.synth.unanswerable.enabled:  # round 0 is written while the writer is still loaded
            una, n_pairs = unanswerable_rounds(cfg, models, records, chunks_by_id, run_filter, gold_una)
    finally:
        models.release()
    if not filtered:
        run_filter()
    return Synthesis(records + una + gold_una, una, n_pairs, gold, skipped, fewshot_share(plan), contexts)


def check_questions(checks, contexts: dict, records: list[dict], models: ModelTurns) -> None:
    """The copy, premise and label checks (`checks`, thresholds) on the written questions (and the golden
    samples among `records`): the rules first, then the judge on what they cannot decide."""
    pending = screen(records, contexts, checks)
    requests = judge_requests(records, contexts, pending)
    if requests:
        models.use("judge", lambda llm: judge_checks(llm, requests), "question checks")


def write(cfg: Config, chunks: list, result: Synthesis, out) -> None:
    """questions.jsonl, the retention and unanswerable tables, the BEIR and HF exports."""
    from .browse import text_policy

    records = result.records
    retention = retention_table(records)
    files = outputs(cfg)
    write_attribution(cfg, out(files.attribution))
    quotable = text_policy(cfg)[0]
    # the writer's raw reply copies its passage: kept only for a corpus whose text may be quoted
    write_jsonl(out(files.questions), records if quotable else [dict(r, raw_output=None) for r in records])
    write_dataframe(retention, out(files.retention_csv))
    write_dataframe(retention, out(files.retention_md))
    rejections = rejection_table(records, result.skipped, result.golden_screened)
    write_dataframe(rejections, out(files.rejections_csv))
    write_dataframe(rejections, out(files.rejections_md))
    written = [r for r in records if r.get("answerable", True) and r.get("origin") != "golden" and r["question"]]
    sets = {"written": written, "kept": [r for r in written if r["kept"]], "golden": result.golden_screened}
    write_dataframe(audit_table(sets, result.contexts, cfg.question_writing().checks), out(files.audit))
    keys = ("qid", "task", "label", "source_chunk_id", "drop_reason", "checks", "check_scores")
    write_jsonl(out(files.golden_checks), [{k: g[k] for k in keys if k in g} for g in result.golden_screened])
    write_dataframe(unanswerable_table(records), out(files.unanswerable))
    export_beir(chunks, records, out(files.beir))
    # the passage text of a corpus the project does not ship stays out of the committed dataset
    export_hf(chunks, records, out(files.hf_dataset), with_text=quotable)


def build(cfg: Config, out) -> dict:
    chunks = load_chunks(cfg)
    golden = load_golden(golden_path(cfg), min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    found, not_found = locate_samples(golden, chunks, golden_path(cfg))
    models = ModelTurns(cfg, "synth")
    result = compute(cfg, chunks, golden, models, found)
    write(cfg, chunks, result, out)
    records = result.records
    reasons: dict = {}
    for r in records:
        if r["drop_reason"]:
            reasons[r["drop_reason"]] = reasons.get(r["drop_reason"], 0) + 1
    return {
        "chunks_used": len({r["source_chunk_id"] for r in records if r["answerable"]}),
        "generated": sum(r["answerable"] for r in records),
        "kept": sum(r["kept"] for r in records if r["answerable"]),
        "drop_reasons": reasons,
        "unanswerable_generated": len(result.unanswerable),
        "unanswerable_kept": sum(r["kept"] for r in records if not r["answerable"]),
        "unanswerable_pairs_graded": result.pairs_graded,
        "llm_judge": models.stats.get("judge"),
        "fewshot_sampling": cfg.synth.fewshot_sampling,
        "n_fewshot": cfg.synth.n_fewshot,
        "fewshot_max_share": result.fewshot_share,
        "sources_skipped": dict(sorted(Counter(result.skipped.values()).items())),
        "rejected": {c: sum(r["drop_reason"] == c for r in records) for c in ("copy", "premise", "label")},
        "golden_rejected": {
            c: sum(r["drop_reason"] == c for r in result.golden_screened) for c in ("copy", "premise", "label")
        },
        "golden_screened": len(result.golden_screened),
        "label_check_on_golden": label_agreement(result.golden_screened),
        "filter": f"{cfg.synth.filter_retriever} top-{cfg.synth.filter_top_n}",
        "golden_samples": len(golden),
        "golden_not_found": [f"{s.id} (line {s.line})" for s in not_found],
        "llm": models.stats.get("question_writer"),
        "model_identity": models.identity.get("question_writer"),
        "judge_identity": models.identity.get("judge"),
    }


def unanswerable_rounds(
    cfg: Config, models: ModelTurns, records: list[dict], chunks_by_id: dict, filter_fn, golden: list[dict]
) -> tuple[list[dict], int]:
    """Write unanswerable candidates and have the judge check them, in rounds: later rounds only
    for the task types still without a kept one. The golden unanswerable questions go through
    the same check in the first round (kept whatever it says: it measures the check). The
    writer and the judge take turns (`models`). `filter_fn()` applies the retrieval filter to
    the answerable questions and returns the retrievers the check searches with; it runs after
    round 0 is written. (candidates, pairs graded)"""
    uc = cfg.synth.unanswerable
    una, n_pairs, tasks, systems = [], 0, list(cfg.synth.tasks), None
    text_of = {cid: c.text for cid, c in chunks_by_id.items()}
    for round_ in range(uc.max_rounds):
        plan = plan_unanswerable(cfg.question_writing(), records, chunks_by_id, round_, tasks)
        if not plan:
            break
        new = models.use(
            "question_writer",
            lambda llm, plan=plan, una=una: generate_unanswerable(cfg.question_writing(), llm, plan, records + una),
            f"unanswerable questions, round {round_ + 1}",
        )
        for r in new:
            r["round"] = round_
        if systems is None:
            systems = filter_fn()
        checked = new + (golden if round_ == 0 else [])
        pairs = unanswerable_check_pairs(systems, checked, uc.check_k)
        if pairs:
            # golden ones too stop at their first answering passage: the check's verdict on them,
            # which is what they measure, is the same
            grades = models.use(
                "judge",
                lambda llm, pairs=pairs: check_waves(
                    pairs,
                    lambda batch: grade_pairs(llm, batch, text_of, judging=cfg.grading.judging(cfg.root)),
                    uc.answerable_grade,
                ),
                f"unanswerable check, round {round_ + 1}",
            )
            mark_unanswerable(checked, grades, uc.answerable_grade)
            n_pairs += len(grades)
        una += new
        tasks = [t for t in tasks if not any(r["kept"] and r["task"] == t for r in una)]
        if not tasks:
            break
    if systems is None:
        filter_fn()
    return una, n_pairs


def _prompts(cfg: Config) -> list[str]:
    p = [f"synth_{t}" for t in cfg.synth.tasks if t != "fact_checking"]
    if "fact_checking" in cfg.synth.tasks:
        p += [f"synth_fact_checking_{label}" for label in LABELS]
    p += ["reference_answer"] if cfg.synth.with_reference_answer else []
    p += ["verify_premise", "verify_premise_mirrored", "judge_claim_support", "judge_claim_support_mirrored"]
    if cfg.synth.unanswerable.enabled:
        p += [f"synth_unanswerable_{k}" for k in cfg.synth.unanswerable.kinds] + [cfg.grading.prompt]
    return p


def _sections(cfg: Config) -> list[str]:
    # reference answers are written with the question writer, capped at the generator's max_tokens
    extra = ["models.generator.max_tokens"] if cfg.synth.with_reference_answer else []
    extra += ["models.judge"]  # the judge decides the checks the rules cannot
    if cfg.synth.unanswerable.enabled:  # the judge checks the unanswerable candidates
        extra += ["grading.prompt"]
    return ["synth", "seed", "models.question_writer", "retrieval.bm25", "retrieval.dense", *extra]


def _models(cfg: Config) -> dict:
    return {
        "question_writer": cfg.models.question_writer.model,
        "dense": cfg.retrieval.dense.model,
        "judge": cfg.models.judge.model,
    }


STAGE = Stage(
    name="synth",
    doc="write synthetic questions and apply the retrieval filter",
    home=lambda cfg: cfg.synthetic_dir,
    outputs=outputs,
    build=build,
    after=("chunk",),
    sections=lambda cfg: _sections(cfg) + ["corpus.file_list"],
    reads=lambda cfg: (
        [chunks_path(cfg), golden_path(cfg)]
        + ([cfg.path(cfg.synth.unanswerable.subjects)] if cfg.synth.unanswerable.subjects else [])
    ),
    prompts=_prompts,
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
