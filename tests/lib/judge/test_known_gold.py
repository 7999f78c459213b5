"""The judge against known gold (lib/judge/known_gold.py), on hand-built grades, spans and
rankings whose figures are worked out by hand here."""

from __future__ import annotations

import math

import pytest

from spacelm.lib.judge.known_gold import (
    agreement_rows,
    change,
    direction,
    disagreement_sentence,
    judge_qrels,
    labelled_share,
    match_reference_labels,
    mean_ci,
    ndcg_per_question,
)
from spacelm.lib.retrieval.span_gold import ChunkSpan


def test_ndcg_uses_the_grades_as_linear_gains_and_leaves_out_a_question_with_nothing_relevant():
    qrels = {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"a": 0, "b": 0}}
    ranking = {"q1": ["c", "a", "b", "x"], "q2": ["a", "b"]}
    got = ndcg_per_question(qrels, ranking, 3)
    dcg = 0 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    ideal = 3 / math.log2(2) + 1 / math.log2(3)
    assert got == {"q1": pytest.approx(dcg / ideal, abs=1e-6)}  # q2 has no chunk above 0
    assert ndcg_per_question({"q2": qrels["q2"]}, ranking, 3) == {}  # no question left: nothing to score


def test_an_unjudged_chunk_counts_as_gain_zero_and_the_labelled_share_says_how_much_is_labelled():
    qrels = {"q1": {"a": 2}}
    # "x" is unlabelled: it takes rank 1 and pushes the relevant chunk down, gain 0
    assert ndcg_per_question(qrels, {"q1": ["x", "a"]}, 2)["q1"] == pytest.approx(1 / math.log2(3))
    assert labelled_share(qrels, {"q1": ["x", "a", "y", "z"]}, ["q1"], 4) == 0.25
    # a chunk labelled 0 is labelled
    assert labelled_share({"q1": {"a": 2, "y": 0}}, {"q1": ["x", "a", "y", "z"]}, ["q1"], 4) == 0.5
    assert labelled_share(qrels, {"q1": ["x", "a", "y", "z"]}, ["q1"], 2) == 0.5
    assert labelled_share(qrels, {"q1": ["a", "x"]}, ["q1"], 1) == 1.0


def test_judge_qrels_keep_the_first_grade_of_a_pair_and_drop_missing_grades_and_other_questions():
    rows = [
        {"qid": "q1", "chunk_id": "a", "grade": 2},
        {"qid": "q1", "chunk_id": "a", "grade": 0},
        {"qid": "q1", "chunk_id": "b", "grade": None},
        {"qid": "q9", "chunk_id": "a", "grade": 3},
    ]
    assert judge_qrels(rows, ["q1"]) == {"q1": {"a": 2}}


def test_reference_labels_follow_their_text_when_chunk_ids_moved():
    run = [
        ChunkSpan("doc:5", "doc", 400, 600),  # the id the label names now holds other text
        ChunkSpan("doc:7", "doc", 90, 310),  # this chunk holds the labelled text
        ChunkSpan("doc:8", "doc", 310, 400),
        ChunkSpan("other:1", "other", 0, 200),
    ]
    ref_spans = {
        "doc:5": ChunkSpan("doc:5", "doc", 100, 300),
        "other:1": ChunkSpan("other:1", "other", 0, 200),  # unchanged: matched by id
        "gone:3": ChunkSpan("gone:3", "gone", 0, 50),  # its document is not in the run
    }
    labels = {("q1", "doc:5"): 3, ("q1", "other:1"): 1, ("q1", "gone:3"): 2}
    assert match_reference_labels(labels, ref_spans, run) == {("q1", "doc:7"): 3, ("q1", "other:1"): 1}


def test_two_labelled_chunks_on_one_run_chunk_give_it_the_label_sharing_most_text():
    run = [ChunkSpan("big:0", "d", 0, 1000)]
    ref_spans = {"r:0": ChunkSpan("r:0", "d", 0, 600), "r:1": ChunkSpan("r:1", "d", 600, 1000)}
    labels = {("q", "r:0"): 1, ("q", "r:1"): 3}
    assert match_reference_labels(labels, ref_spans, run) == {("q", "big:0"): 1}
    # without spans only the id can match
    assert match_reference_labels({("q", "big:0"): 2, ("q", "r:1"): 3}, {}, run) == {("q", "big:0"): 2}


