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


def holm(p_values: Sequence) -> list:
    """Holm's step-down adjustment of a family of p-values (family-wise error at the nominal
    level): the i-th smallest p is multiplied by (m - i), made monotone, capped at 1. A missing
    p-value (None or NaN: no test could be run) stays missing and does not count in m."""
    idx = [i for i, p in enumerate(p_values) if p is not None and not np.isnan(p)]
    out: list = [None] * len(p_values)
    m, running = len(idx), 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        out[i] = running
    return out


def min_detectable_difference(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference a two-sided paired test on `n` units detects with
    probability `power` at level `alpha`, given the SD of the per-unit differences (the paired
    t-test's power, solved for the effect: (t_{1-α/2} + t_{power}) · sd / √n with n-1 degrees of
    freedom). NaN below two units or when the differences do not vary."""
    from scipy.stats import t

    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return float("nan")
    df = n - 1
    return float((t.ppf(1 - alpha / 2, df) + t.ppf(power, df)) * sd / np.sqrt(n))


def paired_difference(a: Sequence, b: Sequence, n_boot: int = 1000, seed: int = 0) -> dict:
    """b − a over paired units (e.g. questions): the mean difference, its 95% bootstrap CI, the
    Wilcoxon signed-rank p-value (NaN when every difference is 0 or there are fewer than two
    units), and the smallest difference this n could detect (80% power, α = 0.05)."""
    from scipy.stats import wilcoxon

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(d)
    lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
    p = float("nan")
    if n >= 2 and np.any(d != 0):
        p = float(wilcoxon(d, zero_method="zsplit").pvalue)
    sd = float(np.std(d, ddof=1)) if n >= 2 else float("nan")
    return {"n": n, "diff": float(d.mean()) if n else float("nan"), "ci_low": lo, "ci_high": hi, "p_value": p,
            "mde": min_detectable_difference(sd, n)}


def wilson_ci(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (scipy's binomtest); NaN without trials."""
    from scipy.stats import binomtest

    if n < 1:
        return float("nan"), float("nan")
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)
