"""Table 1 clustered by document (issue 44): the unit changes the paired tests' p-values and CIs
and the bootstrap's intervals; each row names its unit and counts. Values worked by hand."""

import math

import pytest

from spacelm.lib.judge import relevance as R

DESIGN = R.TableDesign(retrievers=("bm25",), top_k=(1,), seed=0)
# four questions from four chunks of two documents: q1, q2 of document A; q3, q4 of document B
QUESTIONS = [
    {"qid": "q1", "source_chunk_id": "A:1", "doc_id": "A"},
    {"qid": "q2", "source_chunk_id": "A:2", "doc_id": "A"},
    {"qid": "q3", "source_chunk_id": "B:1", "doc_id": "B"},
    {"qid": "q4", "source_chunk_id": "B:2"},  # no doc_id: read from the chunk id
]


def _cells():
    # top-1 grades: retrieved 0 everywhere; reranked 3, 3 (document A) and 1, 1 (document B)
    return {
        ("bm25", "retrieved", 1): {q: [0] for q in ("q1", "q2", "q3", "q4")},
        ("bm25", "reranked", 1): {"q1": [3], "q2": [3], "q3": [1], "q4": [1]},
    }


def _mean_grade(df):
    return df[df.measure == "mean_grade"].iloc[0]


def test_document_clustering_widens_the_paired_test_by_hand():
    """Differences 3, 3, 1, 1 (mean 2). Per question: sd √(4/3), se 0.57735, t 3.4641 on 3 df,
    p 0.0405, CI 2 ± 3.1824·0.57735. By document: residual sums 2 and −2, se² = 2/1 · 8/16 = 1,
    t 2 on 1 df: p = 1 − (2/π)·atan 2 = 0.29517, CI 2 ± 12.7062. The sign flip over two documents
    (sums 6 and 2): |±6 ±2| ≥ 8 in 2 of 4 patterns, p 0.5; over four questions 2 of 16, 0.125."""
    by_q = _mean_grade(R.paired_tests(_cells(), DESIGN, R.clustering(QUESTIONS, "question")))
    by_doc = _mean_grade(R.paired_tests(_cells(), DESIGN, R.clustering(QUESTIONS, "document")))
    assert by_q["diff"] == by_doc["diff"] == 2.0
    assert by_q["p_value"] == pytest.approx(0.0405, abs=1e-4)
    assert by_q["ci_high"] - 2 == pytest.approx(3.1824 * 0.57735, abs=1e-3)
    assert by_doc["p_value"] == pytest.approx(1 - 2 / math.pi * math.atan(2), abs=1e-4)
    assert by_doc["ci_high"] - 2 == pytest.approx(12.7062, abs=1e-3) and by_doc["df"] == 1
    assert by_q["p_perm"] == pytest.approx(0.125) and by_doc["p_perm"] == pytest.approx(0.5)
    assert by_doc["cluster"] == "document" and by_doc["n_clusters"] == 2
    assert by_doc["n_documents"] == 2 and by_doc["n_source_chunks"] == 4 and by_doc["n_questions"] == 4
    assert by_q["cluster"] == "question" and by_q["n_clusters"] == 4
    assert by_doc["n_zero"] == 0 and by_doc["n_up"] == 4 and not by_doc["ties_dominate"]


def test_document_clustering_in_the_bootstrap_by_hand():
    """Document A's three questions all grade 3, document B's all 0. Resampling documents gives
    100% (AA), 50% (AB, BA) or 0% (BB) of grade 3, each extreme with probability 1/4 > 2.5%: the
    95% interval is [0, 100]. Resampling the six questions alone, 0% needs all six from B,
    probability 1/64 < 2.5%: the lower bound is above 0."""
    qs = [{"qid": f"{d}{i}", "source_chunk_id": f"{d}:{i}"} for d in "AB" for i in range(3)]
    cells = {("bm25", "retrieved", 1): {q["qid"]: [3 if q["qid"][0] == "A" else 0] for q in qs}}
    doc = R.table1(cells, 2000, 0, R.clustering(qs, "document"))
    alone = R.table1(cells, 2000, 0, R.clustering(qs, "question"))
    g3 = lambda df: df[df.grade == 3].iloc[0]
    assert (g3(doc)["ci_low"], g3(doc)["ci_high"]) == (0.0, 100.0)
    assert g3(alone)["ci_low"] > 0 and g3(doc)["percent"] == g3(alone)["percent"] == 50.0
    assert g3(doc)["cluster"] == "document" and g3(doc)["n_clusters"] == 2 and g3(doc)["n_source_chunks"] == 6
    shares = R.relevant_shares(cells, 2000, 0, R.clustering(qs, "document")).iloc[0]
    assert (shares["ci_low"], shares["ci_high"]) == (0.0, 100.0) and shares["n_documents"] == 2


def test_a_source_chunk_dict_still_clusters_by_source_chunk():
    """What chunk-size tables pass: {qid: source chunk}; four chunks here, so the per-question test."""
    chunk_of = {q["qid"]: q["source_chunk_id"] for q in QUESTIONS}
    row = _mean_grade(R.paired_tests(_cells(), DESIGN, chunk_of))
    assert row["cluster"] == "source_chunk" and row["n_source_chunks"] == 4
    assert row["p_value"] == pytest.approx(0.0405, abs=1e-4)


def test_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="document"):
        R.clustering(QUESTIONS, "chunk")