def test_agreement_rows_pair_the_judge_grade_with_the_reference_label():
    graded = [
        {"qid": "q", "chunk_id": "a", "grade": 2},
        {"qid": "q", "chunk_id": "b", "grade": None},
        {"qid": "q", "chunk_id": "c", "grade": 0},
    ]
    rows = agreement_rows(graded, {("q", "a"): 3, ("q", "b"): 1})
    assert [(r["chunk_id"], r["grade"], r["label"]) for r in rows] == [("a", 2, 3)]


def test_mean_ci_is_clustered_by_document():
    values = {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.0}
    two_docs = mean_ci(values, {"q1": "d1", "q2": "d1", "q3": "d2", "q4": "d2"}, 200, 0)
    assert two_docs["mean"] == 0.5 and two_docs["n_questions"] == 4 and two_docs["n_documents"] == 2
    # the questions of a document move together: every draw is all of d1, all of d2, or both
    assert two_docs["ci_low"] == 0.0 and two_docs["ci_high"] == 1.0
    one_doc = mean_ci(values, dict.fromkeys(values, "d"), 200, 0)
    assert math.isnan(one_doc["ci_low"])  # one cluster: no interval
    c = change({"q1": 0.5, "q2": 0.7, "q3": 0.1}, {"q1": 0.25, "q2": 0.5}, {}, 200, 0)
    assert c["n_questions"] == 2 and c["mean"] == pytest.approx(0.225)


def _c(mean, lo, hi, n=40):
    return {"mean": mean, "ci_low": lo, "ci_high": hi, "n_questions": n}


def test_direction_reads_the_interval_not_the_point():
    assert direction(_c(0.1, 0.02, 0.2)) == "raises"
    assert direction(_c(-0.1, -0.2, -0.01)) == "lowers"
    assert direction(_c(0.1, -0.02, 0.2)) == "does not clearly move"
    assert direction(_c(0.1, float("nan"), float("nan"))) == "does not clearly move"


def test_the_sentence_says_the_instruments_disagree_and_what_each_has_shown():
    changes = {"known_gold": _c(-0.125, -0.2, -0.05, 60), "judge": _c(0.08, 0.02, 0.14, 58)}
    validity = {"known_gold": "known but incomplete", "judge": "not shown valid in domain"}
    s = disagreement_sentence("bm25", 10, changes, validity)
    assert s.startswith("bm25, nDCG@10: against the source chunk, reranking lowers it by 0.125")
    assert "-0.125 [-0.200, -0.050], n 60" in s and "the judge says reranking raises it by 0.080" in s
    assert "disagree in direction" in s
    assert "the judge: not shown valid in domain" in s and "the source-chunk gold: known but incomplete" in s


def test_the_sentence_names_the_only_instrument_that_detects_a_change_or_their_agreement():
    one = {"known_gold": _c(-0.1, -0.2, -0.05), "judge": _c(0.01, -0.05, 0.07)}
    s = disagreement_sentence("dense", 3, one, {})
    assert "So only the source-chunk gold detects a change." in s and "the judge says reranking does not" in s
    assert "Validity" not in s
    both = {"known_gold": _c(0.1, 0.05, 0.2), "judge": _c(0.2, 0.1, 0.3), "reference": _c(0.1, 0.01, 0.2)}
    assert "agree in direction" in disagreement_sentence("dense", 3, both, {})
    assert "no instrument" in disagreement_sentence("dense", 3, {"judge": _c(0, 0, 0, 0)}, {})
    flat = {"known_gold": _c(0.0, -0.1, 0.1), "judge": _c(0.01, -0.05, 0.07)}
    assert "So no instrument detects a change." in disagreement_sentence("dense", 3, flat, {})
