"""Stage 5, answer: answers under injected noise judged 1–5 (the paper's Table 2), citations,
refusals, binary judges, and pipelines A/B/C. The generator's phase (answers, then the
verification rewrites) runs and releases its model before the judge's phase starts, so one
model is in memory at a time."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..config import Config
from ..lib import names
from ..lib.answer.answerability import COLUMNS as ANSWERABILITY_COLUMNS
from ..lib.answer.answerability import agreement, answerability_row, refusal_metrics, threshold_sweep
from ..lib.answer.answers import (
    JUDGE_STYLE,
    asks_verdict,
    build_items,
    cannot_answer,
    fact_check,
    fact_check_summary,
    fact_check_table,
    generate,
    is_refusal,
    judge_answers,
    judge_refusal,
    pipelines_table,
    refusal_rates,
    score_verdict,
    settings,
    table2,
    table2_per_task,
    table2_tests,
    table2_wide,
    unanswerable_items,
    verify,
)
from ..lib.answer.citations import citation_check
from ..lib.answer.claims import claim_table, judge_claims
from ..lib.answer.gate import REFUSAL_TEXT, gated_answer
from ..lib.answer.measures import MEASURE_COLUMNS, answer_measures, claim_support, measure_table
from ..lib.io import write_dataframe, write_json, write_jsonl, write_text
from ..lib.judge.relevance import clustering, select_questions
from ..lib.names import scale
from ..lib.sample import sample_size
from ..runner.base import ModelTurns, Stage, execute
from ..runner.data import chunks_path, load_chunks, load_questions, load_rankings, questions_path, rankings_path


class AnswerFiles(NamedTuple):
    """Every file the answer stage writes, by name (in the order the stamp lists them)."""

    table_csv: Path
    table_md: Path
    table_tex: Path
    answers: Path
    pipelines: Path
    checks: Path
    scores_plot: Path
    noise_plot: Path
    answerability: Path
    answerability_sweep: Path
    claims: Path
    claims_csv: Path
    refusal_sweep_plot: Path
    tests: Path
    per_task: Path
    fact_checks: Path
    measures: Path


CLAIM_COLUMNS = [
    "setting",
    "pipeline",
    "n_answers",
    "n_claims",
    "n_citations",
    *(
        f"{m}{s}"
        for m in ("claim_faithfulness", "citation_precision", "citation_recall")
        for s in ("", "_ci_low", "_ci_high")
    ),
    "group",
]


def outputs(cfg: Config) -> AnswerFiles:
    d = cfg.run_dir
    return AnswerFiles(
        d / names.TABLE2,
        d / names.TABLE2_MD,
        d / names.TABLE2_TEX,
        d / names.ANSWERS,
        d / names.PIPELINES_TABLE,
        d / names.ANSWER_CHECKS,
        d / names.PLOT_ANSWER_SCORES,
        d / names.PLOT_NOISE,
        d / names.ANSWERABILITY,
        d / names.ANSWERABILITY_SWEEP,
        d / names.CLAIM_ROWS,
        d / names.CLAIMS,
        d / names.PLOT_REFUSAL_SWEEP,
        d / names.TABLE2_TESTS,
        d / names.TABLE2_PER_TASK,
        d / names.FACT_CHECK_VERDICTS,
        d / names.ANSWER_MEASURES,
    )


@dataclass
class Answers:
    """What the answer stage computes: every scored answer (`items`), the judged claims, the
    questions answered (of `n_available`), the unanswerable questions asked, and how many
    reference answers were written."""

    items: list[dict]
    claim_rows: list[dict]
    questions: list[dict]
    n_available: int
    unanswerable: list[dict]
    references_written: int


# how Table 2's note names the score (answer.scoring)
SCORED_BY = {
    "digit": "scored by the digit the judge picks",
    "expected": "scored by the judge's expected score (1-5 weighted by its probability of each digit)",
}


def compute(cfg: Config, chunks: list, questions: list[dict], unanswerable: list[dict], rankings: dict, models):
    """Answer the selected questions under every setting and pipeline with the generator, then
    have the judge score them (`models`: one model in memory at a time)."""
    from ..config import ConfigError
    from .question_screen import screened

    text_of = {c.chunk_id: c.text for c in chunks}
    # a question the assessor screened out (unanswerable from its passage, a false premise) is not
    # answered: the store's screening labels are read before the draw
    questions, _ = screened(cfg, questions)
    chosen = select_questions(questions, cfg.answer.max_questions, cfg.seed)
    una = (
        []
        if cfg.answer.max_unanswerable == 0
        else select_questions(unanswerable, cfg.answer.max_unanswerable, cfg.seed)
    )
    ranked = rankings.get(cfg.answer.retriever)
    if ranked is None and (una or any(p != "A" for p in cfg.answer.pipelines)):
        raise ConfigError(f"answer.retriever {cfg.answer.retriever!r} is not among retrieval.systems")
    if una and "B" not in cfg.answer.pipelines:
        una = []  # the refusal evaluation runs pipeline B
    design = cfg.answer_design()
    items = build_items(design, chosen, chunks, ranked) + unanswerable_items(design, una, ranked)
    if cfg.answer.gate.enabled:  # the gate reads the passages before any generator call
        models.gate(items, text_of)
    # phase 1: the generator
    models.use("generator", lambda llm: generate(llm, items, text_of, design), "answers")
    c_items = [it for it in items if it["pipeline"] == "C"]
    for it in c_items:
        it["draft_answer"] = it["answer"]
    if c_items:
        models.use("generator", lambda llm: verify(llm, c_items, text_of, design), "verification rewrites")
    models.release()
    n_refs = write_references(cfg, models, items, {c.chunk_id: c for c in chunks})
    known = set(text_of)
    for it in items:
        it["citation"] = citation_check(it["answer"], it["passage_ids"], known)
        it["refusal"] = is_refusal(it["answer"])
        answer_measures(it, text_of, is_refusal)  # refused_phrase, leakage, citation_support
        if asks_verdict(it):  # the verdict it begins with, against the question's label
            score_verdict(it)
        if "gate" in it and it["pipeline"] in ("B", "C"):  # what the gated pipeline would have returned
            it["gated_answer"] = gated_answer(it["answer"], it["gate"])
            it["gated_refusal"] = is_refusal(it["gated_answer"])
    # phase 2: the judge (sharing the writer's engine when their settings are equal), on the
    # answers of its sample of questions (answer.judge_questions; the assessor scores them all)
    judged = judged_qids(cfg, chosen, una)
    for it in items:
        it["judged"] = judged is None or it["qid"] in judged
    every, items = items, [it for it in items if it["judged"]]
    judge = lambda phase, fn: models.use("judge", fn, phase)
    gated = [it for it in items if it["setting"] == "unanswerable" and not it.get("gate", {}).get("passed", True)]
    gated_refusals = [dict(it, answer=REFUSAL_TEXT, scores={}, expected_scores={}, raw_judge={}) for it in gated]
    binary = [it for it in items if it["pipeline"] != "table2" and it["answerable"]] if cfg.answer.binary_judges else []
    # one batch: every judge call on one answer runs back to back, sharing the answer's prefix
    scoring = cfg.answer.scoring
    judge("answer judges", lambda llm: judge_answers(llm, items, binary, text_of, scoring=scoring))
    judge("rubric scores, gated refusals", lambda llm: judge_answers(llm, gated_refusals, [], text_of, scoring=scoring))
    for g, it in zip(gated_refusals, gated):
        it["gated_scores"] = g["scores"]
    for it in every:  # deterministic: the reference's numbers and named entities
        if it.get("reference_answer"):
            it["fact_check"] = fact_check(it["answer"], it["reference_answer"])
    if cfg.answer.refusal_judge:
        judge("refusal judge", lambda llm: judge_refusal(llm, [it for it in items if cannot_answer(it)]))
    claim_rows = []
    if cfg.answer.claims:
        written = models.as_written(claim_items(cfg, items))
        claim_rows = judge("claim support", lambda llm: judge_claims(llm, written, text_of, JUDGE_STYLE))
    models.release()
    for it in every:
        it["claim_support"] = claim_support(it)
    return Answers(every, claim_rows, chosen, len(questions), una, n_refs)


def judged_qids(cfg: Config, chosen: list[dict], una: list[dict]) -> set | None:
    """The questions whose answers the embedded judges score: `answer.judge_questions` of the
    answered ones and the unanswerable ones in the same proportion, each drawn seeded apart from the
    questions' own draw (None: every question)."""
    k = cfg.answer.judge_questions
    if k is None or k >= len(chosen):
        return None
    k_una = round(k * len(una) / len(chosen)) if chosen else 0
    drawn = select_questions(chosen, k, cfg.seed + 3) + select_questions(una, k_una, cfg.seed + 3)
    return {q["qid"] for q in drawn}


