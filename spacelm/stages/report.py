"""Stage report (built last): `report.md`, the page a reviewer reads first, and `report_details.md`.
Facts come from the run folder; words from the templates of `spacelm/templates/report/`."""

from __future__ import annotations

import json
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_text
from ..lib.names import FINDINGS_MIN_QUESTIONS
from ..lib.report.render import TEMPLATES, block, est, phrase
from ..lib.tables import MISSING, as_words, markdown_table, md_cell
from ..runner.base import Stage, execute
from .findings import read_judge_check

SECTIONS = TEMPLATES / "report"
TEMPLATE = SECTIONS / "page.md"
MACROS = "report/macros.md"


def _same(p: Path) -> Path:
    return p  # outside a stage build a file is written where it belongs


def _present(p: Path, out=_same) -> bool:
    # written, or staged in this build
    staged = getattr(out, "moves", {}).get(Path(p))
    return Path(p).is_file() or (staged is not None and staged.is_file())


def _img(run: Path, name: str, out=_same) -> str | None:
    return name if _present(run / name, out) else None


def _lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def _table(p: Path, cols=None, round_to: int = 3) -> dict:
    """A CSV's facts: {present, file, md}; md None when it holds no row."""
    facts = {"present": p.is_file(), "file": p.name, "md": None}
    if facts["present"]:
        import pandas as pd

        df = pd.read_csv(p)
        if cols:
            df = df[[c for c in cols if c in df.columns]]
        facts["md"] = markdown_table(df.round(round_to)) if len(df) else None
    return facts


def _text(p: Path) -> dict:
    md = p.read_text(encoding="utf-8").strip() if p.is_file() else ""
    return {"present": p.is_file(), "file": p.name, "md": md or None}


