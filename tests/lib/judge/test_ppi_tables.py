"""Table 1's prediction-powered rows (lib/judge/ppi.py), by hand."""

from __future__ import annotations

import pytest

from spacelm.lib.judge.ppi import allocate, ppi_differences, ppi_table1, stratified_sample


def test_ppi_table1_by_hand():
    """One cell of 4 pairs: judge grades 2,2,0,1; labels on two: (a: judge 2, label 1),
    (c: judge 0, label 0). Grade 2: judge-only 2/4 = 50%; rectifiers 0-1, 0-0 -> mean -0.5:
    estimate 0%. Grade 1: judge-only 25%; rectifiers 1-0, 0-0 -> +0.5: 75%."""
    cells = {("bm25", "retrieved", 4): [("q", "a"), ("q", "b"), ("q", "c"), ("q", "d")]}
    grades = {("q", "a"): 2, ("q", "b"): 2, ("q", "c"): 0, ("q", "d"): 1}
    labels = {("q", "a"): 1, ("q", "c"): 0}
    rows = {r["grade"]: r for r in ppi_table1(cells, grades, labels, {})}
    assert rows[2]["ppi_estimate"] == 0.0 and rows[1]["ppi_estimate"] == 75.0 and rows[2]["n_human"] == 2
    assert rows[0]["ppi_estimate"] == 25.0  # 25% + mean(0, 0)
    none = ppi_table1(cells, grades, {}, {})
    assert all(r["ppi_estimate"] is None and r["n_human"] == 0 for r in none)


def test_ppi_differences_by_hand():
    """Retrieved {a, b}, reranked {b, c}; judge 2-3 on a and b only; labels: a 0, b 3, c 3.
    Judge-only: reranked 50% - retrieved 100% = -50 pp; with every pair labelled the estimate is
    the labels' difference: 100% - 50% = +50 pp."""
    cells = {("bm25", "retrieved", 2): [("q", "a"), ("q", "b")], ("bm25", "reranked", 2): [("q", "b"), ("q", "c")]}
    grades = {("q", "a"): 2, ("q", "b"): 3, ("q", "c"): 0}
    labels = {("q", "a"): 0, ("q", "b"): 3, ("q", "c"): 3}
    (r,) = ppi_differences(cells, grades, labels, {})
    assert r["judge_only"] == -50.0 and r["ppi_estimate"] == pytest.approx(50.0) and r["n_human"] == 3


def test_allocation_is_proportional_with_one_per_stratum():
    # 10 of 100: 60/30/10 -> 6/3/1
    assert allocate({"a": 60, "b": 30, "c": 10}, 10) == {"a": 6, "b": 3, "c": 1}
    # 4 of 100 with a stratum of 2: each gets one first, then the largest remainder
    assert allocate({"a": 90, "b": 8, "c": 2}, 4) == {"a": 2, "b": 1, "c": 1}
    # fewer than the strata: no floor, the largest first
    assert allocate({"a": 90, "b": 8, "c": 2}, 2) == {"a": 2, "b": 0, "c": 0}
    # never more than a stratum holds, never more than all
    assert allocate({"a": 1, "b": 3}, 10) == {"a": 1, "b": 3}
    assert sum(allocate({"a": 7, "b": 5, "c": 3, "d": 1}, 9).values()) == 9


def _pairs():
    out = []
    for system, n in (("bm25", 6), ("dense", 4)):
        for i in range(n):
            out.append(
                {
                    "pair_id": f"q{i}::{system}-c{i}",
                    "system": system,
                    "grade": i % 2,
                    "question": f"question {i}",
                    "passage": f"passage {i}",
                }
            )
    return out


def test_stratified_sample_is_seeded_and_weighted():
    pairs = _pairs()  # strata: bm25|0 3, bm25|1 3, dense|0 2, dense|1 2
    s = stratified_sample(pairs, 5, seed=1)
    assert len(s) == 5 and s == stratified_sample(pairs, 5, seed=1)
    by = {}
    for p in s:
        by.setdefault(p["stratum"], []).append(p)
    assert set(by) == {"bm25|0", "bm25|1", "dense|0", "dense|1"}
    for k, ps in by.items():  # weight = stratum size / drawn from it
        size = 3 if k.startswith("bm25") else 2
        assert all(p["weight"] == pytest.approx(size / len(ps)) for p in ps)


def test_classic_ppi_agrees_with_the_ppi_authors_package():
    """lib/judge/ppi.py's classic PPI mean against ppi-python (Angelopoulos et al.'s package) on the
    same data: the same estimate; intervals equal up to the variance's degrees-of-freedom convention."""
    import numpy as np

    ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is a dev dependency (pip install -e .[dev])")
    from spacelm.lib.judge.ppi import ppi_mean

    rng = np.random.default_rng(0)
    for n_all, n in ((400, 60), (120, 30)):
        f = rng.integers(0, 2, n_all).astype(float)
        idx = rng.choice(n_all, n, replace=False)
        y = np.clip(f[idx] + rng.normal(0, 0.5, n).round(), 0, 1)
        ours = ppi_mean(f, f[idx], y, lam=1.0)
        lo, hi = ppi_py.ppi_mean_ci(y, f[idx], f, alpha=0.05, lam=1)
        assert ours["estimate"] == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f[idx], f, lam=1)[0]))
        assert ours["ci_low"] == pytest.approx(float(lo[0]), abs=0.005)
        assert ours["ci_high"] == pytest.approx(float(hi[0]), abs=0.005)
