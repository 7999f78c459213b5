"""Stage judge-check: measure the judge before its tables are read. With the same prompt,
backend and settings as Table 1 it grades a sample of labelled pairs from every
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
from ..runner.base import ModelTurns, Stage, display_path, execute
from ..runner.data import chunks_path, golden_path, load_chunks, load_questions, questions_path
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
    "boundaries",
    "boundary_verdicts",
    "system_bias",
)


def folder(cfg: Config) -> Path:
    return cfg.run_dir / names.JUDGE_CHECK


class JudgeCheckFiles(NamedTuple):
    """Every file the judge-check stage writes, by name (in the order the stamp lists them)."""

    relevance: Path
    pairs: Path
    controls_csv: Path
    controls: Path
    controls_by_kind: Path
    plots: Path


def outputs(cfg: Config) -> JudgeCheckFiles:
    d = cfg.run_dir
    return JudgeCheckFiles(
        d / names.JUDGE_RELEVANCE,
        d / names.JUDGE_PAIRS,
        d / names.JUDGE_CONTROLS,
        d / names.JUDGE_CONTROLS_ROWS,
        d / names.JUDGE_CONTROLS_BY_KIND,
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
    both sets of grades, and what the write step needs to measure it; `bias_rows` and
    `retrieved_by` are the system-bias audit's graded pairs and each system's top-k."""

    name: str
    pairs: list[dict]
    sub: list[dict]
    rows: list[dict]
    swapped: list[dict]
    graded: bool
    meta: dict
    references: dict | None = None
    bias_rows: list[dict] = field(default_factory=list)
    retrieved_by: dict = field(default_factory=dict)
    in_domain: bool = False


def audit_pairs(
    cfg: Config, data, qids: list[str], source: str, graded: bool, models=None
) -> tuple[list[dict], dict, dict]:
    """The system-bias audit's pairs of one labelled source: the run's Table 1 systems (their
    settings as the run's) retrieve their top `bias_top_k` for each of `qids` from the source's
    passages that are labelled relevant for those queries plus each query's BM25 top `bias_pool`
    (the whole corpus when it is no larger). A retrieved passage with no label for the query is
    left out on graded labels and counts as not relevant on binary ones (BEIR's convention).
    Returns (pairs, {system: {(qid, chunk_id)}}, coverage). The systems come from `models`
    (the stage's :class:`ModelTurns`, or the plan's stand-ins), built here without one."""
    from ..config.validate import graded_systems
    from ..lib.retrieval.bm25 import BM25Retriever
    from ..lib.retrieval.systems import build_systems

    jc = cfg.judge_check
    systems = graded_systems(cfg)
    ids, texts = data.passages()
    if not qids or not systems:
        return [], {}, {}
    keep = set(ids)
    if len(ids) > jc.bias_pool * len(qids):
        keep = {d for q in qids for d, g in data.qrels.get(q, {}).items() if g >= 1}
        bm25 = BM25Retriever(cfg.retrieval.bm25).index(ids, texts)
        for ranking in bm25.search([data.queries[q] for q in qids], jc.bias_pool):
            keep |= {d for d, _ in ranking}
    sub = [(i, t) for i, t in zip(ids, texts) if i in keep]
    sub_ids, sub_texts = [i for i, _ in sub], [t for _, t in sub]
    if models is not None:
        # graded labels count only labelled passages; binary ones count every retrieved passage
        labelled = (
            {data.queries[q]: sorted(d for d in data.qrels.get(q, {}) if d in keep) for q in qids} if graded else {}
        )
        built = models.audit_systems(systems, sub_ids, sub_texts, labelled)
    else:
        built = build_systems(cfg.retrieval.setup(), sub_ids, sub_texts, systems, cache_dir=cfg.cache_dir)
    pairs, seen, retrieved_by = [], set(), {}
    unjudged = 0
    for name, system in built.items():
        retrieved_by[name] = set()
        for q, ranking in zip(qids, system.search([data.queries[q] for q in qids], jc.bias_top_k)):
            for d, _ in ranking:
                label = data.qrels.get(q, {}).get(d)
                if label is None and graded:
                    unjudged += 1
                    continue
                retrieved_by[name].add((q, d))
                if (q, d) not in seen:
                    seen.add((q, d))
                    pairs.append(
                        {
                            "source": source,
                            "qid": q,
                            "question": data.queries[q],
                            "chunk_id": d,
                            "label": int(label or 0),
                            "kind": "retrieved",
                            "purpose": ["bias audit"],
                        }
                    )
    coverage = {
        "passages_searched": len(sub),
        "top_k": jc.bias_top_k,
        "retrieved_unlabelled_left_out" if graded else "retrieved_unlabelled_read_as_0": unjudged
        if graded
        else sum(1 for p in pairs if data.qrels.get(p["qid"], {}).get(p["chunk_id"]) is None),
    }
    return pairs, retrieved_by, coverage


