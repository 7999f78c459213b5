"""Stage 4, grade: the judge grades every distinct (question, passage) pair of the Table 1
lists 0–3; the stage writes Table 1, its CIs and paired tests, graded metrics and the judge
validity check."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_json, write_jsonl, write_text
from ..lib.judge.relevance import (
    clustering,
    feature_decomposition,
    grade_lists,
    grade_pairs,
    graded_metrics,
    judge_validity,
    paired_tests,
    plan_pairs,
    relevant_shares,
    select_questions,
    table1,
    table1_wide,
    table_systems,
)
from ..lib.judge.validity import mean_of_orders
from ..lib.names import scale
from ..lib.sample import sample_size
from . import gold_check
from .base import ModelTurns, Stage, execute
from .data import chunks_path, load_chunks, load_questions, load_rankings, questions_path, rankings_path


class GradeFiles(NamedTuple):
    """Every file the grade stage writes, by name (in the order the stamp lists them)."""

    table_csv: Path
    table_md: Path
    table_tex: Path
    grades: Path
    validity: Path
    paired_tests: Path
    graded_metrics: Path
    distribution_plot: Path
    relevant_shares: Path
    per_task: Path
    ppi_differences: Path
    decomposition: Path
    judge_qrels: Path
    sensitivity: Path


def outputs(cfg: Config) -> GradeFiles:
    d = cfg.run_dir
    return GradeFiles(
        d / names.TABLE1,
        d / names.TABLE1_MD,
        d / names.TABLE1_TEX,
        d / names.GRADES,
        d / names.JUDGE_VALIDITY,
        d / names.PAIRED_TESTS,
        d / names.GRADED_METRICS,
        d / names.PLOT_GRADES,
        d / names.RELEVANT_SHARES,
        d / names.GRADING_PER_TASK,
        d / names.PPI_DIFFERENCES,
        d / names.GRADE_DECOMPOSITION,
        d / names.TREC_QRELS_JUDGE,
        d / names.GRADING_SENSITIVITY,
    )


PPI_KEYS = ["retriever", "stage", "top_k", "grade"]
PPI_COLUMNS = ["ppi_estimate", "ppi_ci_low", "ppi_ci_high", "n_human"]
DIFF_COLUMNS = [
    "retriever",
    "top_k",
    "measure",
    "judge_only",
    "ppi_estimate",
    "ppi_ci_low",
    "ppi_ci_high",
    "n_human",
    "n_pairs",
]


def labels_dir(cfg: Config):
    return cfg.run_dir / "labels"


def cell_pairs(cfg: Config, questions: list[dict], rankings: dict) -> dict:
    """{(retriever, stage, k): [(qid, chunk_id), ...]}: the pairs of every Table 1 cell."""
    return {
        (r, stage, k): [(q["qid"], c) for q in questions for c in rankings[system][q["qid"]][:k]]
        for r, stage, system in table_systems(cfg.table_design())
        for k in cfg.grading.top_k
    }


def _labelled(cfg: Config, questions: list[dict], rankings: dict) -> tuple:
    """The human labels placed back in the run ({(qid, chunk_id): grade}, {(qid, chunk_id): weight}),
    validated against the pairs of the labelling sample; ({}, {}) when there are none."""
    from ..lib.io import read_jsonl
    from ..lib.judge.labelling import SEP, labels_file, read_labels

    f = labels_file(labels_dir(cfg))
    if f is None:
        return {}, {}
    sample_file = labels_dir(cfg) / names.TO_LABEL
    sample = {r["pair_id"]: r for r in read_jsonl(sample_file)} if sample_file.is_file() else {}
    known = set(sample) or {f"{q}{SEP}{c}" for pairs in cell_pairs(cfg, questions, rankings).values() for q, c in pairs}
    human = read_labels(f, known)
    key = lambda pid: tuple(pid.split(SEP, 1))
    return (
        {key(p): g for p, g in human.items()},
        {key(p): float(sample[p]["weight"]) if p in sample else 1.0 for p in human},
    )


def prediction_powered(cfg: Config, questions: list[dict], rankings: dict, grades: dict) -> tuple:
    """(Table 1 PPI rows, reranked - retrieved PPI rows, labels) from the labels in
    `results/<run>/labels/`; empty estimates and n_human 0 when there are none."""
    from ..lib.judge.labelling import ppi_differences, ppi_table1

    human, weights = _labelled(cfg, questions, rankings)
    cells = cell_pairs(cfg, questions, rankings)
    return ppi_table1(cells, grades, human, weights), ppi_differences(cells, grades, human, weights), human


def label_sample(cfg: Config, n: int) -> list:
    """Draw the labelling sample from the run's graded Table 1 pairs (stratified by system and
    judge grade, seeded) and write it to `results/<run>/labels/` (see lib/judge/labelling.py)."""
    from ..lib.io import InputError, read_jsonl
    from ..lib.judge.labelling import pair_id, stratified_sample, write_labelling_files

    grades_file = cfg.run_dir / names.GRADES
    if not grades_file.is_file():
        raise InputError(f"{grades_file} not found: run `spacelm grade --config {cfg.source or '...'}` first")
    chunks = load_chunks(cfg)
    text_of = {c.chunk_id: c.text for c in chunks}
    rankings = load_rankings(cfg)
    graded = {
        (r["qid"], r["chunk_id"]): r["grade"] for r in read_jsonl(grades_file) if r.get("prompt") == grade_label(cfg)
    }
    qtext = {q["qid"]: q["question"] for q in load_questions(cfg, chunks)}
    kmax = max(cfg.grading.top_k)
    seen, pairs = set(), []
    for _, _, system in table_systems(cfg.table_design()):
        for qid in sorted({q for q, _ in graded}):
            for cid in rankings.get(system, {}).get(qid, [])[:kmax]:
                if (qid, cid) in graded and (qid, cid) not in seen and qid in qtext:
                    seen.add((qid, cid))
                    pairs.append(
                        {
                            "pair_id": pair_id(qid, cid),
                            "qid": qid,
                            "chunk_id": cid,
                            "system": system,
                            "grade": graded[(qid, cid)],
                            "question": qtext[qid],
                            "passage": text_of[cid],
                        }
                    )
    if not pairs:
        raise InputError(f"{grades_file} holds no graded Table 1 pair to label")
    return write_labelling_files(labels_dir(cfg), stratified_sample(pairs, n, cfg.seed))


@dataclass
class Grades:
    """What the grade stage computes: the questions graded (of `n_available`), the first-order
    grades (`rows`), the passage-first grades (all pairs under both-orders debiasing, else the
    validity pairs or none) and the grades Table 1 uses."""

    questions: list[dict]
    n_available: int
    rows: list[dict]
    swapped_all: list[dict]
    swapped: list[dict] | None
    used: list[dict]
    golden: gold_check.QuestionSet | None = None  # the second question set, graded in the same turn


def compute(
    cfg: Config, chunks: list, questions: list[dict], rankings: dict, models: ModelTurns, golden=None
) -> Grades:
    """Grade the distinct (question, passage) pairs of Table 1's lists with the judge (`models`);
    `golden` (a `gold_check.QuestionSet`): a second set whose pairs join the same batch."""
    from ..config import ConfigError

    chunks_by_id = {c.chunk_id: c for c in chunks}
    need = {s for _, _, s in table_systems(cfg.table_design())}
    if not need <= set(rankings):
        raise ConfigError(
            f"grading.retrievers: grading needs retrieval systems {sorted(need)}; add them to "
            f"retrieval.systems (have {sorted(rankings)})"
        )
    all_q = [q for q in questions if q["qid"] in rankings[next(iter(need))]]
    chosen = select_questions(all_q, cfg.grading.max_questions, cfg.seed)
    pairs = plan_pairs(cfg.table_design(), chosen, rankings, chunks_by_id)
    pairs = gold_check.merge_pairs(pairs, gold_check.planned_pairs(cfg, golden, chunks_by_id))
    text_of = {cid: c.text for cid, c in chunks_by_id.items()}
    swapped_prompt = cfg.grading.prompt + "_swapped"
    judging = cfg.grading.judging(cfg.root)
    grade = lambda phase, todo, **kw: models.use("judge", lambda llm: grade_pairs(llm, todo, text_of, **kw), phase)
    rows = grade("relevance grades", pairs, judging=judging)
    is_validity = lambda p: any(x.startswith("validity") for x in p["purpose"])
    swapped, swapped_all, used = None, [], rows
    if cfg.grading.debias == "both_orders":  # every pair in both orders; the table uses their mean
        swapped_all = grade("relevance grades, passage first", pairs, template=swapped_prompt)
        used = mean_of_orders(rows, swapped_all)
        swapped = [r for r in swapped_all if is_validity(r)] if cfg.grading.consistency_check else None
    elif cfg.grading.consistency_check and judging.method == "prompt":
        validity = [p for p in pairs if is_validity(p)]
        swapped = grade("validity pairs, passage first", validity, template=swapped_prompt)
    models.release()
    return gold_check.split(Grades(chosen, len(all_q), rows, swapped_all, swapped, used), golden)


def write(cfg: Config, result: Grades, rankings: dict, judge_name: str, out) -> dict:
    """grades.jsonl and every table of the stage (see `write_tables`)."""
    write_jsonl(out(outputs(cfg).grades), result.rows + (result.swapped_all or result.swapped or []))
    summary = write_tables(
        cfg, result.questions, result.n_available, rankings, result.used, result.swapped, judge_name, out
    )
    run_set = gold_check.QuestionSet(result.questions, result.n_available, rankings, result.rows, result.used)
    return {**summary, **gold_check.write_all(cfg, run_set, result.golden, out)}


def build(cfg: Config, out) -> dict:
    import time

    t0 = time.perf_counter()
    chunks = load_chunks(cfg)
    rankings = load_rankings(cfg)
    models = ModelTurns(cfg, "grade")
    questions = load_questions(cfg, chunks)
    golden = gold_check.golden_inputs(cfg, chunks, questions)
    result = compute(cfg, chunks, questions, rankings, models, golden)
    identity = models.identity.get("judge", {})
    summary = write(cfg, result, rankings, identity.get("name"), out)
    return {
        **summary,
        "questions_available": result.n_available,
        "pairs_graded": len(result.rows),
        "missing_grades": sum(r["grade"] is None for r in result.rows),
        "debias": cfg.grading.debias,
        "llm": models.stats.get("judge"),
        "model_identity": identity,
        "wall_seconds_grading": round(time.perf_counter() - t0, 2),
    }


def write_tables(
    cfg: Config,
    questions: list[dict],
    n_available: int,
    rankings: dict,
    used: list[dict],
    swapped,
    judge_name: str,
    out,
) -> dict:
    """Every table, test and plot of the stage from the grades (no model): Table 1 with its
    cluster-bootstrap CIs, the paired tests, relevant shares, graded metrics, per-task shares,
    judge validity. Called by the stage and by `spacelm report --recompute`."""
    import pandas as pd

    from ..lib.report.plots import grade_distribution, per_task_panels

    files = outputs(cfg)
    cluster_of = clustering(questions, cfg.grading.cluster)
    grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in used}
    cells = grade_lists(cfg.table_design(), questions, rankings, grades)
    long = table1(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of)
    ppi_rows, diffs, _ = prediction_powered(cfg, questions, rankings, grades)
    long = long.merge(pd.DataFrame(ppi_rows, columns=PPI_KEYS + PPI_COLUMNS), on=PPI_KEYS, how="left")
    write_dataframe(long, out(files.table_csv))
    write_dataframe(pd.DataFrame(diffs, columns=DIFF_COLUMNS), out(files.ppi_differences))
    run_scale = scale(len(questions))
    n = sample_size(questions)
    if any(q.get("task") for q in questions):
        tasks = grades_per_task(cells, questions, cfg.grading.n_bootstrap, cfg.seed, cluster_of)
        write_dataframe(tasks, out(files.per_task))
        per_task_panels(
            tasks, "pct_grade_3", "% of graded passages at grade 3", out(cfg.run_dir / names.PLOT_TABLE1_PER_TASK)
        )
    note = (
        f"\n{n.text()}; {len(questions)} of {n_available} questions ({run_scale}); judge {judge_name}, "
        f"grades: {cfg.grading.judging(cfg.root).describe()}; "
        f"grades as % of graded passages; 95% CIs (two-stage cluster bootstrap: {UNIT_NAMES[cluster_of.unit]}, "
        "then questions within them) "
        "in table1_relevance.csv.\n"
    )
    write_text(out(files.table_md), table1_wide(long, "md") + note)
    write_text(out(files.table_tex), table1_wide(long, "tex"))
    validity = judge_validity(
        used, swapped, cfg.grading.auc_warning, cfg.models.judge.temperature, cfg.judge_check.min_pairs
    )
    write_json(out(files.validity), validity)
    write_dataframe(paired_tests(cells, cfg.table_design(), cluster_of), out(files.paired_tests))
    write_sensitivity(cfg, cells, questions, cluster_of, out(files.sensitivity))
    write_dataframe(
        feature_decomposition(cfg.table_design(), questions, rankings, used, cluster_of), out(files.decomposition)
    )
    write_dataframe(relevant_shares(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(files.relevant_shares))
    write_dataframe(graded_metrics(cfg.table_design(), questions, rankings, grades), out(files.graded_metrics))
    grade_distribution(long, out(files.distribution_plot))
    write_judge_qrels(cfg, questions, used, out)
    return {
        "questions": len(questions),
        "sample": n.to_dict(),
        "validity_auc": validity["auc"],
        "grading_method": cfg.grading.judging(cfg.root).describe(),
        "judge_verdict": validity["verdict"],
        "scale": run_scale,
    }


def write_sensitivity(cfg: Config, cells: dict, questions: list[dict], cluster_of, path: Path) -> None:
    """`grading/sensitivity.csv`: each paired test with each document left out and without the
    questions whose records carry a flag (records from the run's questions file when it is there)."""
    from ..lib.io import read_jsonl
    from ..lib.judge.sensitivity import sensitivity

    on_file = {q["qid"]: q for q in read_jsonl(questions_path(cfg))} if questions_path(cfg).is_file() else {}
    records = {q["qid"]: on_file.get(q["qid"], q) for q in questions}
    write_dataframe(sensitivity(cells, cfg.table_design(), cluster_of, records), path)


UNIT_NAMES = {"document": "documents", "source_chunk": "source chunks", "question": "questions"}


def stored_grades(cfg: Config) -> tuple:
    """From the run's grades.jsonl: the first-order rows, the rows Table 1 uses (both orders'
    mean under `debias: both_orders`) and the swapped validity rows (or None)."""
    from ..lib.io import read_jsonl

    rows = read_jsonl(cfg.run_dir / names.GRADES)
    first = [r for r in rows if r.get("prompt") == grade_label(cfg)]
    second = [r for r in rows if r.get("prompt") == cfg.grading.prompt + "_swapped"]
    used, swapped = first, (second or None)
    if cfg.grading.debias == "both_orders" and second:
        used = mean_of_orders(first, second)
        swapped = (
            [r for r in second if any(x.startswith("validity") for x in r["purpose"])]
            if cfg.grading.consistency_check
            else None
        )
    return first, used, swapped


def paired_tests_at(cfg: Config, unit: str) -> list[dict] | None:
    """Table 1's paired tests recomputed from the run's stored grades and rankings with the questions
    clustered by `unit` (no model; for the power table when the run clustered otherwise); None
    when the run has no grades or rankings. A run graded under another grader label than the
    config's now is read by the one first-order label its grades.jsonl holds. Questions missing
    from the questions file take the source chunk their validity pair names and the document that
    chunk's id names."""
    from ..lib.io import read_jsonl
    from ..lib.judge.relevance import clusters_from_grades

    if not (cfg.run_dir / names.GRADES).is_file() or not rankings_path(cfg).is_file():
        return None
    first, used, _ = stored_grades(cfg)
    if not first:  # graded under another grader label than the config names now: its one first-order label
        rows = read_jsonl(cfg.run_dir / names.GRADES)
        labels = {r.get("prompt") for r in rows if not str(r.get("prompt")).endswith("_swapped")}
        first = used = [r for r in rows if r.get("prompt") in labels] if len(labels) == 1 else []
    known = {q["qid"]: q for q in read_jsonl(questions_path(cfg))} if questions_path(cfg).is_file() else {}
    source = clusters_from_grades(first)
    questions = [known.get(q) or {"qid": q, "source_chunk_id": c} for q, c in sorted(source.items())]
    grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in used}
    cells = grade_lists(cfg.table_design(), questions, load_rankings(cfg), grades)
    return paired_tests(cells, cfg.table_design(), clustering(questions, unit)).to_dict("records")


