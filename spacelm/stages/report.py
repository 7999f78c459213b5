"""Stage report: `results/<run>/report.md`, the one page a reviewer reads first — every stage's
tables and plots, the models used, the scale, and the run time, gathered from the run folder.

A declared stage like the others (fingerprinted, written atomically), built last: `spacelm run`
executes it after the notebooks and the manifest's last update, `spacelm report` on its own. Its
prose is the template `spacelm/templates/report.md`; the findings it shows are the findings
stage's `findings.json`. It is not recorded in the manifest, which it reads."""

from __future__ import annotations

import json
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_text
from ..lib.names import FINDINGS_MIN_QUESTIONS
from ..lib.report.tables import markdown_table, md_cell
from .base import Stage, execute
from .findings import read_judge_check

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "report.md"


def _same(p: Path) -> Path:
    """Outside a stage build a file is written where it belongs."""
    return p


def _present(p: Path, out=_same) -> bool:
    """`p` exists, or was written in this build (staged beside its final place)."""
    staged = getattr(out, "moves", {}).get(Path(p))
    return Path(p).is_file() or (staged is not None and staged.is_file())


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8").strip() if p.is_file() else "_(not produced in this run)_"


def _csv_md(p: Path, cols=None, round_to: int = 3) -> str:
    if not p.is_file():
        return "_(not produced in this run)_"
    import pandas as pd

    df = pd.read_csv(p)
    if cols:
        df = df[[c for c in cols if c in df.columns]]
    if df.empty:
        return f"_(none in this run: `{p.name}` holds no row)_"
    return markdown_table(df.round(round_to))


def _estimate(v, lo=None, hi=None, digits: int = 2) -> str:
    """`40.0 [32.2, 48.9]`: a figure with its interval, a dash where missing."""
    if v is None or v != v:
        return "–"
    ci = "" if lo is None or hi is None or lo != lo or hi != hi else f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return f"{v:.{digits}f}{ci}"


def _tests_md(run: Path, name: str, keys: tuple, value: str) -> str:
    """A paired-tests CSV as the columns a reader needs: what is compared, n, the two means, the
    difference with its 95% CI as `+4.0 [-1.2, 9.2]`, Holm's p and the detectable difference;
    shares (percentage points) with one decimal, scores with two. Every column: the CSV, linked."""
    p = run / name
    if not p.is_file():
        return "_(not produced in this run)_"
    import pandas as pd

    df = pd.read_csv(p)
    if df.empty:
        return f"_(none in this run: `{p.name}` holds no row)_"
    rows = []
    for r in df.to_dict("records"):
        d = 1 if str(r.get("measure", "")).startswith("share") else 2
        rows.append(
            {
                **{k.replace("_", " "): r.get(k) for k in keys if k in r},
                "n": r.get("n_questions"),
                "a": _estimate(r.get(f"{value}_a"), digits=d),
                "b": _estimate(r.get(f"{value}_b"), digits=d),
                "b − a [95% CI]": _estimate(r.get("diff"), r.get("ci_low"), r.get("ci_high"), d),
                "p (Holm)": _estimate(r.get("p_holm"), digits=3),
                "mde": _estimate(r.get("mde_cell"), digits=d),
            }
        )
    return markdown_table(pd.DataFrame(rows)) + f"\n\nEvery column (family, se, df, deff, …): [{name}]({name})."


def _img(run: Path, name: str, alt: str, out=_same) -> str:
    """A link to the figure `name` (a path in the run folder) when it is there, else ""."""
    return f"![{alt}]({name})" if _present(run / name, out) else ""


def draw_shared_plots(cfg, out=_same) -> None:
    """Plots of the data shared between runs (chunks, synthetic questions), drawn into this
    run's folder from the files their stages wrote."""
    import pandas as pd

    from ..lib.report.plots import chunk_length_histogram, generated_vs_kept
    from .data import chunks_path, load_chunks

    if chunks_path(cfg).is_file():
        chunk_length_histogram(load_chunks(cfg), cfg.chunking.max_tokens, out(cfg.run_dir / names.PLOT_CHUNK_LENGTHS))
    retention = cfg.synthetic_dir / names.RETENTION
    if retention.is_file():
        generated_vs_kept(pd.read_csv(retention), out(cfg.run_dir / names.PLOT_SYNTH_KEPT))


def _fmt(v, ci=None) -> str:
    """`0.72 [0.61, 0.83]`; a dash for a missing value (None or NaN)."""
    if v is None or v != v:
        return "–"
    lo, hi = ci or (None, None)
    missing = lo is None or hi is None or lo != lo or hi != hi
    return f"{v:.2f}" + ("" if missing else f" [{lo:.2f}, {hi:.2f}]")


def judge_banner(cfg, table: str, rubrics=None) -> str:
    """The verdict of the judge that produced `table` ("table1": relevance grades; "table2":
    answer rubrics), in plain words, for the report and the notebooks. `rubrics` limits the
    controls shown to the judges a table uses (e.g. ["claim_support"]). A table read through the
    assessor's labels says so first: its grades are the labels, the judge is measured against them."""
    labels_first = labels_banner(cfg, table)
    if labels_first and rubrics is None:
        return labels_first
    rel, ctl = read_judge_check(cfg)
    if ctl and rubrics is not None:
        ctl = [r for r in ctl if r["rubric"] in rubrics]
    judge = cfg.models.judge.model
    if rel is None:
        return (
            f"> ⚠ **Unchecked judge.** `{judge}` was never measured against labelled pairs or known-answer "
            "controls in this run (run `spacelm judge-check`): read its figures as unvalidated."
        )
    checked = {m.get("judge", {}).get("name") for m in rel if m.get("run")}
    lines = []
    if checked and judge not in checked:
        lines.append(f"> ⚠ The judge checks measured {sorted(checked)}, not this table's judge `{judge}`.")
    if table == "table1":
        ran = [m for m in rel if m.get("run")]
        parts = [
            f"{m['source']}: **{m['verdict']}** (AUC {_fmt(m.get('auc'), m.get('auc_ci'))}, "
            f"κ at grade ≥ 2 {_fmt(m.get('kappa_binary'), m.get('kappa_binary_ci'))}, n={m['n_pairs']} pairs)"
            for m in ran
        ]
        lines.insert(
            0,
            f"**Judge verdict** (`{judge}` against each source's relevance labels): "
            + ("; ".join(parts) if parts else "no labelled source could be read")
            + ".",
        )
        lines.insert(1, f"Grades: {cfg.grading.judging(cfg.root).describe()}.")
        fails = [m["source"] for m in ran if m["verdict"] == "fails"]
        if fails:
            lines.append(
                f"> ⚠ **This judge fails its check on {', '.join(fails)}**: it barely tells relevant passages "
                "from non-relevant ones there, so the split of this table between grades is close to noise."
            )
        elif ran and all(m["verdict"] == "too few pairs to tell" for m in ran):
            lines.append("> ⚠ The judge checks of this run are too small to tell whether this judge can be trusted.")
        elif not ran:
            why = "; ".join(m.get("why", "") for m in rel)
            lines.append(f"> ⚠ **Unchecked judge**: no labelled source was available ({why}).")
        return "\n\n".join(lines)
    if not ctl:
        return "\n\n".join(lines + [f"> ⚠ **Unchecked rubrics.** No known-answer control was scored for `{judge}`."])
    parts = []
    for r in ctl:
        rate = _fmt(r["pass_rate"], (r["pass_rate_ci_low"], r["pass_rate_ci_high"]))
        parts.append(f"{r['rubric'].replace('_', ' ')}: **{r['verdict']}** (pass rate {rate}, n={r['n']})")
    lines.insert(
        0,
        f"**Judge verdict** (`{judge}` on known-answer controls: a good answer must score above a bad "
        "one): " + "; ".join(parts) + ".",
    )
    fails = [r["rubric"] for r in ctl if r["verdict"] == "fails"]
    not_passed = [r["rubric"] for r in ctl if r["verdict"] not in ("fails", "valid")]
    if fails:
        lines.append(
            f"> ⚠ **The judge fails its controls for {', '.join(fails)}**: those rows of the table do not "
            "measure what their names say; they give no headline figure."
        )
    if not_passed and not all(r["verdict"] == "too few pairs to tell" for r in ctl):
        lines.append(
            f"> ⚠ **Not passed** (the pass rate's lower bound does not clear the bar): "
            f"{', '.join(not_passed)}: no headline figure rests on them."
        )
    elif all(r["verdict"] == "too few pairs to tell" for r in ctl):
        lines.append("> ⚠ Too few controls in this run to tell whether the rubric scores can be trusted.")
    return "\n\n".join(lines)


