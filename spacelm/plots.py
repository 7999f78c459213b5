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