def write_judge_qrels(cfg: Config, questions: list[dict], used: list[dict], out=lambda p: p) -> Path:
    """`retrieval/qrels.judge.trec`: the judge's grade 0-3 of every passage it graded for the
    (answerable) questions Table 1 reads, as TREC qrels; a pair without a grade is left out."""
    from ..lib.retrieval.trec import qrels_text

    qids = {q["qid"] for q in questions}
    qrels: dict = {}
    for r in used:
        if r["qid"] in qids and r.get("grade") is not None:
            qrels.setdefault(r["qid"], {}).setdefault(r["chunk_id"], int(r["grade"]))
    path = outputs(cfg).judge_qrels
    write_text(out(path), qrels_text(qrels))
    return path


def export_judge_qrels(cfg: Config) -> Path:
    """`write_judge_qrels` from the run's stored grades.jsonl (no model)."""
    _, used, _ = stored_grades(cfg)
    return write_judge_qrels(cfg, [{"qid": r["qid"]} for r in used], used)


def recompute(cfg: Config) -> dict:
    """`write_tables` from the run's stored grades.jsonl and rankings (no model): the questions
    from questions.jsonl when it is there, else each graded question with the source chunk its
    validity pair names (no task breakdown then)."""
    from ..lib.io import read_jsonl
    from ..lib.judge.relevance import clusters_from_grades

    d = cfg.run_dir
    first, used, swapped = stored_grades(cfg)
    source = clusters_from_grades(first)
    known = {}
    if questions_path(cfg).is_file():
        known = {q["qid"]: q for q in read_jsonl(questions_path(cfg))}
    questions = [known.get(q) or {"qid": q, "source_chunk_id": c} for q, c in sorted(source.items())]
    manifest = json.loads((d / names.MANIFEST).read_text()) if (d / names.MANIFEST).is_file() else {}
    n_available = (
        manifest.get("stages", {}).get("grade", {}).get("questions_available")
        or sum(1 for q in known.values() if q.get("kept") and q.get("answerable", True))
        or len(questions)
    )
    judge = manifest.get("models", {}).get("judge", {}).get("name")
    rankings = load_rankings(cfg)
    summary = write_tables(
        cfg, questions, n_available, rankings, used, swapped, judge or cfg.models.judge.model, lambda p: p
    )
    run_set = gold_check.QuestionSet(questions, n_available, rankings, first, used)
    return {**summary, **gold_check.recompute(cfg, run_set, grade_label(cfg))}


