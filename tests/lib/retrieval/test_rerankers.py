"""Our reranking logic with scripted stand-ins where no weights exist: the cross-encoder's
pairs and reshaping, the LLM reranker's expected grades, reordering a pool, and our
reciprocal-rank fusion against ranx's."""

from __future__ import annotations

import pytest

from spacelm.lib.llm.types import Completion
from spacelm.lib.retrieval import rerankers as retrieval
from spacelm.lib.retrieval.rerankers import CrossEncoderReranker, LLMReranker
from spacelm.lib.retrieval.systems import RerankedRetriever, rrf_fuse

TEXTS = {"a": "alpha passage", "b": "beta passage", "c": "gamma passage", "d": "delta passage"}


class _FirstStage:
    name = "stub"

    def __init__(self, lists):
        self.lists = lists

    def search(self, queries, k):
        return [[(d, 1.0 / (i + 1)) for i, d in enumerate(self.lists[q][:k])] for q in queries]


def test_cross_encoder_scores_every_pair_and_reshapes_per_query(monkeypatch):
    seen = []

    class Scripted:  # stands in for sentence_transformers.CrossEncoder
        def __init__(self, path, device):
            self.path = path

        def predict(self, pairs, batch_size, show_progress_bar):
            seen.extend(pairs)
            return [len(q) + len(p) / 100 for q, p in pairs]

    import sys
    import types

    # the package's place taken by a stand-in: importing the real one (torch, transformers) costs seconds
    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=Scripted))
    r = CrossEncoderReranker("some/model", TEXTS)
    scores = r.rescore(["q1", "query2"], [["a", "b"], ["c"]])
    assert seen == [("q1", "alpha passage"), ("q1", "beta passage"), ("query2", "gamma passage")]
    assert scores == [[2 + 13 / 100, 2 + 12 / 100], [6 + 13 / 100]]
    assert r.rescore(["q"], [[]]) == [[]]


class _ScriptedJudge:
    """Answers the relevance prompt with fixed option probabilities per passage text."""

    def __init__(self, probs_by_text):
        self.probs_by_text = probs_by_text
        self.requests = []

    def chat_many(self, reqs, progress=None):
        self.requests.extend(reqs)
        out = []
        for r in reqs:
            text = r.messages[-1]["content"]
            key = next(t for t in self.probs_by_text if t in text)
            probs = self.probs_by_text[key]
            if probs is None:  # an answer the parser cannot read
                out.append(Completion(text="maybe"))
            else:
                out.append(Completion(text=max(probs, key=probs.get), choice_probs=probs))
        return out


def test_llm_reranker_scores_by_expected_grade_and_reorders_the_pool():
    judge = _ScriptedJudge(
        {
            "alpha": {"0": 0.7, "1": 0.1, "2": 0.1, "3": 0.1},  # expected 0.6
            "beta": {"0": 0.0, "1": 0.0, "2": 0.5, "3": 0.5},  # expected 2.5
            "gamma": {"0": 0.0, "1": 1.0, "2": 0.0, "3": 0.0},  # expected 1.0
            "delta": None,  # unparseable: ranked last (-1), never silently 0
        }
    )
    rr = RerankedRetriever(_FirstStage({"q": ["a", "b", "c", "d"]}), LLMReranker(judge, TEXTS), pool=4)
    (ranking,) = rr.search(["q"], k=3)
    assert [d for d, _ in ranking] == ["b", "c", "a"]
    assert [s for _, s in ranking] == pytest.approx([2.5, 1.0, 0.6])
    assert all(r.choices == ["0", "1", "2", "3"] for r in judge.requests) and len(judge.requests) == 4
    (full,) = rr.search(["q"], k=4)
    assert full[-1] == ("d", -1.0)


def test_reranker_only_sees_the_first_stage_pool():
    judge = _ScriptedJudge({t.split()[0]: {"0": 0, "1": 0, "2": 0, "3": 1.0} for t in TEXTS.values()})
    rr = RerankedRetriever(_FirstStage({"q": ["a", "b", "c", "d"]}), LLMReranker(judge, TEXTS), pool=2)
    (ranking,) = rr.search(["q"], k=1)
    assert len(judge.requests) == 2 and ranking[0][0] in {"a", "b"}
    # equal scores are broken by chunk id, so the result is deterministic
    assert ranking[0][0] == "a"


def test_make_reranker_llm_needs_a_judge():
    from spacelm.config import RerankerConfig

    with pytest.raises(ValueError, match="needs a judge"):
        retrieval.make_reranker(RerankerConfig(kind="llm"), TEXTS)


def test_rrf_agrees_with_ranx_fuse():
    """Our fusion is kept because it works on our ranked lists and breaks ties by chunk id;
    its scores and order must be ranx's."""
    from ranx import Run, fuse

    lists = [[("a", 9.0), ("b", 8.0), ("c", 7.0), ("e", 1.0)], [("c", 0.9), ("a", 0.8), ("d", 0.7)]]
    ours = rrf_fuse(lists, k=10, rrf_k=60)
    runs = [Run({"q": {d: s for d, s in ranking}}) for ranking in lists]
    theirs = fuse(runs, method="rrf", params={"k": 60}).to_dict()["q"]
    assert dict(ours) == pytest.approx(theirs, rel=1e-9)
    assert [d for d, _ in ours] == sorted(theirs, key=lambda d: (-theirs[d], d))
