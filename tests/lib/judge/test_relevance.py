import pandas as pd
import pytest

from spacelm.lib.judge import relevance as grading


@pytest.fixture
def design():
    """Table 1 with BM25 alone at top-1 and top-2 (the library's own parameters, no config)."""
    return grading.TableDesign(retrievers=("bm25",), top_k=(1, 2), seed=13)


def _cells():
    # two questions; retrieved lists grade (0, 3) and (2, None); reranked (3, 0) and (2, 2)
    return {
        ("bm25", "retrieved", 1): {"a": [0], "b": [2]},
        ("bm25", "retrieved", 2): {"a": [0, 3], "b": [2, None]},
        ("bm25", "reranked", 1): {"a": [3], "b": [2]},
        ("bm25", "reranked", 2): {"a": [3, 0], "b": [2, 2]},
    }


def test_table1_percentages_exclude_missing_and_have_cis():
    df = grading.table1(_cells(), n_boot=200, seed=0)
    cell = df[(df.stage == "retrieved") & (df.top_k == 2)].set_index("grade")
    assert cell.loc[0, "percent"] == pytest.approx(100 / 3, abs=0.01) and cell.loc[0, "n"] == 3
    assert cell.loc[0, "missing"] == 1
    assert cell["percent"].sum() == pytest.approx(100, abs=0.05)
    assert (df["ci_low"] <= df["percent"] + 1e-9).all() and (df["percent"] <= df["ci_high"] + 1e-9).all()
    assert list(df.columns[:6]) == ["retriever", "stage", "top_k", "grade", "percent", "n"]


def test_table1_wide_marks_best_and_second():
    md = grading.table1_wide(grading.table1(_cells(), 50, 0), "md")
    top1 = [line for line in md.splitlines() if line.startswith("| Top-1")]
    # grade 3 at top-1: reranked 50% is best (bold), retrieved 0% second (underlined)
    assert "**50.00**" in top1[1] and "<u>0.00</u>" in top1[0]
    # grade 0 (lower is better): reranked 0% bold, retrieved 50% underlined; a tie shares bold
    assert top1[1].split("|")[3].strip() == "**0.00**" and top1[0].split("|")[3].strip() == "<u>50.00</u>"
    assert top1[0].split("|")[4].strip() == top1[1].split("|")[4].strip() == "**0.00**"
    tex = grading.table1_wide(grading.table1(_cells(), 50, 0), "tex")
    assert "\\textbf{" in tex and "\\begin{tabular}" in tex


def test_paired_tests_by_hand(design):
    """Means per question, by hand: top-1 retrieved (0, 2) vs reranked (3, 2); top-2 retrieved
    (1.5, 2) vs reranked (1.5, 2). The p-value is the cluster-robust t test's (each question its
    own cluster: the one-sample t test of the differences); Holm multiplies the smallest of the m
    tests that could be run in a family (one measure) by m."""
    df = grading.paired_tests(_cells(), design)
    mg = df[df.measure == "mean_grade"].set_index("top_k")
    assert list(mg.index) == [1, 2] and (mg.n_questions == 2).all()
    assert mg.loc[1, "value_a"] == 1.0 and mg.loc[1, "value_b"] == 2.5 and mg.loc[1, "diff"] == 1.5
    # differences (3, 0): mean 1.5, sd 2.1213, se 1.5, t = 1 on 1 df: p = 0.5
    assert mg.loc[1, "p_value"] == pytest.approx(0.5, abs=1e-4)
    # identical means: no test can be drawn, and the table says so instead of a p-value of 1
    assert mg.loc[2, "value_a"] == mg.loc[2, "value_b"] == 1.75 and pd.isna(mg.loc[2, "p_value"])
    for _, fam in df.groupby("family"):
        tested = fam["p_value"].notna().sum()
        if tested:
            assert fam["p_holm"].min() == pytest.approx(min(1.0, fam["p_value"].min() * tested), abs=1e-4)
    assert mg.loc[1, "p_holm"] == pytest.approx(0.5)  # the only test of its family that could run
    # shares in percentage points: top-1 grade 3 goes from 0% to 50%
    s3 = df[(df.measure == "share_3") & (df.top_k == 1)].iloc[0]
    assert s3["value_a"] == 0.0 and s3["value_b"] == 50.0 and s3["ci_low"] <= s3["diff"] <= s3["ci_high"]
    assert set(df.comparison) == {"reranked - retrieved"}  # one retriever: no dense - bm25 rows