def grades_per_task(cells: dict, questions: list[dict], n_boot: int = 1000, seed: int = 0, cluster_of=None):
    """Per Table 1 cell and task: questions, graded passages, % graded 2-3 and % graded 3, with
    their 95% cluster-bootstrap CIs (:func:`per_task_shares`)."""
    from ..lib.judge.relevance import per_task_shares

    return per_task_shares(cells, {q["qid"]: q["task"] for q in questions}, n_boot, seed, cluster_of)


def _prompts(cfg: Config) -> list[str]:
    return relevance_prompts(cfg, cfg.grading.consistency_check or cfg.grading.debias == "both_orders")


def grade_label(cfg: Config) -> str:
    """The `prompt` field of the grade rows Table 1 reads: the template, or `calibrated:<name>`."""
    if cfg.grading.method == "calibrated":
        from ..lib.judge.calibrated import load_calibration

        return f"calibrated:{load_calibration(cfg.grading.judging(cfg.root).calibration).name}"
    return cfg.grading.prompt


def calibration_files(cfg: Config) -> list:
    """The calibration a calibrated judge reads (its fit is part of what the stage computes)."""
    if cfg.grading.method != "calibrated":
        return []
    from ..lib.judge.calibrated import calibration_path

    return [calibration_path(cfg.grading.judging(cfg.root).calibration)]


