"""Plots shown in the notebooks and saved under `results/<run>/plots/` (PNG, headless)."""

from __future__ import annotations

from pathlib import Path


def _figure(width: float = 6.4, height: float = 3.6, ncols: int = 1):
    """A figure and its axes (`ncols` side by side), on the headless backend outside notebooks."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline",):
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=(width, height))


def _yerr(values, lows, highs) -> list:
    """Error-bar lengths below and above each value: never negative (a percentile interval can
    sit beside a point estimate that is not a mean), 0 where there is no interval."""
    import numpy as np

    v, lo, hi = (np.asarray(x, dtype=float) for x in (values, lows, highs))
    below, above = np.nan_to_num(v - lo, nan=0.0), np.nan_to_num(hi - v, nan=0.0)
    return [np.clip(below, 0, None), np.clip(above, 0, None)]


def save(fig, path: Path | None) -> None:
    """Save a figure atomically (a temporary file renamed into place)."""
    if path is None:
        return
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)


def chunk_length_histogram(chunks, max_tokens: int, path: Path | None = None):
    """Histogram of chunk lengths in tokens, with the budget marked."""
    fig, ax = _figure()
    ax.hist([c.n_tokens for c in chunks], bins=30, color="#4477aa", edgecolor="white")
    ax.axvline(max_tokens, color="#cc3311", linestyle="--", label=f"budget {max_tokens}")
    ax.set_xlabel("tokens per chunk")
    ax.set_ylabel("chunks")
    ax.set_title(f"{len(chunks)} chunks")
    ax.legend()
    save(fig, path)
    return fig


def recall_curve(
    per_query, k_values, path: Path | None = None, metric: str = "recall", n_boot: int = 1000, seed: int = 0
):
    """Recall@k (or another @k metric) against k, one line per system, each point with its 95%
    cluster-robust t interval (queries clustered by `source_chunk_id` when the table has it,
    bounded to [0, 1]); the legend sits outside the axes. `n_boot`, `seed`: unused."""
    from ..stats import cluster_t

    fig, ax = _figure(7.4, 3.6)
    ks = sorted(k_values)
    systems = list(dict.fromkeys(per_query["system"]))
    for j, name in enumerate(systems):
        sub = per_query[per_query["system"] == name]
        means = [float(sub[f"{metric}@{k}"].mean()) for k in ks]
        clusters = sub["source_chunk_id"].tolist() if "source_chunk_id" in sub else None
        cis = [cluster_t(sub[f"{metric}@{k}"].tolist(), clusters) for k in ks]
        bound = lambda x: x if x != x else min(1.0, max(0.0, x))  # NaN (one cluster) stays NaN: no bar
        err = _yerr(means, [bound(c["ci_low"]) for c in cis], [bound(c["ci_high"]) for c in cis])
        x = [k + (j - (len(systems) - 1) / 2) * 0.08 for k in ks]  # dodge so the bars do not hide each other
        ax.errorbar(x, means, yerr=err, capsize=3, label=name, **system_style(name))
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k (95% CI, n={per_query['qid'].nunique()} queries)")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, path)
    return fig


def wins_matrix(per_query, metric: str = "ndcg@10"):
    """Share of queries on which the row system scores strictly higher than the column system."""
    import pandas as pd

    wide = per_query.pivot_table(index="qid", columns="system", values=metric)
    systems = list(dict.fromkeys(per_query["system"]))
    return pd.DataFrame({b: {a: float((wide[a] > wide[b]).mean()) for a in systems} for b in systems})[systems].loc[
        systems
    ]


def generated_vs_kept(retention, path: Path | None = None):
    """Bar plot: questions generated, valid and kept per task."""
    import numpy as np

    df = retention[retention["task"] != "all"]
    fig, ax = _figure()
    x = np.arange(len(df))
    for i, (col, color) in enumerate([("generated", "#bbbbbb"), ("valid", "#66ccee"), ("kept", "#228833")]):
        ax.bar(x + (i - 1) * 0.27, df[col], width=0.27, label=col, color=color)
    ax.set_xticks(x)
    ax.set_xticklabels(df["task"], rotation=20)
    ax.set_ylabel("questions")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
    save(fig, path)
    return fig


GRADE_COLORS = {0: "#cc3311", 1: "#ee7733", 2: "#88ccee", 3: "#228833"}

# The one palette of the retrieval systems, shared by every plot: a retriever keeps its colour
# before and after reranking (the reranked line is dashed, its marker a square).
SYSTEM_COLORS = {"bm25": "#4477aa", "dense": "#ee6677", "hybrid": "#228833", "splade": "#ccbb44"}
_MORE_COLORS = ("#66ccee", "#aa3377", "#bbbbbb", "#000000")


def system_color(name: str) -> str:
    """The colour of a system (`bm25`, `dense+rerank`, ...): its first-stage retriever's."""
    base = str(name).split("+")[0].split(" ")[0]
    if base in SYSTEM_COLORS:
        return SYSTEM_COLORS[base]
    return _MORE_COLORS[sum(map(ord, base)) % len(_MORE_COLORS)]


