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
    fine = {"faithfulness": F.control_gap(_controls([1.0, 1.1, 0.9, 1.2, 0.8] * 2), "faithfulness")}
    by = {r["judge"]: r for r in F.table2_findings(long, tests, fine)}
    # 90% CI: -0.1 ± 1.7291 · 0.05 = [-0.186, -0.014], within ±0.25
    assert by["faithfulness"]["verdict"] == F.HOLDS and "4.40 → 4.30" in by["faithfulness"]["this_run"]
    assert by["faithfulness"]["n"] == "24 / 20"
    assert by["noise_robustness"]["verdict"] == F.HOLDS and by["noise_robustness"]["n"] == "24 / 20"
    assert by["negative_rejection"]["verdict"] == F.REVERSED  # [1.6, 2.5] wholly below 3.14 - 0.5
    assert "SD 1.20" in by["negative_rejection"]["this_run"] and "5_wrong_only" in by["negative_rejection"]["this_run"]
    # no control gap measured: the instrument's resolution is unknown, so no evidence
    blind = {r["judge"]: r for r in F.table2_findings(long, tests)}["faithfulness"]
    assert blind["verdict"] == F.NO_EVIDENCE and "has no lower bound" in blind["verdict_reason"]


def _controls(gaps, kind="unrelated_claim", rubric="faithfulness"):
    """Scored known-answer controls (judge_check/controls.jsonl rows), one question each, whose
    good - bad gaps are `gaps`."""
    return [
        {"qid": f"{kind}-{i}", "rubric": rubric, "kind": kind, "good_score": 4.0 + g, "bad_score": 4.0}
        for i, g in enumerate(gaps)
    ]


def _equivalence_test(metric="faithfulness"):
    """A standard vs 3-wrong test whose 90% CI [-0.086, 0.086] lies well within ±0.25."""
    return {
        "metric": metric,
        "setting_a": "standard",
        "setting_b": "3_wrong",
        "n_questions": 30,
        "n_source_chunks": 30,
        "mean_a": 4.0,
        "mean_b": 4.0,
        "diff": 0.0,
        "ci_low": -0.1,
        "ci_high": 0.1,
        "p_value": 1.0,
        "p_holm": 1.0,
        "se": 0.05,
        "df": 29,
    }


def test_a_margin_too_wide_for_its_instrument_gives_no_evidence():
    """The issue's case: the judge moves 0.28 on average between a good and a bad answer; the old
    gate (mean gap >= the margin 0.25) let "changes little" hold. Its lower 95% bound is far under
    twice the margin: the instrument cannot resolve ±0.25, so the flat scores are no evidence."""
    gaps = [0.1, 0.4, 0.2, 0.35, 0.3, 0.15, 0.45, 0.25, 0.3, 0.3]  # mean 0.28
    gap = F.control_gap(_controls(gaps), "faithfulness", ["unrelated_claim"])
    assert gap["n"] == 10 and gap["mean"] == pytest.approx(0.28) and gap["low"] < 0.5
    (row,) = F.table2_findings([], [_equivalence_test()], {"faithfulness": gap}, {"faithfulness": 0.25})[:1]
    assert F.equivalence_verdict(0.0, 0.05, 29)[0] == F.HOLDS  # the tests alone would say holds
    assert row["verdict"] == F.NO_EVIDENCE
    assert row["verdict_reason"].startswith(
        f"the instrument cannot resolve the margin (control gap lower bound {gap['low']:.3f} < 2 × margin 0.25 = 0.5"
    )
    assert row["margin"] == 0.25 and row["control_gap_low"] == round(gap["low"], 3)
    # a margin the same instrument resolves (2 × 0.08 = 0.16 under its lower bound) lets the tests speak
    (narrow,) = F.table2_findings([], [_equivalence_test()], {"faithfulness": gap}, {"faithfulness": 0.08})[:1]
    assert gap["low"] >= 0.16 and narrow["verdict"] == F.CANNOT_TELL  # 90% CI ±0.085 is not within ±0.08
    # and the judge's gate keeps its reason first, the resolution after it
    out = F.paper_vs_run([row], {"faithfulness": "valid"}, "no")[0]
    assert out["verdict"] == F.NO_EVIDENCE and out["verdict_reason"].startswith("the instrument cannot resolve")
    out = F.paper_vs_run([row], {}, "no")[0]
    assert out["verdict_reason"].startswith("the faithfulness judge's known-answer controls: unchecked; the instrument")


