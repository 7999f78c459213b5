"""Stage 4, grade: the judge grades every distinct (question, passage) pair of the Table 1
lists 0–3; the stage writes Table 1, its CIs and paired tests, graded metrics and the judge
validity check."""
from __future__ import annotations

import json

from ..config import Config
from ..lib.io import write_dataframe, write_json, write_jsonl, write_text
from ..lib.judge_check import mean_of_orders
from ..lib.names import scale
from ..lib.relevance import (grade_lists, grade_pairs, graded_metrics, judge_validity, paired_tests, plan_pairs,
                             relevant_shares, select_questions, table1, table1_wide, table_systems)
from ..lib.sample import sample_size
from .base import Stage, execute
from .data import chunks_path, load_chunks, load_questions, load_rankings, questions_path, rankings_path


def outputs(cfg: Config):
    d = cfg.run_dir
    return [d / "table1_relevance.csv", d / "table1_relevance.md", d / "table1_relevance.tex", d / "grades.jsonl",
            d / "judge_validity.json", d / "grading" / "paired_tests.csv", d / "grading" / "graded_metrics.csv",
            d / "plots" / "grade_distribution.png", d / "grading" / "relevant_shares.csv", d / "grading" / "per_task.csv"]


def build(cfg: Config, out) -> dict:
    import time

    from ..lib.llm import open_llm

    t0 = time.perf_counter()
    chunks = load_chunks(cfg)
    chunks_by_id = {c.chunk_id: c for c in chunks}
    rankings = load_rankings(cfg)
    need = {s for _, _, s in table_systems(cfg)}
    if not need <= set(rankings):
        raise ValueError(f"grading needs retrieval systems {sorted(need)}; add them to retrieval.systems "
                         f"(have {sorted(rankings)})")
    all_q = [q for q in load_questions(cfg, chunks) if q["qid"] in rankings[next(iter(need))]]
    questions = select_questions(all_q, cfg.grading.max_questions, cfg.seed)
    pairs = plan_pairs(cfg, questions, rankings, chunks_by_id)
    llm = open_llm(cfg.models.judge, cfg.cache_dir)
    llm.stage = "grade"
    text_of = {cid: c.text for cid, c in chunks_by_id.items()}
    prompt, swapped_prompt = cfg.grading.prompt, cfg.grading.prompt + "_swapped"
    rows = grade_pairs(llm, pairs, text_of, template=prompt)
    is_validity = lambda p: any(x.startswith("validity") for x in p["purpose"])
    swapped, swapped_all, used = None, [], rows
    if cfg.grading.debias == "both_orders":  # every pair in both orders; the table uses their mean
        swapped_all = grade_pairs(llm, pairs, text_of, template=swapped_prompt)
        used = mean_of_orders(rows, swapped_all)
        swapped = [r for r in swapped_all if is_validity(r)] if cfg.grading.consistency_check else None
    elif cfg.grading.consistency_check:
        swapped = grade_pairs(llm, [p for p in pairs if is_validity(p)], text_of, template=swapped_prompt)
    llm.release()
    write_jsonl(out(outputs(cfg)[3]), rows + (swapped_all or swapped or []))
    summary = write_tables(cfg, questions, len(all_q), rankings, used, swapped, llm.identity.get("name"), out)
    return {**summary, "questions_available": len(all_q), "pairs_graded": len(rows),
            "missing_grades": sum(r["grade"] is None for r in rows), "debias": cfg.grading.debias,
            "llm": llm.stats.to_dict(), "model_identity": llm.identity,
            "wall_seconds_grading": round(time.perf_counter() - t0, 2)}


