"""An assessor's standing on its calibration items, by hand; constant and random grades fail."""

from __future__ import annotations

import random

import pytest

from spacelm.lib.labels import standing as ls


def _pairs(grades_of_truth):
    """Calibration rows: 10 queries x 4 NIST grades, the assessor's grade from `grades_of_truth`."""
    return [{"qid": f"n{q}", "truth": t, "grade": grades_of_truth(t, q)} for q in range(10) for t in range(4)]


def test_a_reader_that_matches_nist_passes_and_figures_are_right():
    s = ls.measure("a", "relevance", _pairs(lambda t, q: t), [(2, 2), (0, 0)], ls.Floors(), n_boot=50)
    assert s.passes and s.value == 1.0 and s.measures["exact"] == 1.0 and s.measures["auc"] == 1.0
    assert s.self_agreement == {"n": 2, "exact": 1.0, "kappa_ge2": 1.0, "mean_abs_diff": 0.0}


def test_off_by_one_at_the_boundary_by_hand():
    """NIST 1 graded 2, the rest right: at >= 2 the assessor says yes on 30 of 40 where NIST says 20.
    κ = (po - pe) / (1 - pe): po = 30/40, pe = 0.5*0.75 + 0.5*0.25 = 0.5 -> κ = 0.5; exact 75%."""
    s = ls.measure("a", "relevance", _pairs(lambda t, q: 2 if t == 1 else t), [], ls.Floors(), n_boot=50)
    assert s.value == pytest.approx(0.5) and s.measures["exact"] == 0.75 and s.passes


@pytest.mark.parametrize("how", ["constant", "random", "inverted"])
def test_grades_no_reader_makes_fall_below_the_floor(how):
    rng = random.Random(0)
    grade = {"constant": lambda t, q: 2, "random": lambda t, q: rng.randint(0, 3), "inverted": lambda t, q: 3 - t}[how]
    s = ls.measure("script", "relevance", _pairs(grade), [], ls.Floors(), n_boot=50)
    assert not s.passes and "below the floor" in s.reason


def test_answer_controls_pass_rate_and_gap():
    rows = [{"rubric": "faithfulness", "good": 5, "bad": 2}] * 8 + [{"rubric": "relevance", "good": 3, "bad": 3}] * 2
    s = ls.measure("a", "answers", rows, [(4.0, 4.0), (3.0, 5.0)], ls.Floors(), n_boot=50)
    assert s.value == 0.8 and s.passes and s.measures["mean_gap"] == pytest.approx(2.4)
    assert s.self_agreement["exact"] == 0.5 and s.self_agreement["mean_abs_diff"] == 1.0
    worse = ls.measure("a", "answers", rows[:7] + [{"rubric": "relevance", "good": 2, "bad": 4}] * 3, [], ls.Floors())
    assert not worse.passes


def test_screening_agreement_with_golden_questions():
    rows = [{"truth": True, "screen": "answerable"}] * 8 + [{"truth": False, "screen": "false_premise"}] * 2
    s = ls.measure("a", "screening", rows, [], ls.Floors(), n_boot=50)
    assert s.value == 1.0 and s.measures["unanswerable_rejected"] == 1.0
    bad = ls.measure("a", "screening", [{"truth": True, "screen": "not_answerable"}] * 10, [], ls.Floors())
    assert not bad.passes


def test_constant_batches_are_named():
    assert ls.constant_batches({"b1": [2] * 12, "b2": [0, 1] * 6, "b3": [1] * 5}) == ["b1"]
