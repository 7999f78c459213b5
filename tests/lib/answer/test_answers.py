import re
from types import SimpleNamespace as C

import pandas as pd
import pytest

from spacelm.config import from_dict
from spacelm.lib.answer import answers as answer


@pytest.mark.parametrize(
    "text,refusal",
    [
        ("The answer cannot be found in the provided passages.", True),
        ("The passages do not contain information about that.", True),
        ("I do not know.", True),
        ("Operators manoeuvre above a probability of 1e-4 [ca:2].", False),
    ],
)
def test_refusal_detection(text, refusal):
    assert answer.is_refusal(text) == refusal


def test_citation_check_by_chunk_id():
    from spacelm.lib.answer.citations import citation_check

    c = citation_check("A [d:1]. B [e:2]. C [zz:9].", ["d:1", "e:2"], {"d:1", "e:2", "f:0"})
    assert c["cited"] == ["d:1", "e:2"] and c["invalid"] == ["zz:9"]
    assert not c["citations_exist"] and not c["citations_in_context"]
    assert c["citation_accuracy"] == pytest.approx(2 / 3)
    assert citation_check("no cites", ["d:1"], set())["citation_accuracy"] is None


def test_overall_pass_and_pipeline_columns():
    def item(p, verdicts, claims=None, answerable=True):
        it = {
            "pipeline": p,
            "setting": "retrieved",
            "answerable": answerable,
            "latency_s": 1.0,
            "scores": {},
            "citation": {"citation_accuracy": None, "n_cited": 0, "n_valid": 0},
            "refusal": False,
            "binary": {k: {"verdict": v} for k, v in verdicts.items()},
        }
        if claims is not None:
            it["claims"] = [
                {"supported": s, "cited": c, "support": {x: (0.9 if s else 0.1) for x in c}} for s, c in claims
            ]
        return it

    good = {"answer_relevant": True, "grounded": True, "context_relevant": True}
    items = [
        item("B", good, [(True, ["a:1"]), (False, [])]),
        item("B", dict(good, grounded=False), [(True, [])]),
        item("B", {"answer_relevant": True}),  # a verdict missing: no overall verdict
        item("B", good, answerable=False),  # unanswerable questions are not in this table
        item("A", {"answer_relevant": True}),
    ]
    assert answer.overall_pass(items[0]) is True and answer.overall_pass(items[1]) is False
    assert answer.overall_pass(items[2]) is None
    t = answer.pipelines_table(items, 100, 0).set_index("pipeline")
    assert t.loc["B", "n"] == 3 and t.loc["B", "overall_pass"] == 0.5 and t.loc["B", "n_overall_pass"] == 2
    assert t.loc["A", "n_overall_pass"] == 0 and pd.isna(t.loc["A", "overall_pass"])
    # claims: 2 of 3 supported; one citation, and it supports its claim; 1 of 3 claims has a supporting citation
    assert t.loc["B", "claim_faithfulness"] == pytest.approx(0.667, abs=1e-3)
    assert t.loc["B", "citation_precision"] == 1.0 and t.loc["B", "citation_recall"] == pytest.approx(0.333, abs=1e-3)


def test_parse_binary():
    assert answer.parse_binary("Yes - it matches the reference.") == (True, "it matches the reference.")
    assert answer.parse_binary("**No**: unsupported claim") == (False, "unsupported claim")
    assert answer.parse_binary("maybe")[0] is None


def _chunks():
    return [C(chunk_id=f"{d}:{i}", doc_id=d, text=f"{d} text {i}") for d in "abcd" for i in range(3)]


