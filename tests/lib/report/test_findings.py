import pytest

from spacelm.lib.report import findings as F


def _t(retriever, k, measure, diff, p, comparison="reranked - retrieved", lo=None, hi=None, p_holm=None, se=1.0):
    return {
        "comparison": comparison,
        "retriever": retriever,
        "top_k": k,
        "measure": measure,
        "n_questions": 30,
        "n_source_chunks": 20,
        "value_a": 40.0,
        "value_b": 40.0 + diff,
        "diff": diff,
        "ci_low": diff - 1 if lo is None else lo,
        "ci_high": diff + 1 if hi is None else hi,
        "p_value": p,
        "p_holm": p if p_holm is None else p_holm,
        "se": se,
        "df": 19,
    }


def test_intersection_union_needs_no_correction_where_holm_would_refuse():
    # three cells at p = 0.03, 0.04, 0.045, all the paper's way. Holm over them: 0.03·3 = 0.09,
    # max(0.09, 0.04·2 = 0.08) = 0.09, max(0.09, 0.045) = 0.09: none below 0.05. The IUT asks every
    # cell to reject at 0.05 on its own: all three do.
    from spacelm.lib.stats import holm

    ps = [0.03, 0.04, 0.045]
    assert holm(ps) == [pytest.approx(0.09)] * 3
    rows = [{"diff": -3, "p_value": p, "p_holm": h} for p, h in zip(ps, holm(ps))]
    verdict, count = F.intersection_union_verdict(rows, [-1, -1, -1])
    assert verdict == F.HOLDS and count.startswith("3 of 3")
    rows[2]["p_value"] = 0.2  # one cell does not reject: the claim "every cell" is not shown
    assert F.intersection_union_verdict(rows, [-1, -1, -1])[0] == F.CANNOT_TELL
    assert F.intersection_union_verdict([], [])[0] == F.NOT_TESTED


def test_a_p_value_printed_as_zero_is_significant_not_missing():
    # the committed standard run's dense - bm25 test read p 0.0000 (four decimals), CI [+0.21, +0.52],
    # and the verdict said "0 of 1 cells significant": a p of 0 was taken for a missing one
    rows = [{"diff": 0.363, "p_value": 0.0, "p_holm": 0.0}]
    verdict, count = F.intersection_union_verdict(rows, [1])
    assert verdict == F.HOLDS and count.startswith("1 of 1")
    assert F.intersection_union_verdict(rows, [-1])[0] == F.REVERSED  # and against the paper, a reversal
    assert F.intersection_union_verdict([{"diff": 0.363, "p_value": None, "p_holm": None}], [1])[0] == F.CANNOT_TELL


def test_a_reversal_is_an_any_cell_decision_judged_with_holm():
    # one cell against the paper at raw p 0.04: Holm over 2 cells gives 0.08, no reversal
    rows = [{"diff": -3, "p_value": 0.01, "p_holm": 0.02}, {"diff": 4, "p_value": 0.04, "p_holm": 0.08}]
    assert F.intersection_union_verdict(rows, [-1, -1])[0] == F.CANNOT_TELL
    rows[1].update(p_value=0.01, p_holm=0.02)
    verdict, count = F.intersection_union_verdict(rows, [-1, -1])
    assert verdict == F.REVERSED and "1 against it (Holm)" in count


def test_level_rule_has_a_cannot_tell_branch():
    # paper 3.14, margin 0.5: band [2.64, 3.64]
    assert F.level_verdict(2.8, 3.5, 3.14) == F.HOLDS
    # the old rule ("the paper's mean inside our CI agrees") said agrees here; the CI is too wide
    assert F.level_verdict(2.5, 3.5, 3.14) == F.CANNOT_TELL
    assert F.level_verdict(1.0, 5.0, 3.14) == F.CANNOT_TELL
    assert F.level_verdict(3.7, 4.2, 3.14) == F.REVERSED and F.level_verdict(1.0, 2.6, 3.14) == F.REVERSED
    assert F.threshold_verdict(4.1, 4.6, 4.0) == F.HOLDS and F.threshold_verdict(3.5, 4.6, 4.0) == F.CANNOT_TELL
    assert F.threshold_verdict(2.0, 3.9, 4.0) == F.REVERSED and F.level_verdict(None, 1, 3.14) == F.CANNOT_TELL


