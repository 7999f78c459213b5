import json

import numpy as np
import pytest

from spacelm.config import BM25Config, DenseConfig
from spacelm.lib.retrieval.base import top_k
from spacelm.lib.retrieval.bm25 import BM25Retriever
from spacelm.lib.retrieval.dense import DenseRetriever
from spacelm.lib.retrieval.systems import HybridRetriever, identical_lists, pool_size, rrf_fuse

IDS = ["a:0", "a:1", "b:0", "b:1", "c:0"]
TEXTS = [
    "Collision avoidance manoeuvres are planned when the probability of collision exceeds a threshold.",
    "Ground stations track the satellite during passes and uplink commands.",
    "Atmospheric drag increases during geomagnetic storms and lowers satellite orbits.",
    "Whipple shields protect spacecraft from hypervelocity impacts of small debris.",
    "Re-entry casualty risk must stay below one in ten thousand for uncontrolled re-entries.",
]


def test_top_k_breaks_ties_by_id():
    scores = np.array([1.0, 2.0, 2.0, 0.5, 2.0])
    assert top_k(scores, ["e", "d", "b", "a", "c"], 2) == [("b", 2.0), ("c", 2.0)]
    assert [d for d, _ in top_k(scores, ["e", "d", "b", "a", "c"], 10)] == ["b", "c", "d", "e", "a"]


def test_bm25_finds_the_right_chunk_and_is_deterministic(tmp_path):
    r = BM25Retriever(BM25Config()).index(IDS, TEXTS)
    res = r.search(["when should a collision avoidance manoeuvre be planned?", "storms and drag"], 3)
    assert res[0][0][0] == "a:0" and res[1][0][0] == "b:0"
    # zero-score documents fill the list in id order
    empty = r.search(["zzzz unknown words"], 5)[0]
    assert [d for d, _ in empty] == sorted(IDS) and all(s == 0 for _, s in empty)
    r.save(tmp_path / "idx")
    meta = json.loads((tmp_path / "idx" / "spacelm_bm25.json").read_text())
    assert meta["params"]["k1"] == 1.2 and meta["ids"] == IDS
    again = BM25Retriever.load(tmp_path / "idx")
    assert again.search(["storms and drag"], 3) == res[1:]


def test_rrf_fusion():
    fused = rrf_fuse([[("x", 9), ("y", 8)], [("y", 5), ("z", 4)]], k=3, rrf_k=60)
    assert [d for d, _ in fused] == ["y", "x", "z"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


@pytest.fixture(scope="module")
def dense():
    return DenseRetriever.from_config(DenseConfig(model="embedded:minilm")).index(IDS, TEXTS, progress=None)


@pytest.mark.slow
def test_dense_semantic_match(dense):
    res = dense.search(["How is a spacecraft protected against tiny fast particles?"], 2)[0]
    assert res[0][0] == "b:1" and res[0][1] >= res[1][1]


@pytest.mark.slow
def test_embedding_cache_avoids_reencoding(tmp_path):
    d1 = DenseRetriever.from_config(DenseConfig(model="embedded:minilm"), tmp_path).index(IDS, TEXTS, progress=None)
    d2 = DenseRetriever.from_config(DenseConfig(model="embedded:minilm"), tmp_path).index(IDS, TEXTS, progress=None)
    assert d1.encoder.encoded == len(IDS) and d2.encoder.encoded == 0
    q = ["drag during storms"]
    assert d1.search(q, 3) == d2.search(q, 3)


@pytest.mark.slow
def test_hybrid_contains_both(dense):
    bm25 = BM25Retriever(BM25Config()).index(IDS, TEXTS)
    res = HybridRetriever([bm25, dense], depth=5).search(["casualty risk of re-entry"], 5)[0]
    assert res[0][0] == "c:0" and len(res) == 5


def test_pool_size_share_count_and_bounds():
    assert pool_size(0.1, 199, [3, 10]) == 20  # a tenth, rounded up
    assert pool_size(0.01, 199, [3, 10]) == 10  # never below the largest k
    assert pool_size(100, 50, [10]) == 50  # never beyond the corpus
    assert pool_size(30, 1000, [10]) == 30


def test_identical_lists_counts_same_order_only():
    r = {
        "bm25+rerank": {"q1": [("a", 1), ("b", 0.5)], "q2": [("a", 1), ("b", 0.5)]},
        "dense+rerank": {"q1": [("a", 0.9), ("b", 0.1)], "q2": [("b", 1), ("a", 0.5)]},
    }
    assert identical_lists(r, ["q1", "q2"], 2) == 0.5
    assert identical_lists(r, ["q1", "q2"], 1) == 0.5
    assert identical_lists({"bm25+rerank": r["bm25+rerank"]}, ["q1"], 2) is None
