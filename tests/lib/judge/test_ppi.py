"""Prediction-powered inference computed by hand on tiny cases."""

from __future__ import annotations

import numpy as np
import pytest

from spacelm.lib.judge import ppi


def test_classic_ppi_mean_by_hand():
    """N = 8 predictions, mean 0.5 (var with ddof 1: 2/7). Labelled 4 pairs with predictions
    1,1,0,0 and labels 1,0,0,1: rectifiers 0,-1,0,1, mean 0, var (ddof 1) 2/3.
    Estimate 0.5 + 0 = 0.5; se² = (2/7)/8 + (2/3)/4 = 0.035714 + 0.166667 = 0.202381."""
    f_all = [1, 1, 0, 0, 1, 1, 0, 0]
    r = ppi.ppi_mean(f_all, [1, 1, 0, 0], [1, 0, 0, 1])
    assert r["estimate"] == pytest.approx(0.5) and r["judge_only"] == pytest.approx(0.5)
    assert r["se"] == pytest.approx(np.sqrt(2 / 7 / 8 + 2 / 3 / 4))
    assert r["ci_low"] == pytest.approx(0.5 - 1.959964 * r["se"], abs=1e-5)
    assert r["n_human"] == 4 and r["n_all"] == 8


def test_ppi_corrects_a_biased_judge():
    """The judge says 1 everywhere (judge-only share 1.0); people say 1 on 1 of 4 labelled pairs:
    rectifiers 0,-1,-1,-1, mean -0.75, so the estimate is 0.25 whatever N is; the predictions do
    not vary, so only the rectifier's variance counts: var = 0.25 (ddof 1), se = sqrt(0.25/4)."""
    r = ppi.ppi_mean([1] * 100, [1, 1, 1, 1], [1, 0, 0, 0])
    assert r["judge_only"] == 1.0 and r["estimate"] == pytest.approx(0.25)
    assert r["se"] == pytest.approx(np.sqrt(0.25 / 4))


def test_finite_population_variant_drops_the_prediction_term_and_corrects():
    """Same as the first case with the finite-population correction: se² = (2/3)/4 * (1 - 4/8)."""
    r = ppi.ppi_mean([1, 1, 0, 0, 1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], finite_population=True)
    assert r["se"] == pytest.approx(np.sqrt(2 / 3 / 4 * 0.5))
    # every pair labelled: no uncertainty left, the estimate is the labels' mean
    full = ppi.ppi_mean([1, 0, 1], [1, 0, 1], [0, 0, 1], finite_population=True)
    assert full["estimate"] == pytest.approx(1 / 3) and full["se"] == 0


def test_weights_give_the_weighted_rectifier():
    """Two strata: rectifiers -1 (weight 3) and 0 (weight 1): Hájek mean -3/4; estimate
    mean(f) - 0.75. Linearised variance: n/(n-1) Σ w²(r - r̄)² / (Σw)² with n = 2:
    2 * (9 * 0.0625 + 1 * 0.5625) / 16 = 0.140625."""
    r = ppi.ppi_mean([1, 1, 1, 0], [1, 0], [0, 0], weights=[3, 1], finite_population=True)
    assert r["estimate"] == pytest.approx(0.75 - 0.75)
    assert r["se"] ** 2 == pytest.approx(0.140625 * (1 - 2 / 4))


def test_power_tuned_lambda_by_hand():
    """Labels equal to the predictions 1,0,1,0 (cov 1/3), N = 4 predictions with var 1/3, n/N = 1:
    lambda = (1/3) / (2 * 1/3) = 0.5. Constant predictions: 0. Anticorrelated: clipped to 0."""
    assert ppi.power_tuned_lambda([1, 0, 1, 0], [1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    assert ppi.power_tuned_lambda([1, 1, 1], [1, 1], [0, 1]) == 0.0
    assert ppi.power_tuned_lambda([1, 0, 1, 0], [1, 0, 1, 0], [0, 1, 0, 1]) == 0.0
    # lambda 0: the plain mean of the labels
    assert ppi.ppi_mean([1, 1, 1, 1], [1, 1], [0, 1], lam=0.0)["estimate"] == pytest.approx(0.5)


def test_too_few_labels_give_no_interval():
    r = ppi.ppi_mean([1, 0], [1], [1])
    assert np.isnan(r["ci_low"]) and r["estimate"] == pytest.approx(0.5)
    none = ppi.ppi_mean([1, 0], [], [])
    assert none["estimate"] == 0.5 and none["n_human"] == 0 and np.isnan(none["ci_high"])
    with pytest.raises(ValueError, match="same pairs"):
        ppi.ppi_mean([1, 0], [1], [1, 0])


def test_paired_difference_by_hand():
    """A = pairs {0, 1}, B = pairs {1, 2} (pair 1 in both), M = 3. Values M(1[B]/2 - 1[A]/2):
    -1.5, 0, 1.5. Judge 1,1,0: judge-only mean(B) - mean(A) = 0.5 - 1 = -0.5, which is the mean of
    value * f = (-1.5 + 0 + 0) / 3. All labelled, labels 0,1,1: true difference 1 - 0.5 = 0.5."""
    x = ppi.difference_values([1, 1, 0], [0, 1, 1])
    assert list(x) == pytest.approx([-1.5, 0, 1.5])
    r = ppi.ppi_difference([1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 1, 2], [0, 1, 1], finite_population=True)
    assert r["judge_only"] == pytest.approx(-0.5) and r["estimate"] == pytest.approx(0.5) and r["se"] == 0


def test_stratified_ppi_by_hand():
    """Strata by judge grade: f = 1 on 6 of 8 pairs (W = 3/4), f = 0 on 2 (W = 1/4). Labelled:
    in stratum 1 labels 1,0 (rectifiers 0,-1: mean -0.5, var 0.5), in stratum 0 labels 1,0
    (rectifiers 1,0: mean 0.5, var 0.5). Estimate 0.75 + 0.75*(-0.5) + 0.25*0.5 = 0.5.
    Finite population: se² = (3/4)² 0.5/2 (1 - 2/6) + (1/4)² 0.5/2 (1 - 2/2) = 0.09375."""
    f = [1, 1, 1, 1, 1, 1, 0, 0]
    r = ppi.ppi_mean_stratified(f, f, [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0], finite_population=True)
    assert r["estimate"] == pytest.approx(0.5)
    assert r["se"] ** 2 == pytest.approx(0.09375)
    # not a finite population: no correction, plus the judge's own sampling term var_N(f)/N.
    # f has mean 3/4 and Σ(f - 3/4)² = 6/16 + 2·9/16 = 3/2, var_N(f) = (3/2)/7 and var/N = 3/112;
    # se² = (3/4)² 0.5/2 + (1/4)² 0.5/2 + 3/112 = 5/32 + 3/112 = 41/224
    r = ppi.ppi_mean_stratified(f, f, [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0])
    assert r["estimate"] == pytest.approx(0.5) and r["se"] ** 2 == pytest.approx(41 / 224)
    assert r["ci_high"] - r["ci_low"] == pytest.approx(2 * 1.959964 * (41 / 224) ** 0.5, abs=1e-5)
    # a stratum without a label: no estimate
    assert np.isnan(ppi.ppi_mean_stratified(f, f, [1, 1], [1, 0], [1, 1])["estimate"])
