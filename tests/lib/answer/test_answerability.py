"""Refusal metrics on answerable and unanswerable questions, by hand."""

import math

import pytest

from spacelm.lib.answer import answerability as A


def _rows():
    # 4 answerable (1 refused), 3 unanswerable (2 refused)
    return [{"answerable": True, "refused": r} for r in (False, False, False, True)] + [
        {"answerable": False, "refused": r} for r in (True, True, False)
    ]


def test_refusal_metrics_by_hand():
    m = A.refusal_metrics(_rows())
    assert m["answer_rate"] == pytest.approx(4 / 7)  # 3 refusals of 7
    assert m["refusal_precision"] == pytest.approx(2 / 3)
    assert m["refusal_recall"] == pytest.approx(2 / 3)
    assert m["refusal_f1"] == pytest.approx(2 / 3)
    assert m["false_refusal_rate"] == pytest.approx(1 / 4)
    none = A.refusal_metrics([{"answerable": True, "refused": False}])
    assert math.isnan(none["refusal_precision"]) and math.isnan(none["refusal_recall"])


def test_row_has_the_contract_columns_and_cis():
    row = A.answerability_row("off", _rows(), 200, 0)
    assert list(row)[:8] == A.COLUMNS
    assert row["n_answerable"] == 4 and row["n_unanswerable"] == 3
    assert row["refusal_recall_ci_low"] <= row["refusal_recall"] <= row["refusal_recall_ci_high"]


def test_threshold_sweep_moves_from_answering_everything_to_refusing_everything():
    rows = [
        {"answerable": True, "generator_refused": False, "score": 0.8},
        {"answerable": True, "generator_refused": False, "score": 0.4},
        {"answerable": False, "generator_refused": False, "score": 0.3},
        {"answerable": False, "generator_refused": True, "score": 0.9},
    ]
    s = {r["threshold"]: r for r in A.threshold_sweep(rows, [0.0, 0.35, 0.5, 1.0])}
    assert s[0.0]["refusal_recall"] == 0.5 and s[0.0]["false_refusal_rate"] == 0.0  # only the generator refuses
    assert s[0.35]["refusal_recall"] == 1.0 and s[0.35]["false_refusal_rate"] == 0.0
    assert s[0.5]["false_refusal_rate"] == 0.5
    assert s[1.0]["answer_rate"] == 0.0


def test_agreement_and_kappa():
    a = A.agreement([True, True, False, False], [True, False, False, False])
    # po = 3/4; pa = 1/2, pb = 1/4 -> pe = 1/8 + 3/8 = 1/2 -> kappa = (3/4 - 1/2) / (1/2) = 0.5
    assert a == {"n": 4, "agreement": 0.75, "kappa": 0.5}
    assert A.agreement([None], [True])["n"] == 0
