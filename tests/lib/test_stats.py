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
    mde = min_detectable_difference(sd, n)
    # the power of a paired t-test at that true difference is about 80% (exact: noncentral t)
    crit = t.ppf(0.975, n - 1)
    ncp = mde / (sd / n ** 0.5)
    power = 1 - nct.cdf(crit, n - 1, ncp) + nct.cdf(-crit, n - 1, ncp)
    assert 0.78 < power < 0.82
    assert np.isnan(min_detectable_difference(0.0, 10)) and np.isnan(min_detectable_difference(1.0, 1))


def test_paired_difference_direction_and_ci():
    from spacelm.lib.stats import paired_difference

    a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    b = [x + 1 + (i % 3 - 1) * 0.1 for i, x in enumerate(a)]
    r = paired_difference(a, b, n_boot=500, seed=1)
    assert r["n"] == 10 and r["diff"] == pytest.approx(1.0, abs=0.05)
    assert r["ci_low"] <= r["diff"] <= r["ci_high"] and r["p_value"] < 0.01 and r["mde"] > 0