def system_style(name: str) -> dict:
    """Colour, line style and marker of a system's line."""
    reranked = "rerank" in str(name)
    return {"color": system_color(name), "linestyle": "--" if reranked else "-", "marker": "s" if reranked else "o"}


SCORE_AXIS = (1, 5.2)  # a 1-5 rubric's axis starts at 1, its lowest score


def _cell(df, r, st, k, grade) -> tuple:
    """(percent, ci_low, ci_high) of one Table 1 cell and grade; NaN where the table has none."""
    sub = df[(df.retriever == r) & (df.stage == st) & (df.top_k == k) & (df.grade == grade)]
    if not len(sub):
        return float("nan"), float("nan"), float("nan")
    row = sub.iloc[0]
    return tuple(float("nan") if row[c] is None else float(row[c]) for c in ("percent", "ci_low", "ci_high"))


def _stack_bar(ax, df, x: float, width: float, r: str, st: str, k) -> None:
    """One stacked bar: the shares of grades 0-3 of a system at top-k, each segment with its
    grade's 95% CI drawn as a whisker at the segment's top (the table's intervals)."""
    bottom = 0.0
    for grade in GRADES_SHOWN:
        pct, lo, hi = _cell(df, r, st, k, grade)
        if pct != pct:
            continue
        ax.bar(x, pct, width, bottom=bottom, color=GRADE_COLORS[grade], edgecolor=system_color(r), linewidth=1.2)
        top = bottom + pct
        bottom = top
        if lo != lo or hi != hi:  # no interval (one source chunk): no whisker, the title says so
            continue
        (below,), (above,) = _yerr([pct], [lo], [hi])
        dx = (grade - 1.5) * width / 5  # whiskers side by side, so none hides another
        whisker = ax.errorbar([x + dx], [top], yerr=[[below], [above]], fmt="none", ecolor="#222222", capsize=2)
        for part in whisker.lines[1] + whisker.lines[2]:
            part.set_clip_on(False)  # grade 3's whisker sits at 100%, the axis' top


GRADES_SHOWN = (0, 1, 2, 3)


