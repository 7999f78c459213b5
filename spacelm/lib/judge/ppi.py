"""Prediction-powered inference (PPI): a share over all N graded pairs estimated from the judge's
grades on all of them plus a person's labels on n of them, with a confidence interval that stays
valid however wrong the judge is.

The judge-only estimate is the mean of the predictions f over the N pairs; it is biased by the
judge's errors. PPI adds the mean *rectifier* y - f measured on the n labelled pairs:

    estimate = lam * mean_N(f) + mean_n(y - lam * f)

(lam = 1 is classic PPI, Angelopoulos et al., Science 2023). Its CLT interval is
estimate ± z * se with

    se² = lam² * var_N(f) / N + var_n(y - lam * f) / n.

When the N pairs are the whole population we care about (a run's Table 1 cells: every pair is
graded, the target is the share among them) the first term is not random; `finite_population`
drops it and multiplies the second by the finite-population correction (1 - n/N), which is the
right variance when the n labelled pairs are drawn without replacement from the N.

Power tuning (PPI++, Angelopoulos, Duchi and Zrnic, 2023) picks lam to minimise the variance:
lam = Cov(y, f) / ((1 + n/N) Var(f)), clipped to [0, 1]; lam = 0 ignores the judge (the plain mean
of the labels), lam = 1 is classic PPI. It never makes the interval wider than the better of the
two in large samples.

Labels drawn with unequal probabilities (a sample stratified by system and judge grade) carry
weights 1/π; the rectifier's mean is then the weighted (Hájek) mean and its variance the
linearised one, n/(n-1) * Σ w²(r - r̄)² / (Σ w)², which reduces to var(r)/n with equal weights.

A paired difference (reranked minus retrieved) over two overlapping sets of pairs A and B is a
PPI mean too: over the M distinct pairs of A ∪ B, D = Σ_i (1[i∈B]/|B| - 1[i∈A]/|A|) y_i, so each
pair enters with the value M * (1[i∈B]/|B| - 1[i∈A]/|A|) times its label (or prediction).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def power_tuned_lambda(pred_all: Sequence[float], pred_labelled: Sequence[float], labels: Sequence[float]) -> float:
    """PPI++'s variance-minimising weight of the judge, Cov(y, f) / ((1 + n/N) Var(f)) on the
    labelled pairs and all pairs, clipped to [0, 1]; 0 when the predictions do not vary."""
    f, fl, y = (np.asarray(x, dtype=float) for x in (pred_all, pred_labelled, labels))
    n, big_n = len(y), len(f)
    if n < 2 or big_n < 2 or np.var(f, ddof=1) == 0:
        return 0.0
    cov = float(np.cov(y, fl, ddof=1)[0, 1])
    return float(np.clip(cov / ((1 + n / big_n) * np.var(f, ddof=1)), 0.0, 1.0))


def ppi_mean(
    pred_all: Sequence[float],
    pred_labelled: Sequence[float],
    labels: Sequence[float],
    weights: Sequence[float] | None = None,
    lam: float = 1.0,
    level: float = 0.95,
    finite_population: bool = False,
) -> dict:
    """The PPI estimate of the mean of y over the N pairs of `pred_all`, from the judge's
    predictions on all of them and the labels of n of them (`pred_labelled`, `labels`, in the
    same order; `weights` 1/π when they were drawn with unequal probabilities). `lam` = 1 is
    classic PPI; pass :func:`power_tuned_lambda` for PPI++. Returns estimate, ci_low, ci_high, se,
    judge_only (the mean of the predictions), n_human, n_all, lambda; the CI is NaN below two
    labels."""
    f, fl, y = (np.asarray(x, dtype=float) for x in (pred_all, pred_labelled, labels))
    n, big_n = len(y), len(f)
    if len(fl) != n:
        raise ValueError(f"{len(fl)} predictions for {n} labels: they must be the same pairs")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    judge_only = float(f.mean()) if big_n else float("nan")
    out = {"judge_only": judge_only, "n_human": n, "n_all": big_n, "lambda": lam}
    if n == 0 or big_n == 0:
        return {
            **out,
            "estimate": judge_only if n == 0 else float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "se": float("nan"),
        }
    r = y - lam * fl
    r_bar = float(np.sum(w * r) / np.sum(w))
    est = lam * judge_only + r_bar
    if n < 2:
        return {**out, "estimate": est, "ci_low": float("nan"), "ci_high": float("nan"), "se": float("nan")}
    var_r = n / (n - 1) * float(np.sum(w**2 * (r - r_bar) ** 2)) / float(np.sum(w)) ** 2
    if finite_population:
        var = var_r * max(0.0, 1 - n / big_n)
    else:
        var = lam**2 * (float(np.var(f, ddof=1)) / big_n if big_n > 1 else 0.0) + var_r
    se = float(np.sqrt(var))
    z = _z(level)
    return {**out, "estimate": est, "ci_low": est - z * se, "ci_high": est + z * se, "se": se}


def ppi_mean_stratified(
    pred_all: Sequence[float],
    strata_all: Sequence,
    pred_labelled: Sequence[float],
    labels: Sequence[float],
    strata_labelled: Sequence,
    level: float = 0.95,
    finite_population: bool = False,
) -> dict:
    """Classic PPI when the labelled pairs were drawn by stratum (e.g. by judge grade): the
    rectifier's mean is the stratum means weighted by the strata's shares W_h = N_h / N of all
    pairs, and its variance the stratified one, Σ W_h² s_h² / n_h, plus the predictions' own
    var_N(f)/N (for a finite population that term is dropped and each stratum's is multiplied by
    1 - n_h/N_h), s_h² the rectifier's variance within stratum h (the pooled within-stratum
    variance where a stratum has a single label). Every stratum holding pairs needs a label;
    otherwise the estimate is NaN. Same keys as :func:`ppi_mean`."""
    f, fl, y = (np.asarray(x, dtype=float) for x in (pred_all, pred_labelled, labels))
    sa, sl = list(strata_all), list(strata_labelled)
    big_n, n = len(f), len(y)
    judge_only = float(f.mean()) if big_n else float("nan")
    out = {"judge_only": judge_only, "n_human": n, "n_all": big_n, "lambda": 1.0}
    sizes = {h: sa.count(h) for h in set(sa)}
    r = y - fl
    groups = {h: r[[i for i, x in enumerate(sl) if x == h]] for h in sizes}
    if any(len(g) == 0 for g in groups.values()):
        return {**out, "estimate": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "se": float("nan")}
    within = [g - g.mean() for g in groups.values() if len(g) > 1]
    dof = sum(len(g) - 1 for g in groups.values() if len(g) > 1)
    pooled = float(sum(np.sum(w**2) for w in within) / dof) if dof else float("nan")
    est = judge_only + sum(sizes[h] / big_n * float(g.mean()) for h, g in groups.items())
    var = 0.0
    for h, g in groups.items():
        s2 = float(np.var(g, ddof=1)) if len(g) > 1 else pooled
        fpc = max(0.0, 1 - len(g) / sizes[h]) if finite_population else 1.0
        var += (sizes[h] / big_n) ** 2 * s2 / len(g) * fpc
    if not finite_population and big_n > 1:
        var += float(np.var(f, ddof=1)) / big_n
    se = float(np.sqrt(var)) if var == var else float("nan")
    z = _z(level)
    return {**out, "estimate": est, "ci_low": est - z * se, "ci_high": est + z * se, "se": se}


def difference_values(in_a: Sequence[bool], in_b: Sequence[bool]) -> np.ndarray:
    """Per distinct pair of A ∪ B, the factor that turns its label into its share of the
    difference mean(B) - mean(A), scaled so that the *mean* over the M pairs is that difference:
    M * (1[i∈B]/|B| - 1[i∈A]/|A|)."""
    a, b = np.asarray(in_a, dtype=bool), np.asarray(in_b, dtype=bool)
    if not a.any() or not b.any():
        raise ValueError("both sets need at least one pair")
    return len(a) * (b / b.sum() - a / a.sum())


def ppi_difference(
    pred_all: Sequence[float],
    in_a: Sequence[bool],
    in_b: Sequence[bool],
    labelled: Sequence[int],
    labels: Sequence[float],
    weights: Sequence[float] | None = None,
    level: float = 0.95,
    finite_population: bool = False,
) -> dict:
    """PPI estimate of mean_B(y) - mean_A(y) over the distinct pairs of A ∪ B (`pred_all`, `in_a`,
    `in_b` indexed alike; `labelled`: indices of the labelled pairs, `labels` their labels):
    classic PPI on the pair values of :func:`difference_values`."""
    x = difference_values(in_a, in_b)
    f = np.asarray(pred_all, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    y = np.asarray(labels, dtype=float)
    return ppi_mean(x * f, x[idx] * f[idx], x[idx] * y, weights, 1.0, level, finite_population)
