"""Judge checks: sampling labelled pairs, agreement figures computed by hand, verdicts, position
bias, known-answer controls. A scripted judge stands in for a model only to test our wiring."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from spacelm.config import JudgeCheckConfig
from spacelm.lib.judge import validity as J
from spacelm.lib.llm.types import Completion
from spacelm.lib.retrieval.beir import load_beir
from tests.conftest import make_beir


def test_binary_sample_has_a_positive_a_hard_and_a_random_negative(tmp_path):
    data = load_beir(make_beir(tmp_path / "b"))
    pairs = J.sample_check_pairs(data, n_queries=3, seed=1, source="b")
    by_q: dict = {}
    for p in pairs:
        by_q.setdefault(p["qid"], []).append(p)
    assert len(by_q) == 3
    for q, ps in by_q.items():
        kinds = {p["kind"]: p for p in ps}
        assert set(kinds) == {"positive", "hard_negative", "random_negative"}
        assert kinds["positive"]["label"] == 1 and data.qrels[q][kinds["positive"]["chunk_id"]] == 1
        assert kinds["hard_negative"]["label"] == 0 and kinds["hard_negative"]["chunk_id"] not in data.qrels[q]
        # the hard negative is the top BM25 passage people did not mark: the same-topic note
        assert kinds["hard_negative"]["chunk_id"].endswith("b")
    assert J.sample_check_pairs(data, 3, 1, "b") == pairs  # seeded


def test_graded_sample_takes_one_passage_per_grade(tmp_path):
    data = load_beir(make_beir(tmp_path / "g", graded=True))  # qrels.tsv at the folder's root
    assert J.is_graded(data.qrels)
    pairs = J.sample_check_pairs(data, n_queries=2, seed=0, source="g")
    for q in {p["qid"] for p in pairs}:
        labels = sorted(p["label"] for p in pairs if p["qid"] == q and p["kind"].startswith("grade_"))
        assert labels == [0, 1, 3]


def _rows(labels, grades, expected=None, qids=None):
    return [
        {
            "qid": (qids or [f"q{i}" for i in range(len(labels))])[i],
            "chunk_id": f"c{i}",
            "label": lab,
            "grade": g,
            "expected_grade": None if expected is None else expected[i],
            "kind": "positive" if lab else "hard_negative",
        }
        for i, (lab, g) in enumerate(zip(labels, grades))
    ]


def test_agreement_by_hand():
    """labels 1,1,0,0; grades 3,2,2,0. Judged relevant (>= 2): 1,1,1,0, so accuracy 3/4;
    kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5 with chance agreement 0.5*0.75 + 0.5*0.25;
    AUC: of the 4 (relevant, non-relevant) pairs, 3 ordered right and 1 tied: 3.5/4."""
    m = J.agreement(_rows([1, 1, 0, 0], [3, 2, 2, 0]), n_boot=200, seed=0, graded=False)
    assert m["accuracy"] == 0.75 and m["kappa_binary"] == pytest.approx(0.5) and m["auc"] == pytest.approx(0.875)
    assert m["n_pairs"] == 4 and m["kappa_weighted"] is None
    assert m["confusion"] == {"0": {"0": 1, "1": 0, "2": 1, "3": 0}, "1": {"0": 0, "1": 0, "2": 1, "3": 1}}
    lo, hi = m["auc_ci"]
    assert lo <= m["auc"] <= hi


def test_expected_grade_breaks_ties_for_the_auc():
    rows = _rows([1, 0], [2, 2], expected=[2.4, 1.6])
    assert J.agreement(rows, 50, 0, graded=False)["auc"] == 1.0


def test_weighted_kappa_on_graded_labels_by_hand():
    """Perfect agreement gives 1; labels 0..3 against grades shifted by one at the top: the
    quadratic-weighted kappa is sklearn's, and exact accuracy 2/4."""
    from sklearn.metrics import cohen_kappa_score

    perfect = J.agreement(_rows([0, 1, 2, 3], [0, 1, 2, 3]), 50, 0, graded=True)
    assert perfect["kappa_weighted"] == 1.0 and perfect["exact_accuracy"] == 1.0
    m = J.agreement(_rows([0, 1, 2, 3], [0, 1, 3, 2]), 50, 0, graded=True)
    assert m["kappa_weighted"] == pytest.approx(
        cohen_kappa_score([0, 1, 2, 3], [0, 1, 3, 2], weights="quadratic"), abs=1e-4
    )
    # by hand: uniform margins, chance-expected Σ(i-j)²/16 = 40/16, observed 2/4: κ = 1 - 0.5/2.5 = 0.8
    # (linear weights would give 1 - 0.5/1.25 = 0.6)
    assert m["kappa_weighted"] == pytest.approx(0.8, abs=1e-4)
    assert m["exact_accuracy"] == 0.5 and m["relevant_from_label"] == 2