def test_equivalence_by_two_one_sided_tests():
    # df 30: t_0.95 = 1.6973, t_0.975 = 2.0423
    verdict, ci90 = F.equivalence_verdict(0.0, 0.1, 30)
    assert verdict == F.HOLDS and ci90[1] == pytest.approx(0.16973, abs=1e-4)  # within ±0.25
    assert F.equivalence_verdict(0.0, 0.2, 30)[0] == F.CANNOT_TELL  # 90% CI ±0.339
    assert F.equivalence_verdict(0.6, 0.1, 30)[0] == F.REVERSED  # 95% CI [0.396, 0.804] wholly above 0.25
    assert F.equivalence_verdict(0.4, 0.1, 30)[0] == F.CANNOT_TELL  # 95% CI [0.196, 0.604] straddles 0.25


def test_gate_no_evidence_and_not_comparable():
    assert F.judge_status("fails") == "fails" and F.judge_status("too few pairs to tell") == "unchecked"
    assert F.judge_status(None) == "unchecked"
    assert F.judge_status("scifact: too few pairs to tell; trec-dl-2020: weak") == "checked"
    assert F.gate(F.HOLDS, "fails", level=False, comparable="yes") == F.NO_EVIDENCE
    assert F.gate(F.HOLDS, "unchecked", level=False, comparable="yes") == F.NO_EVIDENCE
    assert F.gate(F.REVERSED, "valid", level=True, comparable="no: judge x vs y") == F.NOT_COMPARABLE
    assert F.gate(F.REVERSED, "valid", level=True, comparable="yes") == F.REVERSED
    assert F.gate(F.HOLDS, "valid", level=False, comparable="no: judge x vs y") == F.HOLDS
    assert F.gate(F.NOT_TESTED, "fails", level=True, comparable="no") == F.NOT_TESTED


def test_a_judge_that_has_not_passed_its_controls_gives_no_evidence():
    """A rubric whose controls' lower bound is under the bar ("weak", passed False) withholds its
    findings; one that passed keeps them."""
    v = F.judge_verdicts(
        None,
        [
            {"rubric": "negative_rejection", "verdict": "weak", "passed": False},
            {"rubric": "faithfulness", "verdict": "valid", "passed": True},
        ],
    )
    assert v["negative_rejection"] == "weak (controls not passed)" and v["faithfulness"] == "valid"
    assert F.judge_status(v["negative_rejection"]) == "fails"
    assert F.gate(F.HOLDS, v["negative_rejection"], level=False, comparable="yes") == F.NO_EVIDENCE
    assert F.gate(F.HOLDS, v["faithfulness"], level=False, comparable="yes") == F.HOLDS