def relevance_prompts(cfg: Config, both_orders: bool) -> list[str]:
    """The prompt templates the relevance judge reads (fingerprinted with the stages that grade)."""
    if cfg.grading.method == "calibrated":
        from ..lib.judge.calibrated import load_calibration

        return load_calibration(cfg.grading.judging(cfg.root).calibration).templates()
    return [cfg.grading.prompt] + ([cfg.grading.prompt + "_swapped"] if both_orders else [])


STAGE = Stage(
    name="grade",
    doc="LLM relevance grades 0-3 of retrieved passages (Table 1)",
    home=lambda cfg: cfg.run_dir,
    outputs=lambda cfg: [*outputs(cfg), *gold_check.outputs(cfg)],
    build=build,
    after=("retrieve",),
    sections=lambda cfg: ["grading", "seed", "models.judge", "judge_check.min_pairs"] + gold_check.sections(cfg),
    # human labels placed in the run make the stage stale; re-running it answers every grade from
    # the call cache (no model loads) and adds the prediction-powered columns
    reads=lambda cfg: [
        rankings_path(cfg),
        chunks_path(cfg),
        questions_path(cfg),
        labels_dir(cfg) / names.HUMAN_LABELS,
        labels_dir(cfg) / names.HUMAN_LABELS_JSONL,
        labels_dir(cfg) / names.TO_LABEL,
        *calibration_files(cfg),
        *gold_check.reads(cfg),
    ],
    prompts=_prompts,
    models=lambda cfg: {"judge": cfg.models.judge.model},
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
