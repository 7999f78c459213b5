"""Judge checks: sampling labelled pairs, agreement figures computed by hand, verdicts, position
bias, known-answer controls. A scripted judge stands in for a model only to test our wiring."""
from __future__ import annotations

import json
from types import SimpleNamespace as C

import pytest

from spacelm.config import JudgeCheckConfig
from spacelm.lib import judge_check as J
from spacelm.lib.beir import load_beir
from spacelm.lib.llm.types import Completion
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
    return [{"qid": (qids or [f"q{i}" for i in range(len(labels))])[i], "chunk_id": f"c{i}", "label": l, "grade": g,
             "expected_grade": None if expected is None else expected[i], "kind": "positive" if l else "hard_negative"}
            for i, (l, g) in enumerate(zip(labels, grades))]


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
    assert m["kappa_weighted"] == pytest.approx(cohen_kappa_score([0, 1, 2, 3], [0, 1, 3, 2], weights="quadratic"),
                                                abs=1e-4)
    assert m["exact_accuracy"] == 0.5 and m["relevant_from_label"] == 2


def test_missing_grades_are_left_out_and_counted():
    rows = _rows([1, 0, 1], [3, 0, None])
    m = J.agreement(rows, 50, 0, graded=False)
    assert m["n_pairs"] == 2 and m["missing"] == 1


def test_verdicts_follow_the_thresholds():
    th = JudgeCheckConfig(min_pairs=30, max_ci_width=0.3, valid_auc=0.8, valid_kappa=0.4, fail_auc=0.65)
    base = {"n_pairs": 100, "auc_ci": [0.8, 0.9], "kappa_binary": 0.5}
    assert J.verdict(dict(base, auc=0.85), th)[0] == "valid"
    assert J.verdict(dict(base, auc=0.85, kappa_binary=0.2), th)[0] == "weak"
    assert J.verdict(dict(base, auc=0.7, auc_ci=[0.6, 0.8]), th)[0] == "weak"
    assert J.verdict(dict(base, auc=0.6, auc_ci=[0.5, 0.7]), th)[0] == "fails"
    assert J.verdict(dict(base, n_pairs=29, auc=0.95), th) == ("too few pairs to tell",
                                                              "only 29 pairs (at least 30 are needed for a verdict)")
    v, why = J.verdict(dict(base, auc=0.85, auc_ci=[0.5, 0.95]), th)
    assert v == "too few pairs to tell" and "wider than 0.3" in why


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
    text = ("Ground stations track satellites daily. Operators manoeuvre when the collision probability exceeds "
            "one in ten thousand. Budgets are tight.")
    assert J.supporting_sentence("When do operators manoeuvre for collision risk?", text).startswith("Operators manoeuvre")


def _questions_and_chunks():
    texts = {
        "a:0": "Operators plan a manoeuvre when the collision probability exceeds 1 in 10000 for the satellite.",
        "b:0": "Ground stations in Svalbard see polar orbiting satellites on almost every orbit they fly.",
        "c:0": "Solar arrays lose about 2 percent of their output each year from radiation damage to cells.",
        "d:0": "Telemetry values are compared with soft and hard limits by the flight control team.",
    }
    doc_of = {c: c.split(":")[0] for c in texts}
    qs = [{"qid": "q1", "question": "When do operators plan a collision manoeuvre?", "source_chunk_id": "a:0",
           "answer": "When the collision probability exceeds 1 in 10000."},
          {"qid": "q2", "question": "Why do ground stations in Svalbard see polar satellites?", "source_chunk_id": "b:0"},
          {"qid": "q3", "question": "How much output do solar arrays lose each year?", "source_chunk_id": "c:0"}]
    return qs, texts, doc_of


def test_controls_cover_every_rubric_with_a_known_better_answer():
    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=2, seed=0)
    assert {c["rubric"] for c in controls} == {*J.ANSWER_RUBRICS, *J.BINARY_JUDGES, J.CLAIM_JUDGE}
    assert len(controls) == 2 * 8
    for c in controls:
        assert c["good"] != c["bad"] and c["context_ids"]
        if c["rubric"] == "negative_rejection":
            assert c["good"] == J.REFUSAL_TEXT and doc_of[c["context_ids"][0]] != doc_of[qs[0]["source_chunk_id"]] \
                or c["qid"] != "q1"
            assert all(doc_of[i] != doc_of[next(q for q in qs if q["qid"] == c["qid"])["source_chunk_id"]]
                       for i in c["context_ids"])
        if c["rubric"] == "faithfulness" and c["qid"] == "q1":
            assert c["how"] == "numbers changed" and "10000" not in c["bad"]
        if c["rubric"] == "noise_robustness":
            assert c["noise_ids"] == c["context_ids"][1:]