@dataclass
class JudgeCheck:
    """What the judge-check stage computes: per source, a :class:`Checked` or a not-run entry
    (in the configured order), and the scored known-answer controls."""

    sources: list = field(default_factory=list)
    control_rows: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)  # the generator's answers the controls drew on


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
    from ..lib.judge.validity import (
        agreement,
        boundary_verdicts,
        mean_of_orders,
        position_bias,
        reference_agreement,
        system_bias,
        verdict,
    )
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
    m["boundary_verdicts"] = {b: {"verdict": v, "reason": why} for b, (v, why) in boundary_verdicts(m, jc).items()}
    m["in_domain"] = c.in_domain
    m["system_bias"] = (
        system_bias(c.bias_rows, c.retrieved_by, jc.n_bootstrap, cfg.seed, graded) if c.retrieved_by else None
    )
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


def _audit(
    cfg: Config, models: ModelTurns, data, pairs: list[dict], name: str, graded: bool, audit: bool | None = None
) -> tuple:
    """Grade the system-bias audit's pairs of one source (those the check already graded come from
    the call cache): (graded rows with their labels, {system: its top-k pairs}, coverage). `audit`:
    the source's own `bias_audit` (None: judge_check.bias_audit)."""
    from ..lib.judge.relevance import grade_pairs

    if not (cfg.judge_check.bias_audit if audit is None else audit):
        key = "judge_check.bias_audit" if audit is None else f"judge_check.sources[{name}].bias_audit"
        return [], {}, {"not run": f"{key} is false"}
    qids = sorted({p["qid"] for p in pairs})
    bias_pairs, retrieved_by, coverage = audit_pairs(cfg, data, qids, name, graded, models)
    if not bias_pairs:
        return [], retrieved_by, coverage
    ids, texts = data.passages()
    need = {p["chunk_id"] for p in bias_pairs}
    passages = {i: t for i, t in zip(ids, texts) if i in need}
    judging = cfg.grading.judging(cfg.root)
    rows = models.use(
        "judge", lambda llm: grade_pairs(llm, bias_pairs, passages, judging=judging), f"bias audit: {name}"
    )
    for r, p in zip(rows, bias_pairs):
        r.update(source=name, label=p["label"], kind=p["kind"])
    return rows, retrieved_by, coverage


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
    text_of = {c.chunk_id: c.text for c in chunks}
    if jc.controls and jc.control_outputs:  # the generator first: one model in memory at a time
        result.outputs = generator_outputs(cfg, chunks, questions, models, text_of)
    for src in jc.sources:
        d = cfg.path(src.path)
        if not d.is_dir():
            from ..lib.datasets import fetch_hint

            why = f"{src.path} not found: {fetch_hint(d)}, or point judge_check.sources[].path elsewhere"
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
        graded = is_graded(data.qrels)
        bias_rows, retrieved_by, coverage = _audit(cfg, models, data, pairs, src.name, graded, src.bias_audit)
        meta = dict(
            path=src.path,
            split=src.split,
            sample=f"{src.n_queries} queries (seed {cfg.seed})",
            held_out_queries=f"{len(fitted)} queries the calibration was fitted on are left out"
            if fitted
            else "no query of this source was used to fit the judge",
            reference_judges_from=display_path(cfg, reference_folder(cfg, src)) if refs else None,
            bias_audit_coverage=coverage,
        )
        result.sources.append(
            Checked(src.name, pairs, sub, rows, swapped, graded, meta, refs, bias_rows, retrieved_by, src.in_domain)
        )
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
            "assumed (not judged) non-relevant: a diagnostic, never the in-domain validity a verdict reads",
        )
        result.sources.append(Checked(name, pairs, sub, rows, swapped, False, meta))
    if jc.controls:
        doc_of = {c.chunk_id: c.doc_id for c in chunks}
        flagged = [it for it in result.outputs if it["flags"]]
        controls = build_controls(
            questions, text_of, doc_of, jc.n_controls, cfg.seed, cfg.answer.judges(), outputs=flagged
        )
        scoring = cfg.answer.scoring
        result.control_rows = models.use(
            "judge", lambda llm: score_controls(llm, controls, text_of, scoring), "known-answer controls"
        )
    models.release()
    return result