def ppi_lines(cfg) -> list[str]:
    """Table 1's prediction-powered estimates (judge grades on every pair + a person's grades on
    a sample), or the statement that there are no human labels."""
    import pandas as pd

    run = cfg.run_dir
    t = run / names.TABLE1
    if not t.is_file():
        return []
    df = pd.read_csv(t)
    if "n_human" not in df.columns or not (df["n_human"].fillna(0) > 0).any():
        return [
            "Prediction-powered estimates: **no human labels** in this run (`spacelm label --n N` draws a sample "
            "to grade; see docs/judges.md).",
            "",
        ]
    cols = ["retriever", "stage", "top_k", "grade", "percent", "ppi_estimate", "ppi_ci_low", "ppi_ci_high", "n_human"]
    return [
        "### Prediction-powered Table 1",
        "",
        "The judge's share (percent) beside the prediction-powered estimate from the judge's grades on every pair "
        "and a person's grades on a stratified sample (classic PPI, 95% CLT interval, pairs as units):",
        "",
        _csv_md(t, cols),
        "",
        "Reranked − retrieved, share graded 2–3 (pp):",
        "",
        _csv_md(run / names.PPI_DIFFERENCES),
        "",
    ]


def refusal_lines(cfg) -> list[str]:
    """Negative rejection measured first as a refusal rate where the passages cannot answer: the
    phrase check and the refusal judge with their agreement, the 1-5 rubric beside, marked when
    the judge behind it has not passed its controls."""
    run = cfg.run_dir
    f = run / names.ANSWER_CHECKS
    rows = json.loads(f.read_text()).get("refusals_where_passages_cannot_answer") if f.is_file() else None
    if not rows:
        return []
    _, ctl = read_judge_check(cfg)
    passed = {r["rubric"]: (bool(r.get("passed")) if "passed" in r else r.get("verdict") == "valid") for r in ctl or []}
    mark = lambda j: "" if passed.get(j) else (" ⚠ not passed its controls" if j in passed else " ⚠ unchecked")
    out = [
        "### Negative rejection as a refusal rate",
        "",
        "Where the passages cannot answer (wrong passages only; unanswerable questions), the share of answers that "
        "decline, by the phrase check and by the yes/no refusal judge (95% Wilson intervals), their agreement, and "
        "the paper's 1–5 rubric beside it.",
        "",
        f"| setting | n | refusal rate (phrase) | refusal rate (judge{mark('refusal')}) | agreement | κ | "
        f"rubric mean (1–5{mark('negative_rejection')}) | rubric 4–5 |",
        "|---|---:|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['setting']} | {r['n']} | "
            f"{_fmt(r['refusal_rate_phrase'], (r['phrase_ci_low'], r['phrase_ci_high']))} | "
            f"{_fmt(r['refusal_rate_judge'], (r['judge_ci_low'], r['judge_ci_high']))} | {_fmt(r['agreement'])} | "
            f"{_fmt(r['kappa'])} | {_fmt(r['rubric_mean'])} | {_fmt(r['rubric_declines_rate'])} |"
        )
    return out + [""]


def judge_check_section(cfg, staged=_same) -> list[str]:
    rel, ctl = read_judge_check(cfg)
    out = ["## Judge checks", ""]
    if rel is None:
        return out + ["_(not produced in this run: run `spacelm judge-check`)_", ""]
    out += [
        "Relevance judge against each source's own labels (whoever made them: people, an LLM assessor, or the "
        "golden passages against hard negatives; same prompt, backend and settings as Table 1; 95% bootstrap CIs "
        "over queries). Where a source has reference judges (automatic judges' labels on the same pairs, "
        "rows marked ↳), the verdict compares our CI bounds with their figures; elsewhere with the absolute "
        "thresholds of `judge_check` in the config. A verdict needs the CI's lower bound to clear the bar.",
        "",
        "| source | labels | pairs | AUC | κ (grade ≥ 2) | weighted κ | accuracy | verdict | why |",
        "|---|---|---:|---|---|---|---|---|---|",
    ]
    for m in rel:
        if not m.get("run"):
            out.append(f"| {m['source']} | – | – | – | – | – | – | not run | {md_cell(m.get('why', ''))} |")
            continue
        out.append(
            f"| {m['source']} | {m.get('labels')} | {m['n_pairs']} | {_fmt(m['auc'], m['auc_ci'])} | "
            f"{_fmt(m['kappa_binary'], m['kappa_binary_ci'])} | "
            f"{_fmt(m.get('kappa_weighted'), m.get('kappa_weighted_ci'))} | "
            f"{_fmt(m['accuracy'], m.get('accuracy_ci'))} | **{m['verdict']}** | "
            f"{md_cell(m.get('verdict_reason', ''))} |"
        )
        o = m.get("ours_on_reference_pairs")
        if o:  # the references did not label every pair: ours again on the pairs they all labelled
            out.append(
                f"| ↳ ours on the references' pairs | {m.get('labels')} | {o['n_pairs']} | "
                f"{_fmt(o.get('auc'), o.get('auc_ci'))} | {_fmt(o.get('kappa_binary'), o.get('kappa_binary_ci'))} | "
                f"{_fmt(o.get('kappa_weighted'))} | – | – | the figures the verdict compares |"
            )
        for r in m.get("reference_judges") or []:  # other judges on exactly these pairs, same CIs
            if r["n_pairs"] < cfg.judge_check.min_pairs:  # under the suite's own minimum: no figures
                out.append(
                    f"| ↳ reference: {r['name']} | {r.get('labels', '')} | {r['n_pairs']} | – | – | – | – | "
                    f"too few pairs to tell | fewer than judge_check.min_pairs ({cfg.judge_check.min_pairs}) |"
                )
                continue
            out.append(
                f"| ↳ reference: {r['name']} | {r.get('labels', '')} | {r['n_pairs']} | "
                f"{_fmt(r.get('auc'), r.get('auc_ci'))} | {_fmt(r.get('kappa_binary'), r.get('kappa_binary_ci'))} | "
                f"{_fmt(r.get('kappa_weighted'))} | – | – | same pairs as the row above |"
            )
    out.append("")
    out += boundary_lines(rel) + bias_lines(rel)
    for m in rel:
        pb = m.get("position_bias")
        if m.get("run") and not (pb and pb.get("n_pairs")):  # a check that did not run says so
            why = (
                "judge_check.position_bias is off"
                if not cfg.judge_check.position_bias
                else "no pair of this source was graded in both orders"
            )
            out.append(f"- {m['source']}: position bias: not measured ({why}).")
        elif pb and pb.get("n_pairs"):
            q, b = pb["question_first"], pb["both_orders"]
            out.append(
                f"- {m['source']}: position bias: passage-first grades agree with question-first on "
                f"{pb['agreement']:.2f} of {pb['n_pairs']} pairs (mean shift {pb['mean_shift']:+.2f}); "
                f"the mean of both orders gives AUC {_fmt(b['auc'], b['auc_ci'])}, κ {_fmt(b['kappa_binary'])} "
                f"against {_fmt(q['auc'], q['auc_ci'])}, κ {_fmt(q['kappa_binary'])} question-first, "
                f"at {pb['both_orders_cost']}."
            )
        hard = {k: v for k, v in m.items() if k.startswith("auc_relevant_vs_")}
        if hard:
            out.append(
                f"- {m['source']}: "
                + ", ".join(
                    f"AUC relevant vs {k[len('auc_relevant_vs_') :].replace('_', ' ')} {_fmt(v)}"
                    for k, v in hard.items()
                )
                + "."
            )
    plots = sorted((cfg.run_dir / names.JUDGE_CHECK_PLOTS).glob("confusion_*.png"))
    out += [
        "",
        " ".join(f"![{p.stem}](judge_check/plots/{p.name})" for p in plots),
        "",
        "Calibration: the judge's grade distribution for each label of each source (the same pairs):",
        "",
        _img(cfg.run_dir, names.JUDGE_CALIBRATION, "judge calibration", staged)
        or _img(cfg.run_dir, names.PLOT_JUDGE_CALIBRATION, "judge calibration", staged),
        "",
    ]
    out += [
        "Known-answer controls for the answer rubrics and binary judges (pass = the good answer scored above "
        "the bad one):",
        "",
    ]
    out.append(_csv_md(cfg.run_dir / names.JUDGE_CONTROLS))
    return out + [""]


