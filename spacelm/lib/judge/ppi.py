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

import random
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


def ppi_table1(cell_pairs: dict, grades: dict, human: dict, weights: dict, level: float = 0.95) -> list[dict]:
    """Per Table 1 cell (retriever, stage, top-k) and grade g, the prediction-powered estimate of
    the share (%) of its pairs with grade g: the judge's grades on every pair of the cell, the
    human grades of the labelled pairs in it. `cell_pairs`: {cell: [(qid, chunk_id), ...]};
    `grades`: {(qid, chunk_id): judge grade}; `human`: {(qid, chunk_id): grade};
    `weights`: {(qid, chunk_id): 1/π}. Rows: retriever, stage, top_k, grade, ppi_estimate,
    ppi_ci_low, ppi_ci_high, n_human (classic PPI; pairs as the units)."""

    rows = []
    for (retriever, stage, k), pairs in cell_pairs.items():
        graded = [p for p in pairs if grades.get(p) is not None]
        lab = [p for p in graded if p in human]
        for g in range(4):
            f = [float(grades[p] == g) for p in graded]
            r = ppi_mean(
                f,
                [float(grades[p] == g) for p in lab],
                [float(human[p] == g) for p in lab],
                [weights.get(p, 1.0) for p in lab],
                level=level,
            )
            pct = lambda x: None if x is None or np.isnan(x) else round(100 * float(np.clip(x, 0, 1)), 2)
            rows.append(
                {
                    "retriever": retriever,
                    "stage": stage,
                    "top_k": k,
                    "grade": g,
                    "ppi_estimate": pct(r["estimate"]) if lab else None,
                    "ppi_ci_low": pct(r["ci_low"]),
                    "ppi_ci_high": pct(r["ci_high"]),
                    "n_human": len(lab),
                }
            )
    return rows


def ppi_differences(cell_pairs: dict, grades: dict, human: dict, weights: dict, level: float = 0.95) -> list[dict]:
    """Reranked minus retrieved, per retriever and top-k, in the share (%) of pairs graded 2-3:
    the judge-only difference and the prediction-powered one with its CI (lib/judge/ppi.py)."""

    rows = []
    for (retriever, stage, k), a_pairs in cell_pairs.items():
        if stage != "retrieved" or (retriever, "reranked", k) not in cell_pairs:
            continue
        a = {p for p in a_pairs if grades.get(p) is not None}
        b = {p for p in cell_pairs[(retriever, "reranked", k)] if grades.get(p) is not None}
        union = sorted(a | b)
        if not a or not b:
            continue
        f = [float(grades[p] >= 2) for p in union]
        lab = [i for i, p in enumerate(union) if p in human]
        r = ppi_difference(
            f,
            [p in a for p in union],
            [p in b for p in union],
            lab,
            [float(human[union[i]] >= 2) for i in lab],
            [weights.get(union[i], 1.0) for i in lab],
            level,
        )
        pp = lambda x: None if x is None or np.isnan(x) else round(100 * float(x), 2)
        rows.append(
            {
                "retriever": retriever,
                "top_k": k,
                "measure": "share graded 2-3 (pp), reranked - retrieved",
                "judge_only": pp(r["judge_only"]),
                "ppi_estimate": pp(r["estimate"]) if lab else None,
                "ppi_ci_low": pp(r["ci_low"]),
                "ppi_ci_high": pp(r["ci_high"]),
                "n_human": len(lab),
                "n_pairs": len(union),
            }
        )
    return rows


# --------------------------------------------------------------------------- a labelling sample
def allocate(sizes: dict, n: int) -> dict:
    """{stratum: sample size}: proportional to `sizes`, at least 1 per non-empty stratum when
    n reaches their number, largest remainders first, never more than a stratum holds."""
    strata = sorted(k for k, v in sizes.items() if v > 0)
    total = sum(sizes[k] for k in strata)
    n = min(n, total)
    if n <= 0 or not strata:
        return {k: 0 for k in sizes}
    floor = 1 if n >= len(strata) else 0
    alloc = {k: max(floor, int(n * sizes[k] / total)) for k in strata}
    while sum(alloc.values()) > n:  # the floor of 1 may overshoot: take back from the largest
        k = max((k for k in strata if alloc[k] > floor), key=lambda k: alloc[k] - n * sizes[k] / total)
        alloc[k] -= 1
    rema = sorted(strata, key=lambda k: (-(n * sizes[k] / total - alloc[k]), k))
    i = 0
    while sum(alloc.values()) < n:
        k = rema[i % len(rema)]
        if alloc[k] < sizes[k]:
            alloc[k] += 1
        i += 1
    return {k: alloc.get(k, 0) for k in sizes}


def stratified_sample(pairs: Sequence[dict], n: int, seed: int) -> list[dict]:
    """`pairs`: {pair_id, system, grade, ...}; a seeded sample of n stratified by (system,
    grade), each drawn pair with `stratum` and `weight` (= stratum size / its sample size)."""
    by: dict = {}
    for p in sorted(pairs, key=lambda p: p["pair_id"]):
        by.setdefault((p["system"], p["grade"]), []).append(p)
    alloc = allocate({k: len(v) for k, v in by.items()}, n)
    rng = random.Random(f"{seed}|label")
    out = []
    for k in sorted(by, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
        take = alloc[k]
        for p in rng.sample(by[k], take):
            out.append(dict(p, stratum=f"{k[0]}|{k[1]}", weight=len(by[k]) / take))
    return sorted(out, key=lambda p: p["pair_id"])
