"""Issue 41's deterministic answer measures on built answers: leakage from an injected passage, citation
support (a valid marker is not support; a citation by habit is caught), the refusal phrase, and the
per-setting table with its intervals."""

from __future__ import annotations

import pytest

from spacelm.lib.answer.answers import is_refusal
from spacelm.lib.answer.measures import (
    answer_measures,
    citation_support,
    claim_support,
    leakage,
    measure_table,
)

SOURCE = (
    "Operators plan a collision avoidance manoeuvre when the probability of collision exceeds one in ten thousand. "
    "The manoeuvre is screened against the catalogue before it is executed."
)
NOISE = (
    "The Galileo constellation broadcasts navigation signals on three frequency bands. "
    "Its ground segment runs two control centres in Germany and Italy."
)
TEXT = {"src:1": SOURCE, "noise:1": NOISE}


def test_leakage_counts_the_trigrams_taken_from_the_noise_and_not_from_the_source():
    clean = "Operators plan a manoeuvre when the probability of collision exceeds one in ten thousand [1]."
    leaky = "Operators plan a manoeuvre; the constellation broadcasts navigation signals on three frequency bands [2]."
    assert leakage(clean, SOURCE, [NOISE])["leaked"] == 0
    out = leakage(leaky, SOURCE, [NOISE])
    assert out["leaked"] >= 5 and 0.4 < out["share"] < 1.0
    # no injected passage, or nothing to count: no number
    assert leakage(leaky, SOURCE, []) is None and leakage("Yes.", SOURCE, [NOISE]) is None


def test_a_trigram_the_source_also_holds_is_not_leakage():
    """Source and noise share "the probability of collision". The answer "The probability of
    collision is high" has four trigrams: (the probability of) and (probability of collision) are
    in both passages, so they came from the source; (of collision is) is only in the noise; (collision
    is high) in neither. One leaked trigram of four."""
    source = "The probability of collision exceeds one in ten thousand."
    noise = "The probability of collision is computed from the covariance."
    out = leakage("The probability of collision is high.", source, [noise])
    assert out == {"n_ngrams": 4, "leaked": 1, "share": 0.25}
    # without the source every trigram the noise holds counts
    assert leakage("The probability of collision is high.", None, [noise])["leaked"] == 3


def test_citation_support_reads_the_cited_passage_not_the_marker():
    ids = ["noise:1", "src:1"]
    right = "Operators plan a collision avoidance manoeuvre above a collision probability of one in ten thousand [2]."
    habit = "Operators plan a collision avoidance manoeuvre above a collision probability of one in ten thousand [1]."
    ok = citation_support(right, ids, TEXT, "src:1")
    assert (ok["n_cited_sentences"], ok["supported"], ok["misattributed"]) == (1, 1, 0)
    bad = citation_support(habit, ids, TEXT, "src:1")  # a valid marker on a passage that does not hold it
    assert (bad["supported"], bad["misattributed"], bad["share_supported"]) == (0, 1, 0.0)
    assert citation_support("Operators plan a manoeuvre.", ids, TEXT, "src:1") is None  # nothing cited
    assert citation_support("Operators plan a manoeuvre [7].", ids, TEXT, "src:1") is None  # invalid marker only


def test_a_sentence_neither_passage_holds_is_unsupported_but_not_misattributed():
    """A misattribution is content from the source cited to another passage: the source must hold
    the sentence. A sentence about something neither passage says, cited to the noise, is simply
    unsupported."""
    ids = ["noise:1", "src:1"]
    invented = "Astronauts grow tomatoes aboard lunar greenhouses every winter [1]."
    out = citation_support(invented, ids, TEXT, "src:1")
    assert (out["n_cited_sentences"], out["supported"], out["misattributed"]) == (1, 0, 0)
    assert out["sentences"][0]["misattributed"] is False