def test_controls_table_by_hand():
    th = JudgeCheckConfig(min_controls=3, valid_pass_rate=0.8, fail_pass_rate=0.6)
    res = [{"rubric": "faithfulness", "good_score": g, "bad_score": b} for g, b in [(5, 1), (4, 2), (3, 3), (5, 2)]]
    res += [{"rubric": "grounded", "good_score": 1.0, "bad_score": 0.0}, {"rubric": "grounded", "good_score": None,
                                                                          "bad_score": 0.0}]
    t = J.controls_table(res, th).set_index("rubric")
    assert t.loc["faithfulness", "n"] == 4 and t.loc["faithfulness", "pass_rate"] == 0.75  # the tie fails
    assert t.loc["faithfulness", "mean_gap"] == pytest.approx((4 + 2 + 0 + 3) / 4, abs=1e-3)
    assert t.loc["faithfulness", "verdict"] == "weak"
    assert t.loc["grounded", "n"] == 1 and t.loc["grounded", "missing"] == 1
    assert t.loc["grounded", "verdict"] == "too few pairs to tell"
    assert list(J.controls_table([], th).columns[:5]) == ["rubric", "n", "pass_rate", "pass_rate_ci_low",
                                                         "pass_rate_ci_high"]


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
            if "Statement:" in user:  # claim support: yes when every word of the claim is in the passages
                claim = user.split("Statement:")[-1].split("Is the statement")[0]
                words = [w.strip(".,") for w in claim.lower().split()]
                p = sum(w in user.split("Statement:")[0].lower() for w in words) / max(1, len(words))
                p = 0.9 if p == 1 else 0.1
                on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
            elif r.choices == ["yes", "no"] and "Evaluation question:" in user:  # a binary judge
                answer = user.split("Assistant's answer:")[-1].split("Evaluation question:")[0]
                material = user.split("Assistant's answer:")[0]
                words = answer.lower().split()
                p = 0.9 if sum(w in material.lower() for w in words) == len(words) else 0.1
                on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
            elif r.choices:  # a 1-5 rubric or a 0-3 grade
                answer = user.split("Assistant's answer:")[-1].split("Rubric")[0] if "Assistant's answer:" in user else ""
                docs = user.split("Assistant's answer:")[0]
                words = [w for w in answer.lower().split() if len(w) > 3]
                share = sum(w in docs.lower() for w in words) / max(1, len(words))
                if "negative rejection" in user:
                    share = 1.0 if "cannot be found" in answer else 0.0
                if "noise robustness" in user:
                    share = 1.0 - share
                k = int(round(share * (len(r.choices) - 1)))
                probs = {c: (1.0 if j == k else 0.0) for j, c in enumerate(r.choices)}
                on_done(i, Completion(text=r.choices[k], choice_probs=probs))
            else:
                answer = user.split("Assistant's answer:")[-1].split("Evaluation question:")[0]
                material = user.split("Assistant's answer:")[0]
                words = answer.lower().split()
                share = sum(w in material.lower() for w in words) / max(1, len(words))
                on_done(i, Completion(text=("yes" if share == 1 else "no") + " - scripted"))


def test_score_controls_runs_every_rubric_through_the_table2_prompts():
    from spacelm.config import LLMConfig
    from spacelm.lib.llm import LLM

    qs, texts, doc_of = _questions_and_chunks()
    controls = J.build_controls(qs, texts, doc_of, n=3, seed=0)
    backend = ScriptedJudge()
    res = J.score_controls(LLM(LLMConfig(), backend=backend), controls, texts)
    assert len(res) == len(controls) and all(r["good_score"] is not None and r["bad_score"] is not None for r in res)
    rubric_prompts = {m for r in backend.requests for m in [r.messages[-1]["content"]] if "Rubric -" in m}
    assert len(rubric_prompts) == 2 * 4 * len({c["qid"] for c in controls})
    t = J.controls_table(res, JudgeCheckConfig(min_controls=1)).set_index("rubric")
    assert t.loc["negative_rejection", "pass_rate"] == 1.0 and t.loc["grounded", "pass_rate"] == 1.0
    # the claim-support judge is scored by P(supported): the true sentence over the altered one
    assert t.loc["claim_support", "pass_rate"] == 1.0 and t.loc["claim_support", "n"] == len({c["qid"] for c in controls})
    claim_prompts = [r for r in backend.requests if "Statement:" in r.messages[-1]["content"]]
    assert claim_prompts and all(r.choices == ["yes", "no"] for r in claim_prompts)