def build(cfg: Config, out) -> dict:
    t0 = time.perf_counter()
    chunks = load_chunks(cfg)
    models = ModelTurns(cfg, "answer")
    result = compute(
        cfg,
        chunks,
        load_questions(cfg, chunks),
        load_questions(cfg, chunks, answerable=False),
        load_rankings(cfg),
        models,
    )
    gen, judge = models.identity.get("generator", {}), models.identity.get("judge", {})
    summary = write_tables(
        cfg,
        result.items,
        result.claim_rows,
        result.questions,
        result.n_available,
        gen.get("name"),
        judge.get("name"),
        out,
    )
    return {
        **summary,
        "unanswerable_questions": len(result.unanswerable),
        "answers": len(result.items),
        "reference_answers_written": result.references_written,
        "llm_writer": models.stats.get("question_writer"),
        "llm_generator": models.stats.get("generator"),
        "llm_judge": models.stats.get("judge"),
        "model_identity": {"generator": gen, "judge": judge},
        "wall_seconds_answer": round(time.perf_counter() - t0, 2),
    }


def write_tables(
    cfg: Config,
    items: list[dict],
    claim_rows: list[dict],
    questions: list[dict],
    n_available: int,
    generator_name: str,
    judge_name: str,
    out,
) -> dict:
    """Every table, check and plot of the stage from the scored answers (no model): Table 2 and
    its tests, per-task means, pipelines, answerability and its sweep, claims, fact-check verdicts.
    Called by the stage and by `spacelm report --recompute`."""
    import pandas as pd

    from ..lib.report.plots import noise_curve, per_task_panels, refusal_sweep, score_distributions

    setting_names = [s["name"] for s in settings(cfg.answer_design())]
    every, items = items, [it for it in items if it.get("judged", True)]  # the judges' tables: their sample
    long = with_instrument(table2(items, setting_names, cfg.answer.n_bootstrap, cfg.seed), "judge")
    shown = long  # the rows the page's table and plot show: the instrument the verdicts read
    files = outputs(cfg)
    cl = clustering(questions, cfg.grading.cluster)
    by_unit = {q: cl.label(q) for q in cl.chunk_of}
    if cfg.answer.instrument != "judge":
        from .labels import answer_label_items, judges_vs_labels, negative_passages

        labelled = answer_label_items(cfg, every)
        shown = with_instrument(table2(labelled, setting_names, cfg.answer.n_bootstrap, cfg.seed), "labels")
        long = pd.concat([long, shown], ignore_index=True)
        ltests = table2_tests(labelled, setting_names, cfg.answer.n_bootstrap, cfg.seed, by_unit, cl.unit)
        write_dataframe(with_answer_holes(ltests, labelled), out(cfg.run_dir / names.LABEL_TABLE2_TESTS))
        write_json(out(cfg.run_dir / names.ANSWER_JUDGES_VS_LABELS), judges_vs_labels(every, labelled))
        write_json(out(cfg.run_dir / names.NEGATIVE_PASSAGES), negative_passages(cfg, every))
    write_dataframe(long, out(files.table_csv))
    n = sample_size(questions)
    per_task = table2_per_task(items)
    write_dataframe(per_task, out(files.per_task))
    if len(per_task) and "faithfulness" in per_task:
        per_task_panels(
            per_task,
            "faithfulness",
            "mean faithfulness (1-5)",
            out(cfg.run_dir / names.PLOT_TABLE2_PER_TASK),
            group="setting",
        )
    tests = table2_tests(items, setting_names, cfg.answer.n_bootstrap, cfg.seed, by_unit, cl.unit)
    write_dataframe(tests, out(files.tests))
    # the deterministic measures and refusals read every answer, judged or not
    write_dataframe(pd.DataFrame(measure_table(every), columns=MEASURE_COLUMNS), out(files.measures))
    run_scale = scale(len(questions))
    write_text(
        out(files.table_md),
        table2_wide(shown, setting_names, "md")
        + f"\n{n.text()}; {len(questions)} of {n_available} questions ({run_scale}); generator {generator_name}, "
        + (
            f"judge {judge_name}; {SCORED_BY[cfg.answer.scoring]}"
            if shown is long
            else "scores: the assessor's labels (labels/standing.json names the assessor)"
        )
        + "; mean ± SD (n); 95% CIs (cluster-robust t over "
        "source chunks) in "
        "table2_answer_quality.csv.\n",
    )
    write_text(out(files.table_tex), table2_wide(shown, setting_names, "tex"))
    from .browse import text_policy

    if not text_policy(cfg)[0]:  # the gate's evidence is a sentence quoted from a passage
        every = [
            dict(it, gate=dict(it["gate"], evidence=None)) if isinstance(it.get("gate"), dict) else it for it in every
        ]
    write_jsonl(out(files.answers), every)
    write_dataframe(pipelines_table(items, cfg.answer.n_bootstrap, cfg.seed), out(files.pipelines))
    # refusals on answerable and unanswerable questions, gate off and on
    b_items = [it for it in every if it["pipeline"] == "B" and it["setting"] in ("retrieved", "unanswerable")]
    ans_rows, sweep = answerability(cfg, b_items)
    write_dataframe(
        pd.DataFrame(ans_rows).reindex(columns=list(dict.fromkeys(ANSWERABILITY_COLUMNS + list(ans_rows[0])))),
        out(files.answerability),
    )
    # its columns even when there is no sweep (the gate off): the notebook and a reader still parse it
    sweep_columns = ["threshold", *refusal_metrics([])]
    write_dataframe(pd.DataFrame(sweep, columns=sweep_columns), out(files.answerability_sweep))
    points = {
        f"gate {r['gate']}": (
            r["false_refusal_rate"],
            r["refusal_recall"],
            (r["false_refusal_rate_ci_low"], r["false_refusal_rate_ci_high"]),
            (r["refusal_recall_ci_low"], r["refusal_recall_ci_high"]),
        )
        for r in ans_rows
    }
    refusal_sweep(
        sweep,
        points,
        sum(it["answerable"] for it in b_items),
        sum(not it["answerable"] for it in b_items),
        out(files.refusal_sweep_plot),
    )
    write_jsonl(out(files.claims), claim_rows)
    claim_tab = [
        dict(r, group="setting")
        for r in claim_table(
            [it for it in items if it["pipeline"] == "table2"], "setting", cfg.answer.n_bootstrap, cfg.seed
        )
    ] + [
        dict(r, group="pipeline")
        for r in claim_table(
            [it for it in items if it["pipeline"] != "table2" and it["answerable"]],
            "pipeline",
            cfg.answer.n_bootstrap,
            cfg.seed,
        )
    ]
    # no answer with claims still writes the header, so pandas.read_csv reads an empty table
    write_dataframe(
        pd.DataFrame(claim_tab) if claim_tab else pd.DataFrame(columns=CLAIM_COLUMNS), out(files.claims_csv)
    )
    verdicts = fact_check_table(every)
    write_dataframe(verdicts, out(files.fact_checks))
    refusals = refusal_rates(items)
    neg = [
        it
        for it in items
        if it["pipeline"] == "table2"
        and "negative_rejection" in it["rubrics"]
        and it["scores"].get("negative_rejection") is not None
    ]
    agree = [(it["scores"]["negative_rejection"] >= 4) == it["refusal"] for it in neg]
    t2 = [it for it in items if it["pipeline"] == "table2"]

    def cite_acc(s):
        v = [
            it["citation"]["citation_accuracy"]
            for it in t2
            if it["setting"] == s and it["citation"]["citation_accuracy"] is not None
        ]
        return round(float(np.mean(v)), 3) if v else None

    with_ctx = [it for it in items if it["passage_ids"] and it["answerable"]]
    checks = {
        "refusal_rate_by_setting": {
            s: round(float(np.mean([it["refusal"] for it in t2 if it["setting"] == s])), 3)
            for s in setting_names
            if any(it["setting"] == s for it in t2)
        },
        "citation_accuracy_by_setting": {s: cite_acc(s) for s in setting_names},
        "citation_style": cfg.answer.citations,
        "answers_with_valid_citation": round(float(np.mean([it["citation"]["n_valid"] > 0 for it in with_ctx])), 3)
        if with_ctx
        else None,
        "answers_with_context": len(with_ctx),
        "judge_vs_regex_refusal_agreement": round(float(np.mean(agree)), 3) if agree else None,
        "judge_vs_regex_refusal_pairs": len(agree),
        # negative rejection first as a refusal rate: the phrase check and the refusal judge, and
        # their agreement; the 1-5 rubric's mean beside (read it only where it passes its controls)
        "refusals_where_passages_cannot_answer": refusals,
        "missing_scores": sum(1 for it in items for r in it["rubrics"] if it["scores"].get(r) is None),
        "claims_judged": len(claim_rows),
        "claims_unreadable": sum(r["supported"] is None for r in claim_rows),
    }
    write_json(out(files.checks), checks)
    score_distributions(shown, out(files.scores_plot))
    noise_curve(items, settings(cfg.answer_design()), out(files.noise_plot), cfg.answer.n_bootstrap, cfg.seed)
    return {
        "questions": len(questions),
        "sample": n.to_dict(),
        "scale": run_scale,
        **checks,
        "fact_check_verdicts": fact_check_summary(verdicts),
        "answerability": {r["gate"]: {k: r[k] for k in ("refusal_recall", "false_refusal_rate")} for r in ans_rows},
    }