def test_missing_grades_are_left_out_and_counted():
    rows = _rows([1, 0, 1], [3, 0, None])
    m = J.agreement(rows, 50, 0, graded=False)
    assert m["n_pairs"] == 2 and m["missing"] == 1


def test_absolute_verdicts_read_the_ci_bounds():
    """No reference judge: valid needs the lower bounds of AUC and kappa to clear the bar; fails
    needs the AUC's upper bound under fail_auc; a point estimate above the bar is not enough."""
    th = JudgeCheckConfig(min_pairs=30, max_ci_width=0.3, valid_auc=0.8, valid_kappa=0.4, fail_auc=0.65)
    base = {"n_pairs": 100, "auc": 0.85, "kappa_binary": 0.5}
    assert J.verdict(dict(base, auc_ci=[0.80, 0.90], kappa_binary_ci=[0.4, 0.6]), th)[0] == "valid"
    # the same point estimates, but the lower bounds do not clear the bar
    assert J.verdict(dict(base, auc_ci=[0.79, 0.90], kappa_binary_ci=[0.4, 0.6]), th)[0] == "weak"
    assert J.verdict(dict(base, auc_ci=[0.80, 0.90], kappa_binary_ci=[0.39, 0.6]), th)[0] == "weak"
    assert J.verdict(dict(base, auc=0.6, auc_ci=[0.5, 0.64], kappa_binary_ci=[0, 0.1]), th)[0] == "fails"
    assert J.verdict(dict(base, auc=0.6, auc_ci=[0.5, 0.66], kappa_binary_ci=[0, 0.1]), th)[0] == "weak"
    assert J.verdict(dict(base, n_pairs=29, auc=0.95, auc_ci=[0.9, 1]), th) == (
        "too few pairs to tell",
        "only 29 pairs (at least 30 are needed for a verdict)",
    )
    v, why = J.verdict(dict(base, auc_ci=[0.5, 0.95], kappa_binary_ci=[0.4, 0.6]), th)
    assert v == "too few pairs to tell" and "wider than 0.3" in why


def test_verdicts_against_reference_judges_on_the_same_pairs():
    """Ours: AUC 0.75 [0.70, 0.80], kappa 0.40 [0.30, 0.50]. Against a reference at AUC 0.70,
    kappa 0.30 our lower bounds reach its points: at least as good; against AUC 0.85 our upper
    bound 0.80 is under it: below; against AUC 0.78, kappa 0.45 neither: cannot tell."""
    th = JudgeCheckConfig(min_pairs=30)
    m = {"n_pairs": 100, "auc": 0.75, "auc_ci": [0.70, 0.80], "kappa_binary": 0.40, "kappa_binary_ci": [0.30, 0.50]}
    weak_ref = {"name": "monot5-base", "auc": 0.70, "kappa_binary": 0.30}
    strong_ref = {"name": "umbrela-gpt-4o", "auc": 0.85, "kappa_binary": 0.35}
    close_ref = {"name": "rank1-7b", "auc": 0.78, "kappa_binary": 0.45}
    assert J.verdict(m, th, [weak_ref])[0] == "valid"
    v, why = J.verdict(m, th, [weak_ref])
    assert why.startswith("at least as good as monot5-base on these pairs")
    assert J.verdict(m, th, [strong_ref])[0] == "fails" and "below umbrela-gpt-4o" in J.verdict(m, th, [strong_ref])[1]
    v, why = J.verdict(m, th, [weak_ref, strong_ref, close_ref])
    assert (
        v == "weak"
        and "at least as good as monot5-base" in why
        and "below umbrela-gpt-4o" in why
        and "cannot tell against rank1-7b" in why
    )
    # the absolute bar is not used where references exist: these bounds would be "weak" without them
    assert J.verdict(m, th)[0] == "weak"
    # a kappa upper bound under the reference's kappa is enough to be below it
    assert J.verdict(m, th, [{"name": "x", "auc": 0.7, "kappa_binary": 0.55}])[0] == "fails"


