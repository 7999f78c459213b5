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