def recompute(cfg: Config) -> dict:
    """`write_tables` from the run's stored answers.jsonl and claims.jsonl (no model); the
    questions are those the answers name (from questions.jsonl when it is there)."""
    import json

    from ..lib.io import read_jsonl

    d = cfg.run_dir
    items = read_jsonl(d / names.ANSWERS)
    claim_rows = read_jsonl(d / names.CLAIM_ROWS) if (d / names.CLAIM_ROWS).is_file() else []
    known = {q["qid"]: q for q in read_jsonl(questions_path(cfg))} if questions_path(cfg).is_file() else {}
    seen = {}
    for it in items:
        if it["pipeline"] == "table2" and it["answerable"]:
            seen.setdefault(
                it["qid"],
                known.get(it["qid"])
                or {"qid": it["qid"], "task": it["task"], "source_chunk_id": it.get("source_chunk_id")},
            )
    ids = json.loads((d / names.MANIFEST).read_text()).get("models", {}) if (d / names.MANIFEST).is_file() else {}
    name = lambda role: (
        (ids.get("answer", {}).get(role) or ids.get(role) or {}).get("name") or getattr(cfg.models, role).model
    )
    n_available = sum(1 for q in known.values() if q.get("kept") and q.get("answerable", True)) or len(seen)
    return write_tables(
        cfg, items, claim_rows, list(seen.values()), n_available, name("generator"), name("judge"), lambda p: p
    )