def test_reference_judges_are_read_and_measured_on_our_pairs(tmp_path):
    """Our judge graded 4 pairs of 2 queries; a graded and a binary reference labelled them (the
    binary one also a pair we did not grade, which must not count)."""
    d = tmp_path / "refs"
    d.mkdir()
    (d / "gpt.qrels.txt").write_text("q1 Q0 a 3\nq1 Q0 b 0\nq2 Q0 c 2\nq2 Q0 d 1\n")
    (d / "mono.qrels.txt").write_text("q1 0 a 1\nq1 0 b 1\nq2 0 c 1\nq2 0 d 0\nq9 0 z 1\n")
    refs = J.read_reference_judges(d)
    assert set(refs) == {"gpt", "mono"} and refs["mono"][("q9", "z")] == 1
    assert J.read_reference_judges(tmp_path / "none") == {}
    rows = _rows([3, 0, 2, 1], [3, 1, 2, 2], qids=["q1", "q1", "q2", "q2"])
    for r, cid in zip(rows, "abcd"):
        r["chunk_id"] = cid
    got = {r["name"]: r for r in J.reference_agreement(rows, refs, 100, 0, graded=True)}
    # gpt agrees exactly with the human labels: kappa 1, weighted kappa 1, AUC 1
    assert got["gpt"]["n_pairs"] == 4 and got["gpt"]["kappa_binary"] == 1.0 and got["gpt"]["kappa_weighted"] == 1.0
    assert got["gpt"]["auc"] == 1.0
    # mono says relevant for a, b, c: relevant (>= 2) are a, c. Judged 1,1,1,0 vs 1,0,1,0:
    # accuracy 3/4, chance 0.5*0.75 + 0.5*0.25 = 0.5, kappa 0.5; AUC: (a,b) tie, (a,d) right,
    # (c,b) tie, (c,d) right: 3/4; no weighted kappa for a binary judge
    assert got["mono"]["kappa_binary"] == pytest.approx(0.5) and got["mono"]["auc"] == pytest.approx(0.75)
    assert got["mono"]["kappa_weighted"] is None and got["mono"]["labels"] == "binary"
    assert set(got["mono"]) == {
        "name",
        "n_pairs",
        "labels",
        "kappa_binary",
        "kappa_binary_ci",
        "kappa_weighted",
        "auc",
        "auc_ci",
        "boundaries",
    }
    (d / "bad.qrels.txt").write_text("q1 Q0 a\n")
    with pytest.raises(ValueError, match="bad.qrels.txt:1"):
        J.read_reference_judges(d)


def test_position_bias_and_mean_of_both_orders_by_hand():
    first = _rows([1, 0, 1], [3, 1, 2], expected=[2.8, 1.0, 2.0])
    swapped = _rows([1, 0, 1], [3, 2, 1], expected=[2.6, 2.0, 1.2])
    pb = J.position_bias(first, swapped)
    assert pb["n_pairs"] == 3 and pb["agreement"] == pytest.approx(1 / 3, abs=1e-4)
    assert pb["mean_shift"] == pytest.approx(((2.6 - 2.8) + (2.0 - 1.0) + (1.2 - 2.0)) / 3, abs=1e-4)
    both = J.mean_of_orders(first, swapped)
    assert [r["expected_grade"] for r in both] == pytest.approx([2.7, 1.5, 1.6])
    assert [r["grade"] for r in both] == [3, 2, 2]  # 1.5 rounds half up


def test_change_numbers_and_supporting_sentence():
    assert J.change_numbers("The threshold is 1e-4 at 600 km.") == "The threshold is 10e-19 at 1807 km."
    assert J.change_numbers("No figures here at all.") is None
    text = (
        "Ground stations track satellites daily. Operators manoeuvre when the collision probability exceeds "
        "one in ten thousand. Budgets are tight."
    )
    assert J.supporting_sentence("When do operators manoeuvre for collision risk?", text).startswith(
        "Operators manoeuvre"
    )