def _nan_free(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def _estimate(v, lo=None, hi=None, digits: int = 2) -> str:
    return est(v, [lo, hi], digits)


def _tests(run: Path, name: str, keys: tuple, value: str) -> str:
    p = run / name
    t = {"present": p.is_file(), "file": name, "md": None}
    if t["present"]:
        import pandas as pd

        df = pd.read_csv(p)
        rows = []
        for r in df.to_dict("records"):
            d = 1 if str(r.get("measure", "")).startswith("share") else 2
            row = {k.replace("_", " "): r.get(k) for k in keys if k in r}
            row.update(n=r.get("n_questions"), a=_estimate(r.get(value + "_a"), digits=d))
            row.update(b=_estimate(r.get(value + "_b"), digits=d))
            row["b − a [95% CI]"] = _estimate(r.get("diff"), r.get("ci_low"), r.get("ci_high"), d)
            row["p (Holm)"] = _estimate(r.get("p_holm"), digits=3)
            row["mde"] = _estimate(r.get("mde_cell"), digits=d)
            rows.append(row)
        t["md"] = markdown_table(pd.DataFrame(rows)) if rows else None
    return block("report/tests_table.md", {"t": t})


def draw_shared_plots(cfg, out=_same) -> None:
    """Plots of the chunks and synthetic questions, shared between runs."""
    import pandas as pd

    from ..lib.report.plots import chunk_length_histogram, generated_vs_kept
    from ..runner.data import chunks_path, load_chunks

    if chunks_path(cfg).is_file():
        chunk_length_histogram(load_chunks(cfg), cfg.chunking.max_tokens, out(cfg.run_dir / names.PLOT_CHUNK_LENGTHS))
    retention = cfg.synthetic_dir / names.RETENTION
    if retention.is_file():
        generated_vs_kept(pd.read_csv(retention), out(cfg.run_dir / names.PLOT_SYNTH_KEPT))


# ----------------------------------------------------------------------------- judges' verdicts
def labels_banner(cfg, table: str) -> str | None:
    from ..lib.labels.store import ANSWERS, RELEVANCE
    from ..lib.report.findings import labels_text
    from .labels import standing_of

    reads = cfg.grading.instrument if table == "table1" else cfg.answer.instrument
    if reads == "judge":
        return None
    return labels_text(standing_of(cfg, RELEVANCE if table == "table1" else ANSWERS))


def judge_banner(cfg, table: str, rubrics=None) -> str:
    """The verdict of the judge behind "table1" or "table2" (its `rubrics` only, when given)."""
    labels = labels_banner(cfg, table) if rubrics is None else None
    rel, ctl = read_judge_check(cfg)
    if ctl and rubrics is not None:
        ctl = [r for r in ctl if r["rubric"] in rubrics]
    judge = cfg.models.judge.model
    checked = {m.get("judge", {}).get("name") for m in rel or [] if m.get("run")}
    ran = [m for m in rel or [] if m.get("run")]
    facts = dict(table=table, labels=labels, rel=rel, judge=judge, ran=ran, controls=ctl or [])
    facts["other_judges"] = sorted(checked) if checked and judge not in checked else None
    facts["why"] = "; ".join(m.get("why", "") for m in rel or [])
    if table == "table1":
        facts["grades"] = cfg.grading.judging(cfg.root).describe() if rel is not None and not labels else None
        facts["fails"] = [m["source"] for m in ran if m["verdict"] == "fails"]
        facts["too_few"] = all(m["verdict"] == "too few pairs to tell" for m in ran)
    else:
        facts["fails"] = [r["rubric"] for r in ctl or [] if r["verdict"] == "fails"]
        facts["not_passed"] = [r["rubric"] for r in ctl or [] if r["verdict"] not in ("fails", "valid")]
        facts["too_few"] = all(r["verdict"] == "too few pairs to tell" for r in ctl or [])
    return block("report/judge_banner.md", facts)


def _rubric_state(ctl, rubric: str) -> str:
    passed = {r["rubric"]: (bool(r.get("passed")) if "passed" in r else r.get("verdict") == "valid") for r in ctl}
    return "passed" if passed.get(rubric) else ("failed" if rubric in passed else "unchecked")


def refusal_lines(cfg) -> list[str]:
    """Refusal rates where the passages cannot answer, and the judges' standing."""
    f = cfg.run_dir / names.ANSWER_CHECKS
    rows = json.loads(f.read_text()).get("refusals_where_passages_cannot_answer") if f.is_file() else None
    if not rows:
        return []
    ctl = read_judge_check(cfg)[1] or []
    facts = dict(rows=rows, refusal=_rubric_state(ctl, "refusal"), rubric=_rubric_state(ctl, "negative_rejection"))
    return _lines(block("report/refusals.md", facts))


def judge_check_section(cfg, staged=_same) -> list[str]:
    rel = read_judge_check(cfg)[0]
    facts = {"rel": rel}
    if rel is not None:
        hard = "auc_relevant_vs_"
        rel = [
            {**m, "hard": [(k[len(hard) :].replace("_", " "), v) for k, v in m.items() if k.startswith(hard)]}
            for m in rel
        ]
        run = cfg.run_dir
        plots = sorted((run / names.JUDGE_CHECK_PLOTS).glob("confusion_*.png"))
        facts.update(
            rel=rel,
            min_pairs=cfg.judge_check.min_pairs,
            position_bias_on=bool(cfg.judge_check.position_bias),
            bounded=[m for m in rel if m.get("run") and m.get("boundaries")],
            biased=[m for m in rel if m.get("run") and m.get("system_bias")],
            confusion=[{"stem": p.stem, "path": p.relative_to(run).as_posix()} for p in plots],
            # the plot of a check that graded no labelled pair is an empty frame: not shown
            calibration=(_img(run, names.JUDGE_CALIBRATION, staged) or _img(run, names.PLOT_JUDGE_CALIBRATION, staged))
            if any(m.get("run") and m.get("confusion") for m in rel)
            else None,
            controls=_table(run / names.JUDGE_CONTROLS),
        )
    return _lines(block("report/judge_checks.md", facts))


def ppi_lines(cfg) -> list[str]:
    import pandas as pd

    t = cfg.run_dir / names.TABLE1
    if not t.is_file():
        return []
    df = pd.read_csv(t)
    human = "n_human" in df.columns and bool((df["n_human"].fillna(0) > 0).any())
    cols = ["retriever", "stage", "top_k", "grade", "percent", "ppi_estimate", "ppi_ci_low", "ppi_ci_high", "n_human"]
    facts = dict(human=human, table=_table(t, cols), differences=_table(cfg.run_dir / names.PPI_DIFFERENCES))
    return _lines(block("report/ppi.md", facts))


# ----------------------------------------------------------------------------- the first page
def table_sizes(run: Path) -> dict:
    """{"grade" | "answer": (questions, source chunks)} of the paired tests' largest cell: the
    labels' tests where the run has them (the tables it shows), else the judge's."""
    import pandas as pd

    out = {}
    pick = lambda *ps: next((run / p for p in ps if (run / p).is_file()), run / ps[-1])
    grade, answer = (
        pick(names.LABEL_PAIRED_TESTS, names.PAIRED_TESTS),
        pick(names.LABEL_TABLE2_TESTS, names.TABLE2_TESTS),
    )
    for stage, p in (("grade", grade), ("answer", answer)):
        if p.is_file():
            t = pd.read_csv(p)
            if len(t) and "n_source_chunks" in t:
                out[stage] = (int(t["n_questions"].max()), int(t["n_source_chunks"].max()))
    return out


def setup_section(cfg, stages: dict, out=_same) -> str:
    from dataclasses import replace

    import pandas as pd

    from ..lib.report.setup_table import COLUMNS, comparability, setup_rows
    from ..runner.provenance import public_path

    # the corpus folder as the run's files name it (a path given absolute is not this machine's to show)
    setup = replace(cfg.run_setup(), corpus_dir=public_path(cfg.corpus.raw_dir, cfg))
    rows = setup_rows(setup, stages, table_sizes(cfg.run_dir))
    table = pd.DataFrame(rows, columns=COLUMNS)
    write_dataframe(table, out(cfg.run_dir / names.SETUP_VS_PAPER))
    return block("report/setup.md", dict(comparability=comparability(rows), table=table.to_markdown(index=False)))


def _cell(v) -> str:
    text = as_words(v).strip()
    return md_cell(text) if text else MISSING


def _shown(v) -> str | None:
    text = as_words(v).strip()
    return text if text and not text.endswith(MISSING) else None


def finding_rows(rows: list[dict]) -> list[dict]:
    from ..lib.report.findings import _num

    out = []
    for r in rows:
        cells = {k: _cell(r.get(k)) for k in ("finding", "paper", "this_run", "ci", "verdict", "n", "instrument")}
        planned, realized = (_num(r.get(k)) for k in ("power_planned", "power"))
        cells["power"] = (
            "–" if realized is None else (f"{planned:.2f} → " if planned is not None else "") + f"{realized:.2f}"
        )
        note = {k: _shown(r.get(k)) for k in ("boundary", "judge_bias", "sensitivity")}
        note.update(reason=_shown(r.get("verdict_reason")), plan_entry=r.get("plan_entry"))
        note.update(
            {k: as_words(r.get(k)).strip() for k in ("role", "source")}, need=as_words(r.get("n_needed")).strip()
        )
        out.append({**cells, "note": note})
    return out


def decomposition(cfg) -> dict | None:
    """Table 1's comparisons under each signal alone (grading/decomposition.csv)."""
    import pandas as pd

    p = cfg.run_dir / names.GRADE_DECOMPOSITION
    if not _present(p):
        return None
    try:
        df = pd.read_csv(p)
    except pd.errors.EmptyDataError:  # a run older than the file's header
        return None
    facts = {"file": names.GRADE_DECOMPOSITION, "rows": {}, "cols": [], "k": None}
    if df.empty:
        return facts
    k = int(df["top_k"].min())
    df = df[df["top_k"] == k]
    col = lambda r: r.comparison + " (" + r.retriever + ")"  # noqa: E731
    facts.update(k=k, cols=list(dict.fromkeys(col(r) for r in df.itertuples())))
    for feature, g in df.groupby("feature", sort=True):
        facts["rows"][feature] = {col(r): (r.diff, r.ci_low, r.ci_high) for r in g.itertuples()}
    return facts


def plan_line(cfg, manifest: dict, findings: list[dict]) -> str:
    """The analysis plan: its hash, the primary finding and the questions it needs."""
    from ..lib.report.plan import FINDINGS, plan_sha256, primary

    entries = cfg.analysis_plan.entries()
    facts = {"entries": len(entries)}
    if entries:
        recorded = manifest.get("analysis_plan_sha256")
        main = primary(entries)
        facts.update(now=plan_sha256(cfg.to_dict()["analysis_plan"])[:12], recorded=recorded and recorded[:12])
        facts.update(fixed=cfg.analysis_plan.fixed, have=(manifest.get("sizes") or {}).get("table1_questions"))
        facts["main"] = None if main is None else dict(main._asdict(), title=FINDINGS[main.id].title)
        facts["planned"] = sum(1 for r in findings if r.get("role") in ("primary", "secondary"))
        facts["findings"] = len(findings)
    return phrase(MACROS, "plan_line", p=facts)


def paper_section(cfg, rows: list[dict], manifest: dict | None = None) -> str:
    import pandas as pd

    from ..lib.report.findings import COLUMNS, VERDICTS

    weak = [
        r["finding"]
        for r in rows
        if r.get("judge") != "grader" and "weak" in str(r.get("judge_verdict")) and r["verdict"] != "no evidence"
    ]
    facts = dict(
        plan_line=plan_line(cfg, manifest or {}, rows),
        findings=finding_rows(pd.DataFrame(rows, columns=COLUMNS).to_dict("records")) if rows else [],
        verdicts=VERDICTS,
        cluster=cfg.grading.cluster,
        csv=names.PAPER_VS_RUN,
        decomposition=decomposition(cfg),
        forest=_img(cfg.run_dir, names.PLOT_FOREST),
        weak=weak,
    )
    return block("report/paper.md", facts)


def commit_line(run_commit: str | None, report_commit: str | None) -> str:
    return phrase(MACROS, "commit_line", run_commit=run_commit, report_commit=report_commit)


def scale_banner(stages: dict, pilot: str = "") -> list[str]:
    """The banner naming the tables that rest on too few questions, if any: a run all of whose tables
    do is a smoke run, unless a labelled pilot sized it (`pilot`, the plan's): then a study whose
    plan says what its n can carry."""
    scaled = {name: s for name, s in stages.items() if s.get("scale")}
    small = [(name, s.get("questions")) for name, s in scaled.items() if s["scale"] == "smoke-scale run"]
    if not small:
        return []
    kind = "smoke" if len(small) == len(scaled) and not pilot else "below"
    return [phrase(MACROS, "scale_banner", kind=kind, min_questions=FINDINGS_MIN_QUESTIONS, small=small), ""]


def found_section(cfg) -> str:
    from ..lib.report.found import found
    from ..lib.report.render import render

    rr = cfg.retrieval.reranker
    return render("found.md", found(cfg.run_dir, cfg.run_name, rr.model if rr.kind != "none" else None))


def labels_section(cfg) -> str:
    from ..lib.report.render import render
    from .labels import section

    facts = section(cfg)
    return render("labels_section.md", facts) if facts else ""


def table1_section(cfg) -> str:
    run = cfg.run_dir
    img = dict(grades=_img(run, names.PLOT_GRADES), per_task=_img(run, names.PLOT_TABLE1_PER_TASK))
    return block(
        "report/table1.md", dict(banner=judge_banner(cfg, "table1"), table=_text(run / names.TABLE1_MD), img=img)
    )


def table2_section(cfg) -> str:
    run = cfg.run_dir
    facts = dict(enabled=cfg.answer.enabled, banner=judge_banner(cfg, "table2"), table=_text(run / names.TABLE2_MD))
    facts["img"] = dict(
        answer_scores=_img(run, names.PLOT_ANSWER_SCORES),
        noise=_img(run, names.PLOT_NOISE),
        per_task=_img(run, names.PLOT_TABLE2_PER_TASK),
    )
    return block("report/table2.md", facts)


# ----------------------------------------------------------------------------- the details
def chunk_size_lines(cfg, stages: dict) -> list[str]:
    import pandas as pd

    from ..lib.llm.models import encoder_window
    from ..lib.report.chunk_budget import gate_lines
    from ..lib.report.chunk_budget import report_lines as equal_budget_lines

    run, cs = cfg.run_dir, cfg.chunk_study
    if not (run / names.CHUNK_SIZES_SUMMARY).is_file():
        return []
    summary = pd.read_csv(run / names.CHUNK_SIZES_SUMMARY)
    costs_p = run / names.CHUNK_SIZES_COSTS
    costs = pd.read_csv(costs_p) if costs_p.is_file() else pd.DataFrame()
    ks = cfg.retrieval.k_values
    k = 10 if 10 in ks else max(ks)
    cols = ["chunk_size", "questions", "system", "n_questions", "n_source_chunks", "gold_chunks_per_question"]
    cols += [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}", f"coverage@{min(ks)}", f"coverage@{k}"]
    table = summary[[c for c in cols if c in summary]].round(3)
    for m in (f"ndcg@{k}", f"recall@{k}"):
        if f"{m}_ci_low" in summary:
            bounds = zip(summary[f"{m}_ci_low"], summary[f"{m}_ci_high"])
            table.insert(list(table.columns).index(m) + 1, m + " 95% CI", [_interval(lo, hi) for lo, hi in bounds])
    facts = dict(sizes=cs.sizes, tokenizer=cs.tokenizer or cfg.chunking.tokenizer, systems=cs.systems)
    facts.update(dense_model=(cs.dense_model or cfg.retrieval.dense.model) if names.reads_dense(cs.systems) else None)
    facts.update(min_share=cs.min_share, grade_questions=cs.grade_questions, max_tokens=cfg.chunking.max_tokens)
    facts.update(run_questions="run" in cs.question_sets, summary=markdown_table(table))
    facts["differences"] = _size_differences(run / names.CHUNK_SIZES_DIFFERENCES)
    facts["equal_budget"] = "\n".join(equal_budget_lines(run))
    facts["costs"] = markdown_table(costs.astype(object).where(costs.notna(), MISSING)) if not costs.empty else None
    window = encoder_window(cfg.retrieval.reranker.model)
    reranks = any(s.endswith("+rerank") for s in cs.systems)
    facts.update(reranker=cfg.retrieval.reranker.model, calibration_window=None, calibration_model=None)
    facts["reranker_window"] = window if reranks and window and max(cs.sizes) > window else None
    if cs.grade_questions and cfg.grading.method == "calibrated":
        from ..lib.judge.calibrated import load_calibration

        cal = load_calibration(cfg.grading.judging(cfg.root).calibration)
        window = encoder_window(cal.embedding_model) if cal.uses_embedding() else None
        if window and max(cs.sizes) > window:
            facts.update(calibration_window=window, calibration_model=cal.embedding_model)
    facts["gate"] = "\n".join(gate_lines(stages.get("chunk-sizes", {}).get("table1_gate") or {}))
    facts["table1"] = []
    for size in cs.sizes:
        t1 = run / names.CHUNK_SIZES / str(size) / names.TABLE1
        if t1.is_file():
            t = pd.read_csv(t1)
            wide = t.pivot_table(index=["retriever", "stage", "top_k"], columns="grade", values="percent").round(1)
            n = int(stages.get("chunk-sizes", {}).get("graded_questions") or 0)
            tests = _size_tests(run / names.chunk_size_tests(size))
            facts["table1"].append(dict(size=size, n=n, table=markdown_table(wide, index=True), tests=tests))
    return _lines(block("report/chunk_sizes.md", facts))


def _interval(lo, hi, spec: str = ".3f") -> str:
    import pandas as pd

    return MISSING if pd.isna(lo) or pd.isna(hi) else "[" + format(lo, spec) + ", " + format(hi, spec) + "]"


def _size_differences(path) -> str | None:
    import pandas as pd

    if not path.is_file():
        return None
    d = pd.read_csv(path)
    cols = {
        "questions": d["questions"],
        "system": d["system"],
        "metric": d["metric"],
        "sizes": [f"{b} − {a}" for a, b in zip(d["size_a"], d["size_b"])],
        "n (questions / chunks)": [f"{n} / {c}" for n, c in zip(d["n_questions"], d["n_source_chunks"])],
        "difference": d["diff"].round(3),
        "95% CI": [_interval(lo, hi, "+.3f") for lo, hi in zip(d["ci_low"], d["ci_high"])],
        "p (Holm)": d["p_holm"].map(lambda p: MISSING if pd.isna(p) else format(p, ".2g")),
        "detectable": d["mde"].map(lambda m: MISSING if pd.isna(m) else "±" + format(m, ".3f")),
    }
    return markdown_table(pd.DataFrame(cols))


def _size_tests(path) -> list[dict]:
    """Reranked − retrieved in the share of grade 3 at one chunk size."""
    import pandas as pd

    if not path.is_file():
        return []
    t = pd.read_csv(path)
    t = t[(t["comparison"] == "reranked - retrieved") & (t["measure"] == "share_3")]
    return [_nan_free(r) for r in t.to_dict("records")]


def run_time_section(manifest: dict) -> str:
    # the report's own record is written after it
    stages = [
        dict(
            name=name,
            seconds=s.get("wall_seconds", s.get("seconds", 0)),
            skipped=s.get("skipped"),
            computed=s.get("computed_seconds"),
        )
        for name, s in manifest.get("stages", {}).items()
        if name != "report"
    ]
    return block("report/run_time.md", dict(stages=stages, mt=manifest.get("model_time")))


def models_section(cfg, manifest: dict, stages: dict) -> str:
    models = []
    for role, ident in manifest.get("models", {}).items():
        for sub, m in ident.items() if "name" not in ident else [("", ident)]:
            how = m.get("backend") or m.get("upstream")
            models.append(dict(role=role, sub=sub, name=m.get("name"), how=how, sha256=m.get("sha256") or "-"))
    r, ret = cfg.retrieval, stages.get("retrieve", {})
    pool = dict(pool=r.pool, share=None if isinstance(r.pool, int) else r.pool, rerank_pool=ret.get("rerank_pool"))
    pool.update(rerank_pool_share=ret.get("rerank_pool_share"), corpus_chunks=ret.get("corpus_chunks"))
    pool.update(identical=ret.get("reranked_lists_identical"))
    facts = dict(models=models, bm25=r.bm25, dense_model=r.dense.model, pool=pool)
    facts.update(reranker_kind=r.reranker.kind, reranker_model=r.reranker.model)
    return block("report/models.md", facts)


def corpus_section(cfg, stages: dict, out=_same) -> str:
    """The corpus, and ATTRIBUTION.md beside the report (it quotes the documents)."""
    ing = stages.get("ingest", {})
    ident = ing.get("corpus_list")
    if ident:
        from ..runner.data import write_attribution

        write_attribution(cfg, out(cfg.run_dir / names.ATTRIBUTION))
    facts = {k: ing.get(k, "?") for k in ("documents", "pages", "words")}
    facts.update(
        corpus_list=ident, chunks=stages.get("chunk", {}).get("chunks", "?"), garbled=ing.get("garbled_flagged", [])
    )
    facts.update(max_tokens=cfg.chunking.max_tokens, references_dropped=ing.get("references_dropped_chars", "?"))
    facts["chunk_lengths"] = _img(cfg.run_dir, names.PLOT_CHUNK_LENGTHS, out)
    return block("report/corpus.md", facts)


AUDIT_REPORT_COLUMNS = [
    "set",
    "n",
    "coverage_mean",
    "verbatim_median",
    "share_copy",
    "share_outside_context",
    "share_outside_document",
    "share_boilerplate",
]


def question_check_lines(cfg, stages: dict) -> list[str]:
    """Synth's checks per task, on the golden samples too, and the questions' audit."""
    import pandas as pd

    rej, audit = cfg.synthetic_dir / names.REJECTIONS, cfg.synthetic_dir / names.QUESTION_AUDIT
    if not rej.is_file():
        return []
    t = pd.read_csv(rej)
    syn = stages.get("synth", {})
    per_set = lambda s: markdown_table(t[t["set"] == s].drop(columns="set").loc[:, lambda d: (d != 0).any()])  # noqa: E731
    facts = dict(checks=cfg.synth.checks, skipped=syn.get("sources_skipped") or {}, written=per_set("written"))
    facts.update(fewshot_max_share=syn.get("fewshot_max_share"), label_check=syn.get("label_check_on_golden"))
    facts.update(golden=per_set("golden"), audit=None, audit_file=names.QUESTION_AUDIT)
    if audit.is_file():
        a = pd.read_csv(audit)
        facts["audit"] = markdown_table(a[a.task == "all"][AUDIT_REPORT_COLUMNS].round(3))
    return _lines(block("report/question_checks.md", facts))


def synthetic_section(cfg, stages: dict, out=_same) -> str:
    facts = dict(synth=stages.get("synth", {}), retention=_table(cfg.synthetic_dir / names.RETENTION))
    facts.update(question_checks="\n".join(question_check_lines(cfg, stages)))
    facts["kept_plot"] = _img(cfg.run_dir, names.PLOT_SYNTH_KEPT, out)
    return block("report/synthetic.md", facts)


def retrieval_section(cfg) -> str:
    run, ks = cfg.run_dir, cfg.retrieval.k_values
    cols = ["system", "n_queries"] + [f"{m}@{k}" for k in ks for m in ("recall", "ndcg")]
    facts = dict(table=_table(run / names.RETRIEVAL_SUMMARY, cols), recall=_img(run, names.PLOT_RECALL))
    return block("report/retrieval.md", facts)


def table1_details(cfg) -> str:
    from .gold_check import report_lines

    run = cfg.run_dir
    v = run / names.JUDGE_VALIDITY
    validity = _nan_free(json.loads(v.read_text())) if v.is_file() else None
    if validity is not None:
        keys = ("verdict", "auc", "n_pairs", "source_grades", "random_grades", "order_swap_agreement")
        validity = {k: validity.get(k) for k in keys}
    facts = dict(validity=validity, ppi="\n".join(ppi_lines(cfg)), known_gold="\n".join(report_lines(cfg)))
    facts["paired_tests"] = _tests(run, names.PAIRED_TESTS, ("comparison", "retriever", "top_k", "measure"), "value")
    facts["graded_metrics"] = _table(run / names.GRADED_METRICS)
    return block("report/table1_details.md", facts)


def table2_details(cfg) -> str:
    run = cfg.run_dir
    c = run / names.ANSWER_CHECKS
    facts = dict(checks=json.loads(c.read_text()) if c.is_file() else None, refusals="\n".join(refusal_lines(cfg)))
    facts["tests"] = _tests(run, names.TABLE2_TESTS, ("metric", "setting_a", "setting_b"), "mean")
    facts["cluster_unit"] = cfg.grading.cluster.replace("_", " ") + "s"
    return block("report/table2_details.md", facts)


PIPELINE_COLUMNS = [
    "pipeline",
    "n",
    "facts_present",
    "n_facts_present",
    "correctness",
    "n_correctness",
    "correct_after_facts",
    "faithfulness",
    "answers_with_valid_citation",
    "citation_accuracy",
    "refusal_rate",
    "claim_faithfulness",
    "citation_precision",
    "citation_recall",
    "overall_pass",
    "n_overall_pass",
    "latency_p50_s",
]
MEASURE_REPORT_COLUMNS = [
    "setting",
    "pipeline",
    "n",
    "refused_phrase",
    "leakage_answers",
    "leakage_mean_share",
    "cited_sentences",
    "citation_supported",
    "misattributed",
    "claims",
    "claim_supported",
]
FACT_CHECK_REPORT_COLUMNS = ["setting", "pipeline", "n", "n_verdict", "accuracy", "ci_low", "ci_high"]


def answer_measure_lines(cfg) -> list[str]:
    import pandas as pd

    p = cfg.run_dir / names.ANSWER_MEASURES
    if not p.is_file():
        return []
    t = pd.read_csv(p)
    table = markdown_table(t[[c for c in MEASURE_REPORT_COLUMNS if c in t]].round(3))
    return _lines(block("report/answer_measures.md", dict(file=names.ANSWER_MEASURES, table=table)))


def fact_check_lines(cfg) -> list[str]:
    import pandas as pd

    p = cfg.run_dir / names.FACT_CHECK_VERDICTS
    if not p.is_file():
        return []
    t = pd.read_csv(p)
    table = markdown_table(t[t.label == "all"][FACT_CHECK_REPORT_COLUMNS].round(3)) if len(t) else None
    return _lines(block("report/fact_checks.md", dict(file=names.FACT_CHECK_VERDICTS, table=table)))


def pipelines_section(cfg) -> str:
    facts = dict(banner=judge_banner(cfg, "table2", ["correct", "answer_relevant", "grounded", "claim_support"]))
    facts.update(table=_table(cfg.run_dir / names.PIPELINES_TABLE, PIPELINE_COLUMNS))
    facts.update(fact_checks="\n".join(fact_check_lines(cfg)), answer_measures="\n".join(answer_measure_lines(cfg)))
    return block("report/pipelines.md", facts)


def _records(path) -> list[dict] | None:
    """A CSV's rows, or None when it is absent or holds no column."""
    import pandas as pd

    try:
        return [_nan_free(r) for r in pd.read_csv(path).to_dict("records")]
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return None


def answerability_section(cfg) -> list[str]:
    """Unanswerable questions, the evidence gate, refusals and claim-level support."""
    import pandas as pd

    run, una = cfg.run_dir, cfg.synthetic_dir / names.UNANSWERABLE
    u = cfg.synth.unanswerable
    facts = dict(check_k=u.check_k, answerable_grade=u.answerable_grade, check_enabled=u.enabled, golden=None)
    facts.update(unanswerable=None, min_questions=FINDINGS_MIN_QUESTIONS, gate=cfg.answer.gate)
    if una.is_file():
        t = pd.read_csv(una)
        gold = t[t.kind == "golden"]
        facts["unanswerable"] = markdown_table(t)
        if len(gold):
            facts["golden"] = dict(passed=int(gold.check_passed.sum()), generated=int(gold.generated.sum()))
    rows = _records(run / names.ANSWERABILITY) if (run / names.ANSWERABILITY).is_file() else None
    facts["rows"] = [dict(r, n_judged=int(r.get("n_judged") or 0)) for r in rows] if rows is not None else None
    facts["n_answerable"] = int(rows[0]["n_answerable"]) if rows else 0
    facts["n_unanswerable"] = int(rows[0]["n_unanswerable"]) if rows else 0
    facts["rejection_banner"] = judge_banner(cfg, "table2", ["negative_rejection"])
    facts.update(sweep=_img(run, names.PLOT_REFUSAL_SWEEP), claims_enabled=cfg.answer.claims)
    facts["claims_banner"] = judge_banner(cfg, "table2", ["claim_support"])
    facts["claims"] = _records(run / names.CLAIMS) or []
    c = run / names.ANSWER_CHECKS
    facts["citations"] = json.loads(c.read_text()) if c.is_file() else None
    return _lines(block("report/answerability.md", facts))


# the sections a notebook shows by name (`spacelm.notebooks.show`), each as the report words it
SHOWN = {
    "found": found_section,
    "labels": labels_section,
    "table1": table1_section,
    "table2": table2_section,
    "retrieval": retrieval_section,
    "judge_checks": lambda cfg: "\n".join(judge_check_section(cfg)),
    "judge_banner": judge_banner,  # table="table1" | "table2", rubrics=[...]
    "answerability": lambda cfg: "\n".join(answerability_section(cfg)),
    "pipelines": pipelines_section,
    "table1_details": table1_details,
    "table2_details": table2_details,
}


def section_text(cfg, name: str, **options) -> str:
    """The Markdown of one report section (`SHOWN`) for the run of `cfg`; KeyError naming the sections."""
    if name not in SHOWN:
        raise KeyError(f"no report section {name!r}; the sections are: {', '.join(SHOWN)}")
    return SHOWN[name](cfg, **options)


# ----------------------------------------------------------------------------- the two pages
def _manifest(cfg) -> dict:
    """The run's manifest as the report reads it: where Table 1 reads the assessor's labels, its
    question count is the questions the labels' tables read (those the screening kept:
    grading/question_screening.json), not the embedded judge's sample the grade stage recorded
    (kept as `judged_questions`)."""
    from .grade import reads_labels

    p = cfg.run_dir / names.MANIFEST
    manifest = json.loads(p.read_text()) if p.is_file() else {}
    grade, screen = manifest.get("stages", {}).get("grade"), cfg.run_dir / names.QUESTION_SCREENING
    if grade and reads_labels(cfg) and screen.is_file():
        s = json.loads(screen.read_text())
        n = s.get("kept_for_table1", s.get("questions"))
        if isinstance(n, int):
            grade = {**grade, "questions": n, "judged_questions": grade.get("questions"), "scale": names.scale(n)}
            manifest["stages"] = {**manifest["stages"], "grade": grade}
            manifest["sizes"] = {**manifest.get("sizes", {}), "table1_questions": n}
    return manifest


def _head(cfg) -> str | None:
    from ..runner.provenance import git_commit

    return git_commit(cfg.root)


def headings(text: str) -> list[dict]:
    """A page's second- and third-level headings, with their anchors."""
    from ..lib.report.render import slug

    out, seen = [], {}
    for line in text.split("\n"):
        level = len(line) - len(line.lstrip("#"))
        if line.startswith("#") and line[level : level + 1] == " ":
            title = line[level + 1 :].strip()
            anchor = slug(title)
            n = seen.get(anchor, 0)
            seen[anchor] = n + 1
            if level in (2, 3):
                out.append(dict(level=level, title=title, anchor=anchor + ("-" + str(n) if n else "")))
    return out


def pages(cfg, out=_same) -> tuple[str, str]:
    """(report.md, report_details.md); plots and companion files written through `out`."""
    run = cfg.run_dir
    manifest = _manifest(cfg)
    stages = manifest.get("stages", {})
    draw_shared_plots(cfg, out)
    findings = json.loads((run / names.FINDINGS).read_text()) if (run / names.FINDINGS).is_file() else []
    details = [
        "\n".join(chunk_size_lines(cfg, stages)),
        run_time_section(manifest),
        models_section(cfg, manifest, stages),
        corpus_section(cfg, stages, out),
        synthetic_section(cfg, stages, out),
        retrieval_section(cfg),
        "\n".join(judge_check_section(cfg, out)),
        labels_section(cfg).strip("\n"),
        table1_details(cfg),
    ]
    if cfg.answer.enabled:
        details += [table2_details(cfg), pipelines_section(cfg), "\n".join(answerability_section(cfg))]
    details_page = block("report/details.md", dict(run_name=cfg.run_name, sections=[s for s in details if s]))
    page = dict(run_name=cfg.run_name, config_file=manifest.get("config_file"), started=manifest.get("started"))
    banner = "\n".join(scale_banner(stages, cfg.analysis_plan.pilot))
    page.update(finished=manifest.get("finished", "(running)"), scale_banner=banner)
    page.update(commit_line=commit_line(manifest.get("git_commit"), _head(cfg)), found=found_section(cfg))
    page.update(setup=setup_section(cfg, stages, out), paper=paper_section(cfg, findings, manifest))
    page.update(table1=table1_section(cfg), table2=table2_section(cfg), details=headings(details_page))
    return block("report/page.md", page) + "\n", details_page + "\n"


def build(cfg, out) -> dict:
    from .browse import write_browse  # the drill-down page beside the report (stages/browse.py)

    report, details = pages(cfg, out)
    write_text(out(cfg.run_dir / names.REPORT), report)
    write_text(out(cfg.run_dir / names.REPORT_DETAILS), details)
    browsed = write_browse(cfg, out(cfg.run_dir / names.BROWSE))
    lines = report.count("\n") + details.count("\n")
    return {"lines": lines, "browse_questions": len(browsed["questions"])}


# what the report reads from the run folder, beyond the findings and the manifest
RUN_READS = (
    names.MANIFEST,
    names.FINDINGS,
    names.RETRIEVAL_SUMMARY,
    names.RETRIEVAL_SIGNIFICANCE,
    names.JUDGE_RELEVANCE,
    names.JUDGE_CONTROLS,
    names.TABLE1,
    names.TABLE1_MD,
    names.PAIRED_TESTS,
    names.GRADED_METRICS,
    names.PPI_DIFFERENCES,
    names.JUDGE_VALIDITY,
    names.TABLE2_MD,
    names.TABLE2_TESTS,
    names.ANSWER_CHECKS,
    names.PIPELINES_TABLE,
    names.ANSWERABILITY,
    names.CLAIMS,
    names.FACT_CHECK_VERDICTS,
    names.ANSWER_MEASURES,
    names.CHUNK_SIZES_SUMMARY,
    names.CHUNK_SIZES_COSTS,
    names.CHUNK_SIZES_EQUAL_BUDGET,
    names.CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES,
    # the drill-down page (browse.html) reads these too
    names.RANKINGS,
    names.GRADES,
    names.ANSWERS,
)


def _reads(cfg) -> list[Path]:
    from ..lib.report.browse import TEMPLATE as BROWSE_TEMPLATE
    from ..runner.data import chunks_path
    from .gold_check import outputs as gold_outputs

    synthetic = (names.RETENTION, names.UNANSWERABLE, names.REJECTIONS, names.QUESTION_AUDIT)
    shared = [chunks_path(cfg)] + [cfg.synthetic_dir / f for f in synthetic] + [cfg.synthetic_dir / names.QUESTIONS]
    sizes = [cfg.run_dir / names.CHUNK_SIZES / str(n) / names.TABLE1 for n in cfg.chunk_study.sizes]
    gold = [p for p in gold_outputs(cfg) if p.suffix == ".csv"] + [cfg.run_dir / names.RELEVANT_SHARES]
    labels = [cfg.run_dir / names.JUDGE_VS_LABELS, cfg.run_dir / "labels" / "standing.json"]
    labels += [cfg.run_dir / names.LABEL_PAIRED_TESTS, cfg.run_dir / names.QUESTION_SCREENING]
    labels += [cfg.run_dir / names.RETRIEVAL_PER_QUERY]
    templates = sorted(SECTIONS.glob("*.md")) + [TEMPLATES / "labels_section.md", TEMPLATES / "found.md"]
    return [*templates, BROWSE_TEMPLATE] + [cfg.run_dir / f for f in RUN_READS] + sizes + shared + gold + labels


def _outputs(cfg) -> list[Path]:
    d = cfg.run_dir
    return [d / names.REPORT, d / names.REPORT_DETAILS, d / names.SETUP_VS_PAPER, d / names.BROWSE]


STAGE = Stage(
    name="report",
    home=lambda cfg: cfg.run_dir,
    outputs=_outputs,
    build=build,
    sections=lambda cfg: [
        "chunking",
        "retrieval",
        "models.judge",
        "grading",
        "synth",
        "answer.gate",
        "chunk_study",
    ],
    reads=_reads,
    doc="report.md and report_details.md",
    after=("ingest", "chunk", "synth", "retrieve", "chunk-sizes", "judge-check", "grade", "answer", "findings"),
)


def build_report(cfg: Config, force: bool = True, done: list | None = None) -> Path:
    """The findings stage when stale, then the report (rebuilt unless not `force`); (stage, summary) to `done`."""
    from . import findings

    for stage, run in ((findings.STAGE, findings.run), (STAGE, lambda c: execute(STAGE, c, force=force))):
        summary = run(cfg)
        if done is not None:
            done.append((stage, summary))
    return cfg.run_dir / names.REPORT
