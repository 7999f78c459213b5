"""Uncertainty, defined once. One interval method per kind of quantity (`INTERVALS` names them for
the run's manifest):

- a mean of per-question values, or a paired mean difference: a cluster-robust t interval
  (:func:`cluster_t`): questions written from the same source chunk share their passage, so the
  standard error is computed from cluster totals with G − 1 degrees of freedom (G clusters);
  with one question per cluster it is Student's t interval;
- a proportion of questions (refusal rates, pass rates): the Wilson score interval at the
  effective n (n divided by the clustering's design effect, :func:`share_ci`), which stays
  inside [0, 1] and is not degenerate at 0/n or n/n;
- a pooled ratio (Table 1's shares of graded passages, F1): a two-stage cluster bootstrap
  (:func:`cluster_bootstrap_cis`): source chunks resampled, then questions within each.

Tests: the cluster-robust t test of a mean difference (:func:`paired_difference`), its
detectable difference at the level the verdict applies (:func:`min_detectable_difference`), and
the questions a future run needs (:func:`questions_needed`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def bootstrap_ci(
    units: Sequence, statistic: Callable[[list], float] = None, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
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


def bootstrap_cis(
    units: Sequence, statistics: Callable[[list], dict], n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
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
        out[k] = (
            (float("nan"), float("nan"))
            if np.all(np.isnan(v))
            else tuple(float(x) for x in np.nanpercentile(v, [100 * alpha, 100 * (1 - alpha)]))
        )
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


INTERVALS = {
    "mean": "cluster-robust t interval over source chunks (CR1 standard error, G - 1 degrees of freedom)",
    "proportion": "Wilson score interval at the effective n (n / design effect of the source-chunk clusters)",
    "pooled share": "two-stage cluster bootstrap (source chunks, then questions within them), percentile",
}


def _clusters(n: int, clusters: Sequence | None) -> list:
    """Cluster labels, one per unit; each unit its own cluster when none are given."""
    if clusters is None:
        return list(range(n))
    clusters = list(clusters)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} units")
    return [i if c is None else c for i, c in enumerate(clusters)]


def cluster_t(values: Sequence, clusters: Sequence | None = None, level: float = 0.95) -> dict:
    """Mean of `values` with its cluster-robust standard error and t interval.

    The CR1 sandwich estimator: se² = G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / n², with G − 1
    degrees of freedom. With one unit per cluster this is s²/n, Student's t interval. NaN
    interval below two clusters. {mean, se, ci_low, ci_high, n, n_clusters, df}."""
    from scipy.stats import t

    x = np.asarray(values, dtype=float)
    n = len(x)
    labels = _clusters(n, clusters)
    groups: dict = {}
    for v, c in zip(x, labels):
        groups.setdefault(c, []).append(v)
    g = len(groups)
    out = {
        "mean": float(x.mean()) if n else float("nan"),
        "se": float("nan"),
        "ci_low": float("nan"),
        "ci_high": float("nan"),
        "n": n,
        "n_clusters": g,
        "df": g - 1,
    }
    if g < 2:
        return out
    resid = [sum(v - out["mean"] for v in vs) for vs in groups.values()]
    se = float(np.sqrt(g / (g - 1) * sum(r * r for r in resid) / n**2))
    half = float(t.ppf(1 - (1 - level) / 2, g - 1)) * se
    out.update(se=se, ci_low=out["mean"] - half, ci_high=out["mean"] + half)
    return out


def design_effect(values: Sequence, clusters: Sequence | None) -> float:
    """Variance of the mean under clustering over its variance with independent units
    (cluster-robust se² over s²/n), at least 1; 1 when either is not defined."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return 1.0
    c = cluster_t(x, clusters)
    naive = float(np.var(x, ddof=1)) / len(x)
    if not np.isfinite(c["se"]) or naive <= 0:
        return 1.0
    return max(1.0, c["se"] ** 2 / naive)


