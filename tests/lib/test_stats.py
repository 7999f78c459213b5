"""Bootstrap intervals: one statistic, or several from the same resamples."""

import numpy as np
import pytest

from spacelm.lib.stats import bootstrap_ci, bootstrap_cis


def test_several_statistics_share_the_draws_of_one():
    units = [1.0, 2.0, 4.0, 8.0, 3.0]
    lo, hi = bootstrap_ci(units, None, 500, 3)
    many = bootstrap_cis(units, lambda u: {"mean": float(np.mean(u)), "max": max(u)}, 500, 3)
    assert many["mean"] == pytest.approx((lo, hi))
    assert many["max"][1] == 8.0 and many["max"][0] <= 8.0


def test_no_interval_from_one_unit():
    assert all(np.isnan(x) for x in bootstrap_ci([3.0]))
    assert all(np.isnan(x) for x in bootstrap_cis([3.0], lambda u: {"m": u[0]})["m"])


def test_holm_matches_the_step_down_rule():
    from spacelm.lib.stats import holm

    adj = holm([0.01, 0.04, 0.03, None, 0.005])
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert adj[0] == pytest.approx(0.03) and adj[1] == pytest.approx(0.06) and adj[2] == pytest.approx(0.06)
    assert adj[3] is None and adj[4] == pytest.approx(0.02)
    assert holm([0.9, 0.8]) == [pytest.approx(1.0), pytest.approx(1.0)]


def test_min_detectable_difference_against_the_t_power_function():
    from scipy.stats import nct, t

    from spacelm.lib.stats import min_detectable_difference

    sd, n = 1.2, 24
    mde = min_detectable_difference(sd / n**0.5, n - 1)
    # the power of a paired t-test at that true difference is about 80% (exact: noncentral t)
    crit = t.ppf(0.975, n - 1)
    ncp = mde / (sd / n**0.5)
    power = 1 - nct.cdf(crit, n - 1, ncp) + nct.cdf(-crit, n - 1, ncp)
    assert 0.78 < power < 0.82
    assert np.isnan(min_detectable_difference(0.0, 10)) and np.isnan(min_detectable_difference(1.0, 0))


def test_paired_difference_direction_and_ci():
    from spacelm.lib.stats import paired_difference

    a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    b = [x + 1 + (i % 3 - 1) * 0.1 for i, x in enumerate(a)]
    r = paired_difference(a, b, n_boot=500, seed=1)
    assert r["n"] == 10 and r["diff"] == pytest.approx(1.0, abs=0.05)
    assert r["ci_low"] <= r["diff"] <= r["ci_high"] and r["p_value"] < 0.01 and r["mde"] > 0


def test_wilson_at_zero_and_all_of_ten():
    # z = 1.95996, n = 10, p = 0: centre = (z²/20) / (1 + z²/10) = 0.13877 = half-width -> [0, 0.2775]
    from spacelm.lib.stats import share_ci, wilson_ci

    assert wilson_ci(0, 10) == (pytest.approx(0.0), pytest.approx(0.27753, abs=1e-4))
    assert wilson_ci(10, 10) == (pytest.approx(0.72247, abs=1e-4), pytest.approx(1.0))
    lo, hi = wilson_ci(7, 10)  # scipy's binomtest gives the same interval
    from scipy.stats import binomtest

    ci = binomtest(7, 10).proportion_ci(method="wilson")
    assert (lo, hi) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert all(np.isnan(wilson_ci(0, 0)))
    # no clustering: the effective n is n; a constant share has design effect 1
    r = share_ci([True] * 10)
    assert r["n_effective"] == 10 and r["ci_low"] == pytest.approx(0.72247, abs=1e-4)


def test_cluster_t_by_hand():
    from spacelm.lib.stats import cluster_t

    # one value per cluster: Student's t. mean 3, s = 1.5811, se = 0.7071, t_0.975,4 = 2.7764
    c = cluster_t([1, 2, 3, 4, 5])
    assert c["se"] == pytest.approx(0.70711, abs=1e-5) and c["ci_low"] == pytest.approx(3 - 2.7764 * 0.70711, abs=1e-3)
    # two clusters {1, 1} and {3, 3}: residual sums -2 and +2; se² = 2/1 · (4 + 4) / 4² = 1; df 1
    c = cluster_t([1, 1, 3, 3], ["a", "a", "b", "b"])
    assert c["se"] == pytest.approx(1.0) and c["df"] == 1 and c["ci_high"] == pytest.approx(2 + 12.7062, abs=1e-3)
    assert np.isnan(cluster_t([1, 2], ["a", "a"])["ci_low"])  # one cluster: no interval


def test_cluster_bootstrap_is_wider_than_the_naive_one_when_questions_share_chunks():
    from spacelm.lib.stats import cluster_bootstrap_ci, design_effect

    # 8 source chunks, 5 questions each with the same value: 40 questions but 8 independent units
    values = [float(c) for c in range(8) for _ in range(5)]
    clusters = [c for c in range(8) for _ in range(5)]
    mean = lambda xs: float(np.mean(xs))
    naive = cluster_bootstrap_ci(values, None, mean, 2000, 3)
    clustered = cluster_bootstrap_ci(values, clusters, mean, 2000, 3)
    # the naive SE is sd/√40, the clustered one sd/√8: about √5 = 2.2 times wider
    assert (clustered[1] - clustered[0]) > 1.8 * (naive[1] - naive[0])
    assert design_effect(values, clusters) > 4
    assert design_effect([1.0, 2.0, 3.0, 4.0], None) == pytest.approx(1.0)


