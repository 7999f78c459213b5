"""Uncertainty, defined once: percentile-bootstrap confidence intervals over resampled units
(questions, answers, pairs)."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


def bootstrap_ci(units: Sequence, statistic: Callable[[list], float] = None, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of `statistic` (default: the mean) over `units` resampled with
    replacement. NaN when fewer than two units (no interval can be drawn from one)."""
    units = list(units)
    if len(units) < 2 or n_boot < 1:
        return float("nan"), float("nan")
    if statistic is not None:
        return bootstrap_cis(units, lambda u: {"v": statistic(u)}, n_boot, seed, level)["v"]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(units), size=(n_boot, len(units)))
    samples = np.asarray(units, dtype=float)[idx].mean(axis=1)  # the mean, vectorised
    alpha = (1 - level) / 2
    if np.all(np.isnan(samples)):
        return float("nan"), float("nan")
    lo, hi = np.nanpercentile(samples, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def bootstrap_cis(units: Sequence, statistics: Callable[[list], dict], n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95) -> dict:
    """Percentile bootstrap CIs of several statistics at once: `statistics(resampled units)`
    returns {name: value}; each resample is drawn once and feeds every statistic (the same
    draws as :func:`bootstrap_ci`). {name: (low, high)}, NaN where no interval can be drawn."""
    units = list(units)
    if len(units) < 2 or n_boot < 1:
        return {k: (float("nan"), float("nan")) for k in statistics(units)}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(units), size=(n_boot, len(units)))
    draws = [statistics([units[i] for i in row]) for row in idx]
    alpha = (1 - level) / 2
    out = {}
    for k in draws[0]:
        v = np.array([d[k] for d in draws], dtype=float)
        out[k] = ((float("nan"), float("nan")) if np.all(np.isnan(v)) else
                  tuple(float(x) for x in np.nanpercentile(v, [100 * alpha, 100 * (1 - alpha)])))
    return out