def _questions_and_chunks():
    texts = {
        "a:0": "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 for the satellite.",
        "b:0": "Ground stations in Svalbard see polar orbiting satellites on almost every orbit they fly.",
        "c:0": "Solar arrays lose about 2 percent of their output each year from radiation damage to cells.",
        "d:0": "Telemetry values are compared with soft and hard limits by the flight control team.",
    }
    doc_of = {c: c.split(":")[0] for c in texts}
    qs = [
        {
            "qid": "q1",
            "question": "When do operators plan a collision manoeuvre?",
            "source_chunk_id": "a:0",
            "answer": "When the collision probability exceeds 1 in 10000.",
        },
        {"qid": "q2", "question": "Why do ground stations in Svalbard see polar satellites?", "source_chunk_id": "b:0"},
        {"qid": "q3", "question": "How much output do solar arrays lose each year?", "source_chunk_id": "c:0"},
    ]
    return qs, texts, doc_of


def test_bad_answer_generators_by_hand():
    s = "The station at Svalbard sees the satellite every 101 minutes at 261 km in 2019."
    # about +20%, years +3, at least one unit: plausible, not absurd
    assert J.nudge_numbers(s) == "The station at Svalbard sees the satellite every 121 minutes at 313 km in 2022."
    assert J.nudge_numbers("A ratio of 2.5 and 1,05 and 3.") == "A ratio of 3.0 and 1,26 and 4."
    assert J.nudge_numbers("No figures.") is None
    assert J.swap_unit(s) == "The station at Svalbard sees the satellite every 101 hours at 261 km in 2019."
    assert J.swap_unit("It flies at 261km.") == "It flies at 261m."
    assert J.swap_unit("Seven minutes, no number before the unit.") is None
    assert J.entities(s) == ["Svalbard"]
    assert J.entities("NASA and the European Space Agency run it.") == ["NASA", "European Space Agency"]
    assert J.swap_entity(s, "It is tracked from Kiruna in Sweden.") == s.replace("Svalbard", "Kiruna")
    assert J.swap_entity("no entity here at all.", "Kiruna") is None
    assert J.negate(s) is None or J.negate(s) != s
    assert J.negate("The orbit is stable.") == "The orbit is not stable."
    assert J.negate("The orbit is not stable.") == "The orbit is stable."
    assert J.negate("Operators cannot see it.") == "Operators can see it."
    assert J.negate("Nothing to negate here sadly.") is None
    # 261 * 0.4 = 104.4 -> about 100; 101 * 0.4 = 40.4 -> about 40; 2019 -> about 800
    assert J.closed_book("It flies at 261 km for 101 minutes.") == "It flies at about 100 km for about 40 minutes."
    assert "depends" in J.closed_book("It flies low.")
    text = "Budgets are tight every single year. Operators manoeuvre when the collision probability exceeds a limit."
    assert (
        J.off_question_sentence(
            "When do operators manoeuvre for collision?",
            text,
            avoid="Operators manoeuvre when the collision probability exceeds a limit.",
        )
        == "Budgets are tight every single year."
    )


def _questions_and_chunks():
    texts = {
        "a:0": "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 for the satellite. "
        "The flight dynamics team at ESOC reviews the orbit every week.",
        "b:0": "Ground stations in Svalbard see polar orbiting satellites on almost every orbit they fly. "
        "The antennas are maintained by KSAT staff on the island.",
        "c:0": "Solar arrays lose about 2 percent of their output each year from radiation damage to cells. "
        "Engineers at Airbus size the arrays with margin.",
        "d:0": "Telemetry values are compared with soft and hard limits by the flight control team at Darmstadt.",
    }
    doc_of = {c: c.split(":")[0] for c in texts}
    qs = [
        {
            "qid": "q1",
            "question": "When do operators plan a collision manoeuvre?",
            "source_chunk_id": "a:0",
            "answer": "When the collision probability exceeds 1 in 10000.",
        },
        {"qid": "q2", "question": "Why do ground stations in Svalbard see polar satellites?", "source_chunk_id": "b:0"},
        {"qid": "q3", "question": "How much output do solar arrays lose each year?", "source_chunk_id": "c:0"},
    ]
    return qs, texts, doc_of