def test_contexts_per_setting():
    cfg = from_dict(
        {"answer": {"n_wrong_values": [0, 3], "negative_n_wrong": 5, "pipelines": ["A", "B"], "retrieve_k": 2}}
    )
    assert [s["name"] for s in answer.settings(cfg.answer_design())] == ["standard", "3_wrong", "5_wrong"]
    q = {"qid": "q1", "task": "direct_qa", "question": "?", "source_chunk_id": "a:1", "doc_id": "a"}
    items = answer.build_items(cfg.answer_design(), [q], _chunks(), {"q1": ["b:0", "a:1", "c:2"]})
    by = {(it["pipeline"], it["setting"]): it for it in items}
    std, three, five = by[("table2", "standard")], by[("table2", "3_wrong")], by[("table2", "5_wrong")]
    assert std["passage_ids"] == ["a:1"] and std["rubrics"] == ["faithfulness", "relevance"]
    assert sorted(three["passage_ids"]) == sorted(["a:1"] + three["wrong_ids"]) and len(three["wrong_ids"]) == 3
    assert all(not w.startswith("a:") for w in three["wrong_ids"] + five["wrong_ids"])
    assert "a:1" not in five["passage_ids"] and five["rubrics"] == ["negative_rejection"]
    assert three["rubrics"] == ["faithfulness", "relevance", "noise_robustness"]
    assert by[("A", "closed_book")]["passage_ids"] == [] and by[("B", "retrieved")]["passage_ids"] == ["b:0", "a:1"]
    una = answer.unanswerable_items(
        cfg.answer_design(), [dict(q, qid="u1", answerable=False)], {"u1": ["c:0", "d:1", "b:2"]}
    )
    assert [(u["pipeline"], u["setting"], u["passage_ids"], u["rubrics"], u["answerable"]) for u in una] == [
        ("B", "unanswerable", ["c:0", "d:1"], ["negative_rejection"], False)
    ]
    again = answer.build_items(cfg.answer_design(), [q], _chunks(), {"q1": ["b:0", "a:1", "c:2"]})
    assert [it["passage_ids"] for it in again] == [it["passage_ids"] for it in items]  # seeded


def test_the_negative_setting_draws_its_passages_its_own_way_when_told():
    """`answer.negative_sampling` draws the no-relevant-passage setting apart from the noise settings
    (same_document noise, random other-document negatives here); unset, both draw alike."""
    q = {"qid": "q1", "task": "direct_qa", "question": "?", "source_chunk_id": "a:1", "doc_id": "a"}
    base = {"n_wrong_values": [0, 2], "negative_n_wrong": 2, "pipelines": [], "wrong_sampling": "same_document"}
    own = from_dict({"answer": {**base, "negative_sampling": "random"}})
    chunks = [
        C(chunk_id=f"{d}:{i}", doc_id=d, text=f"{d} words {i} " * 5, char_start=100 * i)
        for d in "abc"
        for i in range(6)
    ]
    by = {it["setting"]: it for it in answer.build_items(own.answer_design(), [q], chunks, {})}
    assert by["2_wrong"]["wrong_ids"] and all(w.startswith("a:") for w in by["2_wrong"]["wrong_ids"])
    negative = next(it for it in by.values() if it["rubrics"] == ["negative_rejection"])
    assert negative["wrong_ids"] and not any(w.startswith("a:") for w in negative["wrong_ids"])
    alike = from_dict({"answer": base})
    negative = next(
        it
        for it in answer.build_items(alike.answer_design(), [q], chunks, {})
        if it["rubrics"] == ["negative_rejection"]
    )
    assert negative["wrong_ids"] and all(w.startswith("a:") for w in negative["wrong_ids"])


def test_table2_long_and_wide():
    items = [
        {"pipeline": "table2", "setting": "standard", "rubrics": ["faithfulness"], "scores": {"faithfulness": s}}
        for s in (5, 4, None)
    ]
    items += [
        {
            "pipeline": "table2",
            "setting": "5_wrong",
            "rubrics": ["negative_rejection"],
            "scores": {"negative_rejection": 1},
        }
    ]
    long = answer.table2(items, ["standard", "5_wrong"], 100, 0)
    row = long[(long.metric == "faithfulness")].iloc[0]
    assert row["mean"] == 4.5 and row["n"] == 2 and row["missing"] == 1 and row["std"] == pytest.approx(0.707, abs=1e-3)
    assert list(long.columns[:5]) == ["metric", "setting", "mean", "std", "n"]
    md = answer.table2_wide(long, ["standard", "5_wrong"])
    cells = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in md.splitlines()[2:]}
    assert cells["Faithfulness"] == ["4.50 ± 0.71 (n=2)", "–"] and cells["Relevance"] == ["–", "–"]


def test_pipelines_table_latency_and_rates():
    its = [
        {
            "pipeline": "B",
            "latency_s": t,
            "binary": {"correct": {"verdict": v}},
            "scores": {"faithfulness": 4},
            "citation": {"citation_accuracy": 1.0, "n_cited": 1},
            "refusal": False,
        }
        for t, v in ((1, True), (3, False))
    ]
    df = answer.pipelines_table(its).iloc[0]
    assert df.correctness == 0.5 and df.latency_p50_s == 2 and df.refusal_rate == 0