def boundary_lines(rel: list[dict]) -> list[str]:
    """The relevance judge at each cut of the 0-3 scale a finding reads, per source (and the
    reference judges on the same pairs): kappa, precision and recall with their 95% CIs, the
    boundary's verdict. Table 1's verdicts read the in-domain source's."""
    ran = [m for m in rel if m.get("run") and m.get("boundaries")]
    if not ran:
        return []
    out = [
        "**At each boundary** the findings read (grade ≥ 1, ≥ 2, = 3): agreement with the labels at that cut. "
        "A Table 1 finding gets a verdict only when its boundary is *valid* on the in-domain source "
        "(marked ◆); elsewhere the figures show how far the judge carries.",
        "",
        "| source | boundary | κ | precision | recall | labels above / judge above | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in ran:
        bv = m.get("boundary_verdicts") or {}
        mark = " ◆" if m.get("in_domain") else ""
        for b, f in m["boundaries"].items():
            out.append(_boundary_row(f"{m['source']}{mark}", f, (bv.get(b) or {}).get("verdict", "–")))
        for r in m.get("reference_judges") or []:
            out += [_boundary_row(f"↳ {r['name']}", f, "same pairs") for f in (r.get("boundaries") or {}).values()]
    return out + [""]


def _boundary_row(label: str, f: dict, last: str) -> str:
    """One row of the boundary table: κ, precision and recall at a cut with their CIs."""
    return (
        f"| {label} | {f['cut']} | {_fmt(f['kappa'], f['kappa_ci'])} | "
        f"{_fmt(f['precision'], f['precision_ci'])} | {_fmt(f['recall'], f['recall_ci'])} | "
        f"{f['n_label']} / {f['n_judge']} | {last} |"
    )


def bias_lines(rel: list[dict]) -> list[str]:
    """The system-bias audit per source: each system's mean judge - label residual on the
    labelled passages it retrieved, with its CI, and Kendall's tau of the systems' ranking by
    judge and by labels."""
    ran = [m for m in rel if m.get("run") and m.get("system_bias")]
    if not ran:
        return []
    out = [
        "**System bias**: on labelled passages each system retrieved (its top-k), the judge's grade minus the "
        "label. For passages of equal label a fair judge grades every system's alike; a comparison of two "
        "systems gets a verdict only when their difference here is small beside the finding's detectable "
        "difference.",
        "",
        "| source | system | pairs | judge − label | mean grade | mean label |",
        "|---|---|---:|---|---|---|",
    ]
    for m in ran:
        sb = m["system_bias"]
        for name, v in sb["systems"].items():
            res = _fmt(v["mean_residual"], [v["ci_low"], v["ci_high"]])
            out.append(
                f"| {m['source']} | {name} | {v['n_pairs']} | {res} | "
                f"{_fmt(v['mean_grade'])} | {_fmt(v['mean_label'])} |"
            )
        tau = sb.get("kendall_tau")
        out.append(
            f"| {m['source']} | Kendall τ (judge vs labels) | – | {_fmt(tau) if tau is not None else '–'} | – | – |"
        )
    return out + [""]


def decomposition_lines(cfg) -> list[str]:
    """Table 1's comparisons at the smallest top-k under each signal alone (grading/decomposition.csv)."""
    import pandas as pd

    p = cfg.run_dir / names.GRADE_DECOMPOSITION
    if not _present(p):
        return []
    try:
        df = pd.read_csv(p)
    except pd.errors.EmptyDataError:  # a run older than the file's header
        return []
    if df.empty:
        return [f"_(no comparison of Table 1 has two questions to compare in `{names.GRADE_DECOMPOSITION}`)_", ""]
    k = int(df["top_k"].min())
    df = df[df["top_k"] == k]
    cols = list(dict.fromkeys(f"{r.comparison} ({r.retriever})" for r in df.itertuples()))
    out = [
        f"**What drives Table 1's differences** (top-{k}): each comparison's paired difference read through the "
        "grade, the calibrated score and each signal alone (mean over the top-k per question; 95% cluster-robust "
        "CI). A difference carried by one signal while the others stay flat is that signal's opinion.",
        "",
        "| signal | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for feature, g in df.groupby("feature", sort=True):
        cells = {
            f"{r.comparison} ({r.retriever})": f"{r.diff:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
            for r in g.itertuples()
        }
        out.append(f"| {feature} | " + " | ".join(cells.get(c, "–") for c in cols) + " |")
    return out + [""]


def pool_text(r, stages: dict) -> str:
    """The reranker's pool as the run resolved it (a share of the corpus becomes a count)."""
    ret = stages.get("retrieve", {})
    if "rerank_pool" not in ret:
        return f"top-{r.pool}" if isinstance(r.pool, int) else f"top {r.pool:.0%} of the chunks"
    same = ret.get("reranked_lists_identical")
    return f"top-{ret['rerank_pool']} ({ret['rerank_pool_share']:.0%} of {ret['corpus_chunks']} chunks)" + (
        "" if same is None else f"; bm25+rerank and dense+rerank return the same top-10 for {same:.0%} of the questions"
    )


INTERVAL_METHODS = {  # file -> how its intervals (and tests) are computed; recorded in the manifest
    names.TABLE1: "pooled share",
    names.RELEVANT_SHARES: "pooled share",
    names.PAIRED_TESTS: "mean",
    names.TABLE2: "mean",
    names.TABLE2_TESTS: "mean",
    names.PIPELINES_TABLE: "proportion",
    names.ANSWERABILITY: "proportion",
    names.CLAIMS: "pooled share",
    names.PLOT_RECALL: "mean",
    names.PLOT_REFUSAL_SWEEP: "proportion",
}


def interval_methods(run: Path | None = None) -> dict:
    """{run file: interval method in words} (spacelm.lib.stats.INTERVALS); F1 in
    answerability.csv is a pooled ratio and uses the cluster bootstrap."""
    from ..lib.stats import INTERVALS

    out = {f: INTERVALS[k] for f, k in INTERVAL_METHODS.items()}
    for f in (names.PAIRED_TESTS, names.TABLE2_TESTS):
        out[f] += "; test: cluster-robust t, Holm within each `family`"
    out[names.ANSWERABILITY] += "; refusal_f1: " + INTERVALS["pooled share"]
    if run is None or (run / names.FACT_CHECK_VERDICTS).is_file():  # not in a run made before the table
        out[names.FACT_CHECK_VERDICTS] = INTERVALS["proportion"]
    if run is None or (run / names.ANSWER_MEASURES).is_file():
        out[names.ANSWER_MEASURES] = INTERVALS["proportion"]
    out[names.JUDGE_CONTROLS] = "Wilson score interval (each control its own pair)"
    out[names.PLOT_NOISE] = f"faithfulness: {INTERVALS['mean']}; refusal share: {INTERVALS['proportion']}"
    out[names.JUDGE_RELEVANCE] = "percentile bootstrap over queries (the pairs of one query move together)"
    sig = run / names.RETRIEVAL_SIGNIFICANCE if run is not None else None
    clustered = sig is None or not sig.is_file() or "cluster" in sig.read_text(encoding="utf-8")
    out[names.RETRIEVAL_SIGNIFICANCE] = (
        "cluster-robust paired t over source chunks (p-value and mde; means and wins from ranx)"
        if clustered
        else "ranx paired Student t over queries, not clustered by source chunk (a run made before the clustered test)"
    )
    return out


def table_sizes(run: Path) -> dict:
    """{"grade" | "answer": (questions, source chunks)} from the paired-test tables' largest cell."""
    import pandas as pd

    out = {}
    for stage, p in (("grade", run / names.PAIRED_TESTS), ("answer", run / names.TABLE2_TESTS)):
        if p.is_file():
            t = pd.read_csv(p)
            if len(t) and "n_source_chunks" in t:
                out[stage] = (int(t["n_questions"].max()), int(t["n_source_chunks"].max()))
    return out


def setup_section(cfg, stages: dict, out=_same) -> list[str]:
    """The paper's setup beside this run's, component by component (also setup_vs_paper.csv)."""
    import pandas as pd

    from ..lib.report.setup_table import COLUMNS, comparability, setup_rows

    rows = setup_rows(cfg.run_setup(), stages, table_sizes(cfg.run_dir))
    write_dataframe(pd.DataFrame(rows, columns=COLUMNS), out(cfg.run_dir / names.SETUP_VS_PAPER))
    comp = comparability(rows)
    return [
        "## This run's setup beside the paper's",
        "",
        "Two different systems: a within-run comparison (reranked vs retrieved, dense vs BM25, standard vs 3 "
        "wrong) can hold or be reversed *here*; an absolute level is compared with the paper's only when judge "
        f"and chunk size match (here: {comp}). Same table: `setup_vs_paper.csv`.",
        "",
        pd.DataFrame(rows, columns=COLUMNS).to_markdown(index=False),
        "",
    ]


REPORT_FINDING_COLUMNS = [
    "finding",
    "paper",
    "this_run",
    "ci",
    "verdict",
    "verdict_reason",
    "boundary",
    "judge_bias",
    "n",
]


def plan_note(r: dict) -> str:
    """A finding's plan entry and the source of the paper's figure, for its numbered note."""
    from ..lib.report.tables import as_words

    role = as_words(r.get("role")).strip()
    need = as_words(r.get("n_needed")).strip()
    plan = (
        "exploratory (no plan entry)"
        if role in ("exploratory", "")
        else f"plan: {role} entry `{r.get('plan_entry')}`"
        + (f", needs {need} questions" if need not in ("", "–") else "")
    )
    src = as_words(r.get("source")).strip()
    return plan + (f"; paper's figure from the {src}" if src and src != "–" else "")


def findings_tables(df) -> list[str]:
    """The findings as a table narrow enough to read (number, finding, the paper's figure, this
    run's, its CI, verdict, n), then each verdict's reason, boundary and judge bias as a numbered
    note; every column is in paper_vs_run.csv, linked."""
    from ..lib.report.tables import MISSING, as_words

    def cell(v) -> str:
        text = as_words(v).strip()
        return md_cell(text) if text else MISSING

    out = [
        "| # | finding | paper | this run | 95% CI | verdict | n | instrument |",
        "|---:|---|---|---|---|---|---|---|",
    ]
    notes = []
    for i, r in enumerate(df.to_dict("records"), 1):
        out.append(
            f"| {i} | {cell(r['finding'])} | {cell(r['paper'])} | {cell(r['this_run'])} | {cell(r['ci'])} | "
            f"*{cell(r['verdict'])}* | {cell(r['n'])} | {cell(r.get('instrument'))} |"
        )
        parts = [as_words(r.get(k)).strip() for k in ("verdict_reason",)]
        parts.append(plan_note(r))
        parts += [
            f"{label}: {as_words(r.get(k)).strip()}"
            for k, label in (("boundary", "boundary"), ("judge_bias", "judge bias"), ("sensitivity", "sensitivity"))
        ]
        parts = [p for p in parts if p and not p.endswith(MISSING) and p != MISSING and not p.endswith(": ")]
        if parts:
            notes.append(f"{i}. " + md_cell("; ".join(parts)))
    out.append("")
    if notes:
        out += ["Why each verdict (by number above):", "", *notes, ""]
    out += [
        f"Every column (comparable, mde_rule, the judges' verdicts, …): [{names.PAPER_VS_RUN}]({names.PAPER_VS_RUN}).",
        "",
    ]
    return out


def paper_section(cfg, rows: list[dict]) -> list[str]:
    import pandas as pd

    from ..lib.report.findings import COLUMNS

    out = ["## The paper and this run", ""]
    if not rows:
        return out + ["_(the grade and answer stages have not produced their tests yet)_", ""]
    from ..lib.report.findings import VERDICTS

    out += [
        "Each finding of the paper (Tables 1 and 2), this run's figure with its 95% CI, and a verdict from "
        f"{', '.join(f'*{v}*' for v in VERDICTS)}. Within-run directional findings: *holds here* / *reversed "
        f"here* / *cannot tell*, from cluster-robust paired t tests over questions (clustered by "
        f"{cfg.grading.cluster.replace('_', ' ')}; with the cluster sign-flip permutation test beside it where "
        "the analysis plan asks for both): "
        'an "every cell" finding holds only when every cell\'s own test does (intersection-union, no '
        "multiplicity correction) and is reversed when any cell moves significantly the other way (Holm over "
        "the finding's cells). Absolute levels are *not comparable* unless judge and chunk size match the "
        "paper's. A finding whose judge fails its check or is unchecked is *no evidence*. `comparable` states "
        "what differs from the paper's setup; `mde_rule` is the smallest difference the rule detects at this "
        "n (80% power, at the level the rule applies); n is questions / clusters. Rules: "
        "`spacelm/lib/report/findings.py`; the same table is in `paper_vs_run.csv`. Table 1's findings follow "
        "the same gate as Table 2's: the relevance judge must be *valid* on in-domain labels at the boundary "
        "the finding reads (`boundary`), share no scorer with the systems compared, and show a bias between "
        "them small beside the detectable difference (`judge_bias`); otherwise *no evidence*, with the reason.",
        "",
        *findings_tables(pd.DataFrame(rows, columns=COLUMNS)),
        *decomposition_lines(cfg),
        _img(cfg.run_dir, names.PLOT_FOREST, "forest plot of the findings' cells"),
        "",
    ]
    weak = [
        r["finding"]
        for r in rows
        if r.get("judge") != "grader" and "weak" in str(r.get("judge_verdict")) and r["verdict"] != "no evidence"
    ]
    if weak:
        out += [
            f"> ⚠ {len(weak)} of {len(rows)} findings rest on a judge rated *weak* on at least one check: "
            + "; ".join(weak)
            + "."
        ]
    return out + [""]


def time_lines(manifest: dict) -> list[str]:
    """Where the run's time went: model share, cold estimate, model time per unit."""
    mt = manifest.get("model_time")
    if not mt:
        return []
    share = mt.get("model_share_of_wall")
    out = [
        "",
        f"Model time (LLM calls, and {mt.get('encoder_seconds', 0):.0f} s of retrieval encoders): "
        f"{mt['model_seconds_this_run']:.0f} s spent by this run"
        + (f" ({share:.0%} of its wall time)" if share else "")
        + f"; {mt['model_seconds_recorded']:.0f} s as recorded for every result used (cached ones at the time they "
        f"took when computed). The same results cold: about {mt['cold_seconds_estimate'] / 60:.1f} min"
        + (
            f", {mt['model_share_cold_estimate']:.0%} of it in model calls."
            if mt.get("model_share_cold_estimate")
            else "."
        )
        + (
            f" Of the prompt tokens of the judge's calls this run made, {mt['prefix_reused_share']:.0%} were kept "
            "from the previous prompt's KV cache (prompts are sent so that those sharing a beginning follow each "
            "other)."
            if mt.get("prefix_reused_share") is not None
            else ""
        ),
        "",
        "| stage | unit | n | model seconds | seconds per unit | calls per unit |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for u in mt.get("per_unit", []):
        out.append(
            f"| {u['stage']} | {u['unit']} | {u['n']} | {u['model_seconds']:.0f} | {u['seconds_per_unit']:.2f} | "
            f"{u['calls_per_unit']:.2f} |"
        )
    return out


TABLES = {"grade": "Table 1", "answer": "Table 2, the pipelines and the answerability evaluation"}


def scale_banner(stages: dict) -> list[str]:
    """Which tables rest on too few questions to support a conclusion on their own: all of
    them (a smoke-scale run), some of them (named, with their n), or none."""
    scaled = {name: s for name, s in stages.items() if s.get("scale")}
    small = {name: s for name, s in scaled.items() if s["scale"] == "smoke-scale run"}
    if not small:
        return []
    if len(small) == len(scaled):
        return [
            f"> **Smoke-scale run**: its tables rest on fewer than {FINDINGS_MIN_QUESTIONS} questions. It shows "
            "that the pipeline works end to end; it cannot support conclusions. Use a larger config (or "
            "`configs/paper.yaml` on a GPU backend) for findings.",
            "",
        ]
    named = "; ".join(f"{TABLES.get(n, n)} ({s.get('questions')} questions)" for n, s in small.items())
    return [
        f"> **Below the findings scale**: {named} rest on fewer than {FINDINGS_MIN_QUESTIONS} questions: their "
        "figures show the measurement working and cannot support a conclusion on their own. The verdicts in "
        '"The paper and this run" say what each n can carry.',
        "",
    ]


def _dense_at_every_size(cfg) -> str:
    cs = cfg.chunk_study
    if names.reads_dense(cs.systems):
        return f", dense retriever `{cs.dense_model or cfg.retrieval.dense.model}` at every size"
    return (
        " (no dense system: a dense model must read the largest chunk, and encoding the corpus once per size "
        "with one that does, nomic-embed-text-v1.5, is left to `configs/paper_chunks.yaml`)"
    )


def chunk_size_lines(cfg, stages: dict) -> list[str]:
    """The chunk-size comparison (stage chunk-sizes), when the run has one."""
    import pandas as pd

    d = cfg.run_dir / names.CHUNK_SIZES
    if not (cfg.run_dir / names.CHUNK_SIZES_SUMMARY).is_file():
        return []
    summary = pd.read_csv(cfg.run_dir / names.CHUNK_SIZES_SUMMARY)
    costs_p = cfg.run_dir / names.CHUNK_SIZES_COSTS
    costs = pd.read_csv(costs_p) if costs_p.is_file() else pd.DataFrame()
    ks = cfg.retrieval.k_values
    k = 10 if 10 in ks else max(ks)
    cs = cfg.chunk_study
    lines = [
        "## Chunk sizes",
        "",
        f"The same documents chunked at {', '.join(map(str, cs.sizes))} tokens (tokenizer "
        f"`{cs.tokenizer or cfg.chunking.tokenizer}`), every system ({', '.join(f'`{s}`' for s in cs.systems)}) "
        f"run on the same questions{_dense_at_every_size(cfg)}. Gold does not depend on the chunking: a "
        "question's evidence is a character span of its document (a golden sample's verbatim passage, or the "
        "chunk a synthetic question was written from), and a retrieved chunk counts as relevant when it shares "
        f"at least {cs.min_share:.0%} of the shorter of chunk and span; coverage@k is the share of the span's "
        "characters the top-k chunks hold together. A larger chunk holds more of any span, so coverage and "
        "recall favour large chunks by construction: compare them with the tokens a reader must take in "
        f"(chunks × size){' and the graded relevance below' if cs.grade_questions else ''}.",
        "",
    ]
    if "run" in cs.question_sets:
        lines += [
            f"The run's synthetic questions were written from {cfg.chunking.max_tokens}-token chunks and their "
            f"evidence span is that whole chunk, so at {cfg.chunking.max_tokens} tokens their gold is exactly one "
            "chunk whose words the question borrows: that size is favoured for them. The golden samples' "
            "passages were chosen without any chunking.",
            "",
        ]
    cols = [
        "chunk_size",
        "questions",
        "system",
        "n_questions",
        "n_source_chunks",
        "gold_chunks_per_question",
        f"ndcg@{k}",
        f"recall@{k}",
        f"mrr@{k}",
        f"coverage@{min(ks)}",
        f"coverage@{k}",
    ]
    table = summary[[c for c in cols if c in summary]].round(3)
    for m in (f"ndcg@{k}", f"recall@{k}"):
        if f"{m}_ci_low" in summary:
            table.insert(
                list(table.columns).index(m) + 1,
                f"{m} 95% CI",
                [_interval(lo, hi) for lo, hi in zip(summary[f"{m}_ci_low"], summary[f"{m}_ci_high"])],
            )
    lines += ["At equal k (the top-k chunks whatever their length: unequal reading at unequal sizes):", ""]
    lines += [markdown_table(table), ""]
    lines += _size_difference_lines(cfg.run_dir / names.CHUNK_SIZES_DIFFERENCES)
    from ..lib.report.chunk_budget import report_lines as equal_budget_lines

    lines += equal_budget_lines(cfg.run_dir)
    if not costs.empty:
        lines += [
            "Cost per size (this machine):",
            "",
            markdown_table(costs.astype(object).where(costs.notna(), "–")),
            "",
        ]
    from ..lib.llm.models import encoder_window

    reranker_window = encoder_window(cfg.retrieval.reranker.model)
    reranks = any(s.endswith("+rerank") for s in cs.systems)
    if reranks and reranker_window and max(cs.sizes) > reranker_window:
        lines += [
            f"The reranker `{cfg.retrieval.reranker.model}` reads at most {reranker_window} word pieces: at "
            f"larger sizes it scores the beginning of each chunk only, so `+rerank` rows there measure a "
            "truncated reranker.",
            "",
        ]
    if cs.grade_questions and cfg.grading.method == "calibrated":
        from ..lib.judge.calibrated import load_calibration

        cal = load_calibration(cfg.grading.judging(cfg.root).calibration)
        window = encoder_window(cal.embedding_model) if cal.uses_embedding() else None
        if window and max(cs.sizes) > window:
            lines += [
                f"Table 1's grade here is a calibrated score whose features include the cosine of "
                f"`{cal.embedding_model}`, which reads at most {window} word pieces: at larger sizes that feature "
                "sees the beginning of each chunk only. The calibration was fitted on human labels of short "
                "passages; no human labels of long chunks exist here, so its validity at those sizes is not "
                "measured.",
                "",
            ]
    from ..lib.report.chunk_budget import gate_lines

    lines += gate_lines(stages.get("chunk-sizes", {}).get("table1_gate") or {})
    for size in cs.sizes:
        t1 = d / str(size) / names.TABLE1
        if t1.is_file():
            t = pd.read_csv(t1)
            wide = t.pivot_table(index=["retriever", "stage", "top_k"], columns="grade", values="percent").round(1)
            n = int(stages.get("chunk-sizes", {}).get("graded_questions") or 0)
            lines += [
                f"Table 1 at {size} tokens ({n} questions; % of graded passages per grade, CIs in "
                f"`chunk_sizes/{size}/table1_relevance.csv`):",
                "",
                markdown_table(wide, index=True),
                "",
            ] + _size_test_lines(cfg.run_dir / names.chunk_size_tests(size))
    return lines


def _num(x, spec: str) -> str:
    """`x` formatted with `spec`, or "–" when it is missing (NaN)."""
    import pandas as pd

    return "–" if pd.isna(x) else format(x, spec)


def _interval(lo, hi, spec: str = ".3f") -> str:
    import pandas as pd

    return "–" if pd.isna(lo) or pd.isna(hi) else f"[{lo:{spec}}, {hi:{spec}}]"


def _size_difference_lines(path) -> list[str]:
    """Each size against the smallest on the same questions (chunk_sizes/differences.csv)."""
    import pandas as pd

    if not path.is_file():
        return []
    d = pd.read_csv(path)
    table = pd.DataFrame(
        {
            "questions": d["questions"],
            "system": d["system"],
            "metric": d["metric"],
            "sizes": [f"{b} − {a}" for a, b in zip(d["size_a"], d["size_b"])],
            "n (questions / chunks)": [f"{n} / {c}" for n, c in zip(d["n_questions"], d["n_source_chunks"])],
            "difference": d["diff"].round(3),
            "95% CI": [_interval(lo, hi, "+.3f") for lo, hi in zip(d["ci_low"], d["ci_high"])],
            "p (Holm)": d["p_holm"].map(lambda p: _num(p, ".2g")),
            "detectable": d["mde"].map(lambda m: "–" if pd.isna(m) else f"±{m:.3f}"),
        }
    )
    return [
        "Each size against the smallest on the same questions (paired over questions, clustered by the chunk "
        "each was written from or placed in at the run's own size; Holm within each question set and metric; "
        "`chunk_sizes/differences.csv`). A CI that spans 0 is no evidence of a difference; 'detectable' is the "
        "difference each comparison had 80% power to find at its n:",
        "",
        markdown_table(table),
        "",
    ]


def _size_test_lines(path) -> list[str]:
    """Reranked − retrieved in the share of grade 3 at one chunk size, per retriever and top-k,
    with the CI, the n and the smallest difference the cell could detect."""
    import pandas as pd

    if not path.is_file():
        return []
    t = pd.read_csv(path)
    t = t[(t["comparison"] == "reranked - retrieved") & (t["measure"] == "share_3")]
    if t.empty:
        return []

    cells = [
        f"{r.retriever} top-{r.top_k}: {r.value_a:.1f}% → {r.value_b:.1f}% ({r.diff:+.1f} pp, 95% CI "
        f"{_num(r.ci_low, '+.1f')} to {_num(r.ci_high, '+.1f')}, p {_num(r.p_value, '.2g')}; n {r.n_questions} "
        f"questions / {r.n_source_chunks} source chunks; detectable ±{_num(r.mde_cell, '.1f')} pp)"
        for r in t.itertuples()
    ]
    return [
        "Reranking and the share of grade 3 here: " + "; ".join(cells) + ". A CI that spans 0 is no evidence "
        "of a difference; 'detectable' is the difference the cell had 80% power to find at its n.",
        "",
    ]


def corpus_list_lines(cfg, ingest: dict, out=_same) -> list[str]:
    """The corpus list the run was checked against, and its attribution file beside the report
    (the report, answers and questions quote the documents)."""
    ident = ingest.get("corpus_list")
    if not ident:
        return []
    from .data import write_attribution

    write_attribution(cfg, out(cfg.run_dir / names.ATTRIBUTION))
    return [
        f"Corpus list `{ident['name']}` (sha256 `{ident['list_sha256'][:16]}…`): {ident['files']} files, "
        f"{ident['pages']} pages, every file checked against its sha256 before ingest. Quoted documents and "
        "their licences: [ATTRIBUTION.md](ATTRIBUTION.md).",
        "",
    ]


def _manifest(cfg) -> dict:
    p = cfg.run_dir / names.MANIFEST
    return json.loads(p.read_text()) if p.is_file() else {}


def _run_time_rows(stages: dict) -> list[str]:
    rows = []
    for name, s in stages.items():
        if name == "report":  # the report's own record is written after it (it cannot time itself)
            continue
        computed = s.get("computed_seconds")
        rows.append(
            f"| {name} | {s.get('wall_seconds', s.get('seconds', 0)):.1f} | {'yes' if s.get('skipped') else 'no'} | "
            f"{'' if computed is None else f'{computed:.1f}'} |"
        )
    return rows


def _model_lines(manifest: dict) -> list[str]:
    lines = []
    for role, ident in manifest.get("models", {}).items():
        for sub, m in ident.items() if "name" not in ident else [("", ident)]:
            how = m.get("backend") or m.get("upstream")
            lines.append(
                f"- {role}{' ' + sub if sub else ''}: `{m.get('name')}`{f' ({how})' if how else ''} "
                f"sha256 `{(m.get('sha256') or '-')[:16]}…`"
            )
    return lines


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


def _optional(blocks: dict, name: str, path: Path, fields) -> list[str]:
    """Block `name` filled from the JSON file `path` by `fields(data)`, or nothing without it."""
    from ..lib.report.templates import render

    return render(blocks[name], fields(json.loads(path.read_text()))) if path.is_file() else []


def _head(cfg) -> str | None:
    from .provenance import git_commit

    return git_commit(cfg.root)


def commit_line(run_commit: str | None, report_commit: str | None) -> str:
    """The headline's sentence on the code behind the run and behind this report."""
    if run_commit and run_commit == report_commit:
        return f"Run and report made by the code at git `{run_commit}`."
    ran = f"git `{run_commit}`" if run_commit else "an unrecorded commit (not made in a git checkout)"
    if not report_commit:
        return f"Run made by the code at {ran}; this report's commit is not recorded (not a git checkout)."
    return (
        f"Run made by the code at {ran}; **this report was written later, by git `{report_commit}`**: its figures "
        "come from the run's files, its rules and wording from that commit."
    )


def plan_line(cfg, manifest: dict, findings: list[dict]) -> str:
    """The headline's sentence on the analysis plan: its hash as recorded before the first stage,
    the primary finding, the questions it needs and the run's."""
    from ..lib.report.plan import FINDINGS, plan_sha256, primary

    entries = cfg.analysis_plan.entries()
    if not entries:
        return "No analysis plan was fixed for this run (`analysis_plan` in the config): every finding is exploratory."
    recorded = manifest.get("analysis_plan_sha256")
    now = plan_sha256(cfg.to_dict()["analysis_plan"])
    if recorded is None:
        fixed = f"sha256 `{now[:12]}`, not recorded in the manifest before the run"
    elif recorded == now:
        fixed = f"sha256 `{now[:12]}`, recorded in the manifest before the first stage"
    else:
        fixed = (
            f"**the config's plan (sha256 `{now[:12]}`) differs from the one recorded before the run "
            f"(`{recorded[:12]}`)**"
        )
    main = primary(entries)
    have = (manifest.get("sizes") or {}).get("table1_questions")
    need = (
        ""
        if main is None
        else f" Primary finding: {FINDINGS[main.id].title} ({main.test.replace('_', ' ')}, α = {main.alpha:g}, "
        f"clustered by {main.cluster.replace('_', ' ')}), which needs {main.n_needed or 'an unstated number of'} "
        f"questions{'' if have is None else f'; Table 1 has {have}'}."
    )
    planned = sum(1 for r in findings if r.get("role") in ("primary", "secondary"))
    return (
        f"Analysis plan ({cfg.analysis_plan.fixed or 'fixed before the run'}; {fixed}): {len(entries)} planned "
        f"findings.{need} Findings rows say which plan entry fixed them ({planned} of {len(findings)} rows planned; "
        "the others are exploratory)."
    )


def labels_banner(cfg, table: str) -> str | None:
    """The line above a table its config reads through the assessor's labels (None otherwise)."""
    from ..lib.labels.store import ANSWERS, RELEVANCE
    from ..lib.report.findings import labels_text
    from .labels import standing_of

    reads = cfg.grading.instrument if table == "table1" else cfg.answer.instrument
    if reads == "judge":
        return None
    standing = standing_of(cfg, RELEVANCE if table == "table1" else ANSWERS)
    what = "grades" if table == "table1" else "rubric scores"
    return (
        f"**Instrument: the assessor's labels.** This table's {what} are an assessor's labels "
        f"({labels_text(standing)}); the embedded judge is measured against them in the labels section above, "
        "and its own table is in the CSV beside this report (rows with `instrument` judge)."
    )


def found_section(cfg) -> str:
    """What the run found, first (templates/found.md, facts from lib/report/found.py)."""
    from ..lib.report.found import found
    from ..lib.report.render import render

    rr = cfg.retrieval.reranker
    return render("found.md", found(cfg.run_dir, cfg.run_name, rr.model if rr.kind != "none" else None))


def labels_section(cfg) -> str:
    """The assessor's standing and the judge measured against its labels (templates/labels_section.md)."""
    from ..lib.report.render import render
    from .labels import section

    facts = section(cfg)
    return render("labels_section.md", facts) if facts else ""


def report_values(cfg, out=_same) -> dict:
    """Every placeholder of the template's `report` block, drawing the report's plots and
    writing its companion files (setup_vs_paper.csv, ATTRIBUTION.md) through `out`."""
    from ..lib.report.templates import read_blocks, render

    run, blocks = cfg.run_dir, read_blocks(TEMPLATE)
    manifest = _manifest(cfg)
    stages = manifest.get("stages", {})
    draw_shared_plots(cfg, out)
    findings = json.loads((run / names.FINDINGS).read_text()) if (run / names.FINDINGS).is_file() else []
    r, ing, syn = cfg.retrieval, stages.get("ingest", {}), stages.get("synth", {})
    v = dict(
        run_name=cfg.run_name,
        scale_banner=scale_banner(stages),
        config_file=manifest.get("config_file"),
        commit_line=commit_line(manifest.get("git_commit"), _head(cfg)),
        plan_line=plan_line(cfg, manifest, findings),
        found=found_section(cfg),
        started=manifest.get("started"),
        finished=manifest.get("finished", "(running)"),
        setup=setup_section(cfg, stages, out),
        paper=paper_section(cfg, findings),
        chunk_sizes=chunk_size_lines(cfg, stages),
        run_time_rows=_run_time_rows(stages),
        model_time=time_lines(manifest),
        model_lines=_model_lines(manifest),
        bm25_method=r.bm25.method,
        bm25_k1=r.bm25.k1,
        bm25_b=r.bm25.b,
        dense_model=r.dense.model,
        reranker_kind=r.reranker.kind,
        reranker_model=r.reranker.model,
        pool=pool_text(r, stages),
        corpus_list=corpus_list_lines(cfg, ing, out),
        documents=ing.get("documents", "?"),
        pages=ing.get("pages", "?"),
        words=ing.get("words", "?"),
        chunks=stages.get("chunk", {}).get("chunks", "?"),
        max_tokens=cfg.chunking.max_tokens,
        garbled=ing.get("garbled_flagged", []),
        references_dropped=ing.get("references_dropped_chars", "?"),
        img_chunk_lengths=_img(run, names.PLOT_CHUNK_LENGTHS, "chunk lengths", out),
        generated=syn.get("generated", "?"),
        kept=syn.get("kept", "?"),
        filter=syn.get("filter", "?"),
        n_fewshot=syn.get("n_fewshot", "?"),
        fewshot_sampling=syn.get("fewshot_sampling", "?"),
        retention=_csv_md(cfg.synthetic_dir / names.RETENTION),
        img_synth=_img(run, names.PLOT_SYNTH_KEPT, "questions", out),
        retrieval=_csv_md(
            run / names.RETRIEVAL_SUMMARY,
            ["system", "n_queries"] + [f"{m}@{k}" for k in r.k_values for m in ("recall", "ndcg")],
        ),
        img_recall=_img(run, names.PLOT_RECALL, "recall at k"),
    )
    v.update(
        judge_checks=judge_check_section(cfg, out),
        labels=labels_section(cfg),
        table1_banner=judge_banner(cfg, "table1"),
        table1=_read(run / names.TABLE1_MD),
        img_grades=_img(run, names.PLOT_GRADES, "grade distribution"),
        img_table1_per_task=_img(run, names.PLOT_TABLE1_PER_TASK, "grade 3 share per task"),
        paired_tests=_tests_md(run, names.PAIRED_TESTS, ("comparison", "retriever", "top_k", "measure"), "value"),
        graded_metrics=_csv_md(run / names.GRADED_METRICS),
        ppi=ppi_lines(cfg),
        known_gold=_known_gold_lines(cfg),
        judge_validity=_optional(blocks, "judge_validity", run / names.JUDGE_VALIDITY, _validity_fields),
        table2_banner=judge_banner(cfg, "table2"),
        table2=_read(run / names.TABLE2_MD),
        table2_tests=_tests_md(run, names.TABLE2_TESTS, ("metric", "setting_a", "setting_b"), "mean"),
        img_answer_scores=_img(run, names.PLOT_ANSWER_SCORES, "answer scores"),
        img_noise=_img(run, names.PLOT_NOISE, "noise curve"),
        img_table2_per_task=_img(run, names.PLOT_TABLE2_PER_TASK, "faithfulness per task"),
        refusals=refusal_lines(cfg),
        answer_checks=_optional(blocks, "answer_checks", run / names.ANSWER_CHECKS, _check_fields),
        pipelines_banner=judge_banner(cfg, "table2", ["correct", "answer_relevant", "grounded", "claim_support"]),
        pipelines=_csv_md(run / names.PIPELINES_TABLE, PIPELINE_COLUMNS),
        fact_checks=fact_check_lines(cfg),
        answer_measures=answer_measure_lines(cfg),
        question_checks=question_check_lines(cfg, stages),
        answerability=answerability_section(cfg),
        cluster_unit=cfg.grading.cluster.replace("_", " ") + "s",
    )
    v["answers"] = (
        render(blocks["answers"], v)
        if cfg.answer.enabled
        else [
            "## Table 2 — answer quality under noise (1–5)",
            "",
            "_This run holds no answer stage (`answer.enabled: false`): it is a Table 1 study. Table 2, the "
            "pipelines and the answerability evaluation are a run of their own (for the reference study, "
            "`configs/standard_answers.yaml`)._",
        ]
    )
    return v


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


def answer_measure_lines(cfg) -> list[str]:
    """The deterministic answer measures and claim support per setting and pipeline, with their n;
    the intervals stay in the CSV. Nothing for a run made before the table."""
    import pandas as pd

    p = cfg.run_dir / names.ANSWER_MEASURES
    if not p.is_file():
        return []
    t = pd.read_csv(p)
    return [
        "### Answer measures beside the rubrics",
        "",
        "Refusal phrase rate; the share of answers that took word trigrams from an injected passage (not in the "
        "source) and their mean share; cited sentences whose cited passages hold them, and those citing only a wrong "
        "passage while the source holds them (misattributed); claims the claim judge reads as supported, asked both "
        f"ways. 95% Wilson intervals at the effective n in `{names.ANSWER_MEASURES}`.",
        "",
        markdown_table(t[[c for c in MEASURE_REPORT_COLUMNS if c in t]].round(3)),
        "",
    ]


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
    """What synth's checks rejected per task, the same checks on the golden samples, and the audit
    figures of the written, kept and golden questions. Nothing for questions written before the checks."""
    import pandas as pd

    rej, audit = cfg.synthetic_dir / names.REJECTIONS, cfg.synthetic_dir / names.QUESTION_AUDIT
    if not rej.is_file():
        return []
    t = pd.read_csv(rej)
    c = cfg.synth.checks
    syn = stages.get("synth", {})
    skipped = syn.get("sources_skipped") or {}
    out = [
        "### Question checks",
        "",
        f"Before the filter every written question is checked (`synth.checks`): **copy** (a verbatim run of more than "
        f"{c.max_verbatim_run} words shared with its chunk, or more than {c.max_coverage:.0%} of its content words in "
        "it), **premise** (a name, acronym or number neither its chunk's neighbourhood, its document's front matter "
        "nor its document holds; the judge decides names found only elsewhere in the document), **label** (a "
        "fact-check claim the judge reads against the label it was written with). "
        f"Boilerplate chunks never sources: {sum(skipped.values())} skipped "
        f"({', '.join(f'{k} {v}' for k, v in skipped.items()) or 'none'}). Largest share of a task's prompts holding "
        f"one few-shot example: {_shares(syn.get('fewshot_max_share'))}.",
        "",
        _label_check_line(syn.get("label_check_on_golden")),
        "",
        markdown_table(t[t["set"] == "written"].drop(columns="set").loc[:, lambda d: (d != 0).any()]),
        "",
        "The same checks on the golden samples (kept = passed every check): what each threshold would reject of "
        "questions people wrote.",
        "",
        markdown_table(t[t["set"] == "golden"].drop(columns="set").loc[:, lambda d: (d != 0).any()]),
        "",
    ]
    if audit.is_file():
        a = pd.read_csv(audit)
        out += [
            "Audit of the questions against their source chunks (all tasks; per task in "
            f"`{names.QUESTION_AUDIT}`): content-word coverage, verbatim run, and the shares over the copy limits, "
            "naming a term outside the chunk's context or outside its document, and from a boilerplate chunk.",
            "",
            markdown_table(a[a.task == "all"][AUDIT_REPORT_COLUMNS].round(3)),
            "",
        ]
    return out


def _shares(d: dict | None) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in d.items()) if d else "?"


def _label_check_line(a: dict | None) -> str:
    if not a or not a.get("n"):
        return "Label check: no golden fact-check with a label was read by the judge, so its agreement is unmeasured."
    per = ", ".join(f"{k} {v['agree']}/{v['n']}" for k, v in a["by_label"].items())
    return (
        f"Label check against the golden fact-checks' labels (people's): agrees on {a['agree']} of {a['n']} "
        f"({a['share']:.0%}, 95% CI {a['ci'][0]:.0%}–{a['ci'][1]:.0%}; {per}). A fact-check kept by it is as "
        "trustworthy as that agreement."
    )


FACT_CHECK_REPORT_COLUMNS = ["setting", "pipeline", "n", "n_verdict", "accuracy", "ci_low", "ci_high"]


def fact_check_lines(cfg) -> list[str]:
    """Fact-check verdicts against the questions' labels: one row per setting and pipeline (all
    labels together) with its n; per label and the confusion stay in the CSV. Nothing for a run
    made before the table."""
    import pandas as pd

    p = cfg.run_dir / names.FACT_CHECK_VERDICTS
    if not p.is_file():
        return []
    t = pd.read_csv(p)
    out = ["### Fact-check verdicts", ""]
    if not len(t):
        return out + [
            "_(no fact-checking question in this run carries a label: nothing to score verdicts against)_",
            "",
        ]
    return out + [
        "Fact-checking statements are answered with a verdict first (Supported, Refuted or Unverifiable). Accuracy: "
        "the share of parsed verdicts equal to the expected one (the question's label; Unverifiable where the "
        "passages cannot answer), 95% Wilson interval at the effective n (source chunks as clusters). Per label, "
        f"with the confusion of label and verdict: `{names.FACT_CHECK_VERDICTS}`.",
        "",
        markdown_table(t[t.label == "all"][FACT_CHECK_REPORT_COLUMNS].round(3)),
        "",
    ]


def _grade_counts(counts) -> str:
    """{"0": 0, "1": 10, ...} as `0, 10, 2, 1 at grades 0/1/2/3`."""
    if not isinstance(counts, dict) or not counts:
        return "–"
    keys = sorted(counts, key=str)
    return f"{', '.join(str(counts[k]) for k in keys)} at grades {'/'.join(str(k) for k in keys)}"


def _by_setting(values) -> str:
    """{"standard": 0.083, "3_wrong": None} as `standard 0.08, 3_wrong –`."""
    if not isinstance(values, dict) or not values:
        return "–"
    return ", ".join(f"{k} {_fmt(v)}" for k, v in values.items())


def _validity_fields(v: dict) -> dict:
    swap = v.get("order_swap_agreement")
    return {
        "verdict": v["verdict"],
        "auc": _fmt(v.get("auc")),
        "n_pairs": v.get("n_pairs"),
        "source_grades": _grade_counts(v.get("source_grades")),
        "random_grades": _grade_counts(v.get("random_grades")),
        "order_swap_agreement": "not measured (no pair graded in both orders)" if swap is None else _fmt(swap),
    }


def _check_fields(c: dict) -> dict:
    return dict(
        refusal_rate_by_setting=_by_setting(c["refusal_rate_by_setting"]),
        citation_accuracy_by_setting=_by_setting(c["citation_accuracy_by_setting"]),
        agreement=_fmt(c["judge_vs_regex_refusal_agreement"]),
        pairs=c["judge_vs_regex_refusal_pairs"],
    )


def build(cfg, out) -> dict:
    """Write report.md (and the plots and tables beside it) through `out`."""
    from ..lib.report.templates import read_blocks, render

    lines = render(read_blocks(TEMPLATE)["report"], report_values(cfg, out))
    write_text(out(cfg.run_dir / names.REPORT), "\n".join(lines) + "\n")
    from .browse import write_browse  # the drill-down page beside the report (stages/browse.py)

    browsed = write_browse(cfg, out(cfg.run_dir / names.BROWSE))
    return {"lines": len(lines), "browse_questions": len(browsed["questions"])}


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


def _known_gold_lines(cfg) -> list[str]:
    """The section "The judge against known gold" (stages/gold_check.py)."""
    from .gold_check import report_lines

    return report_lines(cfg)


def _reads(cfg) -> list[Path]:
    from .data import chunks_path
    from .gold_check import outputs as gold_outputs

    synthetic = (names.RETENTION, names.UNANSWERABLE, names.REJECTIONS, names.QUESTION_AUDIT)
    shared = [chunks_path(cfg)] + [cfg.synthetic_dir / f for f in synthetic]
    sizes = [cfg.run_dir / names.CHUNK_SIZES / str(n) / names.TABLE1 for n in cfg.chunk_study.sizes]
    from ..lib.report.browse import TEMPLATE as BROWSE_TEMPLATE

    shared.append(cfg.synthetic_dir / names.QUESTIONS)
    gold = [p for p in gold_outputs(cfg) if p.suffix == ".csv"] + [cfg.run_dir / names.RELEVANT_SHARES]
    from ..lib.report.render import TEMPLATES

    labels = [cfg.run_dir / names.JUDGE_VS_LABELS, cfg.run_dir / "labels" / "standing.json"]
    labels += [cfg.run_dir / names.LABEL_PAIRED_TESTS, cfg.run_dir / names.QUESTION_SCREENING]
    labels += [cfg.run_dir / names.RETRIEVAL_PER_QUERY]
    sections = [TEMPLATES / "labels_section.md", TEMPLATES / "found.md"]
    return (
        [TEMPLATE, BROWSE_TEMPLATE, *sections] + [cfg.run_dir / f for f in RUN_READS] + sizes + shared + gold + labels
    )


def _outputs(cfg) -> list[Path]:
    return [cfg.run_dir / names.REPORT, cfg.run_dir / names.SETUP_VS_PAPER, cfg.run_dir / names.BROWSE]


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
    doc="report.md: every stage's tables and plots, the models, the scale and the run time, from the run folder",
    after=("ingest", "chunk", "synth", "retrieve", "chunk-sizes", "judge-check", "grade", "answer", "findings"),
)


def build_report(cfg: Config, force: bool = True, done: list | None = None) -> Path:
    """Write `results/<run>/report.md` from the files the stages wrote (run it last): the findings
    stage first when its outputs are not current, then this one (by default rebuilt even when
    current: `spacelm report` is asked for). Appends (stage, summary) of both to `done`, for the
    caller to record in the run's manifest (`Manifest.record_computed`)."""
    from . import findings

    for stage, run in ((findings.STAGE, findings.run), (STAGE, lambda c: execute(STAGE, c, force=force))):
        summary = run(cfg)
        if done is not None:
            done.append((stage, summary))
    return cfg.run_dir / names.REPORT


def _too_few(n: int, what: str) -> str:
    return (
        f"> ⚠ Too few questions ({what}): the figures below show that the measurement works; they cannot "
        "support a conclusion."
        if n < FINDINGS_MIN_QUESTIONS
        else ""
    )


def answerability_section(cfg) -> list[str]:
    """Unanswerable questions, the evidence gate and refusals, and claim-level support: tables
    with their n and CIs, the sweep plot, and the verdicts of the judges behind them."""
    import pandas as pd

    run = cfg.run_dir
    out = ["## Answerability: unanswerable questions, the evidence gate, refusals", ""]
    una = cfg.synthetic_dir / names.UNANSWERABLE
    if una.is_file():
        t = pd.read_csv(una)
        gold = t[t.kind == "golden"]
        out += [
            "Unanswerable questions written from answerable ones and kept only when the judge grades none of "
            f"their BM25 / dense top-{cfg.synth.unanswerable.check_k} passages ≥ "
            f"{cfg.synth.unanswerable.answerable_grade} (golden rows are human-labelled and kept as labelled):",
            "",
            markdown_table(t),
            "",
        ]
        if not cfg.synth.unanswerable.enabled:
            out += [
                "The unanswerable check did not run in this run (`synth.unanswerable.enabled: false`): golden "
                "unanswerable questions are kept as people labelled them, and no synthetic one was checked.",
                "",
            ]
        elif len(gold):
            out += [
                f"The check agrees with people on {int(gold.check_passed.sum())} of {int(gold.generated.sum())} "
                "human-labelled unanswerable questions (the rest it would have dropped as answerable): that is how "
                "far a kept synthetic one can be trusted to be unanswerable, and how many it loses.",
                "",
            ]
    ans = run / names.ANSWERABILITY
    if not ans.is_file():
        return out + ["_(not produced in this run)_", ""]
    a = pd.read_csv(ans)
    n_una = int(a.n_unanswerable.iloc[0]) if len(a) else 0
    out += [
        f"Pipeline B on {int(a.n_answerable.iloc[0]) if len(a) else 0} answerable and {n_una} unanswerable "
        "questions, with the gate off (the generator decides) and on (below its threshold the canonical refusal "
        "is returned without calling the generator). A refusal is recognised by phrase; the judge's "
        "negative-rejection score (≥ 4 = declines) is shown beside it. 95% Wilson intervals at the effective n "
        "(source chunks as clusters) for the rates, as in the sweep plot; cluster bootstrap for F1.",
        "",
        judge_banner(cfg, "table2", ["negative_rejection"]),
        "",
    ]
    n_ans = int(a.n_answerable.iloc[0]) if len(a) else 0
    warn = _too_few(min(n_ans, n_una), f"{n_ans} answerable, {n_una} unanswerable")
    if warn:
        out += [warn, ""]
    rows = [
        "| gate | answer rate | refusal precision | refusal recall | refusal F1 | false-refusal rate | "
        "judge: unanswerable declined | judge vs phrase (agreement, κ, n) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    nz = lambda v: None if pd.isna(v) else v
    for r in a.to_dict("records"):
        f = lambda k, r=r: _fmt(nz(r.get(k)), (nz(r.get(f"{k}_ci_low")), nz(r.get(f"{k}_ci_high"))))
        rows.append(
            f"| {r['gate']} | {f('answer_rate')} | {f('refusal_precision')} | {f('refusal_recall')} | "
            f"{f('refusal_f1')} | {f('false_refusal_rate')} | {_fmt(nz(r.get('judge_refusal_recall')))} | "
            f"{_fmt(nz(r.get('judge_phrase_agreement')))}, {_fmt(nz(r.get('judge_phrase_kappa')))}, "
            f"{int(r.get('n_judged') or 0)} |"
        )
    g = cfg.answer.gate
    out += rows + [
        "",
        f"Gate: threshold {g.threshold} (strong-claim queries {g.strong_threshold}), weights "
        f"similarity/keywords/confirmation {g.weights.similarity}/{g.weights.keywords}/"
        f"{g.weights.confirmation} (strong-claim {g.strong_weights.similarity}/{g.strong_weights.keywords}/"
        f"{g.strong_weights.confirmation}); every question's gate score is in answers.jsonl.",
        "",
        _img(run, names.PLOT_REFUSAL_SWEEP, "refusal recall against false-refusal rate"),
        "",
    ]
    claims = run / names.CLAIMS
    if not cfg.answer.claims:
        return (
            out
            + [
                "## Claim-level support",
                "",
                "Not run: this config sets `answer.claims: false` (no answer was split into claims).",
                "",
            ]
            + _answer_checks(run)
        )
    out += [
        "## Claim-level support",
        "",
        "Each answer split into sentences; the judge decides (yes/no, P(yes) kept) whether each is supported by "
        "the passages it cites, or by the whole context when it cites none. Faithfulness = supported claims / "
        "claims; citation precision = supporting citations / citations; citation recall = claims with a "
        "supporting citation / claims. Pooled over answers, 95% CIs from a two-stage cluster bootstrap (source "
        "chunks, then answers).",
        "",
        judge_banner(cfg, "table2", ["claim_support"]),
        "",
    ]
    c = _table_or_empty(claims)
    if len(c):
        rows = [
            "| by | group | answers | claims | citations | claim faithfulness | citation precision | citation recall |",
            "|---|---|---:|---:|---:|---|---|---|",
        ]
        for r in c.to_dict("records"):
            f = lambda k, r=r: _fmt(nz(r.get(k)), (nz(r.get(f"{k}_ci_low")), nz(r.get(f"{k}_ci_high"))))
            name = r.get("setting") if r["group"] == "setting" else r.get("pipeline")
            rows.append(
                f"| {r['group']} | {name} | {r['n_answers']} | {r['n_claims']} | {r['n_citations']} | "
                f"{f('claim_faithfulness')} | {f('citation_precision')} | {f('citation_recall')} |"
            )
        out += rows + [""]
    return out + _answer_checks(run)


def _table_or_empty(path):
    """A CSV the answer stage wrote, or an empty frame when it is absent or holds no row (no
    claim was judged: the stage writes a file without columns)."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def _answer_checks(run) -> list[str]:
    """The citation line read from answer_checks.json (none when the file is absent)."""
    if not (run / names.ANSWER_CHECKS).is_file():
        return []
    ch = json.loads((run / names.ANSWER_CHECKS).read_text())
    return [
        f"Answers with at least one valid citation ({ch.get('citation_style')} passages): "
        f"{_fmt(ch.get('answers_with_valid_citation'))} of {ch.get('answers_with_context')} answers with "
        "passages.",
        "",
    ]