def test_plan_pairs_are_distinct_and_include_validity(design):
    from types import SimpleNamespace as C

    chunks = {f"d:{i}": C(doc_id="d") for i in range(3)} | {"e:0": C(doc_id="e")}
    q = [{"qid": "q", "question": "?", "source_chunk_id": "d:2", "doc_id": "d"}]
    rankings = {"bm25": {"q": ["d:0", "d:1"]}, "bm25+rerank": {"q": ["d:1", "d:0"]}}
    pairs = grading.plan_pairs(design, q, rankings, chunks)
    assert [p["chunk_id"] for p in pairs] == ["d:0", "d:1", "d:2", "e:0"]
    assert pairs[2]["purpose"] == ["validity_source"] and pairs[3]["purpose"] == ["validity_random"]


def _row(qid, purpose, grade, expected=None):
    return {"qid": qid, "chunk_id": qid + purpose, "purpose": [purpose], "grade": grade, "expected_grade": expected}


def test_judge_validity_flags_a_judge_that_cannot_separate():
    rows = [_row(f"q{i}", "validity_source", 2) for i in range(5)] + [
        _row(f"q{i}", "validity_random", 2) for i in range(5)
    ]
    v = grading.judge_validity(rows, None, 0.75, 0.0)
    assert v["auc"] == 0.5 and v["verdict"].startswith("WARNING") and v["n_pairs"] == 10
    good = [_row(f"q{i}", "validity_source", 3, 2.8) for i in range(5)] + [
        _row(f"q{i}", "validity_random", 0, 0.3 + i / 10) for i in range(5)
    ]
    v = grading.judge_validity(good, good, 0.75, 0.0, min_pairs=10)
    assert v["auc"] == 1.0 and v["verdict"].startswith("The judge separates") and v["order_swap_agreement"] == 1.0
    # the same perfect separation on too few pairs earns no positive verdict
    v = grading.judge_validity(good, good, 0.75, 0.0, min_pairs=30)
    assert v["verdict"].startswith("Too few pairs to tell") and "10 source/random pairs" in v["verdict"]


def test_per_task_shares_cis_from_the_cluster_bootstrap():
    from spacelm.lib.judge.relevance import per_task_shares
    from spacelm.lib.stats import cluster_bootstrap_cis

    # six analysis questions from three source chunks, one direct_qa question
    grades = {"a1": [3, 3], "a2": [3, 1], "a3": [0, 1], "a4": [2, 3], "a5": [3, 3], "a6": [1, 0], "d1": [3, 2]}
    task_of = {q: "direct_qa" if q.startswith("d") else "analysis" for q in grades}
    cluster_of = {"a1": "c1", "a2": "c1", "a3": "c2", "a4": "c2", "a5": "c3", "a6": "c3", "d1": "c4"}
    df = per_task_shares({("bm25", "retrieved", 2): grades}, task_of, 400, 7, cluster_of)
    a = df[df.task == "analysis"].iloc[0]
    assert (a.questions, a.n_source_chunks, a.passages) == (6, 3, 12)
    assert a.pct_grade_3 == round(100 * 6 / 12, 2) and a.pct_grade_2_3 == round(100 * 7 / 12, 2)
    lists = [grades[q] for q in sorted(task_of) if q.startswith("a")]
    share3 = lambda ls: 100 * sum(g == 3 for lst in ls for g in lst) / sum(len(lst) for lst in ls)
    clusters = [cluster_of[f"a{i}"] for i in range(1, 7)]
    lo, hi = cluster_bootstrap_cis(lists, clusters, lambda ls: {"v": share3(ls)}, 400, 7)["v"]
    assert (a.pct_grade_3_ci_low, a.pct_grade_3_ci_high) == (round(lo, 2), round(hi, 2))
    assert a.pct_grade_3_ci_low < a.pct_grade_3 < a.pct_grade_3_ci_high
    d = df[df.task == "direct_qa"].iloc[0]  # one source chunk: no interval
    assert d.pct_grade_3 == 50.0 and pd.isna(d.pct_grade_3_ci_low) and pd.isna(d.pct_grade_2_3_ci_high)