def test_table2_tests_pair_questions_and_adjust_the_family():
    from scipy.stats import ttest_1samp

    def item(q, setting, rubric, score):
        return {"qid": q, "pipeline": "table2", "setting": setting, "rubrics": [rubric], "scores": {rubric: score}}

    std = [5, 4, 5, 3, 4, 5]
    wrong = [4, 4, 3, 2, 4, 3]
    items = [item(f"q{i}", "standard", "faithfulness", s) for i, s in enumerate(std)]
    items += [item(f"q{i}", "3_wrong", "faithfulness", s) for i, s in enumerate(wrong)]
    items += [item(f"q{i}", "standard", "relevance", 4) for i in range(6)]
    items += [item(f"q{i}", "3_wrong", "relevance", 4 if i else None) for i in range(6)]  # q0 unscored
    df = answer.table2_tests(items, ["standard", "3_wrong"], 200, 0).set_index("metric")
    f = df.loc["faithfulness"]
    assert f["n_questions"] == 6 and f["diff"] == pytest.approx(-1.0)
    # every question its own source chunk: the cluster-robust t test is the one-sample t test of
    # the differences (-1, 0, -2, -1, 0, -2: mean -1, sd √0.8, t = -2.739 on 5 df)
    p = ttest_1samp([b - a for a, b in zip(std, wrong)], 0).pvalue
    assert f["p_value"] == pytest.approx(p, abs=1e-4) and f["p_holm"] == pytest.approx(
        p, abs=1e-4
    )  # one test in its family
    assert f["n_source_chunks"] == 6 and f["family"] == "faithfulness / settings - standard"
    r = df.loc["relevance"]
    assert r["n_questions"] == 5 and r["diff"] == 0 and pd.isna(r["p_value"]) and pd.isna(r["mde_cell"])


def test_fact_check_catches_a_vague_answer_against_the_reference():
    from spacelm.lib.answer.answers import fact_check, quantities

    assert quantities("about 100 km in 2 hours, 10,000 kg and 1.5 %") == [
        (100.0, "km"),
        (2.0, "hours"),
        (10000.0, "kg"),
        (1.5, "%"),
    ]
    bad = fact_check("The orbit is about 100 km high.", "The perigee is 261 km.")
    assert bad["verdict"] is False and bad["missing_numbers"] == ["261 km"] and bad["contradicted"] == ["261 km"]
    ok = fact_check("ESA measured a perigee of 261 km.", "ESA gives a perigee of 261 km.")
    assert ok["verdict"] is True and ok["numbers"] == 1 and ok["entities"] == 1
    assert fact_check("It was Kourou.", "It launched from Baikonur.")["missing_entities"] == ["Baikonur"]
    assert fact_check("Yes, it does.", "it is a good idea.")["verdict"] is None  # nothing to check


def test_refusal_rates_phrase_and_judge_side_by_side():
    """4 answers where the passages cannot answer: phrase check refusals 1,1,0,0; the judge says
    yes on 1,0,0,0 -> rates 0.5 and 0.25, agreement 3/4; rubric 5,5,1,3 -> mean 3.5, 4-5 share 0.5."""
    from spacelm.lib.answer.answers import refusal_rates

    items = []
    for refused, judged, score in [(True, True, 5), (True, False, 5), (False, False, 1), (False, False, 3)]:
        items.append(
            {
                "setting": "5_wrong",
                "rubrics": ["negative_rejection"],
                "refusal": refused,
                "binary": {"refusal": {"verdict": judged}},
                "scores": {"negative_rejection": score},
            }
        )
    items.append({"setting": "standard", "rubrics": ["faithfulness"], "refusal": False, "binary": {}, "scores": {}})
    (r,) = refusal_rates(items)
    assert (
        r["setting"] == "5_wrong"
        and r["n"] == 4
        and r["refusal_rate_phrase"] == 0.5
        and r["refusal_rate_judge"] == 0.25
    )
    assert r["agreement"] == 0.75 and r["rubric_mean"] == 3.5 and r["rubric_declines_rate"] == 0.5
    assert 0 < r["judge_ci_low"] < 0.25 < r["judge_ci_high"] < 1


def _judged_item(qid: str, question: str, ids: list[str]) -> dict:
    return {
        "qid": qid,
        "question": question,
        "answer": f"An answer to {qid} [{ids[0]}].",
        "passage_ids": ids,
        "wrong_ids": ["w:1"],
        "rubrics": ["faithfulness", "relevance", "noise_robustness"],
        "reference_answer": "The reference.",
        "scores": {},
        "expected_scores": {},
        "raw_judge": {},
        "binary": {},
    }