def test_controls_cover_every_judge_with_several_kinds_of_bad_answer():
    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=30, seed=0)
    judges = {*J.ANSWER_RUBRICS, *J.BINARY_JUDGES, J.CLAIM_JUDGE, J.REFUSAL_JUDGE}
    assert {c["rubric"] for c in controls} == judges
    by = {r: [c for c in controls if c["rubric"] == r] for r in judges}
    # three questions: every kind that applies to each, up to n per judge
    assert all(1 <= len(v) <= 30 for v in by.values())
    assert len({c["kind"] for c in by["faithfulness"]}) >= 4 and len({c["kind"] for c in by["correct"]}) >= 4
    # the first round takes one control per question with the kinds rotating
    assert len({c["kind"] for c in by["faithfulness"][:3]}) == 3
    assert J.build_controls(qs, texts, doc_of, n=2, seed=0) == [
        c for r in J.CONTROL_KINDS for c in [x for x in controls if x["rubric"] == r][:2]
    ]
    src = {q["qid"]: q["source_chunk_id"] for q in qs}
    for c in controls:
        assert c["good"] != c["bad"] and c["context_ids"] and c["kind"]
        if c["rubric"] in ("negative_rejection", J.REFUSAL_JUDGE):
            assert c["good"] in J.HEDGED_REFUSALS and all(doc_of[i] != doc_of[src[c["qid"]]] for i in c["context_ids"])
            assert c["kind"] in ("confident", "confident_nudged", "hedged_guess")
        if c["rubric"] == "faithfulness" and c["qid"] == "q1" and c["kind"] == "number_nudged":
            assert "10000" not in c["bad"] and "12000" in c["bad"]
        if c["rubric"] == "correct":
            assert c["reference"]
            if c["kind"] == "closed_book" and c["qid"] == "q1":
                assert "about" in c["bad"]
        if c["rubric"] == "noise_robustness":
            assert c["noise_ids"] == c["context_ids"][1:]
            # what makes the answer bad comes from the injected passages, not an error of its own
            assert c["kind"] in ("unrelated_claim", "partial", "noise_entity", "injected_content")
            noise = " ".join(texts[i] for i in c["noise_ids"])
            extra = c["bad"].replace(c["good"], "") if c["kind"] != "noise_entity" else ""
            assert not extra or extra.strip() in noise
    assert len({c["good"] for c in by[J.REFUSAL_JUDGE]}) >= 2  # hedged refusals, not one fixed string


def test_controls_table_by_hand():
    """faithfulness: 3 of 4 pass (the tie fails): Wilson 95% interval of 3/4 is [0.301, 0.954];
    with min_controls 3 the lower bound is under 0.8 and the upper above 0.6: weak. 10 of 10
    passed gives [0.722, 1.0]: not valid (the lower bound is under 0.8), though every control
    passed; 30 of 30 gives [0.886, 1.0]: valid. 2 of 30 gives [0.018, 0.213]: fails."""
    th = JudgeCheckConfig(min_controls=3, valid_pass_rate=0.8, fail_pass_rate=0.6, min_control_kinds=1)
    res = [
        {"rubric": "faithfulness", "good_score": g, "bad_score": b, "kind": k}
        for (g, b), k in zip([(5, 1), (4, 2), (3, 3), (5, 2)], ["negated", "negated", "partial", "number_nudged"])
    ]
    res += [
        {"rubric": "grounded", "good_score": 1.0, "bad_score": 0.0},
        {"rubric": "grounded", "good_score": None, "bad_score": 0.0},
    ]
    res += [{"rubric": "correct", "good_score": 1.0, "bad_score": 0.0, "kind": "closed_book"}] * 10
    res += [{"rubric": "relevance", "good_score": 5, "bad_score": 1, "kind": "other_question"}] * 30
    res += [
        {"rubric": "refusal", "good_score": 1.0, "bad_score": 0.0 if i < 2 else 1.0, "kind": "confident"}
        for i in range(30)
    ]
    t = J.controls_table(res, th).set_index("rubric")
    f = t.loc["faithfulness"]
    assert f["n"] == 4 and f["pass_rate"] == 0.75 and f["n_kinds"] == 3 and f["failed_kinds"] == "partial"
    assert (f["ci_low"], f["ci_high"]) == pytest.approx((0.301, 0.954), abs=1e-3)
    assert (f["pass_rate_ci_low"], f["pass_rate_ci_high"]) == (f["ci_low"], f["ci_high"])
    assert f["mean_gap"] == pytest.approx((4 + 2 + 0 + 3) / 4, abs=1e-3)
    assert f["verdict"] == "weak" and not f["passed"]
    assert t.loc["grounded", "n"] == 1 and t.loc["grounded", "missing"] == 1
    assert t.loc["grounded", "verdict"] == "too few pairs to tell"
    assert t.loc["correct", "pass_rate"] == 1.0 and t.loc["correct", "ci_low"] == pytest.approx(0.722, abs=1e-3)
    assert t.loc["correct", "ci_high"] == pytest.approx(1.0) and t.loc["correct", "verdict"] == "weak"
    assert t.loc["relevance", "ci_low"] == pytest.approx(0.886, abs=1e-3) and t.loc["relevance", "verdict"] == "valid"
    assert t.loc["relevance", "passed"]
    assert t.loc["refusal", "ci_high"] == pytest.approx(0.213, abs=1e-3) and t.loc["refusal", "verdict"] == "fails"
    cols = list(J.controls_table([], th).columns)
    assert cols[:8] == [
        "rubric",
        "n",
        "pass_rate",
        "pass_rate_ci_low",
        "pass_rate_ci_high",
        "mean_gap",
        "min_gap",
        "missing",
    ] and {"n_kinds", "kinds", "max_kind_share", "from_outputs", "ci_low", "ci_high", "passed"} <= set(cols)


