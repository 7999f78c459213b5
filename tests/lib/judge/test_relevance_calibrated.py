"""The calibrated relevance judge: score and grade by hand, cut points, the grading of pairs with a
scripted judge and a fixed embedding, the config checks, and held-out judge-check sampling."""

import json
import math

import numpy as np
import pytest

from spacelm.config import ConfigError, from_dict
from spacelm.lib.judge import calibrated as rc
from spacelm.lib.judge.relevance import RelevanceJudging, grade_pairs
from spacelm.lib.llm import LLM
from spacelm.lib.llm.types import Completion


def _cal(**kw) -> rc.Calibration:
    base = dict(
        name="t",
        features=["fewshot_yes", "cosine"],
        mean=[0.0, 0.5],
        scale=[1.0, 0.25],
        coef=[1.0, 2.0],
        intercept=-0.5,
        cut_points=[-1.0, 0.0, 1.0],
        judge_model="embedded:qwen2.5-coder-1.5b",
        fitted_on={"trec-dl-2020": ["q1", "q2"]},
    )
    base.update(kw)
    return rc.Calibration(**base)


def test_score_and_grade_by_hand():
    cal = _cal()
    # P(yes) 0.5 -> log-odds 0; cosine 0.75 -> (0.75-0.5)/0.25 = 1; score = -0.5 + 0 + 2 = 1.5 -> grade 3
    x = [rc.feature_value("fewshot_yes", {"fewshot_yes": 0.5}), rc.feature_value("cosine", {"cosine": 0.75})]
    assert x == [0.0, 0.75]
    assert cal.score(x) == pytest.approx(1.5)
    assert cal.grade(1.5) == 3 and cal.grade(0.0) == 2 and cal.grade(-0.2) == 1 and cal.grade(-3) == 0
    # P(yes) 0.1 -> log(0.1/0.9) = -2.197; cosine 0.5 -> 0; score = -2.697 -> grade 0
    assert cal.score([math.log(1 / 9), 0.5]) == pytest.approx(-0.5 - 2.1972, abs=1e-3)


def test_cut_points_separate_a_perfectly_ordered_score():
    score = np.arange(40, dtype=float)
    labels = np.repeat([0, 1, 2, 3], 10)
    cuts = rc.cut_points(score, labels, np.ones(40, dtype=bool))
    assert cuts[0] < cuts[1] < cuts[2]
    grades = np.digitize(score, cuts)
    # the binary cut is exact (relevant = label >= 2) and the weighted kappa is 1
    assert ((grades >= 2) == (labels >= 2)).all()
    assert (grades == labels).all()


def test_fit_calibration_recovers_direction_and_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(80):
        label = i % 4
        rows.append({"label": label, "graded": True, "cosine": 0.2 * label + rng.normal(0, 0.05), "fewshot_yes": 0.5})
    cal = rc.fit_calibration(rows, ["cosine", "fewshot_yes"], "fit", "embedded:qwen2.5-coder-1.5b")
    assert cal.coef[0] > 0 and cal.cut_points == sorted(cal.cut_points)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cal.to_dict()))
    again = rc.load_calibration(str(path))
    assert again == cal
    with pytest.raises(FileNotFoundError):
        rc.load_calibration("no-such-calibration")
    (tmp_path / "bad.json").write_text('{"name": 1}')
    with pytest.raises(ValueError, match="not a judge calibration"):
        rc.load_calibration(str(tmp_path / "bad.json"))


class YesNoJudge:
    """Scripted option probabilities: P(yes) and the digit probabilities depend on the passage."""

    name = "scripted"

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            text = r.messages[-1]["content"]
            good = "holds the answer" in text
            if r.choices == ["yes", "no"]:
                p = {"yes": 0.9 if good else 0.2, "no": 0.1 if good else 0.8}
            else:
                p = {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4} if good else {"0": 0.4, "1": 0.3, "2": 0.2, "3": 0.1}
            on_done(i, Completion(text=max(p, key=p.get), prompt_tokens=10, choice_probs=p))


class FixedEncoder:
    def encode_queries(self, texts):
        return np.array([[1.0, 0.0] for _ in texts])

    def encode_passages(self, texts):
        return np.array([[0.8, 0.6] if "answer" in t else [0.0, 1.0] for t in texts])