def grade_distribution(table1_long, path: Path | None = None):
    """Table 1 as stacked shares on one 0-100% axis: per top-k, one bar per retriever before and
    after reranking holding the shares of grades 0-3 (fixed grade colours, bar outline in the
    system's colour, reranked bars hatched), each share with its 95% CI (table1_relevance.csv's
    cluster-bootstrap interval) as a whisker at the top of its segment; each bar's own n under it."""
    from matplotlib.patches import Patch

    df = table1_long
    groups = list(dict.fromkeys(zip(df["retriever"], df["stage"])))
    ks = sorted(set(df["top_k"]))
    width = 0.8 / max(1, len(groups))
    fig, ax = _figure(max(6.4, 1.1 * len(groups) * len(ks) + 2.5), 4.6)
    ticks, labels = [], []
    for i, k in enumerate(ks):
        for j, (r, st) in enumerate(groups):
            x = i + (j - (len(groups) - 1) / 2) * width
            _stack_bar(ax, df, x, width * 0.9, r, st, k)
            if st == "reranked":
                ax.bar(x, 100, width * 0.9, fill=False, hatch="//", edgecolor=system_color(r), linewidth=0)
            ticks.append(x)
            labels.append(f"{r}\n{'rer.' if st == 'reranked' else 'ret.'}\n{_bar_n(df, r, st, k)}")
    ax.set_xticks(ticks, labels, fontsize=8.5)
    for tick, (r, _) in zip(ax.get_xticklabels(), [g for _ in ks for g in groups]):
        tick.set_color(system_color(r))
    for i, k in enumerate(ks):
        ax.text(i, -0.27, f"top-{k}", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=10)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of graded passages (95% CI)", fontsize=10)
    no_ci = df["ci_low"].isna().all() if "ci_low" in df else True
    ax.set_title(
        "relevance grades per system and top-k (n: questions under each bar"
        + ("; no CI: fewer than two source chunks)" if no_ci else ")"),
        fontsize=10,
        pad=14,  # above grade 3's whiskers
    )
    handles = [Patch(color=GRADE_COLORS[g], label=f"grade {g}") for g in reversed(GRADES_SHOWN)]
    handles.append(Patch(fill=False, hatch="//", label="reranked"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save(fig, path)
    return fig


def _bar_n(df, retriever: str, stage: str, k) -> str:
    """`n=…` for one bar: the questions graded at that top-k by that system (not the table's largest n)."""
    if "n_questions" not in df:
        return ""
    sub = df[(df["retriever"] == retriever) & (df["stage"] == stage) & (df["top_k"] == k)]["n_questions"].dropna()
    return f"n={int(sub.max())}" if len(sub) else "n=0"


def score_distributions(table2_long, path: Path | None = None):
    """Table 2 as points: the mean judge score (1-5) per rubric and setting with its 95% CI
    (table2_answer_quality.csv's) and n; the y-axis starts at 1, the scale's lowest score."""
    import numpy as np

    df = table2_long.dropna(subset=["mean"])
    metrics = list(dict.fromkeys(df["metric"]))
    setting_names = list(dict.fromkeys(df["setting"]))
    fig, ax = _figure(max(6.4, 1.3 * len(metrics) + 2), 3.6)
    for j, st in enumerate(setting_names):
        sub = df[df.setting == st].set_index("metric")
        xs = [i + (j - (len(setting_names) - 1) / 2) * 0.18 for i, m in enumerate(metrics) if m in sub.index]
        ms = [m for m in metrics if m in sub.index]
        num = lambda v: float("nan") if v is None else float(v)  # no interval below two source chunks
        ys = np.array([num(sub.loc[m, "mean"]) for m in ms])
        lo = np.array([num(sub.loc[m, "ci_low"]) for m in ms])
        hi = np.array([num(sub.loc[m, "ci_high"]) for m in ms])
        ax.errorbar(
            xs,
            ys,
            yerr=_yerr(ys, lo, hi),
            fmt="o",
            capsize=3,
            label=f"{st} (n={int(sub['n'].max()) if len(sub) else 0})",
        )
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels([m.replace("_", " ") for m in metrics], fontsize=8)
    ax.set_ylabel("mean score (1-5, 95% cluster-robust t CI)")
    ax.set_ylim(*SCORE_AXIS)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, path)
    return fig


def noise_curve(items, settings, path: Path | None = None, n_boot: int = None, seed: int = None):
    """Faithfulness (with the relevant passage) and refusal rate against the number of wrong
    passages, each point with the interval its table uses: the cluster-robust t interval for the
    mean score, Wilson at the effective n for the refusal share (source chunks as clusters).
    Y-axes from zero; legend outside the axes."""

    from ..stats import cluster_t, share_ci

    fig, (ax, ax2) = _figure(9.0, 3.4, ncols=2)

    def of(setting):
        return [it for it in items if it["setting"] == setting and it["pipeline"] == "table2"]

    def mean_point(its):
        got = [(it["scores"].get("faithfulness"), it.get("source_chunk_id")) for it in its]
        got = [(v, c) for v, c in got if v is not None]
        c = cluster_t([v for v, _ in got], [c for _, c in got])
        (below,), (above,) = _yerr([c["mean"]], [c["ci_low"]], [c["ci_high"]])
        return c["mean"], float(below), float(above), len(got)

    def share_point(its):
        c = share_ci([it["refusal"] for it in its], [it.get("source_chunk_id") for it in its])
        if not c["n"]:
            return float("nan"), 0.0, 0.0, 0
        m, lo, hi = (100 * c[k] for k in ("share", "ci_low", "ci_high"))
        (below,), (above,) = _yerr([m], [lo], [hi])
        return m, float(below), float(above), c["n"]

    rel = [s for s in settings if s["keep_relevant"]]
    pts = [mean_point(of(s["name"])) for s in rel]
    ax.errorbar(
        [s["n_wrong"] for s in rel],
        [p[0] for p in pts],
        yerr=[[p[1] for p in pts], [p[2] for p in pts]],
        marker="o",
        capsize=3,
        label="relevant passage kept",
    )
    for s, p in zip(rel, pts):
        ax.annotate(f"n={p[3]}", (s["n_wrong"], p[0]), textcoords="offset points", xytext=(6, -10), fontsize=7)
    ax.set_xlabel("wrong passages in the context")
    ax.set_ylabel("faithfulness (1-5, 95% CI)")
    ax.set_ylim(*SCORE_AXIS)
    ax.grid(alpha=0.3)
    for keep, style in ((True, "-"), (False, "--")):
        ss = [s for s in settings if s["keep_relevant"] == keep]
        pts = [share_point(of(s["name"])) for s in ss]
        ax2.errorbar(
            [s["n_wrong"] for s in ss],
            [p[0] for p in pts],
            yerr=[[p[1] for p in pts], [p[2] for p in pts]],
            linestyle=style,
            marker="s",
            capsize=3,
            color="#cc3311" if keep else "#aa3377",
            label=f"{'with' if keep else 'without'} the relevant passage",
        )
    ax2.set_xlabel("wrong passages in the context")
    ax2.set_ylabel("refusal % (95% Wilson CI)")
    ax2.set_ylim(0, 105)
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save(fig, path)
    return fig


def judge_confusion(confusion: dict, title: str, path: Path | None = None):
    """Human label (rows) against the judge's grade (columns), counts in the cells."""
    import numpy as np

    labels = sorted(confusion, key=int)
    grid = np.array([[confusion[h].get(str(g), 0) for g in range(4)] for h in labels])
    fig, ax = _figure(4.2, 0.6 + 0.55 * max(2, len(labels)))
    ax.imshow(grid, cmap="Blues", aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(
                j,
                i,
                str(grid[i, j]),
                ha="center",
                va="center",
                color="white" if grid[i, j] > grid.max() / 2 else "black",
            )
    ax.set_xticks(range(4), [str(g) for g in range(4)])
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("judge's grade")
    ax.set_ylabel("the source's label")
    ax.set_title(title, fontsize=9)
    save(fig, path)
    return fig


def refusal_sweep(sweep: list[dict], points: dict, n_answerable: int, n_unanswerable: int, path: Path | None = None):
    """Refusal recall (unanswerable questions declined) against the false-refusal rate
    (answerable ones declined) as the gate's threshold moves from 0 to 1, each point with its
    95% Wilson intervals on both rates; `points` marks named operating points {label:
    (false_refusal_rate, refusal_recall[, (x low, x high), (y low, y high)])} such as gate off /
    on, drawn with the intervals given (answerability.csv's: Wilson at the effective n of the
    source-chunk clusters) or else Wilson at n. Legend outside the axes."""
    from ..stats import wilson_ci

    fig, ax = _figure(6.6, 4.2)

    def err(rate, n):
        if rate is None or not n:
            return 0.0, 0.0
        lo, hi = wilson_ci(round(rate * n), n)
        (below,), (above,) = _yerr([rate], [lo], [hi])
        return float(below), float(above)

    ok = [r for r in sweep if r.get("false_refusal_rate") is not None and r.get("refusal_recall") is not None]
    if ok:
        xs = [r["false_refusal_rate"] for r in ok]
        ys = [r["refusal_recall"] for r in ok]
        xe = [err(x, n_answerable) for x in xs]
        ye = [err(y, n_unanswerable) for y in ys]
        ax.errorbar(
            xs,
            ys,
            xerr=[[a for a, _ in xe], [b for _, b in xe]],
            yerr=[[a for a, _ in ye], [b for _, b in ye]],
            marker=".",
            color="#4477aa",
            ecolor="#bbccee",
            elinewidth=0.8,
            label="gate threshold 0 → 1",
        )
    for (label, point), colour in zip(points.items(), ("#cc3311", "#228833", "#aa3377")):
        x, y = point[:2]
        if x is not None and y is not None:
            xe, ye = err(x, n_answerable), err(y, n_unanswerable)
            if len(point) == 4 and None not in (*point[2], *point[3]):  # the table's own intervals
                (xe,), (ye,) = (
                    tuple(zip(*_yerr([x], [point[2][0]], [point[2][1]]))),
                    tuple(zip(*_yerr([y], [point[3][0]], [point[3][1]]))),
                )
            ax.errorbar(
                [x],
                [y],
                xerr=[[xe[0]], [xe[1]]],
                yerr=[[ye[0]], [ye[1]]],
                fmt="o",
                markersize=7,
                capsize=3,
                color=colour,
                zorder=3,
                label=label,
            )
    ax.plot([0, 1], [0, 1], color="#bbbbbb", linestyle=":", linewidth=1)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"false-refusal rate (answerable, n={n_answerable})")
    ax.set_ylabel(f"refusal recall (unanswerable, n={n_unanswerable})")
    if not ok:
        ax.text(0.5, 0.5, "no unanswerable questions: nothing to sweep", ha="center", va="center")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, path)
    return fig