def generator_outputs(cfg: Config, chunks: list, questions: list[dict], models: ModelTurns, text_of: dict):
    """The generator's answers to the answer stage's questions under its Table 2 settings (the same
    items and prompts, so the answer stage reads them back from the cache), each with the failure
    flags the deterministic checks raise (`flags`, lib/answer/failures.py)."""
    from dataclasses import replace

    from ..lib.answer.answers import build_items, generate, is_refusal
    from ..lib.answer.failures import flag_answer
    from ..lib.judge.relevance import select_questions

    chosen = select_questions(questions, cfg.answer.max_questions, cfg.seed)
    design = replace(cfg.answer_design(), pipelines=())
    items = build_items(design, chosen, chunks, None)
    models.use("generator", lambda llm: generate(llm, items, text_of, design), "answers the controls draw on")
    for it in items:
        it["flags"] = flag_answer(it, text_of, is_refusal)
    return items


def flagged_summary(items: list[dict]) -> dict:
    """Per setting: the generator's answers and how many raised each flag."""
    out: dict = {}
    for it in items:
        row = out.setdefault(it["setting"], {"answers": 0})
        row["answers"] += 1
        for f in it["flags"]:
            row[f] = row.get(f, 0) + 1
    return out


def write(cfg: Config, result: JudgeCheck, identity: dict, out) -> tuple:
    """relevance.json, pairs.jsonl, the controls and the confusion plots: (metrics per source,
    graded rows, controls table)."""
    from ..lib.judge.validity import controls_by_kind, controls_table

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
    from ..lib.report.plots import judge_calibration

    # each labelled source's grade distribution per label, beside the confusion plots (notebook 04 shows it)
    judge_calibration(
        {m["source"]: m.get("confusion") or {} for m in results if m.get("run")}, plots / "calibration.png"
    )
    for m in results:
        m["judge"] = {
            "name": identity.get("name"),
            "sha256": identity.get("sha256"),
            "backend": identity.get("backend"),
        }
    table = controls_table(result.control_rows, cfg.judge_check)
    from ..runner.provenance import machine_free

    write_json(out(files.relevance), machine_free(results, cfg))  # a source's folder by its public path
    write_jsonl(out(files.pairs), graded_rows)
    write_dataframe(table, out(files.controls_csv))
    write_jsonl(out(files.controls), result.control_rows)
    write_dataframe(controls_by_kind(result.control_rows, cfg.judge_check), out(files.controls_by_kind))
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
        "boundaries": {
            m["source"]: {b: v["verdict"] for b, v in (m.get("boundary_verdicts") or {}).items()}
            for m in results
            if m.get("run")
        },
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
        "control_kinds": {r["rubric"]: r["kinds"] for r in table.to_dict("records")},
        "generator_outputs_flagged": flagged_summary(result.outputs),
        "llm": models.stats.get("judge") or _no_calls(),
        "llm_generator": models.stats.get("generator"),
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


