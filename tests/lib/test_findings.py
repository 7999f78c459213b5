from spacelm.lib import findings as F


def _t(retriever, k, measure, diff, p_holm, comparison="reranked - retrieved", lo=None, hi=None):
    return {"comparison": comparison, "retriever": retriever, "top_k": k, "measure": measure, "n_questions": 30,
            "value_a": 40.0, "value_b": 40.0 + diff, "diff": diff, "ci_low": diff - 1 if lo is None else lo,
            "ci_high": diff + 1 if hi is None else hi, "p_value": p_holm, "p_holm": p_holm, "mde": 5.0}


def test_direction_verdict_needs_every_cell_and_catches_the_opposite():
    rows = [{"diff": -3, "p_holm": 0.01}, {"diff": -2, "p_holm": 0.02}]
    assert F.direction_verdict(rows, [-1, -1])[0] == F.AGREES
    rows[1]["p_holm"] = 0.2
    verdict, count = F.direction_verdict(rows, [-1, -1])
    assert verdict == F.CANNOT_TELL and count.startswith("1 of 2")
    rows[1].update(diff=4, p_holm=0.001)
    assert F.direction_verdict(rows, [-1, -1])[0] == F.CONTRADICTS
    assert F.direction_verdict([], [])[0] == F.NOT_TESTED


def test_little_change_and_levels():
    assert F.little_change_verdict(-0.2, 0.1) == F.AGREES
    assert F.little_change_verdict(-0.6, 0.1) == F.CANNOT_TELL
    assert F.little_change_verdict(-0.9, -0.3) == F.CONTRADICTS
    assert F.level_verdict(4.1, 4.6, at_least=4.0) == F.AGREES
    assert F.level_verdict(3.5, 4.6, at_least=4.0) == F.CANNOT_TELL
    assert F.level_verdict(2.0, 3.9, at_least=4.0) == F.CONTRADICTS
    assert F.level_verdict(2.5, 3.5, inside=3.14) == F.AGREES and F.level_verdict(1.0, 2.0, inside=3.14) == F.CONTRADICTS


def test_table1_findings_rows_and_judge_verdicts():
    tests = [_t(r, k, "share_0_1", -5.0, 0.01) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t(r, k, "share_3", 4.0, 0.3) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t(r, k, "share_2", -1.0 if k < 10 else 1.0, 0.5) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t("dense vs bm25", k, "mean_grade", 0.3, 0.04, comparison="dense - bm25") for k in (3, 10)]
    shares = [{"retriever": "bm25", "stage": s, "top_k": k, "n_questions": 30, "percent_2_3": 95.0, "ci_low": 91.0,
               "ci_high": 98.0} for s in ("retrieved", "reranked") for k in (3, 10)]
    rows = F.table1_findings(tests, shares, chunk_tokens=256)
    by = {r["finding"]: r for r in rows}
    assert by["Reranking lowers the share of grades 0 and 1 at every top-k"]["verdict"] == F.AGREES
    top3 = by["Reranking raises the share of grade 3 (BM25, top-3)"]
    assert top3["verdict"] == F.CANNOT_TELL and "40.00% → 44.00%" in top3["this_run"] and top3["n"] == 30
    assert by["The judge prefers the dense retriever to BM25"]["verdict"] == F.AGREES
    assert by["Grades 2-3 exceed 90% in most cells"]["verdict"] == F.AGREES
    assert by["512-token chunks: reranking raises top-3 grade 3"]["verdict"] == F.NOT_TESTED
    verdicts = F.judge_verdicts([{"run": True, "source": "trec-dl-2020", "verdict": "weak"},
                                 {"run": False, "source": "scifact", "verdict": "not run"}],
                                [{"rubric": "faithfulness", "verdict": "valid"}])
    out = F.paper_vs_run(rows + [{"finding": "x", "judge": "negative_rejection"}], verdicts)
    assert out[0]["judge_verdict"] == "trec-dl-2020: weak" and out[-1]["judge_verdict"] == "unchecked"


def test_table2_findings():
    long = [{"metric": "noise_robustness", "setting": "3_wrong", "mean": 4.6, "std": 0.5, "n": 24, "ci_low": 4.3,
             "ci_high": 4.8},
            {"metric": "negative_rejection", "setting": "5_wrong_only", "mean": 2.0, "std": 1.2, "n": 24, "ci_low": 1.6,
             "ci_high": 2.5}]
    tests = [{"metric": "faithfulness", "setting_a": "standard", "setting_b": "3_wrong", "n_questions": 24, "mean_a": 4.4,
              "mean_b": 4.3, "diff": -0.1, "ci_low": -0.2, "ci_high": 0.05, "p_value": 0.4, "p_holm": 0.8, "mde": 0.4}]
    by = {r["judge"]: r for r in F.table2_findings(long, tests)}
    assert by["faithfulness"]["verdict"] == F.AGREES and "4.40 → 4.30" in by["faithfulness"]["this_run"]
    assert by["noise_robustness"]["verdict"] == F.AGREES
    assert by["negative_rejection"]["verdict"] == F.CONTRADICTS


def test_cell_cis_are_spanned_once():
    rows = [{"ci_low": -5.0, "ci_high": -1.0}, {"ci_low": -2.0, "ci_high": 3.0}, {"ci_low": None, "ci_high": None}]
    assert F._span(rows, "{:+.1f}", " pp") == "cells' CIs within [-5.0, +3.0] pp"
    assert F._span([], "{:+.1f}") == "–"