def test_a_control_gap_whose_lower_bound_clears_twice_the_margin_lets_holds_stand():
    gap = F.control_gap(_controls([0.9, 1.1, 1.0, 0.8, 1.2, 1.0]), "faithfulness", ["unrelated_claim"])
    assert gap["low"] >= 0.5
    (row,) = F.table2_findings([], [_equivalence_test()], {"faithfulness": gap}, {"faithfulness": 0.25})[:1]
    assert row["verdict"] == F.HOLDS and row["verdict_reason"].startswith("the instrument resolves the margin")
    out = F.paper_vs_run([row], {"faithfulness": "valid"}, "no")[0]
    assert out["verdict"] == F.HOLDS and out["margin"] == 0.25 and out["control_gap_low"] >= 0.5


def test_the_gap_is_read_at_the_failure_the_setting_can_cause():
    """One negation control with a gap of 1.4 lifts the rubric's overall gap; the gap on claims taken
    from an injected passage (the failure wrong passages cause) stays small, and it is the one read."""
    rows = _controls([1.4, 1.4, 1.3, 1.5], kind="negated") + _controls([0.15, 0.1, 0.2, 0.12, 0.18, 0.15])
    relevant = F.control_gap(rows, "faithfulness", ["unrelated_claim", "partial"])
    overall = F.control_gap(rows, "faithfulness", [])
    assert relevant["n"] == 6 and overall["n"] == 10 and relevant["low"] < 0.5 <= overall["mean"]
    assert "controls of kind unrelated_claim, partial" in relevant["basis"]
    # at a margin of 0.09 (0.18 needed) the overall gap (lower bound 0.187) would pass, the relevant one (0.111) not
    assert F.resolution(relevant, 0.09)[0] is False and F.resolution(overall, 0.09)[0] is True
    # a kind the controls do not hold gives no gap at all, not another kind's
    none = F.control_gap(rows, "faithfulness", ["unit_swapped"])
    assert none["n"] == 0 and none["low"] is None and F.resolution(none, 0.25)[0] is False
    # controls that carry no kind: the rubric's overall gap, and the reason says so
    kindless = [{k: v for k, v in r.items() if k != "kind"} for r in rows]
    gap = F.control_gap(kindless, "faithfulness", ["unrelated_claim"])
    assert gap["n"] == 10 and "all faithfulness controls (they carry no kind)" in F.resolution(gap, 0.25)[1]


def test_the_5_wrong_finding_has_a_row_in_every_run():
    """Without a negative setting of 5 wrong passages the row is there, not tested, with the reason;
    with one (named 5_wrong, or 5_wrong_only beside a 5-wrong setting that keeps the relevant
    passage) it gets a real verdict."""
    tests = [_equivalence_test()]
    why = F.five_wrong_missing([0, 3], 0)
    assert why.startswith(
        "the run has no 5-wrong setting: answer.n_wrong_values is [0, 3]; answer.negative_n_wrong is 0"
    )
    assert "the negative setting has 3 wrong passages" in F.five_wrong_missing([0, 3], 3)
    assert "keeps the relevant passage" in F.five_wrong_missing([0, 3, 5], 3)
    rows = F.table2_findings([], tests, None, None, why)
    neg = next(r for r in rows if r["judge"] == "negative_rejection")
    assert neg["finding"] == "Negative rejection with 5 wrong passages" and neg["verdict"] == F.NOT_TESTED
    assert neg["verdict_reason"] == why and neg["n"] == "0"
    out = [
        r for r in F.paper_vs_run(rows, {"negative_rejection": "valid"}, "yes") if r["judge"] == "negative_rejection"
    ]
    assert out[0]["verdict"] == F.NOT_TESTED and out[0]["verdict_reason"] == why
    # a negative setting of 3 wrong passages is not the paper's 5
    three = {
        "metric": "negative_rejection",
        "setting": "3_wrong_only",
        "mean": 3.1,
        "n": 20,
        "ci_low": 2.9,
        "ci_high": 3.3,
    }
    assert F.negative_rejection_finding([three])["verdict"] == F.NOT_TESTED
    for setting in ("5_wrong", "5_wrong_only"):
        five = dict(three, setting=setting)
        row = F.negative_rejection_finding([three, five], why)
        assert row["verdict"] == F.HOLDS and setting in row["this_run"]  # [2.9, 3.3] within 3.14 ± 0.5
        out = F.paper_vs_run([row], {"negative_rejection": "valid"}, "yes")[0]
        assert out["verdict"] == F.HOLDS and out["verdict_reason"] == ""


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
        "boundaries": {b: {"kappa": 0.3, "kappa_ci": [0.1, 0.5]} for b in ("ge1", "ge2", "eq3")},
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


