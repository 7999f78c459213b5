"""The tests beside the cluster-robust t (issue 44): the cluster sign-flip permutation test, the
Wilcoxon signed-rank test on cluster means, and the counts of zero, positive and negative
differences. Every expected value is worked by hand in the comments."""

import pytest

from spacelm.lib.stats import direction_counts, sign_flip_test, signrank_test


def test_sign_flip_exact_by_hand_on_four_clusters():
    # cluster sums a: (1, 1) -> 2; b: 1; c: 3; d: -1. Observed |2 + 1 + 3 - 1| = 5. Of the 16 sign
    # patterns, |±2 ±1 ±3 ±1| ≥ 5 for: 2+1+3-1 = 5, 2+1+3+1 = 7, 2-1+3+1 = 5 and their negatives: 6 / 16
    d = [1, 1, 1, 3, -1]
    r = sign_flip_test(d, ["a", "a", "b", "c", "d"])
    assert r["method"] == "exact" and r["n_patterns"] == 16 and r["n_clusters"] == 4
    assert r["p"] == pytest.approx(6 / 16)
    # each unit its own cluster (1, 1, 1, 3, -1; observed 5): of 32 patterns |sum| ≥ 5 for the
    # observed one (5), the -1 flipped (7), the -1 and one of the three 1s flipped (5, three ways):
    # 5 patterns and their negatives, 10 / 32
    assert sign_flip_test(d)["p"] == pytest.approx(10 / 32)


def test_sign_flip_monte_carlo_counts_the_observed_pattern():
    # 20 clusters all +1: only the all-plus and all-minus patterns reach |20| (2 in 2^20), so the
    # draws almost surely hit none and p = (1 + 0) / (1 + n_perm)
    r = sign_flip_test([1.0] * 20, max_exact=10, n_perm=999, seed=3)
    assert r["method"] == "monte carlo" and r["n_patterns"] == 999
    assert r["p"] == pytest.approx(1 / 1000)
    assert sign_flip_test([0, 0, 0])["method"] == "none"


def test_signrank_on_cluster_means_by_hand():
    # five cluster means -1, 2, 3, 4, 5 (ranks 1..5, only rank 1 negative): W- = 1; of the 32 sign
    # patterns W- ≤ 1 in 2 (none or rank 1 negative): one-sided 2/32, two-sided 4/32 = 0.125
    r = signrank_test([-1, 2, 3, 4, 5])
    assert r["method"] == "exact" and r["p"] == pytest.approx(0.125)
    # clustered: the means of (1, 3), (-1), (3), (4), (5) are 2, -1, 3, 4, 5: the same test
    clustered = signrank_test([1, 3, -1, 3, 4, 5], ["a", "a", "b", "c", "d", "e"])
    assert clustered["p"] == pytest.approx(0.125) and clustered["n_clusters"] == 5


def test_signrank_keeps_zeros_in_the_ranking_pratt():
    # means 0, 1, 2, -3: Pratt ranks |.| with the zero (1, 2, 3, 4) then drops it: W+ = 2 + 3 = 5,
    # W- = 4; normal approximation with n = 4, one zero: mean 4·5/4 − 1·2/4 = 4.5, variance
    # 4·5·9/24 − 1·2·3/24 = 7.25; z = (4 − 4.5) / √7.25 = −0.18570; p = 2 Φ(−0.18570) = 0.85268
    r = signrank_test([0, 1, 2, -3])
    assert r["method"] == "approx" and r["n_zero_clusters"] == 1
    assert r["p"] == pytest.approx(0.85268, abs=1e-4)
    # dropping the zero first (scipy's default "wilcox") would give n = 3, W- = 3 of 6: exact p 1.0


def test_direction_counts_and_ties():
    assert direction_counts([0, 0, 0, 1, -2]) == {"n_zero": 3, "n_up": 1, "n_down": 1, "ties_dominate": True}
    assert direction_counts([0, 0, 1, -2])["ties_dominate"] is False  # half zero is not more than half
