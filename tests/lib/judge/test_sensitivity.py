"""grading/sensitivity.csv (issue 44): each paired test with each document left out, and without
the questions whose records carry a flag. Values worked by hand."""

import pandas as pd
import pytest

from spacelm.lib.judge import relevance as R
from spacelm.lib.judge.sensitivity import question_flags, sensitivity

DESIGN = R.TableDesign(retrievers=("bm25",), top_k=(1,), seed=0)
# six questions of three documents, two each; top-1 mean-grade differences (reranked − retrieved):
# document A +3, +3 (it drives the effect), B 0, +1, C 0, −1
DIFFS = {"a1": 3, "a2": 3, "b1": 0, "b2": 1, "c1": 0, "c2": -1}
QUESTIONS = [{"qid": q, "source_chunk_id": f"{q[0].upper()}:{q[1]}", "doc_id": q[0].upper()} for q in DIFFS]


def _cells():
    return {
        ("bm25", "retrieved", 1): {q: [0] for q in DIFFS},
        ("bm25", "reranked", 1): {q: [max(d, 0)] for q, d in DIFFS.items()},
    }


def _cells_signed():
    # a −1 difference needs a retrieved grade above the reranked one
    cells = _cells()
    cells[("bm25", "retrieved", 1)]["c2"] = [1]
    return cells


def _row(records=None, unit="document", driver="A"):
    qs = [{**q, "doc_id": driver if q["doc_id"] == "A" else q["doc_id"]} for q in QUESTIONS]
    df = sensitivity(_cells_signed(), DESIGN, R.clustering(qs, unit), records or {})
    return df[df.measure == "mean_grade"].iloc[0]


@pytest.mark.parametrize("driver", ["A", "Z"])  # first and last in the documents' order
def test_leave_one_document_out_finds_the_document_that_drives_the_effect(driver):
    """Full: mean of 3, 3, 0, 1, 0, −1 = 1. Without A: (0 + 1 + 0 − 1) / 4 = 0; without B:
    (3 + 3 + 0 − 1) / 4 = 1.25; without C: (3 + 3 + 0 + 1) / 4 = 1.75. A moves it most (by 1).
    Without A, by document around the mean 0: B's residuals (0, 1) sum 1, C's (0, −1) sum −1,
    se² = 2/1 · (1 + 1) / 4² = 0.25, t = 0: p = 1, the largest of the three fits."""
    row = _row(driver=driver)
    assert row["diff"] == pytest.approx(1.0) and row["n_documents"] == 3 and row["cluster"] == "document"
    assert row["lodo_doc_most"] == driver and row["lodo_diff_without_most"] == pytest.approx(0.0)
    assert row["lodo_diff_min"] == pytest.approx(0.0) and row["lodo_diff_max"] == pytest.approx(1.75)
    assert row["lodo_p_max"] == pytest.approx(1.0)


def test_without_flagged_questions_by_hand():
    """a1 failed the copy check in a later synth (not kept), b2 carries a pending premise check,
    c1 has no checks at all (unchecked: it stays). Left: a2 +3, b1 0, c1 0, c2 −1, mean 0.5."""
    records = {
        "a1": {"kept": False, "drop_reason": "copy", "checks": {"copy": "verbatim run of 9 words > 5"}},
        "a2": {"kept": True, "checks": {"copy": "passed", "premise": "passed"}},
        "b1": {"kept": True, "checks": {"premise": "skipped: refuted claim", "label": "passed"}, "label": "refuted"},
        "b2": {"kept": True, "checks": {"copy": "passed", "premise": "pending"}},
        "c1": {"kept": True},
        "c2": {"kept": True, "checks": {"copy": "passed"}},
    }
    row = _row(records)
    assert row["n_flagged"] == 2 and row["unflagged_n"] == 4 and row["n_unchecked"] == 1
    assert row["unflagged_diff"] == pytest.approx(0.5)
    assert row["unflagged_ci_low"] <= 0.5 <= row["unflagged_ci_high"]


def test_question_flags_name_each_reason():
    assert question_flags({"kept": True, "checks": {"copy": "passed", "premise": "skipped: unverifiable claim"}}) == []
    assert question_flags({"kept": False, "drop_reason": "copy", "checks": {"copy": "too close"}}) == [
        "drop:copy",
        "copy:too close",
    ]
    assert question_flags({"checks": {"premise": "skipped: premise check off"}}) == [
        "premise:skipped: premise check off"
    ]
    assert question_flags({"label": "supported", "checks": {"copy": "passed"}}) == ["label:missing check"]
    assert question_flags({"qid": "old"}) == []  # nothing recorded: unchecked, not flagged


def test_no_documents_no_leave_one_out():
    df = sensitivity(_cells_signed(), DESIGN, R.as_clustering(None), {})
    assert pd.isna(df.iloc[0]["lodo_diff_min"]) and df.iloc[0]["lodo_doc_most"] is None