def test_every_judge_of_one_answer_shares_the_answer_prefix():
    """The rubric and yes/no judges of one answer differ only in their last part (the task): the
    question, documents and answer come first, identical, so the model evaluates them once.
    Noise robustness reads other documents (the wrong ones), so it has its own prefix."""
    from spacelm.lib.answer.answers import binary_requests, rubric_requests

    text_of = {"d:1": "Passage one.", "d:2": "Passage two.", "w:1": "A wrong passage."}
    it = _judged_item("q1", "What is one?", ["d:1", "d:2"])
    reqs = [(n, r) for _, n, r in rubric_requests([it], text_of) + binary_requests([it], text_of)]
    assert sorted(n for n, _ in reqs) == sorted(
        ["faithfulness", "relevance", "noise_robustness", "correct", "answer_relevant", "grounded", "context_relevant"]
    )
    shared = [r for n, r in reqs if n != "noise_robustness"]
    systems = {r.messages[0]["content"] for r in shared}
    prefixes = {re.split(r"Reference answer:|Task - ", r.messages[1]["content"])[0] for r in shared}
    assert len(systems) == 1 and len(prefixes) == 1
    (prefix,) = prefixes
    assert "What is one?" in prefix and "Passage two." in prefix and "An answer to q1" in prefix
    noise = next(r for n, r in reqs if n == "noise_robustness")
    assert "A wrong passage." in noise.messages[1]["content"] and "Passage one." not in noise.messages[1]["content"]
    correct = next(r for n, r in reqs if n == "correct")
    assert (
        "The reference." in correct.messages[1]["content"].split("Task - ")[0]
        or "The reference." in (correct.messages[1]["content"].split(prefix)[1])
    )


def test_judge_answers_sends_one_batch_with_each_answers_calls_back_to_back():
    """One chat_many for rubrics and yes/no judges: the LLM sends a batch in prompt order, so the
    calls on one answer are adjacent (the prefix cache keeps their shared beginning)."""
    from spacelm.config import LLMConfig
    from spacelm.lib.answer.answers import judge_answers
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.types import Completion

    class Recorder:
        def __init__(self):
            self.batches = []

        def complete_many(self, reqs, on_done):
            self.batches.append(list(reqs))
            for i, r in enumerate(reqs):
                text = r.choices[-1]
                on_done(i, Completion(text=text, choice_probs={c: 1.0 / len(r.choices) for c in r.choices}))

    text_of = {"d:1": "Passage one.", "d:2": "Passage two.", "w:1": "A wrong passage."}
    items = [_judged_item("q1", "What is one?", ["d:1"]), _judged_item("q2", "What is two?", ["d:2"])]
    rec = Recorder()
    judge_answers(LLM(LLMConfig(), backend=rec), items, items, text_of)
    assert len(rec.batches) == 1
    owners = ["q1" if "What is one?" in r.messages[1]["content"] else "q2" for r in rec.batches[0]]
    assert owners == sorted(owners)  # each answer's calls back to back
    for it in items:
        assert set(it["scores"]) == {"faithfulness", "relevance", "noise_robustness"}
        assert all(v == 5 for v in it["scores"].values())
        assert set(it["binary"]) == {"correct", "answer_relevant", "grounded", "context_relevant"}
        assert all(b["verdict"] is False for b in it["binary"].values())


def test_a_task_file_holds_no_system_part():
    """Task files are rendered inside a frame; a separator line in one is refused by name."""
    from spacelm.lib.llm import prompting

    assert "Score (1-5):" in prompting.task_text("judge_faithfulness")
    assert prompting.template_hash("judge_faithfulness") != prompting.template_hash("judge_relevance")
    with pytest.raises(ValueError, match="judge_answer.txt is a task for a frame"):
        prompting.task_text.__wrapped__("judge_answer")


def test_a_rubric_score_is_the_digit_or_the_expected_score_never_one_for_the_other():
    from spacelm.lib.answer.answers import rubric_score
    from spacelm.lib.llm.scores import Judgement

    j = Judgement(value=4, raw="4", probs={4: 0.5, 5: 0.5}, expected=4.5)
    assert rubric_score(j, "digit") == 4 and rubric_score(j, "expected") == 4.5
    no_probs = Judgement(value=4, raw="4", probs=None, expected=None)
    assert rubric_score(no_probs, "digit") == 4 and rubric_score(no_probs, "expected") is None


