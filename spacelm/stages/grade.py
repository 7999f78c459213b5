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
from ..runner.base import ModelTurns, Stage, execute
from ..runner.data import chunks_path, load_chunks, load_questions, load_rankings, questions_path, rankings_path
from . import gold_check
from .gold_check import judged


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
    screening: Path


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
        d / names.QUESTION_SCREENING,
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


def cell_pairs(cfg: Config, questions: list[dict], rankings: dict) -> dict:
    """{(retriever, stage, k): [(qid, chunk_id), ...]}: the pairs of every Table 1 cell."""
    from ..lib.judge.relevance import cell_ids

    return {
        cell: [(q, c) for q, ids in per_q.items() for c in ids]
        for cell, per_q in cell_ids(cfg.table_design(), questions, rankings).items()
    }


def reads_labels(cfg: Config) -> bool:
    """Whether Table 1 reads the assessor's labels (grading.instrument labels or both)."""
    return cfg.grading.instrument != "judge"


def label_grades(cfg: Config, questions: list[dict], rankings: dict) -> dict:
    """{(qid, chunk_id): the assessor's grade or None (a hole)} for every pair of Table 1's cells,
    from the label store (a label matches a chunk by document, span and text: lib/labels/store.py)."""
    from ..lib.labels.store import LabelStore, Span

    chunks = {c.chunk_id: c for c in load_chunks(cfg)}
    pairs = {p for cell in cell_pairs(cfg, questions, rankings).values() for p in cell}
    spans = {cid: Span.of_chunk(chunks[cid]) for _, cid in pairs if cid in chunks}
    question_of = {q["qid"]: q.get("question", "") for q in questions}
    return LabelStore(cfg.labels_dir).relevance_grades(pairs, question_of, spans)


def prediction_powered(cfg: Config, questions: list[dict], rankings: dict, grades: dict, labels: dict) -> tuple:
    """(Table 1 PPI rows, reranked - retrieved PPI rows) from the assessor's labels of the cells'
    pairs (`labels`: {(qid, chunk_id): grade or None}) and the judge's grades of every pair; empty
    estimates and n_human 0 without labels. Valid as PPI where the labelled pairs are a random
    sample of the cell; with labels on every pair the estimate is the labels' own share."""
    from ..lib.judge.ppi import ppi_differences, ppi_table1

    human = {p: g for p, g in labels.items() if g is not None}
    weights = dict.fromkeys(human, 1.0)
    cells = cell_pairs(cfg, questions, rankings)
    return ppi_table1(cells, grades, human, weights), ppi_differences(cells, grades, human, weights)


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
    pairs = plan_pairs(cfg.table_design(), judge_sample(cfg, chosen), rankings, chunks_by_id)
    if golden is not None:
        sample = gold_check.QuestionSet(judge_sample(cfg, golden.questions), golden.n_available, golden.rankings)
        pairs = gold_check.merge_pairs(pairs, gold_check.planned_pairs(cfg, sample, chunks_by_id))
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


def judge_sample(cfg: Config, questions: list[dict]) -> list[dict]:
    """The questions of a Table 1 set the embedded judge grades: `grading.judge_questions` of them
    (seeded, apart from the draws of Table 1's questions and of the deep ones), or all."""
    return select_questions(questions, cfg.grading.judge_questions, cfg.seed + 3)


def write_design(cfg: Config, result: Grades, out) -> None:
    """`grading/table1_questions.json`: each Table 1 question set's questions (with the source chunk
    each was written from) and those the judge graded, so that a reader of the grades (the labels'
    export, `report --recompute`) finds the questions the judge left to the labels."""
    sets = {"run": result.questions, **({"golden": result.golden.questions} if result.golden else {})}
    rows = {"run": result.rows, "golden": result.golden.rows if result.golden else []}
    write_json(
        out(cfg.run_dir / names.TABLE1_QUESTIONS),
        {
            name: {
                "questions": [{"qid": q["qid"], "source_chunk_id": q.get("source_chunk_id")} for q in qs],
                "judged": [q["qid"] for q in judged(qs, rows[name])],
            }
            for name, qs in sets.items()
        },
    )