def test_grade_pairs_calibrated_with_scripted_judge():
    from spacelm.config import LLMConfig

    cal = _cal()
    llm = LLM(LLMConfig(), backend=YesNoJudge())
    pairs = [{"qid": "q", "question": "what?", "chunk_id": c, "purpose": ["t"]} for c in ("a", "b")]
    passages = {"a": "this holds the answer", "b": "unrelated"}
    rows = rc.grade_pairs_calibrated(llm, pairs, passages, cal, encoder=FixedEncoder())
    # a: log-odds(0.9)=2.197, cosine 0.8 -> (0.8-0.5)/0.25=1.2: score -0.5+2.197+2.4 = 4.097 -> 3
    # b: log-odds(0.2)=-1.386, cosine 0 -> -2: score -0.5-1.386-4 = -5.886 -> 0
    assert rows[0]["score"] == pytest.approx(4.0972, abs=1e-3) and rows[0]["grade"] == 3
    assert rows[1]["score"] == pytest.approx(-5.8863, abs=1e-3) and rows[1]["grade"] == 0
    assert rows[0]["prompt"] == "calibrated:t" and rows[0]["features"]["cosine"] == pytest.approx(0.8)
    assert llm.stats.calls == 2  # one few-shot yes/no call per pair; the cosine needs no judge call


def test_unreadable_feature_gives_no_grade_never_zero():
    from spacelm.config import LLMConfig

    class NoProbs:
        def complete_many(self, reqs, on_done):
            for i, _ in enumerate(reqs):
                on_done(i, Completion(text="yes", prompt_tokens=5))

    rows = rc.grade_pairs_calibrated(
        LLM(LLMConfig(), backend=NoProbs()),
        [{"qid": "q", "question": "?", "chunk_id": "a", "purpose": []}],
        {"a": "x"},
        _cal(),
        encoder=FixedEncoder(),
    )
    assert rows[0]["grade"] is None and rows[0]["score"] is None


def test_grade_pairs_dispatches_on_method(monkeypatch):
    seen = {}
    monkeypatch.setattr(rc, "load_calibration", lambda spec: seen.setdefault("spec", spec) and _cal())
    monkeypatch.setattr(rc, "grade_pairs_calibrated", lambda llm, pairs, passages, cal, extra=(): ["calibrated"])
    assert grade_pairs(None, [], {}, judging=RelevanceJudging("calibrated", "relevance", "x")) == ["calibrated"]
    assert seen["spec"] == "x"


def test_check_pairs_leave_out_fitted_queries():
    from spacelm.lib.judge.validity import sample_check_pairs
    from spacelm.lib.retrieval.beir import BeirData

    corpus = {f"d{i}": {"title": "", "text": f"passage {i}"} for i in range(12)}
    qrels = {f"q{j}": {f"d{j}": 3, f"d{j + 4}": 0} for j in range(4)}
    data = BeirData(corpus, {q: f"question {q}" for q in qrels}, qrels)
    pairs = sample_check_pairs(data, 4, 0, "s", exclude_queries={"q1", "q2"})
    assert {p["qid"] for p in pairs} == {"q0", "q3"}


def test_kappa_by_hand_matches_the_textbook_figure():
    # 2x2: agree on 3 of 4; p_o = 0.75, marginals (2,2) and (1,3)... by hand: p_e = (2*1 + 2*3)/16 = 0.5
    a, b = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    assert rc.kappa(a, b, 2) == pytest.approx((0.75 - 0.5) / (1 - 0.5))
    # quadratic weights on 0-3 with perfect agreement is 1
    assert rc.kappa(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3]), 4, quadratic=True) == pytest.approx(1.0)


def test_quadratic_kappa_by_hand_differs_from_linear_and_unweighted():
    """a = 0,0,0,1,2,3 against b = 0,0,1,1,3,3 on 0-3: row sums r = (3,1,1,1), column sums
    c = (2,2,0,2), n = 6; the two disagreements are 0→1 and 2→3, one step each. Chance-expected
    weighted disagreement Σ_i r_i Σ_j c_j w_ij / n: with w = (i-j)², Σ_j c_j w_ij = 20, 10, 12, 26 by
    row, so (60 + 10 + 12 + 26)/6 = 18, and κ = 1 - 2/18 = 8/9. Linear weights |i-j| give rows
    8, 6, 8, 10, (24 + 6 + 8 + 10)/6 = 8 and κ = 3/4; unweighted, p_o = 4/6, p_e = 10/36, κ = 7/13."""
    a, b = np.array([0, 0, 0, 1, 2, 3]), np.array([0, 0, 1, 1, 3, 3])
    assert rc.kappa(a, b, 4, quadratic=True) == pytest.approx(8 / 9)
    assert rc.kappa(a, b, 4) == pytest.approx(7 / 13)


def test_shipped_calibration_loads_and_matches_its_model():
    cal = rc.load_calibration("qwen2.5-coder-1.5b")
    assert cal.judge_model == "embedded:qwen2.5-coder-1.5b"
    assert len(cal.features) == len(cal.coef) == len(cal.mean) == len(cal.scale)
    assert cal.cut_points == sorted(cal.cut_points) and cal.fitted_on


