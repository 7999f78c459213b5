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