def test_table1_findings_rows_and_judge_verdicts():
    tests = [_t(r, k, "share_0_1", -5.0, 0.01) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t(r, k, "share_3", 4.0, 0.3) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t(r, k, "share_2", -1.0 if k < 10 else 1.0, 0.5) for r in ("bm25", "dense") for k in (3, 10)]
    tests += [_t("dense vs bm25", k, "mean_grade", 0.3, 0.04, comparison="dense - bm25", p_holm=0.08) for k in (3, 10)]
    shares = [
        {
            "retriever": "bm25",
            "stage": s,
            "top_k": k,
            "n_questions": 30,
            "n_source_chunks": 20,
            "percent_2_3": 95.0,
            "ci_low": 91.0,
            "ci_high": 98.0,
        }
        for s in ("retrieved", "reranked")
        for k in (3, 10)
    ]
    rows = F.table1_findings(tests, shares, chunk_tokens=256)
    by = {r["finding"]: r for r in rows}
    assert by["Reranking lowers the share of grades 0 and 1 at every top-k"]["verdict"] == F.HOLDS
    top3 = by["Reranking raises the share of grade 3 (BM25, top-3)"]
    assert top3["verdict"] == F.CANNOT_TELL and "40.00% → 44.00%" in top3["this_run"] and top3["n"] == "30 / 20"
    # se 1, df 19: (t_0.975 + t_0.8) · 1 = 2.0930 + 0.8610 = 2.954
    assert "±3.0 pp at α = 0.05" in top3["mde_rule"]
    # IUT: each top-k at p 0.04 holds even though Holm over the two would give 0.08
    assert by["The judge prefers the dense retriever to BM25"]["verdict"] == F.HOLDS
    assert by["Grades 2-3 exceed 90% in most cells"]["verdict"] == F.HOLDS
    assert by["512-token chunks: reranking raises top-3 grade 3"]["verdict"] == F.NOT_TESTED
    assert all(r["verdict"] in F.VERDICTS for r in rows)
    verdicts = F.judge_verdicts(
        [
            {"run": True, "source": "trec-dl-2020", "verdict": "weak"},
            {"run": False, "source": "scifact", "verdict": "not run"},
        ],
        [{"rubric": "faithfulness", "verdict": "valid"}],
    )
    out = F.paper_vs_run(
        rows + [{"finding": "x", "judge": "negative_rejection", "verdict": F.HOLDS}],
        verdicts,
        comparable="no: judge a vs b",
        grader=_grader(),
    )
    by = {r["finding"]: r for r in out}
    assert out[0]["judge_verdict"] == "trec-dl-2020: weak" and out[-1]["judge_verdict"] == "unchecked"
    assert out[-1]["verdict"] == F.NO_EVIDENCE  # an unchecked judge is no evidence, in the verdict itself
    assert by["Grades 2-3 exceed 90% in most cells"]["verdict"] == F.NOT_COMPARABLE  # a level, another judge
    assert by["Reranking lowers the share of grades 0 and 1 at every top-k"]["verdict"] == F.HOLDS
    assert all("level" not in r and r["comparable"] == "no: judge a vs b" for r in out)


def test_the_reranking_finding_at_the_papers_sizes_reads_the_chunk_size_study():
    """With Table 1 at 256 tokens, the 512- and 2,000-token findings come from the chunk-size
    study's tests at those sizes (top-3, every retriever); a size the study did not grade stays
    not tested, and the run's own tests are never read as another size's."""
    own = [_t(r, 3, "share_3", -1.0, 0.6) for r in ("bm25", "dense")]
    at_512 = [dict(_t(r, 3, "share_3", 6.0, 0.01), chunk_size=512) for r in ("bm25", "dense")]
    at_2000 = [dict(_t("bm25", 3, "share_3", 5.0, 0.01), chunk_size=2000)]
    at_2000 += [dict(_t("dense", 3, "share_3", 2.0, 0.4), chunk_size=2000)]
    by = {r["finding"]: r for r in F.table1_findings(own, [], 256, {512: at_512, 2000: at_2000})}
    r512 = by["512-token chunks: reranking raises top-3 grade 3"]
    assert r512["verdict"] == F.HOLDS and "chunk-size study at 512 tokens" in r512["this_run"]
    r2000 = by["2,000-token chunks: reranking raises top-3 grade 3"]
    assert r2000["verdict"] == F.CANNOT_TELL and "1 of 2 cells" in r2000["this_run"]
    assert r2000["paper"].startswith("BM25 39.66% → 44.76%")
    by = {r["finding"]: r for r in F.table1_findings(own, [], 256, {2000: at_2000})}
    assert by["512-token chunks: reranking raises top-3 grade 3"]["verdict"] == F.NOT_TESTED
    # the run's own Table 1 at 512 is the 512 finding; no study at 2,000 means no 2,000 row (its findings are above)
    by = {r["finding"]: r for r in F.table1_findings(own, [], 512)}
    assert by["512-token chunks: reranking raises top-3 grade 3"]["verdict"] == F.CANNOT_TELL
    assert "2,000-token chunks: reranking raises top-3 grade 3" not in by