def write_tables(cfg: Config, questions: list[dict], n_available: int, rankings: dict, used: list[dict],
                 swapped, judge_name: str, out) -> dict:
    """Every table, test and plot of the stage from the grades (no model): Table 1 with its
    cluster-bootstrap CIs, the paired tests, relevant shares, graded metrics, per-task shares,
    judge validity. Called by the stage and by `spacelm report --recompute`."""
    from ..lib.plots import grade_distribution, per_task_panels

    csv, md, tex, _, validity_file, tests_file, metrics_file, plot, shares_file, per_task = outputs(cfg)
    cluster_of = {q["qid"]: q.get("source_chunk_id") or q["qid"] for q in questions}
    grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in used}
    cells = grade_lists(cfg, questions, rankings, grades)
    long = table1(cfg, cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of)
    write_dataframe(long, out(csv))
    run_scale = scale(len(questions))
    n = sample_size(questions)
    if any(q.get("task") for q in questions):
        tasks = grades_per_task(cells, questions)
        write_dataframe(tasks, out(per_task))
        per_task_panels(tasks, "pct_grade_3", "% of graded passages at grade 3", out(cfg.run_dir / "plots" /
                                                                                   "table1_per_task.png"))
    note = (f"\n{n.text()}; {len(questions)} of {n_available} questions ({run_scale}); judge {judge_name}; "
            "grades as % of graded passages; 95% CIs (two-stage cluster bootstrap: source chunks, then questions) "
            "in table1_relevance.csv.\n")
    write_text(out(md), table1_wide(long, "md") + note)
    write_text(out(tex), table1_wide(long, "tex"))
    validity = judge_validity(used, swapped, cfg.grading.auc_warning, cfg.models.judge.temperature,
                              cfg.judge_check.min_pairs)
    write_json(out(validity_file), validity)
    write_dataframe(paired_tests(cells, cfg, cluster_of), out(tests_file))
    write_dataframe(relevant_shares(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(shares_file))
    write_dataframe(graded_metrics(cfg, questions, rankings, grades), out(metrics_file))
    grade_distribution(long, out(plot))
    return {"questions": len(questions), "sample": n.to_dict(), "validity_auc": validity["auc"],
            "judge_verdict": validity["verdict"], "scale": run_scale}


def recompute(cfg: Config) -> dict:
    """`write_tables` from the run's stored grades.jsonl and rankings (no model): the questions
    from questions.jsonl when it is there, else each graded question with the source chunk its
    validity pair names (no task breakdown then)."""
    from ..lib.io import read_jsonl
    from ..lib.relevance import clusters_from_grades

    d = cfg.run_dir
    rows = read_jsonl(d / "grades.jsonl")
    first = [r for r in rows if r.get("prompt") == cfg.grading.prompt]
    second = [r for r in rows if r.get("prompt") == cfg.grading.prompt + "_swapped"]
    used, swapped = first, (second or None)
    if cfg.grading.debias == "both_orders" and second:
        used = mean_of_orders(first, second)
        swapped = [r for r in second if any(x.startswith("validity") for x in r["purpose"])] \
            if cfg.grading.consistency_check else None
    source = clusters_from_grades(first)
    known = {}
    if questions_path(cfg).is_file():
        known = {q["qid"]: q for q in read_jsonl(questions_path(cfg))}
    questions = [known.get(q) or {"qid": q, "source_chunk_id": c} for q, c in sorted(source.items())]
    manifest = json.loads((d / "manifest.json").read_text()) if (d / "manifest.json").is_file() else {}
    n_available = (manifest.get("stages", {}).get("grade", {}).get("questions_available")
                   or sum(1 for q in known.values() if q.get("kept") and q.get("answerable", True)) or len(questions))
    judge = manifest.get("models", {}).get("judge", {}).get("name")
    return write_tables(cfg, questions, n_available, load_rankings(cfg), used, swapped, judge or cfg.models.judge.model,
                        lambda p: p)


def grades_per_task(cells: dict, questions: list[dict]):
    """Per Table 1 cell and task: questions, graded passages, % graded 2-3 and % graded 3."""
    import pandas as pd

    task = {q["qid"]: q["task"] for q in questions}
    rows = []
    for (retriever, stage, k), per_q in cells.items():
        by_task: dict = {}
        for qid, grades in per_q.items():
            by_task.setdefault(task.get(qid), []).append([g for g in grades if g is not None])
        for t, lists in sorted(by_task.items(), key=lambda kv: str(kv[0])):
            flat = [g for lst in lists for g in lst]
            rows.append({"retriever": retriever, "stage": stage, "top_k": k, "task": t, "questions": len(lists),
                         "passages": len(flat),
                         "pct_grade_2_3": round(100 * sum(g >= 2 for g in flat) / len(flat), 2) if flat else None,
                         "pct_grade_3": round(100 * sum(g == 3 for g in flat) / len(flat), 2) if flat else None})
    return pd.DataFrame(rows)


def _prompts(cfg: Config) -> list[str]:
    both = cfg.grading.consistency_check or cfg.grading.debias == "both_orders"
    return [cfg.grading.prompt] + ([cfg.grading.prompt + "_swapped"] if both else [])


STAGE = Stage(
    name="grade", doc="LLM relevance grades 0-3 of retrieved passages (Table 1)",
    home=lambda cfg: cfg.run_dir, outputs=outputs, build=build, after=("retrieve",),
    sections=lambda cfg: ["grading", "seed", "models.judge", "judge_check.min_pairs"],
    reads=lambda cfg: [rankings_path(cfg), chunks_path(cfg), questions_path(cfg)],
    prompts=_prompts,
    models=lambda cfg: {"judge": cfg.models.judge.model},
    code=("spacelm.lib.llm.frontend", "spacelm.lib.relevance", "spacelm.lib.judging", "spacelm.lib.judge_check", "spacelm.lib.stats", "spacelm.lib.tables",
          "spacelm.lib.sample", "spacelm.stages.grade", "spacelm.stages.data"),
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