def test_a_bias_below_the_limit_on_the_negative_side_gives_no_evidence():
    """The limit is ±1.48 pp (half the grade-3 cell's detectable difference of about 3 pp): a judge
    that takes 4 pp [−5, −3] from the reranked lists' grade-3 share is as far outside it as one
    that adds 4 pp; −0.5 pp [−1, 0] lies within it."""
    rows = _grade3_rows()
    small = _one(F.paper_vs_run(rows, {}, "no", _grader(bias=-0.005, half_width=0.005)))
    assert small["verdict"] == F.HOLDS and "bm25+rerank − bm25: -0.50 pp [-1.00, +0.00]" in small["judge_bias"]
    low = _one(F.paper_vs_run(rows, {}, "no", _grader(bias=-0.04, half_width=0.01)))
    assert low["verdict"] == F.NO_EVIDENCE and "bias between bm25+rerank and bm25" in low["verdict_reason"]
    assert "-4.00 pp [-5.00, -3.00] at eq3 (limit ±1.48 pp)" in low["judge_bias"]


def test_a_finding_its_grader_fails_still_names_the_bias_check():
    """Validity decides first, but the verdict still says what the bias audit measured between the
    systems it compares (a reader sees both checks, whichever withheld the verdict)."""
    weak = _one(F.paper_vs_run(_grade3_rows(), {}, "no", _grader(verdicts=("valid", "valid", "weak"), bias=0.005)))
    assert weak["verdict"] == F.NO_EVIDENCE and "grade = 3" in weak["verdict_reason"]
    assert "bm25+rerank − bm25: +0.50 pp" in weak["judge_bias"]
    assert weak["boundary"] == "eq3: weak in domain (κ 0.30 [0.10, 0.50])"