def forest_plot(rows: list[dict], path: Path | None = None):
    """Each paired-test cell behind a directional finding (:func:`spacelm.lib.report.findings.forest_rows`):
    this run's difference with its 95% CI (dots), the paper's difference in the same cell
    (crosses), and the band this run could detect at the cell's level (grey, ±mde around 0).
    One panel per comparison and unit; legend below the panels."""
    import numpy as np

    panels = list(dict.fromkeys(r["panel"] for r in rows))
    if not panels:
        fig, ax = _figure(5, 2)
        ax.text(0.5, 0.5, "no paired tests", ha="center", va="center")
        save(fig, path)
        return fig
    heights = [sum(r["panel"] == p for r in rows) for p in panels]
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(7.0, 0.9 + 0.22 * sum(heights) + 0.5 * len(panels)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, panel in zip(axes[:, 0], panels):
        sub = [r for r in rows if r["panel"] == panel]
        y = np.arange(len(sub))[::-1]
        for yi, r in zip(y, sub):
            if r["mde"] == r["mde"] and r["mde"] is not None:
                ax.fill_betweenx([yi - 0.4, yi + 0.4], -r["mde"], r["mde"], color="#dddddd", linewidth=0)
        d = [r["diff"] for r in sub]
        ax.errorbar(
            d,
            y,
            xerr=_yerr(d, [r["ci_low"] for r in sub], [r["ci_high"] for r in sub]),
            fmt="o",
            color="#4477aa",
            capsize=2,
            markersize=4,
            label="this run: difference, 95% CI",
        )
        ax.plot(
            [r["paper"] if r["paper"] is not None else np.nan for r in sub],
            y,
            "x",
            color="#cc3311",
            markersize=6,
            label="the paper's difference",
        )
        ax.fill_betweenx([], [], [], color="#dddddd", label="detectable at α = 0.05 (±mde, 80% power)")
        ax.axvline(0, color="#888888", linewidth=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels([r["cell"] for r in sub], fontsize=7)
        ax.set_title(panel, fontsize=9)
        ax.grid(alpha=0.3, axis="x")
    h, lab = axes[-1, 0].get_legend_handles_labels()
    fig.legend(h, lab, fontsize=8, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, path)
    return fig


def _ci_columns(df, value: str) -> tuple:
    """The CI columns of `value` in a per-task table (`<value>_ci_low`, `<value>_ci_high`), or
    None when the table has none (a run written before they were added)."""
    lo, hi = f"{value}_ci_low", f"{value}_ci_high"
    return (lo, hi) if lo in df and hi in df else None


def _num(series) -> list:
    return [float("nan") if v is None else float(v) for v in series]


def _settings_panel(ax, sub, value: str, ci) -> str:
    """Table 2 per task: one point per setting with its CI; the tick names the setting and its n."""
    ys = _num(sub[value])
    err = _yerr(ys, _num(sub[ci[0]]), _num(sub[ci[1]])) if ci else None
    ax.errorbar(range(len(sub)), ys, yerr=err, fmt="o", capsize=3, color="#4477aa")
    ticks = [f"{s}\n(n={int(n)})" for s, n in zip(sub["setting"], sub["n"])]
    ax.set_xticks(range(len(sub)), ticks, rotation=30, fontsize=7)
    ax.set_xlim(-0.6, len(sub) - 0.4)
    ns = set(sub["n"])
    return f"n={int(ns.pop())} per setting" if len(ns) == 1 else "n per setting below"


def _topk_panel(ax, sub, value: str, ci, groups: list) -> str:
    """Table 1 per task: a line per retriever and stage against top-k, each point with its CI."""
    ks = sorted(set(sub["top_k"]))
    step = 0.04 * (min(b - a for a, b in zip(ks, ks[1:])) if len(ks) > 1 else 1)  # dodge, so no bar hides another
    for j, (r, st) in enumerate(groups):
        g = sub[(sub.retriever == r) & (sub.stage == st)].sort_values("top_k")
        if not len(g):
            continue
        ys = _num(g[value])
        err = _yerr(ys, _num(g[ci[0]]), _num(g[ci[1]])) if ci else None
        x = [k + (j - (len(groups) - 1) / 2) * step for k in g["top_k"]]
        style = system_style(f"{r}+rerank" if st == "reranked" else r)
        ax.errorbar(x, ys, yerr=err, capsize=2, label=f"{r} {st}", **style)
    ax.set_xticks(ks)
    ax.set_xlabel("top-k")
    return f"n={int(sub['questions'].max())} questions"


def per_task_panels(per_task, value: str, ylabel: str, path: Path | None = None, group: str = None):
    """One panel per task of a per-task table (Table 1's grading/per_task.csv: a line per
    retriever and stage against top-k; Table 2's table2_per_task.csv: a point per setting), each
    point with its 95% CI from the table's `<value>_ci_low`/`<value>_ci_high` columns and each
    panel titled with its n. One shared y-axis: 0-100% for shares, from 1 for a 1-5 score."""
    import numpy as np

    df = per_task.dropna(subset=[value]) if len(per_task) else per_task
    tasks = sorted(set(df["task"])) if len(df) else []
    fig, axes = _figure(max(6.4, 2.8 * max(1, len(tasks))), 3.4, ncols=max(1, len(tasks)))
    axes = np.atleast_1d(axes)
    if not tasks:
        axes[0].text(0.5, 0.5, "no per-task rows", ha="center", va="center")
        save(fig, path)
        return fig
    group = group or ("setting" if "setting" in df else None)
    ci = _ci_columns(df, value)
    score = "1-5" in ylabel
    groups = [] if group else list(dict.fromkeys(zip(df["retriever"], df["stage"])))
    for ax, task in zip(axes, tasks):
        sub = df[df.task == task]
        n = _settings_panel(ax, sub, value, ci) if group else _topk_panel(ax, sub, value, ci, groups)
        ax.set_title(f"{task} ({n})", fontsize=8)
        ax.set_ylim(*(SCORE_AXIS if score else (0, 102)))
        ax.grid(alpha=0.3)
    no_ci = not ci or df[ci[0]].isna().all()
    axes[0].set_ylabel(ylabel + (" (95% CI)" if ci else " (no CI in this table)"))
    if ci and no_ci:
        fig.suptitle("no CI: fewer than two source chunks per task", fontsize=8, y=1.02)
    h, lab = axes[0].get_legend_handles_labels()
    if h:
        fig.legend(h, lab, fontsize=8, loc="lower center", ncol=4, bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    save(fig, path)
    return fig


def judge_calibration(confusions: dict, path: Path | None = None):
    """The relevance judge's calibration: for each label of a source, the distribution of the judge's
    grades 0-3 (stacked shares, n per bar), one panel per labelled source. `confusions`:
    {source: {human label: {judge grade: count}}} (judge_check/relevance.json's confusion
    matrices). Y-axis from zero to 100%; legend beside the panels."""
    import numpy as np

    sources = [s for s, c in confusions.items() if c]
    fig, axes = _figure(max(5.0, 3.2 * max(1, len(sources)) + 1.2), 3.4, ncols=max(1, len(sources)))
    axes = np.atleast_1d(axes)
    if not sources:
        axes[0].text(0.5, 0.5, "no labelled pairs", ha="center", va="center")
    for ax, src in zip(axes, sources):
        conf = confusions[src]
        labels = sorted(conf, key=lambda x: int(x))
        counts = np.array([[conf[h].get(str(g), 0) for g in range(4)] for h in labels], dtype=float)
        totals = counts.sum(axis=1)
        shares = 100 * counts / np.where(totals > 0, totals, 1)[:, None]
        bottom = np.zeros(len(labels))
        for g in range(4):
            ax.bar(range(len(labels)), shares[:, g], bottom=bottom, color=GRADE_COLORS[g], label=f"judge grade {g}")
            bottom += shares[:, g]
        ax.set_xticks(range(len(labels)), [f"{h}\n(n={int(t)})" for h, t in zip(labels, totals)], fontsize=7)
        ax.set_xlabel("the source's label")
        ax.set_title(src, fontsize=9)
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("% of the pairs with that label")
    h, lab = axes[0].get_legend_handles_labels()
    if h:
        fig.legend(h, lab, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    save(fig, path)
    return fig


# one colour per chunk size, in the order of the sizes (smallest first), the same in every panel
SIZE_COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377")


def _budget_panel(ax, sub, measure: str, kind: str, sizes: list) -> None:
    """One panel: `measure` against the cut of kind `kind`, a line and a 95% CI band per size."""
    for i, size in enumerate(sizes):
        s = sub[(sub["chunk_size"] == size) & (sub["budget_kind"] == kind)].sort_values("budget")
        if s.empty:
            continue
        colour = SIZE_COLORS[i % len(SIZE_COLORS)]
        ax.plot(s["budget"], s[measure], marker="o", color=colour, label=f"{size}-token chunks")
        ax.fill_between(s["budget"], s[f"{measure}_ci_low"], s[f"{measure}_ci_high"], color=colour, alpha=0.15)
    if kind == "tokens":
        ax.set_xscale("log", base=2)
    ticks = sorted(set(sub.loc[sub["budget_kind"] == kind, "budget"]))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("reader budget (tokens)" if kind == "tokens" else "k chunks (equal k: unequal reading)")
    ax.set_ylabel(f"{measure.replace('_', ' ')} (95% CI)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)


def chunk_budget_plot(table, system: str, path: Path | None = None):
    """Hit rate and coverage of the evidence span per chunk size, at equal reader tokens (left)
    and at equal k (right, labelled as such); one row of panels per question set and measure, the
    system `system` only, n (questions / documents) in each row's title. `table`: the rows of
    chunk_sizes/equal_budget.csv."""
    sub = table[table["system"] == system]
    sets = list(dict.fromkeys(sub["questions"]))
    sizes = sorted(set(sub["chunk_size"]))
    rows = [(q, m) for q in sets for m in ("hit_rate", "coverage")]
    _figure(1, 1)  # the headless backend outside notebooks
    import matplotlib.pyplot as plt

    plt.close()
    fig, axes = plt.subplots(len(rows), 2, figsize=(10.0, 3.0 * len(rows)), squeeze=False)
    for (qs, measure), pair in zip(rows, axes):
        s = sub[sub["questions"] == qs]
        n_q, n_d = int(s["n_questions"].max()), int(s["n_documents"].max())
        for ax, kind in zip(pair, ("tokens", "k")):
            _budget_panel(ax, s, measure, kind, sizes)
            what = "equal reader tokens" if kind == "tokens" else "equal k (not equal reading)"
            ax.set_title(f"{qs} questions, {system}: {what}\nn = {n_q} questions / {n_d} documents", fontsize=9)
    axes[0][1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save(fig, path)
    return fig
