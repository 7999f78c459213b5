"""Stage judge-check: measure the judge before its tables are read. With the same prompt,
backend and settings as Table 1 it grades a sample of human-labelled pairs from every
configured source (and, in domain, golden-sample passages against hard negatives); it scores
known-answer controls for every Table 2 rubric and binary judge; and it measures position
bias. Writes `results/<run>/judge_check/`: `relevance.json` (one object per source, with its
verdict), `pairs.jsonl`, `controls.csv`, `controls.jsonl` and a confusion plot per source.

A source folder that is missing (the suite's own checks read evaluation data kept outside the
project, `../shared/`) is reported as not run, with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_json, write_jsonl
from .base import ModelTurns, Stage, display_path, execute
from .data import chunks_path, golden_path, load_chunks, load_questions, questions_path
from .grade import calibration_files

RELEVANCE_KEYS = (
    "n_pairs",
    "auc",
    "auc_ci",
    "kappa_binary",
    "kappa_binary_ci",
    "kappa_weighted",
    "kappa_weighted_ci",
    "accuracy",
    "accuracy_ci",
    "confusion",
)


def folder(cfg: Config) -> Path:
    return cfg.run_dir / names.JUDGE_CHECK


class JudgeCheckFiles(NamedTuple):
    """Every file the judge-check stage writes, by name (in the order the stamp lists them)."""

    relevance: Path
    pairs: Path
    controls_csv: Path
    controls: Path
    plots: Path


def outputs(cfg: Config) -> JudgeCheckFiles:
    d = cfg.run_dir
    return JudgeCheckFiles(
        d / names.JUDGE_RELEVANCE,
        d / names.JUDGE_PAIRS,
        d / names.JUDGE_CONTROLS,
        d / names.JUDGE_CONTROLS_ROWS,
        d / names.JUDGE_CHECK_PLOTS,
    )


def _source_files(cfg: Config) -> list[Path]:
    from ..lib.retrieval.beir import qrels_file

    files = []
    for src in cfg.judge_check.sources:
        d = cfg.path(src.path)
        files += [d / "corpus.jsonl", d / "queries.jsonl", qrels_file(d, src.split)] if d.is_dir() else [d]
        files += sorted(reference_folder(cfg, src).glob("*.qrels.txt"))
    return files


def _not_run(name: str, path: str, why: str) -> dict:
    return {
        "source": name,
        "path": path,
        "run": False,
        "why": why,
        "verdict": "not run",
        **{k: None for k in RELEVANCE_KEYS},
        "reference_judges": [],
    }


def bias_sample(pairs: list[dict], n_queries) -> list[dict]:
    """The pairs re-graded passage first: all, or those of the first `n_queries` queries."""
    if n_queries is None:
        return pairs
    keep = set(sorted({p["qid"] for p in pairs})[:n_queries])
    return [p for p in pairs if p["qid"] in keep]


def reference_folder(cfg: Config, src) -> Path:
    """Where a source's reference-judge labels are: its `reference_judges` field, else
    `<source path>/reference_judges`."""
    return cfg.path(src.reference_judges) if src.reference_judges else cfg.path(src.path) / "reference_judges"


@dataclass
class Checked:
    """One labelled source the judge graded: its pairs, the pairs graded passage first (`sub`),
    both sets of grades, and what the write step needs to measure it."""

    name: str
    pairs: list[dict]
    sub: list[dict]
    rows: list[dict]
    swapped: list[dict]
    graded: bool
    meta: dict
    references: dict | None = None


@dataclass
class JudgeCheck:
    """What the judge-check stage computes: per source, a :class:`Checked` or a not-run entry
    (in the configured order), and the scored known-answer controls."""

    sources: list = field(default_factory=list)
    control_rows: list[dict] = field(default_factory=list)


def _grade_check(cfg: Config, models: ModelTurns, name: str, pairs: list[dict], passages: dict) -> tuple:
    """Grade `pairs` as Table 1 does, and again passage first when asked: (rows, sub, swapped)."""
    from ..lib.judge.relevance import grade_pairs

    jc = cfg.judge_check
    judging = cfg.grading.judging(cfg.root)
    rows = models.use(
        "judge", lambda llm: grade_pairs(llm, pairs, passages, judging=judging), f"labelled pairs: {name}"
    )
    debias = cfg.grading.debias == "both_orders"
    two_orders = (jc.position_bias or debias) and cfg.grading.method == "prompt"
    sub = pairs if debias else bias_sample(pairs, jc.position_bias_queries)
    swapped = []
    if two_orders:
        swapped = models.use(
            "judge",
            lambda llm: grade_pairs(llm, sub, passages, template=cfg.grading.prompt + "_swapped"),
            f"labelled pairs: {name}, passage first",
        )
    return rows, sub, swapped


def _measure(cfg: Config, c: Checked, plots: Path) -> tuple:
    """Measure the judge's agreement on one graded source, put the reference judges' agreement on
    the same pairs beside it, give the verdict, draw its confusion plot: (metrics, rows)."""
    from ..lib.judge.validity import agreement, mean_of_orders, position_bias, reference_agreement, verdict
    from ..lib.report.plots import judge_confusion

    jc = cfg.judge_check
    name, pairs, sub, rows, swapped, graded, references = (
        c.name,
        c.pairs,
        c.sub,
        c.rows,
        c.swapped,
        c.graded,
        c.references,
    )
    debias = cfg.grading.debias == "both_orders"
    for r, p in zip(rows + swapped, pairs + sub):
        r.update(source=name, label=p["label"], kind=p["kind"])
    single = agreement(rows, jc.n_bootstrap, cfg.seed, graded)
    keys = {(p["qid"], p["chunk_id"]) for p in sub}
    rows_sub = [r for r in rows if (r["qid"], r["chunk_id"]) in keys]
    single_sub = single if len(rows_sub) == len(rows) else agreement(rows_sub, jc.n_bootstrap, cfg.seed, graded)
    debiased = agreement(mean_of_orders(rows_sub, swapped), jc.n_bootstrap, cfg.seed, graded) if swapped else None
    m = dict(debiased if debias else single)  # the figures of the grades Table 1 uses
    used = mean_of_orders(rows_sub, swapped) if debias and swapped else rows
    m["reference_judges"] = reference_agreement(used, references or {}, jc.n_bootstrap, cfg.seed, graded)
    # a verdict compares like with like: where a reference did not label every pair (e.g. the
    # random unjudged negatives), ours is measured again on the pairs every reference labelled
    ours = m
    if references:
        common = [r for r in used if all((str(r["qid"]), str(r["chunk_id"])) in lab for lab in references.values())]
        if len(common) < len([r for r in used if r.get("grade") is not None]):
            ours = agreement(common, jc.n_bootstrap, cfg.seed, graded)
            m["ours_on_reference_pairs"] = {
                k: ours.get(k)
                for k in ("n_pairs", "kappa_binary", "kappa_binary_ci", "kappa_weighted", "auc", "auc_ci")
            }
    m["verdict"], m["verdict_reason"] = verdict(ours, jc, m["reference_judges"])
    m.update(source=name, run=True, grading_mode="mean of both orders" if debias else "question first (as Table 1)")
    if swapped:
        pb = position_bias(rows, swapped)
        for label, a in (("question_first", single_sub), ("both_orders", debiased)):
            pb[label] = {
                k: a.get(k) for k in ("auc", "auc_ci", "kappa_binary", "kappa_binary_ci", "kappa_weighted", "accuracy")
            }
        pb["both_orders_cost"] = "two judge calls per pair instead of one"
        m["position_bias"] = pb
    safe = name.replace(" ", "_").replace("(", "").replace(")", "")
    judge_confusion(m["confusion"], f"{name}: {m['verdict']} (n={m['n_pairs']})", plots / f"confusion_{safe}.png")
    return m, rows + swapped


def compute(cfg: Config, chunks: list, questions: list[dict], models: ModelTurns) -> JudgeCheck:
    """Have the judge (`models`) grade every configured labelled source, the golden passages and
    the known-answer controls (`questions`: the run's questions, for the controls)."""
    from ..lib.judge.validity import (
        build_controls,
        golden_check_pairs,
        is_graded,
        read_reference_judges,
        sample_check_pairs,
        score_controls,
    )
    from ..lib.retrieval.beir import load_beir
    from ..lib.synth.golden import load_golden, locate_samples

    jc = cfg.judge_check
    result = JudgeCheck()
    if not jc.enabled:
        result.sources.append(_not_run("all", "", "judge_check.enabled is false"))
        return result
    for src in jc.sources:
        d = cfg.path(src.path)
        if not d.is_dir():
            why = f"{d} not found: point judge_check.sources[].path at a BEIR-format folder with human qrels"
            result.sources.append(_not_run(src.name, src.path, why))
            continue
        data = load_beir(d, src.split)
        fitted = fitted_queries(cfg, src.name)
        pairs = sample_check_pairs(data, src.n_queries, cfg.seed, src.name, exclude_queries=fitted)
        ids, texts = data.passages()
        need = {p["chunk_id"] for p in pairs}
        passages = {i: t for i, t in zip(ids, texts) if i in need}
        refs = read_reference_judges(reference_folder(cfg, src))
        rows, sub, swapped = _grade_check(cfg, models, src.name, pairs, passages)
        meta = dict(
            path=src.path,
            split=src.split,
            sample=f"{src.n_queries} queries (seed {cfg.seed})",
            held_out_queries=f"{len(fitted)} queries the calibration was fitted on are left out"
            if fitted
            else "no query of this source was used to fit the judge",
            reference_judges_from=display_path(cfg, reference_folder(cfg, src)) if refs else None,
        )
        result.sources.append(Checked(src.name, pairs, sub, rows, swapped, is_graded(data.qrels), meta, refs))
    text_of = {c.chunk_id: c.text for c in chunks}
    if jc.in_domain:
        samples = load_golden(golden_path(cfg))
        found, _ = locate_samples(samples, chunks, golden_path(cfg))
        pairs = golden_check_pairs(samples, found, chunks, jc.n_in_domain, cfg.seed)
        name = "golden (in-domain)"
        rows, sub, swapped = _grade_check(cfg, models, name, pairs, text_of)
        meta = dict(
            path=str(cfg.corpus.golden_samples),
            sample=f"{jc.n_in_domain} golden samples",
            note="negatives are other chunks of the same document and top BM25 chunks of other documents, "
            "assumed (not judged) non-relevant",
        )
        result.sources.append(Checked(name, pairs, sub, rows, swapped, False, meta))
    if jc.controls:
        doc_of = {c.chunk_id: c.doc_id for c in chunks}
        controls = build_controls(questions, text_of, doc_of, jc.n_controls, cfg.seed, cfg.answer.judges())
        scoring = cfg.answer.scoring
        result.control_rows = models.use(
            "judge", lambda llm: score_controls(llm, controls, text_of, scoring), "known-answer controls"
        )
    models.release()
    return result


def write(cfg: Config, result: JudgeCheck, identity: dict, out) -> tuple:
    """relevance.json, pairs.jsonl, the controls and the confusion plots: (metrics per source,
    graded rows, controls table)."""
    from ..lib.judge.validity import controls_table

    files = outputs(cfg)
    plots = out(files.plots)
    plots.mkdir(parents=True, exist_ok=True)
    results, graded_rows = [], []
    for c in result.sources:
        if isinstance(c, dict):  # not run
            results.append(c)
            continue
        m, rows = _measure(cfg, c, plots)
        m.update(c.meta)
        results.append(m)
        graded_rows += rows
    for m in results:
        m["judge"] = {
            "name": identity.get("name"),
            "sha256": identity.get("sha256"),
            "backend": identity.get("backend"),
        }
    table = controls_table(result.control_rows, cfg.judge_check)
    write_json(out(files.relevance), results)
    write_jsonl(out(files.pairs), graded_rows)
    write_dataframe(table, out(files.controls_csv))
    write_jsonl(out(files.controls), result.control_rows)
    return results, graded_rows, table


def build(cfg: Config, out) -> dict:
    jc = cfg.judge_check
    chunks = load_chunks(cfg) if jc.enabled and (jc.in_domain or jc.controls) else []
    questions = load_questions(cfg, chunks) if jc.enabled and jc.controls else []
    models = ModelTurns(cfg, "judge-check")
    result = compute(cfg, chunks, questions, models)
    identity = models.identity.get("judge") or _identity(cfg)
    results, graded_rows, table = write(cfg, result, identity, out)
    control_rows = result.control_rows
    return {
        "sources": {m["source"]: m["verdict"] for m in results},
        # ours beside each reference judge on the same pairs: (kappa at grade >= 2, AUC)
        "beside_reference_judges": {
            m["source"]: {
                "ours": [m.get("kappa_binary"), m.get("auc")],
                **{r["name"]: [r["kappa_binary"], r["auc"]] for r in m["reference_judges"]},
            }
            for m in results
            if m.get("reference_judges")
        },
        "pairs_graded": len(graded_rows),
        "labelled_pairs": sum(m.get("n_pairs") or 0 for m in results if m.get("run")),
        "control_pairs": len(control_rows),
        "controls": {r["rubric"]: r["verdict"] for r in table.to_dict("records")},
        "controls_passed": {r["rubric"]: bool(r["passed"]) for r in table.to_dict("records")},
        "llm": models.stats.get("judge") or _no_calls(),
        "model_identity": identity,
    }


def _identity(cfg: Config) -> dict:
    """The judge's identity when the stage made no call (it is still named in the outputs)."""
    from ..lib.llm import LLM

    return LLM(cfg.models.judge).identity


def _no_calls() -> dict:
    from ..lib.llm.frontend import CallStats

    return CallStats().to_dict()


def fitted_queries(cfg: Config, source: str) -> set:
    """Queries of a labelled source that a calibrated judge was fitted on (left out of its check)."""
    if cfg.grading.method != "calibrated":
        return set()
    from ..lib.judge.calibrated import load_calibration

    return set(load_calibration(cfg.grading.judging(cfg.root).calibration).fitted_on.get(source, []))


def _prompts(cfg: Config) -> list[str]:
    from .grade import relevance_prompts

    jc = cfg.judge_check
    if not jc.enabled:
        return []
    p = relevance_prompts(cfg, jc.position_bias or cfg.grading.debias == "both_orders")
    if jc.controls:
        p += [
            "judge_answer",
            "judge_faithfulness",
            "judge_relevance",
            "judge_noise_robustness",
            "judge_negative_rejection",
            "judge_binary",
            "judge_claim_support",
            "judge_refusal",
            "judge_refusal_mirrored",
        ]
    return p


STAGE = Stage(
    name="judge-check",
    doc="measure the judge against human labels and known-answer controls",
    home=folder,
    outputs=outputs,
    build=build,
    after=("synth",),
    sections=lambda cfg: [
        "judge_check",
        "seed",
        "models.judge",
        "grading.debias",
        "grading.prompt",
        "grading.method",
        "grading.calibration",
        # the controls check the judges the answer stage calls, scored as it scores them
        "answer.scoring",
        "answer.binary_judges",
        "answer.claims",
        "answer.refusal_judge",
    ],
    reads=lambda cfg: [
        chunks_path(cfg),
        golden_path(cfg),
        questions_path(cfg),
        *_source_files(cfg),
        *calibration_files(cfg),
    ],
    prompts=_prompts,
    models=lambda cfg: {"judge": cfg.models.judge.model},
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