def recompute(cfg: Config) -> list[dict]:
    """Re-measure a finished judge check from its stored grades (`pairs.jsonl`), with no model call:
    each source's agreement at every boundary and its boundary verdicts, and the reference judges
    scored on their own labels (runs before that fix printed our AUC as theirs), then the verdict
    against them. What needs new grades (the system-bias audit, a source that was not graded) is
    left as the run had it. Rewrites `relevance.json`; returns it."""
    import json

    from ..lib.io import read_jsonl
    from ..lib.judge.validity import (
        agreement,
        boundary_agreement,
        boundary_verdicts,
        read_reference_judges,
        reference_agreement,
        verdict,
    )

    files = outputs(cfg)
    if not files.relevance.is_file() or not files.pairs.is_file():
        return []
    jc = cfg.judge_check
    results = json.loads(files.relevance.read_text(encoding="utf-8"))
    rows = read_jsonl(files.pairs)
    srcs = {s.name: s for s in jc.sources}
    for m in results:
        if not m.get("run"):
            continue
        graded = m.get("labels") == "graded 0-3"
        mine = [
            r
            for r in rows
            if r.get("source") == m["source"]
            and "_swapped" not in str(r.get("prompt"))
            and "bias audit" not in (r.get("purpose") or [])
        ]
        m.update(boundary_agreement(mine, jc.n_bootstrap, cfg.seed, graded, with_auc=False))
        m["boundary_verdicts"] = {b: {"verdict": v, "reason": why} for b, (v, why) in boundary_verdicts(m, jc).items()}
        m.setdefault("in_domain", bool(getattr(srcs.get(m["source"]), "in_domain", False)))
        m.setdefault("system_bias", None)
        src = srcs.get(m["source"])
        refs = read_reference_judges(reference_folder(cfg, src)) if src else {}
        if refs:
            m["reference_judges"] = reference_agreement(mine, refs, jc.n_bootstrap, cfg.seed, graded)
            common = [r for r in mine if all((str(r["qid"]), str(r["chunk_id"])) in lab for lab in refs.values())]
            ours = agreement(common, jc.n_bootstrap, cfg.seed, graded) if len(common) < len(mine) else m
            m["verdict"], m["verdict_reason"] = verdict(ours, jc, m["reference_judges"])
        m["recomputed"] = "boundaries and reference judges re-measured from pairs.jsonl (no model call)"
    from ..lib.io import write_json
    from ..runner.provenance import machine_free

    write_json(files.relevance, machine_free(results, cfg))
    return results


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
            "judge_binary_reference",
            "judge_claim_support",
            "judge_claim_support_mirrored",
            "judge_refusal",
            "judge_refusal_mirrored",
        ]
    if jc.controls and jc.control_outputs:  # the generator's answers the controls draw on
        p += ["answer", "answer_ids", "answer_fact_check", "answer_fact_check_ids"]
    return p


def _models(cfg: Config) -> dict:
    jc = cfg.judge_check
    m = {"judge": cfg.models.judge.model}
    if jc.enabled and jc.controls and jc.control_outputs:
        m["generator"] = cfg.models.generator.model
    return m


STAGE = Stage(
    name="judge-check",
    doc="measure the judge against labelled pairs and known-answer controls",
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
        # the generator's own answers the controls draw on: the answer stage's questions and settings
        "models.generator",
        "answer.max_questions",
        "answer.n_wrong_values",
        "answer.negative_n_wrong",
        "answer.wrong_sampling",
        "answer.citations",
        "answer.negative_sampling",
    ],
    reads=lambda cfg: [
        chunks_path(cfg),
        golden_path(cfg),
        questions_path(cfg),
        *_source_files(cfg),
        *calibration_files(cfg),
    ],
    prompts=_prompts,
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