def test_a_control_passes_only_at_the_stated_minimum_gap_and_a_set_needs_kinds():
    """min_control_gap 0.125 of the scale: 0.5 points on a 1-5 rubric, so a gap of 0.4 fails and 0.5
    passes; on a yes/no judge (scale 1) 0.125, so any flip passes. Kinds are counted per judge and a
    set of fewer than min_control_kinds kinds gets no verdict."""
    th = JudgeCheckConfig(min_controls=3, min_control_gap=0.125, min_control_kinds=3)
    res = [
        {"rubric": "faithfulness", "good_score": 4.2, "bad_score": 3.8, "kind": "negated", "qid": "a"},
        {"rubric": "faithfulness", "good_score": 4.3, "bad_score": 3.8, "kind": "partial", "qid": "b"},
        {"rubric": "faithfulness", "good_score": 5, "bad_score": 1, "kind": "injected_content", "qid": "c"},
        {"rubric": "faithfulness", "good_score": 5, "bad_score": 1, "kind": "injected_content", "qid": "d"},
        {"rubric": "grounded", "good_score": 1.0, "bad_score": 0.0, "kind": "negated", "qid": "a"},
        {"rubric": "grounded", "good_score": 1.0, "bad_score": 0.0, "kind": "negated", "qid": "b"},
        {"rubric": "grounded", "good_score": 1.0, "bad_score": 0.0, "kind": "partial", "qid": "c", "origin": "output"},
    ]
    assert [J.control_passed(r, th) for r in res[:4]] == [False, True, True, True]
    t = J.controls_table(res, th).set_index("rubric")
    assert t.loc["faithfulness", "min_gap"] == 0.5 and t.loc["grounded", "min_gap"] == 0.125
    assert t.loc["faithfulness", "pass_rate"] == 0.75 and t.loc["faithfulness", "failed_kinds"] == "negated"
    assert t.loc["faithfulness", "kinds"] == "injected_content 2; negated 1; partial 1"
    assert t.loc["faithfulness", "max_kind_share"] == 0.5 and t.loc["faithfulness", "n_kinds"] == 3
    assert t.loc["grounded", "verdict"] == "too few kinds to tell" and t.loc["grounded", "from_outputs"] == 1
    # with no minimum, any positive gap passes
    assert J.control_passed(res[0], JudgeCheckConfig(min_control_gap=0.0))
    k = J.controls_by_kind(res, th).set_index(["rubric", "kind"])
    assert k.loc[("faithfulness", "injected_content"), "n"] == 2
    assert k.loc[("faithfulness", "injected_content"), "mean_gap"] == 4.0
    # one question has no interval for its gap (the frame holds it as NaN); two questions have one
    assert k.loc[("faithfulness", "negated"), "n"] == 1
    assert pd.isna(k.loc[("faithfulness", "negated"), "gap_ci_low"])
    assert k.loc[("faithfulness", "injected_content"), "gap_ci_low"] == 4.0
    assert k.loc[("grounded", "partial"), "origin"] == "output"


DECLINES = ("cannot be found", "could not find", "do not contain")