def _stage_run(tmp_path, controls, **sections):
    """A run folder holding a Table 2 test, its table and the judge check's scored controls, and a
    config on it with `sections` (findings, answer) set."""
    import json
    from pathlib import Path

    import pandas as pd

    from spacelm.config import from_dict

    root = Path(__file__).resolve().parents[3]
    cfg = from_dict(
        {"run_name": "t", "paths": {"results_dir": str(tmp_path / "results"), "cache_dir": str(tmp_path / "c")}}
        | sections,
        source="<test>",
        root=str(root),
    )
    run = cfg.run_dir
    (run / "judge_check").mkdir(parents=True)
    pd.DataFrame([_equivalence_test()]).to_csv(run / "table2_tests.csv", index=False)
    level = {"metric": "faithfulness", "setting": "standard", "mean": 4.0, "n": 30, "ci_low": 3.9, "ci_high": 4.1}
    pd.DataFrame([level]).to_csv(run / "table2_answer_quality.csv", index=False)
    (run / "judge_check" / "controls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in controls))
    table = [{"rubric": "faithfulness", "verdict": "valid", "passed": True, "mean_gap": 1.0}]
    pd.DataFrame(table).to_csv(run / "judge_check" / "controls.csv", index=False)
    return cfg


def test_the_findings_stage_reads_margins_kinds_and_settings_from_the_config(tmp_path):
    """The margin is the config's (findings.margins), the gap is read at its control kinds
    (findings.control_kinds), the 5-wrong row names the config's settings, and paper_vs_run.csv
    carries margin and control_gap_low."""
    import pandas as pd

    from spacelm.stages import findings as stage

    controls = _controls([0.9, 1.1, 1.0, 0.8, 1.2, 1.0]) + _controls([0.1] * 3 + [0.2] * 3, kind="partial")
    answer = {"n_wrong_values": [0, 3], "negative_n_wrong": 0}
    kinds = {"faithfulness": ["unrelated_claim"]}
    cfg = _stage_run(tmp_path, controls, answer=answer, findings={"control_kinds": kinds})
    gap = stage.control_gaps(cfg)["faithfulness"]
    assert gap["n"] == 6 and 0.5 <= gap["low"] < 1.0
    by = {r["judge"]: r for r in stage.compute(cfg)}
    assert by["faithfulness"]["verdict"] == F.HOLDS and by["faithfulness"]["margin"] == 0.25  # the default
    neg = by["negative_rejection"]
    assert neg["verdict"] == F.NOT_TESTED and "answer.n_wrong_values is [0, 3]" in neg["verdict_reason"]
    # a wider margin in the config: 2 × 0.5 = 1 is beyond the same instrument's lower bound
    wide = _stage_run(
        tmp_path / "wide", controls, answer=answer, findings={"margins": {"faithfulness": 0.5}, "control_kinds": kinds}
    )
    row = next(r for r in stage.compute(wide) if r["judge"] == "faithfulness")
    assert row["verdict"] == F.NO_EVIDENCE and row["margin"] == 0.5
    assert "< 2 × margin 0.5 = 1;" in row["verdict_reason"] and "n 6" in row["verdict_reason"]
    # the default kinds read the partial controls too, whose gaps are small: no evidence at 0.25 either
    both = _stage_run(tmp_path / "both", controls, answer=answer)
    assert next(r for r in stage.compute(both) if r["judge"] == "faithfulness")["verdict"] == F.NO_EVIDENCE
    stage.run(cfg, force=True)
    table = pd.read_csv(cfg.run_dir / "paper_vs_run.csv")
    assert {"margin", "control_gap_low"} <= set(table.columns) and list(table.columns) == F.COLUMNS
    eq = table[table["judge"] == "faithfulness"].iloc[0]
    assert eq["margin"] == 0.25 and eq["control_gap_low"] == pytest.approx(round(gap["low"], 3))
    assert table[table["judge"] == "negative_rejection"]["margin"].isna().all()


def test_per_retriever_rows_beside_the_all_cells_reading_with_their_source():
    """Issue 44: a finding the paper states for both retrievers gets a row for each and one for
    all cells; BM25 moving the paper's way while dense moves the other way is no longer one
    "reversed" row: BM25 holds, dense is reversed, and the all-cells reading is reversed."""
    tests = [_t("bm25", k, "share_0_1", -9.4, 0.002) for k in (3, 10)]
    tests += [_t("dense", k, "share_0_1", 7.2, 0.004, p_holm=0.008) for k in (3, 10)]
    rows = F.table1_findings(tests, [], 256)
    by = {(r["id"], r["scope"]): r for r in rows}
    assert by[("rerank_lowers_grades_0_1", "bm25")]["verdict"] == F.HOLDS
    assert by[("rerank_lowers_grades_0_1", "bm25")]["finding"].endswith("(BM25)")
    assert by[("rerank_lowers_grades_0_1", "dense")]["verdict"] == F.REVERSED
    assert by[("rerank_lowers_grades_0_1", "all cells")]["verdict"] == F.REVERSED
    # the paper's figure for the BM25 cells: (1.29 + 1.78) - (2.12 + 3.44) = -2.49 at top-3;
    # (3.51 + 4.80) - (4.80 + 7.05) = -3.54 at top-10
    assert by[("rerank_lowers_grades_0_1", "bm25")]["paper"] == "-3.5 to -2.5 pp across 2 cells"
    assert all(r["source"].startswith(("paper:", "follow-up:")) for r in rows)
    r512 = next(r for r in rows if r["id"] == "chunks_512_rerank_raises_grade_3")
    assert r512["source"].startswith("follow-up: Belo, Guimarães & Soares, CVPR Workshop 2026")


def test_low_k_and_dense_after_reranking_rows():
    tests = [_t(r, 3, "share_3", d, p, comparison="rerank gain: top-3 - top-10") for r, d, p in (("bm25", 4.0, 0.01),)]
    tests += [_t("dense", 3, "share_3", 1.0, 0.4, comparison="rerank gain: top-3 - top-10")]
    tests += [_t("dense vs bm25", k, "mean_grade", 0.2, 0.01, comparison="dense+rerank - bm25+rerank") for k in (3, 10)]
    by = {(r["id"], r["scope"]): r for r in F.table1_findings(tests, [], 256)}
    assert by[("rerank_matters_most_at_low_k", "bm25")]["verdict"] == F.HOLDS
    assert by[("rerank_matters_most_at_low_k", "dense")]["verdict"] == F.CANNOT_TELL
    # the paper's gain difference for BM25: (44.76 - 39.66) - (26.82 - 23.76) = 5.10 - 3.06 = +2.04 pp
    assert by[("rerank_matters_most_at_low_k", "bm25")]["paper"] == "+2.0 pp across 1 cells"
    after = by[("dense_preferred_after_rerank", "all top-k")]
    assert after["verdict"] == F.HOLDS and after["compares"] == [["dense+rerank", "bm25+rerank"]]
    # dense+rerank - bm25+rerank at top-3 in the paper: 2.4104 - 2.4042 = +0.0062 grade
    assert F.paper_effect("dense+rerank - bm25+rerank", "dense vs bm25", 3, "mean_grade") == pytest.approx(0.0062)


def test_a_planned_permutation_test_must_agree_with_the_t_test():
    """With the plan's test `t_and_permutation` a cell rejects only when both p-values are below
    the level: a t test at p 0.01 beside a permutation p of 0.2 (ties dominate) cannot tell."""
    from spacelm.lib.report.plan import PlanEntry, apply_plan

    t = dict(_t("bm25", 3, "share_3", 5.0, 0.01), p_perm=0.2, p_perm_holm=0.2)
    plan = [PlanEntry("rerank_raises_grade_3_bm25_top3", role="primary", n_needed=91)]
    one = lambda rows: next(r for r in rows if r["id"] == "rerank_raises_grade_3_bm25_top3")
    assert one(F.table1_findings([t], [], 256))["verdict"] == F.HOLDS  # unplanned: the t test alone
    planned = one(F.table1_findings([t], [], 256, plan=plan))
    assert planned["verdict"] == F.CANNOT_TELL and "permutation" in planned["rule"]
    assert one(F.table1_findings([dict(t, p_perm=0.03)], [], 256, plan=plan))["verdict"] == F.HOLDS
    out = {r["id"]: r for r in apply_plan(F.table1_findings([t], [], 256, plan=plan), plan)}
    assert out["rerank_raises_grade_3_bm25_top3"]["role"] == "primary"
    assert (
        "underpowered: the plan needs 91 questions, the run has 30"
        in out["rerank_raises_grade_3_bm25_top3"]["verdict_reason"]
    )
    assert out["grades_2_3_above_90"]["plan_entry"] == "exploratory"


def test_the_golden_question_set_has_its_own_rows_and_plan_entries():
    from spacelm.lib.report.plan import PlanEntry, apply_plan

    t = _t("bm25", 3, "share_3", 5.0, 0.01)
    plan = [
        PlanEntry("rerank_raises_grade_3_bm25_top3", role="primary", test="t"),
        PlanEntry("rerank_raises_grade_3_bm25_top3", test="t", question_set="golden"),
    ]
    run = F.table1_findings([t], [], 256, plan=plan)
    gold = F.table1_findings([t], [], 256, plan=plan, question_set="golden")
    one = lambda rows: next(r for r in rows if r["id"] == "rerank_raises_grade_3_bm25_top3")
    assert one(run)["question_set"] == "run" and one(gold)["finding"].endswith("[golden questions]")
    out = apply_plan(run + gold, plan)
    roles = {(r["id"], r["question_set"]): r["role"] for r in out}
    assert roles[("rerank_raises_grade_3_bm25_top3", "run")] == "primary"
    assert roles[("rerank_raises_grade_3_bm25_top3", "golden")] == "secondary"
    assert roles[("dense_preferred", "golden")] == "exploratory"


def test_a_findings_sensitivity_rows_in_words():
    t = _t("bm25", 3, "share_3", 5.0, 0.03)
    sens = [
        {
            "comparison": "reranked - retrieved",
            "retriever": "bm25",
            "top_k": 3,
            "measure": "share_3",
            "lodo_diff_min": 4.1,
            "lodo_diff_max": 5.7,
            "lodo_p_max": 0.061,
            "n_flagged": 26,
            "unflagged_diff": 5.9,
            "unflagged_ci_low": -1.2,
            "unflagged_ci_high": 13.0,
            "unflagged_p_value": 0.098,
        }
    ]
    rows = {r["id"]: r for r in F.table1_findings([t], [], 256, sensitivity=sens)}
    text = rows["rerank_raises_grade_3_bm25_top3"]["sensitivity"]
    assert text == (
        "each document left out: +4.10 to +5.70, largest p 0.061; without the 26 flagged questions: "
        "+5.90 [-1.20, 13.00], p 0.098"
    )
    assert F.sensitivity_text([t], []) == "not computed: grading/sensitivity.csv holds no row for these cells"
    one_doc = [dict(sens[0], lodo_diff_min=float("nan"), lodo_diff_max=float("nan"))]
    assert F.sensitivity_text([t], one_doc).startswith("each document left out: not computed")
    two = [t, _t("bm25", 10, "share_3", 2.0, 0.2)]
    sens2 = sens + [dict(sens[0], top_k=10, lodo_p_max=0.4, unflagged_p_value=0.01)]
    assert F.sensitivity_text(two, sens2).endswith("1 of 2 cells keep p < 0.05") and "largest p 0.400" in (
        F.sensitivity_text(two, sens2)
    )


def test_each_finding_names_the_clustering_unit_its_table_was_tested_at(tmp_path):
    """paper_vs_run.csv's `cluster`: Table 1's rows carry the unit of Table 1's paired tests, Table 2's rows
    the unit of Table 2's; a table without tests gives "–"."""
    from pathlib import Path

    import pandas as pd

    from spacelm.config import from_dict
    from spacelm.stages.findings import with_cluster

    root = Path(__file__).resolve().parents[3]
    cfg = from_dict(
        {"run_name": "t", "paths": {"results_dir": str(tmp_path / "results"), "cache_dir": str(tmp_path / "c")}},
        source="<test>",
        root=str(root),
    )
    rows = [{"id": "a", "judge": "grader"}, {"id": "b", "judge": "faithfulness"}]
    (cfg.run_dir / "grading").mkdir(parents=True)
    pd.DataFrame([{"comparison": "x", "cluster": "document"}]).to_csv(cfg.run_dir / "grading/paired_tests.csv")
    assert [r["cluster"] for r in with_cluster(rows, cfg)] == ["document", "–"]
    pd.DataFrame([{"metric": "faithfulness", "cluster": "source_chunk"}]).to_csv(cfg.run_dir / "table2_tests.csv")
    assert [r["cluster"] for r in with_cluster(rows, cfg)] == ["document", "source_chunk"]


def test_a_finding_read_through_labels_says_why_its_sensitivity_is_not_computed():
    """Issue 57 #6: a check that does not run says so with its reason in paper_vs_run.csv: the
    leave-one-document-out analysis reads the judge's grades, so a finding read through labels
    names that instead of a bare "not computed"."""
    tests = [
        {
            "comparison": "reranked - retrieved",
            "retriever": "bm25",
            "top_k": 3,
            "measure": "share_0_1",
            "diff": -2.0,
            "ci_low": -4.0,
            "ci_high": 0.5,
            "p_value": 0.1,
            "n_questions": 30,
            "n_clusters": 20,
        }
    ]
    rows = F.table1_findings(tests, [], 256, sensitivity=None, instrument="labels")
    read = [r for r in rows if r["sensitivity"] not in ("–",)]
    why = "not computed: the sensitivity analysis reads the judge's grades; this finding reads the labels"
    assert read and all(r["sensitivity"] == why for r in read)


def test_a_table2_verdict_needs_its_own_rubric_s_controls_to_pass():
    """Standing that passes overall still withholds a rubric whose own controls fall below the floor
    (the noise-robustness controls once passed 2 of 8 while the set passed 73%)."""
    standing = {
        "kind": "answers",
        "passes": True,
        "floor": 0.8,
        "figure": "pass_rate",
        "value": 0.85,
        "n_calibration": 28,
        "assessor": "a",
        "measures": {
            "by_rubric": {"faithfulness": {"n": 8, "pass_rate": 1.0}, "noise_robustness": {"n": 8, "pass_rate": 0.25}}
        },
    }
    assert F.labels_gate({"judge": "faithfulness", "holes": 0}, standing)[0] is None
    why = F.labels_gate({"judge": "noise_robustness", "holes": 0}, standing)[0]
    assert "noise_robustness controls" in why and "0.25 of 8" in why
    assert "none" in F.labels_gate({"judge": "relevance", "holes": 0}, standing)[0]
    relevance = dict(standing, kind="relevance")  # pairs: no rubric, the set's standing alone
    assert F.labels_gate({"judge": "grader", "holes": 0}, relevance)[0] is None


def test_equivalence_power_by_hand():
    """TOST power at margin 0.25 and true change -0.01: se 0.05 gives Φ(4.8 − 1.645) + Φ(5.2 − 1.645) − 1
    ≈ 1.00; se 0.18 gives less than zero before the floor, so 0; no se or no paper change: None."""
    assert F.equivalence_power(0.05, 0.25, -0.01) == 1.0
    assert F.equivalence_power(0.18, 0.25, -0.01) == 0.0
    assert 0.2 < F.equivalence_power(0.11, 0.25, -0.05) < 0.6
    assert F.equivalence_power(None, 0.25, -0.01) is None and F.equivalence_power(0.1, 0.25, None) is None


def test_the_negative_setting_is_read_only_while_its_passages_held_no_answer():
    """The assessor's 0-3 grade of each passage each negative-setting question read: a question
    with a passage graded 2 or more held its answer, and the negative-rejection level is then *not
    tested*, whatever the level; a passage without a label leaves the premise unshown."""
    assert F.negative_premise([]) is None
    fine = F.negative_premise([[0, 1, 0, 0, 1]] * 25)
    assert (fine["n"], fine["answering"], fine["holds"]) == (25, 0, True) and fine["ci"][1] <= F.PREMISE_LIMIT
    held = F.negative_premise([[0, 2, 0]] * 6 + [[3, 0, 0]] * 8 + [[1, 1, 0]] * 12)
    assert (held["n"], held["answering"], held["holds"], held["state"]) == (26, 14, False, "held answers")
    assert held["ci"][0] < held["share"] < held["ci"][1]
    # the bound, not the point: 4 of 26 (15%) is under the limit, its upper bound is not
    edge = F.negative_premise([[2, 0]] * 4 + [[1, 0]] * 22)
    assert edge["share"] < F.PREMISE_LIMIT < edge["ci"][1] and not edge["holds"] and edge["state"] == "too few"
    assert F.premise_failed(edge).startswith("too few graded questions")
    # a hole: 24 clean questions and one passage without a label is not shown to hold
    hole = F.negative_premise([[0, 0]] * 24 + [[0, None]])
    assert (hole["holes"], hole["holds"], hole["state"]) == (1, False, "holes")
    assert "label export --what negative" in F.premise_failed(hole)
    none = F.negative_premise([[None, None]] * 3)
    assert none["state"] == "unlabelled" and not none["holds"]
    # a passage graded 1 (on the topic, no answer) is not an answer, nor is a right answer by itself
    assert F.negative_premise([[1, 1, 1]] * 30)["holds"]
    five = {"metric": "negative_rejection", "setting": "5_wrong_only", "mean": 3.1, "n": 26}
    five |= {"ci_low": 2.9, "ci_high": 3.3}
    assert F.negative_rejection_finding([five], None, fine)["verdict"] == F.HOLDS
    row = F.negative_rejection_finding([five], None, held)
    assert row["verdict"] == F.NOT_TESTED and row["premise"] == held and "14 of its 26" in row["verdict_reason"]
    assert row["verdict_reason"].startswith("the negative setting held answers")
    out = F.paper_vs_run([row], {"negative_rejection": "valid"}, "yes")[0]
    assert out["verdict"] == F.NOT_TESTED and out["verdict_reason"] == row["verdict_reason"]
    (neg,) = [r for r in F.table2_findings([five], [], None, None, None, held) if r["judge"] == "negative_rejection"]
    assert neg["verdict"] == F.NOT_TESTED


def test_a_table1_finding_without_cells_says_why_through_the_gates():
    """A run graded at top-3 alone cannot read "reranking matters most at low k" (top-3 against
    top-10): *not tested*, and paper_vs_run keeps the reason instead of an empty one."""
    from spacelm.lib.report.plan import FINDINGS

    why = F.no_cells(FINDINGS["rerank_matters_most_at_low_k"], [{"top_k": 3}, {"top_k": "3"}])
    assert "top-3 and top-10 both graded" in why and why.endswith("graded at top-3")
    rows = F.paper_vs_run(F.table1_findings([], [], 256, {}, []), {}, "no")
    assert rows and all(r["verdict"] == F.NOT_TESTED and r["verdict_reason"] for r in rows)