def question_records(cfg: Config) -> dict:
    """{qid: question record} from the run's questions file ({} when there is none)."""
    from ..lib.io import read_jsonl

    return {q["qid"]: q for q in read_jsonl(questions_path(cfg))} if questions_path(cfg).is_file() else {}


def table1_questions(cfg: Config, first: list[dict], known: dict | None = None) -> list[dict]:
    """The run set's Table 1 questions: those `grading/table1_questions.json` lists, else (a run
    written before it) each question with a validity-source row in the grades; a question's record
    from `known` ({qid: question}; default: :func:`question_records`) when there, else its id and
    source chunk."""
    from ..lib.judge.relevance import clusters_from_grades

    known = question_records(cfg) if known is None else known

    p = cfg.run_dir / names.TABLE1_QUESTIONS
    if p.is_file():
        listed = json.loads(p.read_text())["run"]["questions"]
        source = {q["qid"]: q.get("source_chunk_id") for q in listed}
    else:
        source = clusters_from_grades(first)
    return [known.get(q) or {"qid": q, "source_chunk_id": c} for q, c in sorted(source.items())]


def write(cfg: Config, result: Grades, rankings: dict, judge_name: str, out) -> dict:
    """grades.jsonl, the Table 1 question sets and every table of the stage (see `write_tables`)."""
    write_jsonl(out(outputs(cfg).grades), result.rows + (result.swapped_all or result.swapped or []))
    write_design(cfg, result, out)
    summary = write_tables(
        cfg, result.questions, result.n_available, rankings, result.used, result.swapped, judge_name, out
    )
    run_set = gold_check.QuestionSet(result.questions, result.n_available, rankings, result.rows, result.used)
    return {**summary, **gold_check.write_all(cfg, run_set, result.golden, out, golden_label_tables(cfg))}


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
    from .question_screen import screened

    files = outputs(cfg)
    questions, screening = screened(cfg, questions)
    write_json(out(files.screening), screening or {"screened": 0, "questions": len(questions), "rejected_qids": []})
    cluster_of = clustering(questions, cfg.grading.cluster)
    design = cfg.table_design()
    grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in used}
    labelled_questions, questions = questions, judged(questions, used)  # the judge's tables: its sample
    cells = grade_lists(design, questions, rankings, grades)
    long = with_instrument(table1(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), "judge")
    labels: dict = {}
    if reads_labels(cfg):
        labels = label_grades(cfg, labelled_questions, rankings)
    ppi_rows, diffs = prediction_powered(cfg, questions, rankings, grades, labels)
    long = long.merge(pd.DataFrame(ppi_rows, columns=PPI_KEYS + PPI_COLUMNS), on=PPI_KEYS, how="left")
    shown = long
    if reads_labels(cfg):
        shown = write_label_tables(cfg, labelled_questions, rankings, labels, used, cluster_of, out)
        long = pd.concat([long, shown], ignore_index=True)
    write_dataframe(long, out(files.table_csv))
    write_dataframe(pd.DataFrame(diffs, columns=DIFF_COLUMNS), out(files.ppi_differences))
    read = labelled_questions if reads_labels(cfg) else questions  # the questions the shown table reads
    run_scale = scale(len(read))
    n = sample_size(read)
    if any(q.get("task") for q in questions):
        tasks = grades_per_task(cells, questions, cfg.grading.n_bootstrap, cfg.seed, cluster_of)
        write_dataframe(tasks, out(files.per_task))
        per_task_panels(
            tasks, "pct_grade_3", "% of graded passages at grade 3", out(cfg.run_dir / names.PLOT_TABLE1_PER_TASK)
        )
    graded_by = (
        f"judge {judge_name}, grades: {cfg.grading.judging(cfg.root).describe()}"
        if shown is long
        else "grades: the assessor's labels (labels/standing.json names the assessor and its standing; "
        f"the judge {judge_name} is measured against them in {names.JUDGE_VS_LABELS})"
    )
    note = (
        f"\n{n.text()}; {len(read)} of {n_available} questions ({run_scale}); {graded_by}; "
        f"grades as % of graded passages; 95% CIs (two-stage cluster bootstrap: {UNIT_NAMES[cluster_of.unit]}, "
        "then questions within them) "
        "in table1_relevance.csv.\n"
    )
    write_text(out(files.table_md), table1_wide(shown, "md") + note)
    write_text(out(files.table_tex), table1_wide(shown, "tex"))
    validity = judge_validity(
        used, swapped, cfg.grading.auc_warning, cfg.models.judge.temperature, cfg.judge_check.min_pairs
    )
    write_json(out(files.validity), validity)
    write_dataframe(with_holes(paired_tests(cells, design, cluster_of), cells), out(files.paired_tests))
    write_sensitivity(cfg, cells, questions, cluster_of, out(files.sensitivity))
    write_dataframe(
        feature_decomposition(cfg.table_design(), questions, rankings, used, cluster_of), out(files.decomposition)
    )
    write_dataframe(relevant_shares(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(files.relevant_shares))
    write_dataframe(graded_metrics(cfg.table_design(), questions, rankings, grades), out(files.graded_metrics))
    grade_distribution(shown, out(files.distribution_plot))
    write_judge_qrels(cfg, questions, used, out)
    return {
        "questions": len(read),
        "judged_questions": len(questions),
        "sample": n.to_dict(),
        "validity_auc": validity["auc"],
        "grading_method": cfg.grading.judging(cfg.root).describe(),
        "judge_verdict": validity["verdict"],
        "scale": run_scale,
    }


def with_instrument(long, instrument: str):
    """Table 1's long rows marked with the instrument that graded them: `judged` passages with a
    grade, `holes` without (a pair the judge failed to grade, or one the assessor has not labelled)."""
    long = long.copy()
    long["instrument"] = instrument
    long["judged"] = long["n"]
    long["holes"] = long["missing"]
    return long


def cells_compared(row: dict) -> list[tuple]:
    """The Table 1 cells a paired-test row compares."""
    from ..lib.judge.relevance import GAIN_CONTRAST

    c, r, k = row["comparison"], row["retriever"], int(row["top_k"])
    if c == "reranked - retrieved":
        return [(r, "retrieved", k), (r, "reranked", k)]
    if c == "dense - bm25":
        return [("bm25", "retrieved", k), ("dense", "retrieved", k)]
    if c == "dense+rerank - bm25+rerank":
        return [("bm25", "reranked", k), ("dense", "reranked", k)]
    if c == GAIN_CONTRAST:
        return [(r, stage, kk) for kk in (3, 10) for stage in ("retrieved", "reranked")]
    return []


def with_holes(tests, cells: dict):
    """Paired-test rows with `holes`: the passages without a grade in the cells each row compares."""
    holes = {cell: sum(g is None for lst in per_q.values() for g in lst) for cell, per_q in cells.items()}
    tests = tests.copy()
    tests["holes"] = [sum(holes.get(c, 0) for c in cells_compared(r)) for r in tests.to_dict("records")]
    return tests


def golden_label_tables(cfg: Config):
    """The writer of the golden set's tables through the assessor's labels (`grading/golden/labels/`:
    Table 1, paired tests with their holes, relevant shares), or None when Table 1 reads no labels."""
    if not reads_labels(cfg):
        return None

    def write_tables(gs: gold_check.QuestionSet, out) -> None:
        labels = label_grades(cfg, gs.questions, gs.rankings)
        cluster_of = clustering(gs.questions, cfg.grading.cluster)
        tests, shares = names.GOLDEN_LABEL_PAIRED_TESTS, names.GOLDEN_LABEL_RELEVANT_SHARES
        long = labelled_table1(cfg, gs.questions, gs.rankings, labels, cluster_of, out, tests, shares)
        write_dataframe(long, out(cfg.run_dir / names.GOLDEN_LABEL_TABLE1))

    return write_tables


def labelled_table1(cfg: Config, questions, rankings, labels: dict, cluster_of, out, tests: str, shares: str):
    """Table 1's long rows through the assessor's labels (returned), with its paired tests (and their
    holes) and relevant shares written to `tests` and `shares` (paths in the run folder)."""
    design, d = cfg.table_design(), cfg.run_dir
    cells = grade_lists(design, questions, rankings, labels)
    write_dataframe(with_holes(paired_tests(cells, design, cluster_of), cells), out(d / tests))
    write_dataframe(relevant_shares(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(d / shares))
    return with_instrument(table1(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), "labels")


def write_label_tables(cfg: Config, questions, rankings, labels: dict, used: list[dict], cluster_of, out):
    """Table 1 through the assessor's labels: its long rows (returned, instrument "labels"), its
    paired tests and relevant shares (grading/labels/), and the judge measured against the labels
    on the same pairs (judge_vs_labels.json): κ per boundary, AUC, and its bias between systems."""
    from ..lib.judge.relevance import cell_ids
    from ..lib.judge.validity import boundary_agreement, system_bias

    d, design = cfg.run_dir, cfg.table_design()
    long = labelled_table1(
        cfg, questions, rankings, labels, cluster_of, out, names.LABEL_PAIRED_TESTS, names.LABEL_RELEVANT_SHARES
    )
    judge = {(r["qid"], r["chunk_id"]): r for r in used if r.get("grade") is not None}
    both = [
        {"qid": q, "chunk_id": c, "label": g, "grade": judge[(q, c)]["grade"], "score": judge[(q, c)].get("score")}
        for (q, c), g in sorted(labels.items())
        if g is not None and (q, c) in judge
    ]
    retrieved_by: dict = {}
    for (r, stage, _k), per_q in cell_ids(design, questions, rankings).items():
        name = r if stage == "retrieved" else f"{r}+rerank"
        retrieved_by.setdefault(name, set()).update((q, c) for q, ids in per_q.items() for c in ids)
    result = {
        "instrument": "the embedded judge measured against the assessor's labels on the same Table 1 pairs",
        "n_pairs": len(both),
        "n_labelled": sum(g is not None for g in labels.values()),
        "n_pairs_in_cells": len(labels),
        "agreement": boundary_agreement(both, cfg.grading.n_bootstrap, cfg.seed, graded=True) if both else None,
        "system_bias": system_bias(both, retrieved_by, cfg.grading.n_bootstrap, cfg.seed, True) if both else None,
    }
    write_json(out(d / names.JUDGE_VS_LABELS), result)
    return long


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

    if not (cfg.run_dir / names.GRADES).is_file() or not rankings_path(cfg).is_file():
        return None
    first, used, _ = stored_grades(cfg)
    if not first:  # graded under another grader label than the config names now: its one first-order label
        rows = read_jsonl(cfg.run_dir / names.GRADES)
        labels = {r.get("prompt") for r in rows if not str(r.get("prompt")).endswith("_swapped")}
        first = used = [r for r in rows if r.get("prompt") in labels] if len(labels) == 1 else []
    questions = judged(table1_questions(cfg, first), used)
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

    d = cfg.run_dir
    first, used, swapped = stored_grades(cfg)
    known = question_records(cfg)
    questions = table1_questions(cfg, first, known)
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
    return {**summary, **gold_check.recompute(cfg, run_set, grade_label(cfg), golden_label_tables(cfg))}


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


def label_files(cfg: Config) -> list:
    """The label store's question screens (a screened-out question leaves Table 1) and, when Table 1
    reads labels, its relevance labels and the run's standing."""
    from ..lib.labels.store import FILES, RELEVANCE, SCREENING

    screens = [cfg.labels_dir / FILES[SCREENING]]
    if not reads_labels(cfg):
        return screens
    return [*screens, cfg.labels_dir / FILES[RELEVANCE], cfg.run_dir / "labels" / "standing.json"]


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
        *label_files(cfg),
        *calibration_files(cfg),
        *gold_check.reads(cfg),
    ],
    prompts=_prompts,
    models=lambda cfg: {"judge": cfg.models.judge.model},
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