class ScriptedJudge:
    """Stands in for a model to test our wiring: prefers refusals for negative rejection and
    answers whose words appear in the documents, says yes to the same."""

    name = "scripted"

    def __init__(self):
        self.requests = []

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            self.requests.append(r)
            user = r.messages[-1]["content"]
            if "Does the reply decline" in user:  # the refusal judge
                reply = user.split("Assistant's reply:")[-1].split("Does the reply decline")[0]
                p = 0.9 if any(x in reply for x in DECLINES) else 0.1
                on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
            elif "Statement:" in user:  # claim support: yes when every word of the claim is in the passages
                claim = re.split(r"Is the statement|Does the statement", user.split("Statement:")[-1])[0]
                words = [w.strip(".,") for w in claim.lower().split()]
                p = sum(w in user.split("Statement:")[0].lower() for w in words) / max(1, len(words))
                p = 0.9 if p == 1 else 0.1
                if "do not support" in user:  # the mirrored question ("anything unsupported?")
                    p = 1 - p
                on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
            elif r.choices == ["yes", "no"] and "Reply with one word: yes or no." in user:  # a binary judge
                answer = re.split(r"Reference answer:|Task - ", user.split("Assistant's answer:")[-1])[0]
                material = user.split("Assistant's answer:")[0]
                words = answer.lower().split()
                p = 0.9 if sum(w in material.lower() for w in words) == len(words) else 0.1
                on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
            elif r.choices:  # a 1-5 rubric or a 0-3 grade
                answer = (
                    user.split("Assistant's answer:")[-1].split("Task - ")[0] if "Assistant's answer:" in user else ""
                )
                docs = user.split("Assistant's answer:")[0]
                words = [w for w in answer.lower().split() if len(w) > 3]
                share = sum(w in docs.lower() for w in words) / max(1, len(words))
                if "negative rejection" in user:
                    share = 1.0 if any(x in answer for x in DECLINES) else 0.0
                if "noise robustness" in user:
                    share = 1.0 - share
                k = int(round(share * (len(r.choices) - 1)))
                probs = {c: (1.0 if j == k else 0.0) for j, c in enumerate(r.choices)}
                on_done(i, Completion(text=r.choices[k], choice_probs=probs))
            else:
                answer = re.split(r"Reference answer:|Task - ", user.split("Assistant's answer:")[-1])[0]
                material = user.split("Assistant's answer:")[0]
                words = answer.lower().split()
                share = sum(w in material.lower() for w in words) / max(1, len(words))
                on_done(i, Completion(text=("yes" if share == 1 else "no") + " - scripted"))


def test_score_controls_scores_as_the_tables_do():
    """The scripted judge gives the digit of its share; the control is scored on that digit (not
    the expected score), yes/no judges on their verdict, the refusal judge has its own prompt."""
    from spacelm.config import LLMConfig
    from spacelm.lib.llm import LLM

    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=3, seed=0)
    backend = ScriptedJudge()
    res = J.score_controls(LLM(LLMConfig(), backend=backend), controls, texts)
    assert len(res) == len(controls) and all(r["good_score"] is not None and r["bad_score"] is not None for r in res)
    rubric_prompts = [r for r in backend.requests if "Score (1-5):" in r.messages[-1]["content"]]
    assert len(rubric_prompts) == 2 * sum(c["rubric"] in J.ANSWER_RUBRICS for c in controls)
    for r in res:
        if r["rubric"] in J.ANSWER_RUBRICS:
            assert r["good_score"] in (1, 2, 3, 4, 5) and isinstance(r["good_score"], int)
        else:
            assert r["good_score"] in (0.0, 1.0) and r["bad_score"] in (0.0, 1.0)
    t = J.controls_table(res, JudgeCheckConfig(min_controls=1)).set_index("rubric")
    assert t.loc["negative_rejection", "pass_rate"] == 1.0 and t.loc["grounded", "pass_rate"] == 1.0
    assert t.loc["claim_support", "pass_rate"] == 1.0
    refusal_prompts = [r for r in backend.requests if "Does the reply decline" in r.messages[-1]["content"]]
    assert len(refusal_prompts) == 2 * sum(c["rubric"] == J.REFUSAL_JUDGE for c in controls)
    assert all(r.choices == ["yes", "no"] for r in refusal_prompts)
    claim_prompts = [r for r in backend.requests if "Statement:" in r.messages[-1]["content"]]
    assert claim_prompts and all(r.choices == ["yes", "no"] for r in claim_prompts)