def test_the_refusal_judge_asks_both_ways_so_a_lean_to_yes_cancels():
    """A stand-in judge that leans to "yes" by 0.3 whatever it is asked, and otherwise reads the
    reply correctly: asked only "does it decline?", it would call both replies refusals; asked
    also "does it give an answer?", the lean cancels and each reply gets its own verdict. A
    backend without probabilities whose two answers disagree gives no verdict, never a guess."""
    from spacelm.config import LLMConfig
    from spacelm.lib.answer.answers import judge_refusal
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.types import Completion

    class LeansYes:
        def __init__(self, probs: bool):
            self.probs, self.asked = probs, []

        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                content = r.messages[1]["content"]
                declines = "not in the passages" in content
                mirrored = "give an answer" in content
                self.asked.append(mirrored)
                truth = declines != mirrored  # the true yes/no to the question as asked
                p = min(1.0, (0.6 if truth else 0.2) + 0.3)
                if self.probs:
                    on_done(i, Completion(text="yes" if p > 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
                else:
                    on_done(i, Completion(text="yes"))

    items = [
        {"qid": "q1", "question": "Which threshold?", "answer": "That is not in the passages."},
        {"qid": "q2", "question": "Which threshold?", "answer": "A probability of 1e-4."},
    ]
    backend = LeansYes(probs=True)
    judge_refusal(LLM(LLMConfig(), backend=backend), items)
    assert sorted(backend.asked) == [False, False, True, True]
    r1, r2 = items[0]["binary"]["refusal"], items[1]["binary"]["refusal"]
    assert r1["p_yes_declines"] == pytest.approx(0.9) and r2["p_yes_declines"] == pytest.approx(0.5)
    assert r1["verdict"] is True and r1["p_yes"] == pytest.approx((0.9 + 1 - 0.5) / 2)
    assert r2["verdict"] is False and r2["p_yes"] == pytest.approx((0.5 + 1 - 0.9) / 2)

    judge_refusal(LLM(LLMConfig(), backend=LeansYes(probs=False)), items)
    assert [it["binary"]["refusal"]["verdict"] for it in items] == [None, None]
    assert items[0]["binary"]["refusal"]["p_yes"] == 0.5


def test_a_yes_no_question_asked_both_ways_reads_the_mirror_as_its_complement():
    from spacelm.lib.llm.scores import mirrored_p_yes, verdict_of

    assert mirrored_p_yes(0.7, 0.1) == pytest.approx(0.8)
    assert mirrored_p_yes(0.7, None) is None and verdict_of(None) is None
    assert verdict_of(0.5) is None and verdict_of(0.51) is True and verdict_of(0.2) is False


def test_table2_per_task_means_with_cluster_t_cis():
    from spacelm.lib.answer.answers import table2_per_task
    from spacelm.lib.stats import cluster_t

    scores = [5, 4, 4, 2, 3, 5]
    chunks = ["c1", "c1", "c2", "c2", "c3", "c3"]
    items = [
        {"pipeline": "table2", "setting": "standard", "task": "analysis", "qid": f"q{i}", "source_chunk_id": c}
        | {"scores": {"faithfulness": s}}
        for i, (s, c) in enumerate(zip(scores, chunks))
    ]
    other = {"pipeline": "B", "setting": "standard", "task": "analysis", "qid": "x", "scores": {"faithfulness": 1}}
    items.append(other)
    items.append(
        {"pipeline": "table2", "setting": "standard", "task": "direct_qa", "qid": "d", "source_chunk_id": "c9"}
        | {"scores": {"faithfulness": 1}}
    )
    df = table2_per_task(items)
    a = df[df.task == "analysis"].iloc[0]
    c = cluster_t(scores, chunks)
    assert (a.n, a.n_source_chunks, a.faithfulness) == (6, 3, round(sum(scores) / 6, 4))  # pipeline B left out
    assert a.faithfulness_ci_low == round(max(1, c["ci_low"]), 3)
    assert a.faithfulness_ci_high == round(min(5, c["ci_high"]), 3)
    assert 1 <= a.faithfulness_ci_low < a.faithfulness < a.faithfulness_ci_high <= 5
    d = df[df.task == "direct_qa"].iloc[0]
    assert d.faithfulness == 1 and d.faithfulness_ci_low != d.faithfulness_ci_low  # one source chunk: no interval


def test_a_run_without_pipelines_writes_a_pipelines_table_every_reader_parses(tmp_path):
    import pandas as pd

    from spacelm.lib.answer.answers import pipelines_table
    from spacelm.lib.io import write_dataframe

    write_dataframe(pipelines_table([{"pipeline": "table2", "answerable": True}]), tmp_path / "p.csv")
    got = pd.read_csv(tmp_path / "p.csv")
    assert list(got.columns) == ["pipeline", "n"] and got.empty