def test_table2_findings():
    long = [
        {
            "metric": "noise_robustness",
            "setting": "3_wrong",
            "mean": 4.6,
            "std": 0.5,
            "n": 24,
            "n_source_chunks": 20,
            "ci_low": 4.3,
            "ci_high": 4.8,
        },
        {
            "metric": "negative_rejection",
            "setting": "5_wrong_only",
            "mean": 2.0,
            "std": 1.2,
            "n": 24,
            "ci_low": 1.6,
            "ci_high": 2.5,
        },
    ]
    tests = [
        {
            "metric": "faithfulness",
            "setting_a": "standard",
            "setting_b": "3_wrong",
            "n_questions": 24,
            "n_source_chunks": 20,
            "mean_a": 4.4,
            "mean_b": 4.3,
            "diff": -0.1,
            "ci_low": -0.2,
            "ci_high": 0.05,
            "p_value": 0.4,
            "p_holm": 0.8,
            "se": 0.05,
            "df": 19,
        }
    ]
    by = {r["judge"]: r for r in F.table2_findings(long, tests)}
    # 90% CI: -0.1 ± 1.7291 · 0.05 = [-0.186, -0.014], within ±0.25
    assert by["faithfulness"]["verdict"] == F.HOLDS and "4.40 → 4.30" in by["faithfulness"]["this_run"]
    assert by["faithfulness"]["n"] == "24 / 20"
    assert by["noise_robustness"]["verdict"] == F.HOLDS and by["noise_robustness"]["n"] == "24 / 20"
    assert by["negative_rejection"]["verdict"] == F.REVERSED  # [1.6, 2.5] wholly below 3.14 - 0.5
    assert "SD 1.20" in by["negative_rejection"]["this_run"]
    # the same equivalence from a judge whose controls move it less than the margin: cannot tell
    coarse = {r["judge"]: r for r in F.table2_findings(long, tests, {"faithfulness": 0.12})}
    assert coarse["faithfulness"]["verdict"] == F.CANNOT_TELL and "(here 0.12)" in coarse["faithfulness"]["rule"]
    fine = {r["judge"]: r for r in F.table2_findings(long, tests, {"faithfulness": 0.6})}
    assert fine["faithfulness"]["verdict"] == F.HOLDS


def test_paper_effects_from_the_papers_table():
    # BM25 top-3 grade 3: 39.66 → 44.76; grades 0-1: 2.12 + 3.44 → 1.29 + 1.78
    assert F.paper_effect("reranked - retrieved", "bm25", 3, "share_3") == pytest.approx(5.10)
    assert F.paper_effect("reranked - retrieved", "bm25", 3, "share_0_1") == pytest.approx(-2.49)
    # dense - bm25 mean grade at top-3: (0·1.73 + 2.44 + 2·53.35 + 3·42.47)/100 - (3.44 + 2·54.78 + 3·39.66)/100
    assert F.paper_effect("dense - bm25", "dense vs bm25", 3, "mean_grade") == pytest.approx(2.3655 - 2.3198)
    assert F.paper_effect("reranked - retrieved", "bm25", 4, "share_3") is None


def test_forest_rows_carry_the_paper_and_the_detectable_band():
    rows = F.forest_rows([_t("bm25", 3, "share_3", 2.0, 0.3), _t("bm25", 3, "mean_grade", 0.1, 0.3)])
    assert (
        len(rows) == 1 and rows[0]["paper"] == pytest.approx(5.10) and rows[0]["mde"] == pytest.approx(2.954, abs=1e-3)
    )


def test_cell_cis_are_spanned_once():
    rows = [{"ci_low": -5.0, "ci_high": -1.0}, {"ci_low": -2.0, "ci_high": 3.0}, {"ci_low": None, "ci_high": None}]
    assert F._span(rows, "{:+.1f}", " pp") == "cells' CIs within [-5.0, +3.0] pp"
    assert F._span([], "{:+.1f}") == "–"


def _in_domain(verdicts=("valid", "valid", "valid"), bias=0.0, half_width=0.005):
    """An in-domain judge check: boundary verdicts ge1/ge2/eq3 and a bias difference of `bias`
    (a share, or grade points) ± `half_width` between every pair of systems the findings compare."""
    d = {"diff": bias, "ci_low": bias - half_width, "ci_high": bias + half_width}
    pairs = ("bm25+rerank - bm25", "dense+rerank - dense", "dense - bm25")
    return {
        "run": True,
        "in_domain": True,
        "source": "space-corpus",
        "boundary_verdicts": {b: {"verdict": v, "reason": ""} for b, v in zip(("ge1", "ge2", "eq3"), verdicts)},
        "system_bias": {"differences": {p: {m: d for m in ("grade", "ge1", "ge2", "eq3")} for p in pairs}},
    }


