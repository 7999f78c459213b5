"""Conformance: our metrics (ranx) against pytrec_eval (trec_eval) on a fixture, to 1e-6. The run
pytrec_eval reads is built here from the ranked lists, never by the code under test (`to_run`):
fed the same dict, both sides would agree however wrong it were."""

import random

import numpy as np
import pytest

from spacelm.lib.retrieval.metrics import compare, evaluate, source_diagnostics

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.fixture
def fixture():
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(60)]
    qrels, rankings = {}, {}
    for q in range(40):
        rel = rng.sample(docs, rng.randint(1, 4))
        qrels[f"q{q}"] = {d: rng.choice([1, 2, 3]) for d in rel}
        ranked = rng.sample(docs, 30)
        rankings[f"q{q}"] = [(d, 1.0 / (i + 1)) for i, d in enumerate(ranked)]
    return qrels, rankings


def _trec_run(rankings: dict) -> dict:
    """The run as trec_eval reads it, {qid: {doc: score}}: rank r of a list scored 1000 - r, so
    the first document scores highest (every doc id in a list is distinct: no tie to break)."""
    run = {}
    for qid, ranked in rankings.items():
        docs = [doc for doc, _ in ranked]
        assert len(set(docs)) == len(docs)
        run[qid] = {doc: 1000.0 - rank for rank, doc in enumerate(docs, start=1)}
    return run


def test_ranx_agrees_with_trec_eval(fixture):
    qrels, rankings = fixture
    ours = evaluate(qrels, rankings, ["ndcg@10", "recall@5", "recall@20", "ndcg@3"], per_query=True)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3,10", "recall.5,20"})
    ref = ev.evaluate(_trec_run(rankings))
    for ours_name, trec_name in [
        ("ndcg@10", "ndcg_cut_10"),
        ("ndcg@3", "ndcg_cut_3"),
        ("recall@5", "recall_5"),
        ("recall@20", "recall_20"),
    ]:
        for q in qrels:
            assert ours["per_query"][ours_name][q] == pytest.approx(ref[q][trec_name], abs=1e-6), (ours_name, q)


def test_mrr_at_k_agrees_with_trec_reciprocal_rank_on_truncated_run(fixture):
    qrels, rankings = fixture
    ours = evaluate(qrels, rankings, ["mrr@10"], per_query=True)["per_query"]["mrr@10"]
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    ref = ev.evaluate(_trec_run({q: r[:10] for q, r in rankings.items()}))
    for q in qrels:
        assert ours[q] == pytest.approx(ref[q]["recip_rank"], abs=1e-6)


def test_hit_rate_by_hand():
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    rankings = {"a": [("z", 3.0), ("x", 2.0)], "b": [("z", 1.0), ("w", 0.5), ("y", 0.1)]}
    m = evaluate(qrels, rankings, ["hit_rate@2", "mrr@3"])["mean"]
    assert m["hit_rate@2"] == 0.5 and m["mrr@3"] == pytest.approx((1 / 2 + 1 / 3) / 2)


def test_missing_ranking_counts_as_miss():
    m = evaluate({"a": {"x": 1}, "b": {"y": 1}}, {"a": [("x", 1.0)]}, ["recall@1"])["mean"]
    assert m["recall@1"] == 0.5


def test_paired_comparison_table(fixture):
    qrels, rankings = fixture
    worse = {q: list(reversed(r)) for q, r in rankings.items()}
    df = compare(qrels, {"a": rankings, "b": worse}, ["ndcg@10"], stat_test="student")
    row = df.iloc[0]
    assert row.system_a == "a" and row.system_b == "b"
    # the p-value is the paired t-test on the per-query scores (checked against scipy), the
    # means are the per-query means, and the wins/ties/losses count the queries
    from scipy.stats import ttest_rel

    per_a = evaluate(qrels, rankings, ["ndcg@10"], per_query=True)["per_query"]["ndcg@10"]
    per_b = evaluate(qrels, worse, ["ndcg@10"], per_query=True)["per_query"]["ndcg@10"]
    a = [per_a[q] for q in sorted(qrels)]
    b = [per_b[q] for q in sorted(qrels)]
    assert row.mean_a == pytest.approx(sum(a) / len(a)) and row.mean_b == pytest.approx(sum(b) / len(b))
    assert row.p_value == pytest.approx(ttest_rel(a, b).pvalue, rel=1e-6)
    assert (row.wins_a, row.ties, row.wins_b) == (
        sum(x > y for x, y in zip(a, b)),
        sum(x == y for x, y in zip(a, b)),
        sum(x < y for x, y in zip(a, b)),
    )
    # one comparison: Holm leaves its p-value as it is; the MDE uses the SD of the differences
    from spacelm.lib.stats import min_detectable_difference

    assert row.p_holm == pytest.approx(row.p_value)
    sd = np.std(np.subtract(b, a), ddof=1)
    assert row.mde == pytest.approx(min_detectable_difference(sd / np.sqrt(len(a)), len(a) - 1)) or (
        np.isnan(row.mde) and sd == 0
    )


def test_source_diagnostics_strictness_levels():
    meta = {
        "d:0": {"doc_id": "d", "page_start": 1, "page_end": 1},
        "d:5": {"doc_id": "d", "page_start": 2, "page_end": 2},
        "d:9": {"doc_id": "d", "page_start": 7, "page_end": 7},
        "e:0": {"doc_id": "e", "page_start": 1, "page_end": 1},
    }
    src = {"q": {"chunk_id": "d:0", "doc_id": "d", "page_start": 1, "page_end": 1}}
    diag = source_diagnostics({"q": [("e:0", 1.0), ("d:5", 0.9), ("d:9", 0.8)]}, src, meta, [1, 2], page_window=1)["q"]
    assert diag == {
        "strict@1": 0.0,
        "doc@1": 0.0,
        "near_page@1": 0.0,
        "strict@2": 0.0,
        "doc@2": 1.0,
        "near_page@2": 1.0,
    }


def test_paired_comparison_clustered_by_source_chunk(fixture):
    """With clusters (issue 25), the p-value is the cluster-robust paired t test: with every
    query its own cluster it equals Student's paired t; with all queries in two clusters the
    test has 1 degree of freedom and says so."""
    from scipy.stats import ttest_rel

    from spacelm.lib.stats import paired_difference

    qrels, rankings = fixture
    worse = {q: list(reversed(r)) for q, r in rankings.items()}
    own = compare(qrels, {"a": rankings, "b": worse}, ["ndcg@10"], clusters={q: q for q in qrels}).iloc[0]
    per_a = evaluate(qrels, rankings, ["ndcg@10"], per_query=True)["per_query"]["ndcg@10"]
    per_b = evaluate(qrels, worse, ["ndcg@10"], per_query=True)["per_query"]["ndcg@10"]
    qs = sorted(qrels)
    a, b = [per_a[q] for q in qs], [per_b[q] for q in qs]
    assert own.p_value == pytest.approx(ttest_rel(a, b).pvalue, rel=1e-6)
    assert own.test.startswith("cluster-robust paired t")
    two = {q: ("c1" if i % 2 else "c2") for i, q in enumerate(qs)}
    grouped = compare(qrels, {"a": rankings, "b": worse}, ["ndcg@10"], clusters=two).iloc[0]
    expect = paired_difference(a, b, [two[q] for q in qs])
    assert grouped.p_value == pytest.approx(expect["p_value"]) and "2 source chunks" in grouped.test
