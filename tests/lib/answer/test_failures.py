"""The generator's own failures, flagged without a judge, and the controls drawn from them."""

from spacelm.lib.answer.answers import is_refusal
from spacelm.lib.answer.failures import FAILURE_KINDS, asserts_beyond, flag_answer, non_answer
from spacelm.lib.judge import validity as J

TEXT = {
    "a:0": "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 for the satellite. "
    "The flight dynamics team at ESOC reviews the orbit every week.",
    "a:1": "The ESOC team also runs the Sentinel ground segment from Darmstadt with partners.",
    "b:0": "Ground stations in Svalbard see polar orbiting satellites on almost every orbit they fly. "
    "The antennas are maintained by KSAT staff on the island.",
    "c:0": "Solar arrays lose about 2 percent of their output each year from radiation damage to cells.",
}
Q = "When do operators plan a collision manoeuvre?"


def _item(answer, ids=("a:0",), wrong=(), ref="When the collision probability exceeds 1 in 10000.", **kw):
    return {
        "qid": "q1",
        "question": Q,
        "answer": answer,
        "source_chunk_id": "a:0",
        "passage_ids": list(ids),
        "wrong_ids": list(wrong),
        "reference_answer": ref,
        "setting": kw.pop("setting", "standard"),
        **kw,
    }


def flags(it):
    return flag_answer(it, TEXT, is_refusal)


def test_each_failure_is_flagged_on_a_built_answer():
    good = "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 [1]."
    assert flags(_item(good)) == []
    assert flags(_item("See [1].")) == ["non_answer"]
    assert flags(_item("The threshold used by operators is [1].")) == ["non_answer"]
    assert non_answer("The threshold used by operators is [1].", Q) == "empty_citation"
    assert flags(_item("Operators plan a collision manoeuvre when they plan it.")) == ["restated"]
    assert flags(_item("The answer cannot be found in the provided passages.")) == ["false_refusal"]
    # the answer taken from the injected passage: every trigram from b:0, none from the source
    leaked = "Ground stations in Svalbard see polar orbiting satellites on almost every orbit [2]."
    got = flags(_item(leaked, ids=("a:0", "b:0"), wrong=("b:0",), setting="1_wrong"))
    assert got[0] == "injected_content"
    # missing the reference's number and asserting one the source lacks: a wrong completion
    assert "wrong_completion" in flags(_item("Operators manoeuvre when the probability exceeds 1 in 500 [1]."))
    assert asserts_beyond("It exceeds 1 in 500 at KSAT.", TEXT["a:0"], Q) == ["500", "KSAT"]
    # the content is the source's, the citation points only at the injected passage
    mis = _item(
        "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 [1].",
        ids=("b:0", "a:0"),
        wrong=("b:0",),
        setting="1_wrong",
    )
    assert flags(mis) == ["misattributed"]
    # no relevant passage shown: any real answer is made up; a refusal there is right
    neg = dict(ids=("b:0", "c:0"), wrong=("b:0", "c:0"), setting="2_wrong_only")
    assert flags(_item("They manoeuvre at a probability of 1 in 1000 [1].", **neg)) == ["fabricated"]
    assert flags(_item("The answer cannot be found in the provided passages.", **neg)) == []
    assert set(FAILURE_KINDS) >= {"non_answer", "restated", "false_refusal", "injected_content", "fabricated"}


def test_a_control_set_drawn_from_flagged_outputs():
    """Flagged generator answers become controls of the judges their kind tests, with the source's
    supporting sentence (or a hedged refusal, for a fabrication) as the good answer, citation markers
    stripped from the bad one, and the context the failure needs."""
    doc_of = {c: c.split(":")[0] for c in TEXT}
    qs = [
        {"qid": "q1", "question": Q, "source_chunk_id": "a:0", "answer": "When it exceeds 1 in 10000."},
        {"qid": "q2", "question": "Why do ground stations in Svalbard see polar satellites?", "source_chunk_id": "b:0"},
    ]
    leaked = _item(
        "Ground stations in Svalbard see polar orbiting satellites on almost every orbit [2].",
        ids=("b:0", "a:0"),
        wrong=("b:0",),
        setting="1_wrong",
    )
    fab = _item("They manoeuvre at 1 in 1000 [1].", ids=("b:0", "c:0"), wrong=("b:0", "c:0"), setting="2_wrong_only")
    refused = _item("The answer cannot be found in the provided passages.")
    outputs = []
    for it in (leaked, fab, refused):
        it["flags"] = flags(it)
        outputs.append(it)
    # the leaked answer also misses the reference's number and names what the source lacks
    assert [it["flags"] for it in outputs] == [
        ["injected_content", "wrong_completion"],
        ["fabricated"],
        ["false_refusal"],
    ]
    controls = J.build_controls(qs, TEXT, doc_of, n=30, seed=0, outputs=outputs)
    mine = [c for c in controls if c["origin"] == "output"]
    by = {(c["rubric"], c["kind"]): c for c in mine}
    sup = J.supporting_sentence(Q, TEXT["a:0"])
    f = by[("faithfulness", "injected_content")]
    assert f["bad"] == "Ground stations in Svalbard see polar orbiting satellites on almost every orbit."
    assert f["good"] == sup and f["context_ids"] == ["a:0"]
    n = by[("noise_robustness", "injected_content")]
    assert n["context_ids"] == ["b:0", "a:0"] and n["noise_ids"] == ["b:0"]
    r = by[(J.REFUSAL_JUDGE, "fabricated")]
    assert r["good"] in J.HEDGED_REFUSALS and r["context_ids"] == ["b:0", "c:0"] and "[1]" not in r["bad"]
    assert ("relevance", "false_refusal") in by and ("correct", "false_refusal") in by
    assert by[("correct", "false_refusal")]["reference"] == "When it exceeds 1 in 10000."
    # a kind never goes to a judge that does not list it
    assert all(c["kind"] in J.CONTROL_KINDS[c["rubric"]] for c in controls)
    assert ("faithfulness", "false_refusal") not in by


def test_a_judges_set_takes_the_kinds_in_turn_and_none_fills_more_than_a_third():
    import random

    cands = {
        "a": [{"qid": f"q{i}", "kind": "a"} for i in range(20)],
        "b": [{"qid": f"q{i}", "kind": "b"} for i in range(20)],
        "c": [{"qid": "q0", "kind": "c"}],
        "d": [{"qid": "q1", "kind": "d"}, {"qid": "q2", "kind": "d"}],
    }
    got = J.pick_balanced(cands, 30, random.Random(0))
    counts = {k: sum(c["kind"] == k for c in got) for k in cands}
    # a and b alternate once c and d run out, then are trimmed to a third of the set: a = b = c + d
    assert counts == {"a": 3, "b": 3, "c": 1, "d": 2} and len(got) == 9
    assert max(counts.values()) * 3 <= len(got)
    # the first turn takes one of each kind, each from a question not used yet where there is one
    assert [c["kind"] for c in got[:4]] == ["a", "b", "c", "d"]
    assert len({c["qid"] for c in got[:4]}) == 4
    # two kinds only: kept as drawn (the controls table then reads too few kinds to tell)
    two = J.pick_balanced({"a": cands["a"], "b": cands["b"]}, 10, random.Random(0))
    assert len(two) == 10