def test_config_refuses_a_calibration_for_another_model():
    with pytest.raises(ConfigError, match="grading.method"):
        from_dict({"grading": {"method": "calibrated"}, "models": {"judge": {"model": "embedded:qwen2.5-coder-0.5b"}}})
    with pytest.raises(ConfigError, match="grading.calibration"):
        from_dict({"grading": {"method": "calibrated", "calibration": "nope"}})
    with pytest.raises(ConfigError, match="grading.debias"):
        from_dict({"grading": {"method": "calibrated", "debias": "both_orders"}})


class LeaningJudge:
    """P(yes) of the truth plus a lean of +0.1 toward yes, whatever is asked: "does the passage
    answer?" is true for a passage that holds the answer, its mirror ("does it leave the question
    unanswered?") for one that does not. The digit prompt gives a fixed spread."""

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            text = r.messages[-1]["content"]
            good = "holds the answer" in text
            if r.choices == ["yes", "no"]:
                truth = (not good) if rc.FEWSHOT_MIRROR in text else good
                y = (0.8 if truth else 0.2) + 0.1
                p = {"yes": y, "no": 1 - y}
            else:
                p = {"0": 0.25, "1": 0.25, "2": 0.25, "3": 0.25}
            on_done(i, Completion(text="yes", prompt_tokens=10, choice_probs=p))


def test_a_judge_asked_both_ways_loses_its_lean_and_diagnostics_stay_out_of_the_grade():
    """fewshot_both is the mean of P(yes) and 1 - P(yes to the mirror): the +0.1 lean cancels,
    0.8 and 0.2 come back where one way reads 0.9 and 0.3. A diagnostic feature (the paper's digit
    prompt) is measured and kept, but the grade and score are those without it."""
    from spacelm.config import LLMConfig

    cal = _cal(features=["fewshot_both"], mean=[0.0], scale=[1.0], coef=[1.0], intercept=0.0)
    assert rc.base_features(cal.features) == ["fewshot_yes", "fewshot_mirror"] and not cal.uses_embedding()
    assert cal.scorers() == {f: "embedded:qwen2.5-coder-1.5b" for f in ("fewshot_yes", "fewshot_mirror")}
    pairs = [{"qid": "q", "question": "what?", "chunk_id": c, "purpose": ["t"]} for c in ("a", "b")]
    passages = {"a": "this holds the answer", "b": "unrelated"}
    llm = LLM(LLMConfig(), backend=LeaningJudge())
    rows = rc.grade_pairs_calibrated(llm, pairs, passages, cal)
    assert rows[0]["features"]["fewshot_yes"] == pytest.approx(0.9)
    assert rows[0]["features"]["fewshot_both"] == pytest.approx(0.8)
    assert rows[1]["features"]["fewshot_both"] == pytest.approx(0.2)
    assert rows[0]["score"] == pytest.approx(math.log(0.8 / 0.2), abs=1e-3) and llm.stats.calls == 4
    with_digit = rc.grade_pairs_calibrated(
        LLM(LLMConfig(), backend=LeaningJudge()), pairs, passages, cal, extra=("digit_expected",)
    )
    assert with_digit[0]["features"]["digit_expected"] == pytest.approx(1.5)
    assert [r["score"] for r in with_digit] == [r["score"] for r in rows]


def test_cut_points_are_fitted_at_each_boundary_the_check_reads():
    """A score that orders labels 0 < 1 < 2 < 3 except that grade-3 and grade-2 passages overlap:
    c2 still separates relevant from not exactly, c1 separates 0 from 1 exactly."""
    score = np.concatenate([np.arange(0, 10), np.arange(10, 20), np.arange(20, 30), np.arange(25, 35)]).astype(float)
    labels = np.repeat([0, 1, 2, 3], 10)
    c1, c2, c3 = rc.cut_points(score, labels, np.ones(40, dtype=bool))
    assert ((score >= c2) == (labels >= 2)).all() and ((score >= c1) == (labels >= 1)).all()
    assert c2 < c3 and rc.kappa((labels == 3).astype(int), (score >= c3).astype(int), 2) > 0.5


def test_the_decomposition_keeps_its_columns_when_no_comparison_has_two_questions():
    from spacelm.lib.judge.relevance import TableDesign, feature_decomposition

    design = TableDesign(retrievers=("bm25",), top_k=(3,), seed=0)
    rows = [{"qid": "q", "chunk_id": "a", "grade": 2, "score": 0.1, "features": {"fewshot_yes": 0.6}}]
    df = feature_decomposition(design, [{"qid": "q"}], {"bm25": {"q": ["a"]}, "bm25+rerank": {"q": ["a"]}}, rows)
    assert df.empty and {"feature", "comparison", "diff", "ci_low", "ci_high"} <= set(df.columns)