def test_the_reranking_gain_at_top3_against_top10_and_dense_after_reranking():
    """Two questions. BM25 top-3 grades 3 share: q1 retrieved 1/3, reranked 3/3 (gain +66.7 pp);
    q2 0/3 -> 1/3 (+33.3). Top-10: q1 2/10 -> 3/10 (+10), q2 1/10 -> 2/10 (+10). Gain at 3 minus
    gain at 10: q1 +56.7, q2 +23.3; mean +40.0 pp."""
    g = lambda n3, n: [3] * n3 + [1] * (n - n3)  # noqa: E731
    cells = {
        ("bm25", "retrieved", 3): {"q1": g(1, 3), "q2": g(0, 3)},
        ("bm25", "reranked", 3): {"q1": g(3, 3), "q2": g(1, 3)},
        ("bm25", "retrieved", 10): {"q1": g(2, 10), "q2": g(1, 10)},
        ("bm25", "reranked", 10): {"q1": g(3, 10), "q2": g(2, 10)},
    }
    for r in ("dense",):  # dense: every list all 1s, and 2s after reranking
        for k in (3, 10):
            cells[(r, "retrieved", k)] = {q: [1] * k for q in ("q1", "q2")}
            cells[(r, "reranked", k)] = {q: [2] * k for q in ("q1", "q2")}
    design = grading.TableDesign(("bm25", "dense"), (3, 10), 0)
    t = grading.paired_tests(cells, design, {"q1": "d1", "q2": "d2"})
    gain = t[(t["comparison"] == "rerank gain: top-3 - top-10") & (t["retriever"] == "bm25")].iloc[0]
    assert gain["measure"] == "share_3" and gain["diff"] == pytest.approx(40.0, abs=1e-3)
    assert gain["value_b"] == pytest.approx(50.0, abs=1e-3) and gain["value_a"] == pytest.approx(10.0, abs=1e-3)
    after = t[t["comparison"] == "dense+rerank - bm25+rerank"].set_index("top_k")
    # bm25 reranked mean grade at top-3: q1 3.0, q2 (3+1+1)/3 = 1.667; dense reranked 2.0 for both
    assert after.loc[3, "diff"] == pytest.approx(((2 - 3.0) + (2 - 5 / 3)) / 2, abs=1e-3)
    assert not grading.gain_contrasts(cells, grading.TableDesign(("bm25",), (3, 5), 0))


def test_a_nested_design_grades_a_seeded_subset_to_the_largest_top_k():
    """deep_questions 2 of 4: every question's lists graded to top-1, two of them to top-3; the
    top-3 cells hold those two only (a shallow question's share is never read from its top-1)."""
    from types import SimpleNamespace

    design = grading.TableDesign(("bm25",), (1, 3), 7, deep_questions=2)
    qs = [{"qid": f"q{i}", "question": "x", "source_chunk_id": "c0", "doc_id": "d0"} for i in range(4)]
    ranks = {s: {q["qid"]: ["c1", "c2", "c3"] for q in qs} for s in ("bm25", "bm25+rerank")}
    chunks = {c: SimpleNamespace(doc_id="d0") for c in ("c0", "c1", "c2", "c3")}
    deep = grading.deep_qids(design, qs)
    assert len(deep) == 2 and deep == grading.deep_qids(design, qs)  # seeded: the same two each time
    pairs = {
        (p["qid"], p["chunk_id"]) for p in grading.plan_pairs(design, qs, ranks, chunks) if "table" in p["purpose"]
    }
    assert pairs == {(q, c) for q in deep for c in ("c1", "c2", "c3")} | {
        (q["qid"], "c1") for q in qs if q["qid"] not in deep
    }
    cells = grading.grade_lists(design, qs, ranks, {p: 3 for p in pairs})
    assert set(cells[("bm25", "retrieved", 1)]) == {q["qid"] for q in qs}
    assert set(cells[("bm25", "retrieved", 3)]) == deep
    everyone = grading.TableDesign(("bm25",), (1, 3), 7)
    assert grading.deep_qids(everyone, qs) == {q["qid"] for q in qs}