def cluster_bootstrap_cis(
    units: Sequence,
    clusters: Sequence | None,
    statistics: Callable[[list], dict],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Percentile CIs of several statistics from a two-stage cluster bootstrap: draw G clusters
    with replacement, then within each drawn cluster draw its units with replacement;
    `statistics(resampled units)` returns {name: value}. Without clusters it is the ordinary
    bootstrap over units. {name: (low, high)}, NaN below two clusters."""
    units = list(units)
    labels = _clusters(len(units), clusters)
    groups: dict = {}
    for u, c in zip(units, labels):
        groups.setdefault(c, []).append(u)
    members = list(groups.values())
    if len(members) < 2 or n_boot < 1:
        return {k: (float("nan"), float("nan")) for k in statistics(units)}
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        sample = []
        for gi in rng.integers(0, len(members), size=len(members)):
            m = members[gi]
            sample.extend(m[j] for j in rng.integers(0, len(m), size=len(m)))
        draws.append(statistics(sample))
    alpha = (1 - level) / 2
    out = {}
    for k in draws[0]:
        v = np.array([d[k] for d in draws], dtype=float)
        out[k] = (
            (float("nan"), float("nan"))
            if np.all(np.isnan(v))
            else tuple(float(x) for x in np.nanpercentile(v, [100 * alpha, 100 * (1 - alpha)]))
        )
    return out


def cluster_bootstrap_ci(
    units: Sequence,
    clusters: Sequence | None,
    statistic: Callable[[list], float],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """:func:`cluster_bootstrap_cis` of one statistic."""
    return cluster_bootstrap_cis(units, clusters, lambda u: {"v": statistic(u)}, n_boot, seed, level)["v"]


def min_detectable_difference(se: float, df: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided t test at level `alpha` detects with probability
    `power`, given the standard error of the estimate and its degrees of freedom:
    (t_{1−α/2, df} + t_{power, df}) · se. `alpha` is the level the verdict's rule applies to the
    test (0.05 per cell under an intersection-union rule; 0.05 / m at the first step of Holm over
    m cells). NaN without a standard error or below one degree of freedom."""
    from scipy.stats import t

    if df < 1 or not np.isfinite(se) or se <= 0:
        return float("nan")
    return float((t.ppf(1 - alpha / 2, df) + t.ppf(power, df)) * se)


def min_equivalence_margin(se: float, df: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Two one-sided tests (TOST) at level `alpha`: the narrowest margin ±δ inside which a true
    difference of 0 is shown with probability `power`: (t_{1−α, df} + t_{1−(1−power)/2, df}) · se."""
    from scipy.stats import t

    if df < 1 or not np.isfinite(se) or se <= 0:
        return float("nan")
    return float((t.ppf(1 - alpha, df) + t.ppf(1 - (1 - power) / 2, df)) * se)


def questions_needed(
    effect: float, sd: float, alpha: float = 0.05, power: float = 0.8, deff: float = 1.0, max_n: int = 100_000
) -> int:
    """Questions a paired two-sided t test needs to detect `effect` with probability `power` at
    level `alpha`, from the SD of the per-question differences and the design effect of the
    source-chunk clusters: the smallest effective n with (t_{1−α/2, n−1} + t_{power, n−1}) · sd /
    √n ≤ |effect|, times the design effect. None when the effect is 0 or the SD unknown; `max_n`
    when even that many do not suffice."""
    from math import ceil

    from scipy.stats import t

    if not effect or not np.isfinite(sd) or sd <= 0:
        return None
    need = lambda n: (t.ppf(1 - alpha / 2, n - 1) + t.ppf(power, n - 1)) * sd / np.sqrt(n) <= abs(effect)
    lo, hi = 2, 2
    while not need(hi):
        if hi >= max_n:
            return max_n
        lo, hi = hi, min(max_n, hi * 2)
    while lo < hi:  # the smallest n that suffices (the left side falls with n)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if need(mid) else (mid + 1, hi)
    return int(ceil(hi * max(1.0, deff)))


def paired_difference(
    a: Sequence,
    b: Sequence,
    clusters: Sequence | None = None,
    alpha: float = 0.05,
    level: float = 0.95,
    n_boot: int = None,
    seed: int = None,
) -> dict:
    """b − a over paired questions, clustered by source chunk: the mean difference, its
    cluster-robust t interval, the two-sided cluster-robust t test's p-value (NaN when every
    difference is 0 or below two clusters), the SD of the differences, the design effect, and
    the smallest difference detectable at level `alpha` (80% power; see
    :func:`min_detectable_difference`). `n_boot` and `seed` are accepted and unused (the interval
    is analytic)."""
    from scipy.stats import t

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(d)
    c = cluster_t(d, clusters, level)
    p = float("nan")
    if c["n_clusters"] >= 2 and np.any(d != 0):
        if c["se"] > 0:
            p = float(2 * t.sf(abs(c["mean"]) / c["se"], c["df"]))
        else:  # every cluster moved by the same amount: no spread to test against
            p = 0.0
    sd = float(np.std(d, ddof=1)) if n >= 2 else float("nan")
    return {
        "n": n,
        "n_clusters": c["n_clusters"],
        "diff": c["mean"],
        "ci_low": c["ci_low"],
        "ci_high": c["ci_high"],
        "p_value": p,
        "se": c["se"],
        "df": c["df"],
        "sd": sd,
        "deff": design_effect(d, clusters),
        "mde": min_detectable_difference(c["se"], c["df"], alpha),
    }


def wilson_ci(successes: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion: the p with |p̂ − p| ≤ z·√(p(1 − p)/n). `n` may be
    an effective (non-integer) sample size. NaN without trials."""
    from scipy.stats import norm

    if n <= 0:
        return float("nan"), float("nan")
    z = float(norm.ppf(1 - (1 - level) / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def share_ci(values: Sequence, clusters: Sequence | None = None, level: float = 0.95) -> dict:
    """A proportion of yes/no values (None left out) with its Wilson interval at the effective
    n = n / design effect of the clusters. {share, ci_low, ci_high, n, n_clusters, n_effective}."""
    pairs = [(float(v), c) for v, c in zip(values, _clusters(len(list(values)), clusters)) if v is not None]
    n = len(pairs)
    if not n:
        return {"share": None, "ci_low": None, "ci_high": None, "n": 0, "n_clusters": 0, "n_effective": 0}
    x = [v for v, _ in pairs]
    cl = [c for _, c in pairs]
    n_eff = n / design_effect(x, cl)
    lo, hi = wilson_ci(sum(x) / n * n_eff, n_eff, level)
    return {"share": sum(x) / n, "ci_low": lo, "ci_high": hi, "n": n, "n_clusters": len(set(cl)), "n_effective": n_eff}


# --------------------------------------------------------------------------- tests beside the t test
def cluster_sums(values: Sequence, clusters: Sequence | None) -> dict:
    """{cluster label: the sum of its units' values} (each unit its own cluster without labels)."""
    out: dict = {}
    for v, c in zip(np.asarray(values, dtype=float), _clusters(len(values), clusters)):
        out[c] = out.get(c, 0.0) + float(v)
    return out


def sign_flip_test(
    differences: Sequence, clusters: Sequence | None = None, max_exact: int = 16, n_perm: int = 20_000, seed: int = 0
) -> dict:
    """Two-sided permutation test of a paired mean difference that keeps clusters whole: under the
    null each cluster's summed difference is as likely to carry either sign, so the statistic
    |Σ_g ε_g S_g| (S_g the cluster's sum, ε_g = ±1) is compared with its value at every sign pattern.
    With G ≤ `max_exact` clusters every one of the 2^G patterns is enumerated and p is exact (the
    observed pattern is among them); beyond that `n_perm` patterns are drawn with `seed` and
    p = (1 + patterns at least as extreme) / (1 + n_perm). {p, method, n_patterns, n_clusters};
    p is NaN when every difference is 0 or there are fewer than two clusters (no test, as for the t)."""
    s = np.array(list(cluster_sums(differences, clusters).values()))
    g = len(s)
    out = {"p": float("nan"), "method": "none", "n_patterns": 0, "n_clusters": g}
    if g < 2 or not np.any(np.asarray(differences, dtype=float) != 0):
        return out
    observed = abs(s.sum()) - 1e-9 * max(1.0, float(np.abs(s).sum()))  # float ties count as extreme
    if g <= max_exact:
        bits = (np.arange(2**g)[:, None] >> np.arange(g)) & 1
        flipped = np.abs((1 - 2 * bits) @ s)
        return {**out, "p": float(np.mean(flipped >= observed)), "method": "exact", "n_patterns": 2**g}
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(n_perm, g))
    hits = int(np.sum(np.abs(signs @ s) >= observed))
    return {**out, "p": (1 + hits) / (1 + n_perm), "method": "monte carlo", "n_patterns": n_perm}


SIGNRANK_ZERO_METHOD = "pratt"


def signrank_test(differences: Sequence, clusters: Sequence | None = None) -> dict:
    """Wilcoxon signed-rank test on the clusters' mean differences (scipy.stats.wilcoxon, two-sided).

    Zero differences are handled by Pratt's method (`zero_method="pratt"`): zeros take part in the
    ranking and are then dropped from the statistic, so a cell where most clusters did not move is
    not read as if only the few that moved had been sampled (the default "wilcox" drops them first,
    and "zsplit" hands half their ranks to each side, which pulls the statistic towards the null by
    an amount set by how many zeros there are rather than by what moved). The p-value is exact below
    51 clusters when no zero or tied magnitude is present, else the normal approximation (no
    continuity correction). {p, method, n_clusters, n_zero_clusters}; NaN when every mean is 0."""
    from scipy.stats import wilcoxon

    labels = _clusters(len(differences), clusters)
    sums, counts = cluster_sums(differences, labels), {}
    for c in labels:
        counts[c] = counts.get(c, 0) + 1
    means = np.array([sums[c] / counts[c] for c in sums])
    zeros = int(np.sum(means == 0))
    out = {"p": float("nan"), "method": "none", "n_clusters": len(means), "n_zero_clusters": zeros}
    if zeros == len(means):
        return out
    mags = np.abs(means[means != 0])
    method = "exact" if zeros == 0 and len(set(mags)) == len(mags) and len(means) <= 50 else "approx"
    p = wilcoxon(means, zero_method=SIGNRANK_ZERO_METHOD, method=method).pvalue
    return {**out, "p": float(p), "method": method}


def direction_counts(differences: Sequence) -> dict:
    """Per-unit differences that are zero, positive and negative, and `ties_dominate`: more than
    half of them zero (a cell where a t test on the mean says little about the typical question)."""
    d = np.asarray(differences, dtype=float)
    zero = int(np.sum(d == 0))
    return {
        "n_zero": zero,
        "n_up": int(np.sum(d > 0)),
        "n_down": int(np.sum(d < 0)),
        "ties_dominate": bool(len(d) and zero > len(d) / 2),
    }


def auc(y: list, s: list) -> float:
    """ROC AUC of scores `s` for binary labels `y`: 0.5 when every score is equal, NaN with one class."""
    from sklearn.metrics import roc_auc_score

    if len(set(y)) < 2:
        return float("nan")
    return float(roc_auc_score(y, s)) if len(set(s)) > 1 else 0.5
