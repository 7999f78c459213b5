"""Plots shown in the notebooks and saved under `results/<run>/plots/` (PNG, headless)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional


def _figure(width: float = 6.4, height: float = 3.6):
    import matplotlib

    if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline",):
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def save(fig, path: Optional[Path]) -> None:
    """Save a figure atomically (a temporary file renamed into place)."""
    if path is None:
        return
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)


def chunk_length_histogram(chunks, max_tokens: int, path: Optional[Path] = None):
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


def recall_curve(summary, k_values, path: Optional[Path] = None, metric: str = "recall"):
    """Recall@k (or another @k metric) against k, one line per system."""
    fig, ax = _figure()
    ks = sorted(k_values)
    for _, row in summary.iterrows():
        ax.plot(ks, [row[f"{metric}@{k}"] for k in ks], marker="o", label=row["system"])
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)
    return fig


def wins_matrix(per_query, metric: str = "ndcg@10"):
    """Share of queries on which the row system scores strictly higher than the column system."""
    import pandas as pd

    wide = per_query.pivot_table(index="qid", columns="system", values=metric)
    systems = list(dict.fromkeys(per_query["system"]))
    return pd.DataFrame({b: {a: float((wide[a] > wide[b]).mean()) for a in systems} for b in systems})[systems].loc[systems]


def generated_vs_kept(retention, path: Optional[Path] = None):
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
    ax.legend()
    save(fig, path)
    return fig


GRADE_COLORS = {0: "#cc3311", 1: "#ee7733", 2: "#88ccee", 3: "#228833"}


def grade_distribution(table1_long, path: Optional[Path] = None):
    """Stacked bars: share of each relevance grade per retriever × stage, one group per top-k."""
    import numpy as np

    df = table1_long
    groups = list(dict.fromkeys(zip(df["retriever"], df["stage"])))
    ks = sorted(set(df["top_k"]))
    fig, ax = _figure(max(6.4, 0.45 * len(groups) * len(ks)), 3.8)
    width = 0.8 / max(1, len(groups))
    for gi, (r, s) in enumerate(groups):
        x = np.arange(len(ks)) + gi * width
        bottom = np.zeros(len(ks))
        for grade in (0, 1, 2, 3):
            vals = np.array([float(df[(df.retriever == r) & (df.stage == s) & (df.top_k == k) & (df.grade == grade)]
                                   ["percent"].fillna(0).sum()) for k in ks])
            ax.bar(x, vals, width * 0.95, bottom=bottom, color=GRADE_COLORS[grade],
                   label=f"grade {grade}" if gi == 0 else None, hatch="//" if s == "reranked" else None,
                   edgecolor="white")
            bottom += vals
        for xi in x:
            ax.text(xi, 101, f"{r}\n{'rr' if s == 'reranked' else 'ret'}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(np.arange(len(ks)) + width * (len(groups) - 1) / 2)
    ax.set_xticklabels([f"top-{k}" for k in ks])
    ax.set_ylabel("% of graded passages")
    ax.set_ylim(0, 118)
    ax.legend(fontsize=7, ncol=4, loc="lower center")
    save(fig, path)
    return fig


def score_distributions(table2_long, items, path: Optional[Path] = None):
    """Histogram of judge scores (1–5) per metric and setting."""
    import numpy as np

    pairs = [(r.metric, r.setting) for r in table2_long.itertuples()]
    fig, ax = _figure(max(6.4, 1.1 * len(pairs)), 3.6)
    width = 0.8 / 5
    for s in range(1, 6):
        counts = [sum(1 for it in items if it["pipeline"] == "table2" and it["setting"] == st
                      and it["scores"].get(m) == s) for m, st in pairs]
        ax.bar(np.arange(len(pairs)) + (s - 3) * width, counts, width, label=f"score {s}")
    ax.set_xticks(np.arange(len(pairs)))
    ax.set_xticklabels([f"{m}\n{st}" for m, st in pairs], fontsize=7)
    ax.set_ylabel("answers")
    ax.legend(fontsize=7, ncol=5)
    save(fig, path)
    return fig


def noise_curve(items, settings, path: Optional[Path] = None):
    """Faithfulness (with the relevant passage) and refusal rate against the number of wrong passages."""
    import numpy as np

    fig, ax = _figure()
    rel = [s for s in settings if s["keep_relevant"]]
    xs = [s["n_wrong"] for s in rel]
    faith = [np.mean([it["scores"]["faithfulness"] for it in items if it["setting"] == s["name"]
                      and it["pipeline"] == "table2" and it["scores"].get("faithfulness") is not None] or [np.nan])
             for s in rel]
    ax.plot(xs, faith, marker="o", label="faithfulness (1-5), relevant passage kept")
    ax2 = ax.twinx()
    for keep, style in ((True, "-"), (False, "--")):
        ss = [s for s in settings if s["keep_relevant"] == keep]
        ys = [100 * np.mean([it["refusal"] for it in items if it["setting"] == s["name"] and it["pipeline"] == "table2"] or [np.nan])
              for s in ss]
        ax2.plot([s["n_wrong"] for s in ss], ys, style, marker="s", color="#cc3311",
                 label=f"refusal % ({'with' if keep else 'without'} relevant passage)")
    ax.set_xlabel("wrong passages in the context")
    ax.set_ylabel("faithfulness")
    ax.set_ylim(1, 5.2)
    ax2.set_ylabel("refusal %")
    ax2.set_ylim(0, 105)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower left")
    save(fig, path)
    return fig


def judge_confusion(confusion: dict, title: str, path: Optional[Path] = None):
    """Human label (rows) against the judge's grade (columns), counts in the cells."""
    import numpy as np

    labels = sorted(confusion, key=int)
    grid = np.array([[confusion[h].get(str(g), 0) for g in range(4)] for h in labels])
    fig, ax = _figure(4.2, 0.6 + 0.55 * max(2, len(labels)))
    ax.imshow(grid, cmap="Blues", aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(j, i, str(grid[i, j]), ha="center", va="center",
                    color="white" if grid[i, j] > grid.max() / 2 else "black")
    ax.set_xticks(range(4), [str(g) for g in range(4)])
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("judge's grade")
    ax.set_ylabel("human label")
    ax.set_title(title, fontsize=9)
    save(fig, path)
    return fig


def refusal_sweep(sweep: list[dict], points: dict, n_answerable: int, n_unanswerable: int,
                  path: Optional[Path] = None):
    """Refusal recall (unanswerable questions declined) against the false-refusal rate
    (answerable ones declined) as the gate's threshold moves from 0 to 1; `points` marks named
    operating points {label: (false_refusal_rate, refusal_recall)} such as gate off / on."""
    fig, ax = _figure(5.2, 4.2)
    xs = [r["false_refusal_rate"] for r in sweep]
    ys = [r["refusal_recall"] for r in sweep]
    ok = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if ok:
        ax.plot([x for x, _ in ok], [y for _, y in ok], marker=".", color="#4477aa", label="gate threshold 0 → 1")
    for (label, (x, y)), colour in zip(points.items(), ("#cc3311", "#228833", "#aa3377")):
        if x is not None and y is not None:
            ax.scatter([x], [y], s=60, color=colour, zorder=3, label=label)
    ax.plot([0, 1], [0, 1], color="#bbbbbb", linestyle=":", linewidth=1)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"false-refusal rate (answerable, n={n_answerable})")
    ax.set_ylabel(f"refusal recall (unanswerable, n={n_unanswerable})")
    if not ok:
        ax.text(0.5, 0.5, "no unanswerable questions: nothing to sweep", ha="center", va="center")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    save(fig, path)
    return fig