def test_paired_difference_is_clustered():
    from spacelm.lib.stats import paired_difference

    a = [0.0] * 8
    b = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    flat = paired_difference(a, b)
    chunks = paired_difference(a, b, ["x", "x", "x", "x", "y", "y", "y", "y"])
    assert flat["diff"] == chunks["diff"] == 0.5 and chunks["n_clusters"] == 2 and flat["n_clusters"] == 8
    assert (
        chunks["p_value"] > flat["p_value"] and chunks["ci_high"] - chunks["ci_low"] > flat["ci_high"] - flat["ci_low"]
    )
    # two clusters at +1 and 0: se² = 2 · (2² + 2²) / 8² = 0.25, t = 0.5/0.5 = 1 on 1 df: p = 0.5
    assert chunks["p_value"] == pytest.approx(0.5)


def test_questions_needed_by_hand():
    from spacelm.lib.stats import min_detectable_difference, questions_needed

    # effect = 1 SD, α = 0.05, 80%: n = 10 ((2.262 + 0.883)/√10 = 0.995 ≤ 1; at 9: 3.195/3 = 1.065)
    assert questions_needed(1.0, 1.0) == 10
    assert questions_needed(-1.0, 1.0) == 10
    assert questions_needed(1.0, 1.0, deff=2.0) == 20  # clusters double the questions
    assert questions_needed(0.0, 1.0) is None and questions_needed(1.0, float("nan")) is None
    # under Holm's first step over 35 tests the detectable difference grows: the paper's +5.1 pp at
    # BM25 top-3 grade 3 needs more than at α = 0.05
    se, df = 1.5, 29
    assert min_detectable_difference(se, df, 0.05 / 35) > 1.5 * min_detectable_difference(se, df, 0.05)
    # the n found is consistent with the detectable difference at that n
    n = questions_needed(5.1, 10.0)
    assert (
        min_detectable_difference(10.0 / n**0.5, n - 1) <= 5.1 < min_detectable_difference(10 / (n - 1) ** 0.5, n - 2)
    )


def test_share_ci_uses_the_effective_n_of_the_clusters_by_hand():
    """Four source chunks of three questions, all yes in two chunks and all no in the other two:
    share 6/12 = 0.5. Cluster residual sums ±1.5, so the cluster-robust se² = 4/3 · 4 · 1.5² / 12² =
    1/12; independently s² = 12 · 0.25 / 11 = 3/11 and s²/n = 1/44, a design effect of 44/12 = 11/3
    and an effective n of 12 / (11/3) = 36/11. Wilson at p = 0.5, n = 36/11, z = 1.959964:
    z²/n = 1.17378, half-width = z / 2.17378 · √(0.25/n + z²/(4n²)) = 0.90164 · 0.40750 = 0.36741,
    so [0.13259, 0.86741]. Without the clusters (n = 12): half-width 0.24622, [0.25378, 0.74622]."""
    from spacelm.lib.stats import share_ci

    values = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    chunks = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "d", "d", "d"]
    r = share_ci(values, chunks)
    assert r["share"] == 0.5 and r["n"] == 12 and r["n_clusters"] == 4
    assert r["n_effective"] == pytest.approx(36 / 11)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(0.13259, abs=1e-4), pytest.approx(0.86741, abs=1e-4))
    flat = share_ci(values)
    assert flat["n_effective"] == pytest.approx(12) and flat["n_clusters"] == 12
    assert (flat["ci_low"], flat["ci_high"]) == (pytest.approx(0.25378, abs=1e-4), pytest.approx(0.74622, abs=1e-4))


def test_cluster_bootstrap_resamples_within_clusters_by_hand():
    """Six chunks of two questions: four hold (0, 1), one (1, 1), one (0, 0). One cluster drawn and
    then its two questions drawn with replacement sums to 0, 1 or 2 with probability 1/3 each
    (a (0, 1) chunk: 1/4, 1/2, 1/4; the others 0 or 2), so a resample's mean is T/12 with T the
    sum of six independent uniform {0, 1, 2}: variance 6 · 2/3 / 12² = 1/36, SD 1/6. P(T ≤ 1) =
    7/729 = 0.0096 and P(T ≤ 2) = 28/729 = 0.038, so the 95% percentile interval is [2/12, 10/12].
    Drawing clusters only (the second stage left out) gives chunk means 1/2 (×4), 1, 0: SD
    √(1/12 / 6) = 0.118 and a narrower interval."""
    from spacelm.lib.stats import cluster_bootstrap_ci

    units = [0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0]
    chunks = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    means: list[float] = []

    def mean(u):
        means.append(float(np.mean(u)))
        return means[-1]

    lo, hi = cluster_bootstrap_ci(units, chunks, mean, 4000, 0)
    assert len(means) == 4000
    assert float(np.mean(means)) == pytest.approx(0.5, abs=0.01)
    assert float(np.std(means)) == pytest.approx(1 / 6, rel=0.05)
    assert (lo, hi) == (pytest.approx(2 / 12), pytest.approx(10 / 12))