def _grader(**kw):
    return {"shared": kw.pop("shared", {}), "in_domain": _in_domain(**kw), "bias_share": 0.5}


def _grade3_rows():
    t = _t("bm25", 3, "share_3", 6.0, 0.001)  # se 1 pp: detectable difference about 3 pp
    return F.table1_findings([t, _t("dense vs bm25", 3, "mean_grade", 0.3, 0.001, comparison="dense - bm25")], [], 256)


def _one(out, finding="Reranking raises the share of grade 3 (BM25, top-3)"):
    return next(r for r in out if r["finding"] == finding)


def test_one_gate_for_every_verdict_in_domain_validity_at_the_findings_boundary():
    """The grade-3 finding reads the = 3 boundary: valid in domain it keeps its verdict; weak at = 3
    (whatever the other boundaries and the judge's figures elsewhere) it is no evidence, and says why."""
    rows = _grade3_rows()
    ok = _one(F.paper_vs_run(rows, {"grader": "trec-dl-2020: weak"}, "no", _grader()))
    assert ok["verdict"] == F.HOLDS and ok["boundary"].startswith("eq3: valid")
    weak = _one(
        F.paper_vs_run(rows, {"grader": "trec-dl-2020: valid"}, "no", _grader(verdicts=("valid", "valid", "weak")))
    )
    assert weak["verdict"] == F.NO_EVIDENCE and "grade = 3" in weak["verdict_reason"]
    # the share of grades 0-1 reads the >= 2 boundary only: a weak = 3 does not touch it
    low = F.paper_vs_run(
        F.table1_findings([_t("bm25", 3, "share_0_1", -6.0, 0.001)], [], 256),
        {},
        "no",
        _grader(verdicts=("weak", "valid", "weak")),
    )
    assert _one(low, "Reranking lowers the share of grades 0 and 1 at every top-k")["verdict"] == F.HOLDS
    # no in-domain check at all: no evidence
    none = _one(F.paper_vs_run(rows, {"grader": "trec-dl-2020: valid"}, "no", {"shared": {}, "in_domain": None}))
    assert none["verdict"] == F.NO_EVIDENCE and "in-domain" in none["verdict_reason"]


def test_a_judge_sharing_a_systems_scorer_gives_no_evidence_on_findings_comparing_it():
    rows = _grade3_rows()
    shared = {"dense": "the judge shares the scorer of dense: cosine (minilm)"}
    out = F.paper_vs_run(rows, {}, "no", _grader(shared=shared))
    dense = _one(out, "The judge prefers the dense retriever to BM25")
    assert (
        dense["verdict"] == F.NO_EVIDENCE
        and dense["verdict_reason"] == "the relevance judge shares the scorer of dense"
    )
    assert "cosine (minilm)" in dense["judge_bias"]
    # the BM25 reranking finding compares no system the judge shares: it keeps its verdict
    assert _one(out)["verdict"] == F.HOLDS


def test_a_bias_between_the_compared_systems_as_large_as_the_effect_gives_no_evidence():
    """The grade-3 cell's detectable difference is about 3 pp: a bias interval within ±1.5 pp
    passes; a judge that adds 4 pp [3, 5] to the reranked lists' grade-3 share does not."""
    rows = _grade3_rows()
    small = _one(F.paper_vs_run(rows, {}, "no", _grader(bias=0.005, half_width=0.005)))
    assert small["verdict"] == F.HOLDS and "bm25+rerank − bm25: +0.50 pp" in small["judge_bias"]
    big = _one(F.paper_vs_run(rows, {}, "no", _grader(bias=0.04, half_width=0.01)))
    assert big["verdict"] == F.NO_EVIDENCE and "bias between bm25+rerank and bm25" in big["verdict_reason"]