def with_instrument(long, instrument: str):
    """Table 2's long rows marked with the instrument that scored them: `judged` answers with a
    score, `holes` without (a judge's failed call, or an answer the assessor has not scored)."""
    long = long.copy()
    long["instrument"] = instrument
    if len(long):
        long["judged"] = long["n"]
        long["holes"] = long["missing"]
    return long


def with_answer_holes(tests, items: list[dict]):
    """Table 2 test rows with `holes`: the answers of the two compared settings without a score."""
    tests = tests.copy()
    holes = []
    for r in tests.to_dict("records"):
        holes.append(
            sum(
                1
                for it in items
                if it["pipeline"] == "table2"
                and it["setting"] in (r["setting_a"], r["setting_b"])
                and r["metric"] in (it.get("rubrics") or [])
                and it["scores"].get(r["metric"]) is None
            )
        )
    tests["holes"] = holes
    return tests


def checks_tables(checks: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """answer_checks.json as three tables a reader can scan: one row per setting (refusal rate and
    citation accuracy), one row per run-wide check (name, value), and the refusals where the
    passages cannot answer (one row per setting)."""
    refusal, cited = checks.get("refusal_rate_by_setting") or {}, checks.get("citation_accuracy_by_setting") or {}
    by_setting = [
        {"setting": s, "refusal rate": refusal.get(s), "citation accuracy": cited.get(s)}
        for s in dict.fromkeys([*refusal, *cited])
    ]
    nested = ("refusal_rate_by_setting", "citation_accuracy_by_setting", "refusals_where_passages_cannot_answer")
    run_wide = [{"check": k.replace("_", " "), "value": v} for k, v in checks.items() if k not in nested]
    return by_setting, run_wide, list(checks.get("refusals_where_passages_cannot_answer") or [])


def claim_items(cfg: Config, items: list[dict]) -> list[dict]:
    """The answers whose claims are judged: answerable, with passages, and in the pipelines
    only when `answer.claims_scope` is "pipelines"."""
    return [
        it
        for it in items
        if it["answerable"] and it["passage_ids"] and (cfg.answer.claims_scope == "all" or it["pipeline"] != "table2")
    ]


def references_needed(cfg: Config, items: list[dict], chunks_by_id: dict) -> list[dict]:
    """One record per answerable question the pipelines answer that has no reference answer
    from synth (when `answer.reference_answers`), for `add_reference_answers` to fill."""
    if not cfg.answer.reference_answers:
        return []
    need = {
        it["qid"]: it
        for it in items
        if it["pipeline"] != "table2"
        and it["answerable"]
        and not it.get("reference_answer")
        and it.get("source_chunk_id") in chunks_by_id
    }
    return [{"qid": q, "question": it["question"], "source_chunk_id": it["source_chunk_id"]} for q, it in need.items()]


def write_references(cfg: Config, turns: ModelTurns, items: list[dict], chunks_by_id: dict) -> int:
    """Reference answers for `references_needed`, written by the question writer from the source
    passage as synth would; returns how many were written."""
    from ..lib.synth.questions import add_reference_answers

    recs = references_needed(cfg, items, chunks_by_id)
    if not recs:
        return 0
    turns.use(
        "question_writer",
        lambda llm: add_reference_answers(cfg.question_writing(), llm, recs, chunks_by_id),
        "reference answers",
    )
    ref = {r["qid"]: r["answer"] for r in recs}
    for it in items:
        if it["qid"] in ref and not it.get("reference_answer"):
            it["reference_answer"] = ref[it["qid"]]
    return len(recs)


def answerability(cfg: Config, b_items: list[dict]) -> tuple[list[dict], list[dict]]:
    """answerability.csv rows (gate off, and on when the gate is enabled) with the judge's
    negative-rejection verdict beside the phrase check, and the threshold sweep."""
    n_boot, seed = cfg.answer.n_bootstrap, cfg.seed
    una = [it for it in b_items if not it["answerable"]]
    conditions = [("off", "refusal", lambda it: it["scores"].get("negative_rejection"))]
    if cfg.answer.gate.enabled:
        conditions.append(
            ("on", "gated_refusal", lambda it: it.get("gated_scores", it["scores"]).get("negative_rejection"))
        )
    rows = []
    for name, key, judged in conditions:
        row = answerability_row(
            name,
            [
                {"answerable": it["answerable"], "refused": it[key], "source_chunk_id": it.get("source_chunk_id")}
                for it in b_items
            ],
            n_boot,
            seed,
        )
        scores = [judged(it) for it in una]
        ag = agreement([None if s is None else s >= 4 for s in scores], [it[key] for it in una])
        got = [s for s in scores if s is not None]
        row.update(
            judge_refusal_recall=round(float(np.mean([s >= 4 for s in got])), 3) if got else None,
            n_judged=ag["n"],
            judge_phrase_agreement=ag["agreement"],
            judge_phrase_kappa=ag["kappa"],
        )
        rows.append(row)
    sweep = []
    if cfg.answer.gate.enabled:
        steps = cfg.answer.gate.sweep_steps
        sweep = threshold_sweep(
            [
                {"answerable": it["answerable"], "generator_refused": it["refusal"], "score": it["gate"]["score"]}
                for it in b_items
                if "gate" in it
            ],
            [i / (steps - 1) for i in range(steps)],
        )
    return rows, sweep


def _prompts(cfg: Config) -> list[str]:
    p = []
    if "A" in cfg.answer.pipelines:
        p.append("answer_closed_book")
    ids = "" if cfg.answer.citations == "numbered" else "_ids"  # answers from passages (answer_prompt)
    p += [f"answer{ids}", f"answer_fact_check{ids}"]
    if "C" in cfg.answer.pipelines:
        p.append("verify_rewrite")
    if cfg.answer.reference_answers:
        p.append("reference_answer")
    p += ["judge_answer", "judge_faithfulness", "judge_relevance", "judge_noise_robustness", "judge_negative_rejection"]
    if cfg.answer.binary_judges:
        p += ["judge_binary", "judge_binary_reference"]
    if cfg.answer.refusal_judge:
        p += ["judge_refusal", "judge_refusal_mirrored"]
    if cfg.answer.claims:
        p += ["judge_claim_support", "judge_claim_support_mirrored"]
    return p


def _sections(cfg: Config) -> list[str]:
    return (
        ["answer", "seed", "models.generator", "models.judge", "grading.cluster"]
        + (["retrieval.dense"] if cfg.answer.gate.enabled else [])
        + (["models.question_writer"] if cfg.answer.reference_answers else [])
    )


def _models(cfg: Config) -> dict:
    m = {"generator": cfg.models.generator.model, "judge": cfg.models.judge.model}
    if cfg.answer.reference_answers:
        m["question_writer"] = cfg.models.question_writer.model
    if cfg.answer.gate.enabled:
        m["dense"] = cfg.retrieval.dense.model
    return m


STAGE = Stage(
    name="answer",
    doc="answer quality under noise (Table 2) and pipelines A/B/C",
    home=lambda cfg: cfg.run_dir,
    outputs=outputs,
    build=build,
    after=("retrieve",),
    sections=_sections,
    reads=lambda cfg: [rankings_path(cfg), chunks_path(cfg), questions_path(cfg)],
    prompts=_prompts,
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