def test_a_perfect_figure_from_few_queries_gets_a_wilson_lower_bound():
    """10 queries, each with a relevant passage graded 3 and a non-relevant one graded 0: every
    bootstrap resample gives AUC 1 and kappa 1, yet 10 queries cannot bound them at 1. The lower
    bound becomes the Wilson bound of 10/10, 0.722."""
    labels, grades, qids = [], [], []
    for i in range(10):
        labels += [1, 0]
        grades += [3, 0]
        qids += [f"q{i}", f"q{i}"]
    m = J.agreement(_rows(labels, grades, qids=qids), 200, 0, graded=False)
    assert m["auc"] == 1.0 and m["auc_ci"] == [pytest.approx(0.7225, abs=1e-3), 1.0]
    assert m["kappa_binary_ci"][0] == pytest.approx(0.7225, abs=1e-3)


def test_a_control_good_answer_reads_as_an_answer_not_pdf_debris():
    """Headings, runs of text with no full stop and title lines are not answers; a sentence that
    shares fewer than two content words with the question does not support it."""
    assert not J.reads_as_answer("EN 104 EN Article 100 Use of disaggregated datasets informing policy making 1.")
    assert not J.reads_as_answer("Transition from the SST Consortium to the SST Partnership 1.")
    assert not J.reads_as_answer(" ".join(["word"] * 60) + ".")
    assert not J.reads_as_answer("Program Description Of Project Parameter Files And Input Parameters.")
    assert J.reads_as_answer(
        "The Commission, the European Defence Agency (EDA) and ESA will coordinate and synchronise activities "
        "in critical space technologies, building on a re-energised Joint Task Force (JTF)16."
    )
    text = "Budget lines are tight this year overall. Article 7 Conjunction screening thresholds 1."
    assert J.supporting_sentence("What thresholds apply to conjunction screening?", text) is None
    assert J.supporting_sentence("What thresholds apply to conjunction screening?", text, min_shared=0) == (
        "Budget lines are tight this year overall."
    )


def test_controls_check_only_the_judges_named():
    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=30, seed=0, judges=("faithfulness", J.REFUSAL_JUDGE))
    assert {c["rubric"] for c in controls} == {"faithfulness", J.REFUSAL_JUDGE}
    assert JudgeCheckConfig is not None
    from spacelm.config.schema import AnswerConfig

    assert AnswerConfig(binary_judges=False, claims=False).judges() == (*J.ANSWER_RUBRICS, J.REFUSAL_JUDGE)
    assert "grounded" in AnswerConfig().judges() and J.CLAIM_JUDGE in AnswerConfig().judges()


def test_controls_scored_by_the_expected_score_when_the_tables_are():
    """With scoring "expected", a rubric control is scored by the probability-weighted mean of
    1-5: a judge that gives both answers the digit 4 still passes when it leans the right way,
    and fails when it leans the wrong way."""
    from spacelm.config import LLMConfig
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.types import Completion

    class Leaning:
        """Always the digit 4; the good answer (the source sentence) leans to 5, others to 3."""

        def __init__(self, good: set):
            self.good = good

        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                user = r.messages[-1]["content"]
                answer = user.split("Assistant's answer:")[-1].strip().strip('"').strip().split("\n")[0].strip()
                good = answer in self.good
                probs = {"4": 0.6, "5": 0.3, "3": 0.1} if good else {"4": 0.6, "5": 0.1, "3": 0.3}
                if r.choices == ["yes", "no"]:
                    probs = {"yes": 0.7, "no": 0.3}
                on_done(i, Completion(text=r.choices[0] if r.choices == ["yes", "no"] else "4", choice_probs=probs))

    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=3, seed=0, judges=("faithfulness",))
    goods = {c["good"] for c in controls}
    llm = LLM(LLMConfig(), backend=Leaning(goods))
    by_digit = J.score_controls(llm, controls, texts)
    by_expected = J.score_controls(LLM(LLMConfig(), backend=Leaning(goods)), controls, texts, scoring="expected")
    assert all(r["good_score"] == r["bad_score"] == 4 for r in by_digit)
    assert all(r["good_score"] == 4.2 and r["bad_score"] == 3.8 for r in by_expected)
    th = JudgeCheckConfig(min_controls=1, min_control_gap=0.0)
    assert J.controls_table(by_digit, th).set_index("rubric").loc["faithfulness", "pass_rate"] == 0.0
    assert J.controls_table(by_expected, th).set_index("rubric").loc["faithfulness", "pass_rate"] == 1.0
    # a lean of 0.4 points is under the default minimum gap (half a point): the controls do not pass
    th = JudgeCheckConfig(min_controls=1)
    assert J.controls_table(by_expected, th).set_index("rubric").loc["faithfulness", "pass_rate"] == 0.0