def _item(answer, setting="3_wrong", pipeline="table2", chunk="src:1", claims=None):
    it = {"qid": f"q-{chunk}", "setting": setting, "pipeline": pipeline, "answer": answer, "source_chunk_id": chunk}
    it.update(passage_ids=["noise:1", "src:1"], wrong_ids=["noise:1"], claims=claims or [])
    answer_measures(it, TEXT, is_refusal)
    it["claim_support"] = claim_support(it)
    return it


def test_answer_measures_and_the_table_with_intervals():
    refusal = _item("The answer cannot be found in the provided passages.")
    assert refusal["refused_phrase"] is True and refusal["citation_support"] is None
    leaky = _item(
        "Galileo broadcasts navigation signals on three frequency bands [1].",
        claims=[{"supported": True}, {"supported": False}, {"supported": None}],
    )
    assert leaky["refused_phrase"] is False and leaky["leakage"]["leaked"] > 0
    assert leaky["claim_support"] == {"n_claims": 2, "supported": 1, "share": 0.5}
    standard = _item("Operators plan a collision avoidance manoeuvre above one in ten thousand [2].", "standard")
    standard.update(wrong_ids=[])
    answer_measures(standard, TEXT, is_refusal)
    assert standard["leakage"] is None  # no injected passage
    rows = {r["setting"]: r for r in measure_table([refusal, leaky, standard])}
    three = rows["3_wrong"]
    # both answers had noise injected; the refusal took nothing from it, the other did
    assert (three["n"], three["refused_phrase"], three["n_with_noise"], three["leakage_answers"]) == (2, 0.5, 2, 0.5)
    assert three["refused_phrase_ci_low"] < 0.5 < three["refused_phrase_ci_high"]
    assert (three["claims"], three["claim_supported"]) == (2, 0.5)
    assert rows["standard"]["citation_supported"] == 1.0 and rows["standard"]["leakage_answers"] is None


@pytest.mark.parametrize("answer", ["", None])
def test_an_empty_answer_has_no_measure_but_the_phrase_check(answer):
    it = _item(answer)
    assert it["refused_phrase"] is False and it["leakage"] is None and it["citation_support"] is None


def test_misleading_distractors_never_hold_the_source_or_its_neighbours():
    import random

    from spacelm.lib.answer.answers import could_answer, wrong_passages
    from spacelm.lib.ingest.chunking import Chunk
    from spacelm.lib.retrieval.bm25 import BM25Config, BM25Retriever

    texts = {
        "ca:0": "Conjunction assessment screens each satellite against the catalogue every day.",
        "ca:1": SOURCE,
        "ca:2": "After the manoeuvre the orbit is determined again from fresh tracking data.",
        "ca:3": "Collision probability depends on the covariance of both objects at closest approach.",
        "ca:4": "Operators record every collision avoidance manoeuvre in the mission log for review.",
        "gal:0": NOISE,
        "gal:1": "Collision avoidance for navigation satellites uses the same probability threshold.",
        "dup:0": SOURCE + " A copy kept in another report.",
    }
    chunks = [
        Chunk(cid, cid.split(":")[0], t, 1, 1, 100 * int(cid[-1]), 100 * int(cid[-1]) + 90, 30)
        for cid, t in texts.items()
    ]
    q = {
        "qid": "q",
        "question": "When do operators plan a collision avoidance manoeuvre?",
        "doc_id": "ca",
        "source_chunk_id": "ca:1",
    }
    same = wrong_passages(q, 5, chunks, random.Random(1), "same_document")
    assert sorted(same) == ["ca:3", "ca:4"]  # not the source, not its neighbours ca:0 and ca:2
    bm25 = BM25Retriever(BM25Config()).index(list(texts), list(texts.values()))
    near = wrong_passages(q, 3, chunks, random.Random(1), "bm25", bm25)
    assert len(near) == 3 and not {"ca:0", "ca:1", "ca:2", "dup:0"} & set(near)  # the copy overlaps the source
    assert could_answer(chunks[-1], "ca:1", chunks) and not could_answer(chunks[5], "ca:1", chunks)
    hard = wrong_passages(q, 2, chunks, random.Random(1), "hard", bm25)
    assert all(not h.startswith("ca:") for h in hard)
