from spacelm.lib.report.plan import FINDINGS, PlanEntry, plan_problems, plan_sha256


def test_a_plan_names_known_findings_once_with_one_primary():
    ok = [PlanEntry("rerank_raises_grade_3_bm25_top3", role="primary", n_needed=91), PlanEntry("dense_preferred")]
    assert plan_problems(ok) == []
    bad = ok + [
        PlanEntry("reranking_helps"),
        PlanEntry("dense_preferred"),
        PlanEntry("rerank_raises_grade_3", test="anova", cluster="page", alpha=0.7, n_needed=1, role="primary"),
    ]
    text = "\n".join(plan_problems(bad))
    assert "findings[2].id: unknown finding 'reranking_helps'" in text
    assert "findings[3].id: 'dense_preferred' is planned twice" in text
    assert "findings[4].test: unknown test 'anova'" in text and "findings[4].cluster: unknown unit 'page'" in text
    assert "findings[4].alpha" in text and "findings[4].n_needed" in text
    assert "2 entries are primary" in text
    assert plan_problems([PlanEntry("dense_preferred")]) == [
        "analysis_plan.findings: 0 entries are primary; exactly one finding sizes the run"
    ]


def test_the_plan_hash_is_that_of_its_canonical_json():
    a = {"findings": [{"id": "dense_preferred", "alpha": 0.05}], "note": "fixed"}
    b = {"note": "fixed", "findings": [{"alpha": 0.05, "id": "dense_preferred"}]}
    assert plan_sha256(a) == plan_sha256(b)
    assert plan_sha256(a) != plan_sha256({**a, "note": "changed"})
    # sha256 of '{"a":1}' (canonical: sorted keys, no spaces)
    assert plan_sha256({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"


def test_every_finding_states_its_source():
    assert all(f.source.startswith(("paper:", "follow-up:")) for f in FINDINGS.values())


def test_a_finding_the_budget_cannot_power_is_marked_so_in_the_plan_before_the_run():
    """Issue 54: a plan that gives a finding fewer questions than it needs must say so before the
    run (underpowered: true, with the n it would need); the verdict then says the plan stated it."""
    from spacelm.lib.report.plan import apply_plan

    short = PlanEntry("rerank_raises_grade_3_bm25_top3", role="primary", n_needed=120, n_planned=95)
    assert plan_problems([short]) == [
        "analysis_plan.findings[0]: plans 95 questions where 120 are needed; mark it underpowered: true "
        "(the budget cannot power it) or plan the questions it needs"
    ]
    marked = short._replace(underpowered=True)
    assert plan_problems([marked]) == []
    assert plan_problems([PlanEntry("dense_preferred", underpowered=True), marked])[0].endswith(
        "name the n it would need (n_needed), from the pilot's spread"
    )
    row = {"id": "rerank_raises_grade_3_bm25_top3", "n": "95 / 24", "verdict": "supported", "instrument": "labels"}
    out = apply_plan([row], [marked])[0]
    assert out["verdict"] == "no evidence"
    reason = out["verdict_reason"]
    assert reason.startswith("underpowered") and "before the run" in reason and "120" in reason and "95" in reason


def test_power_planned_and_realized_read_the_papers_effect_against_the_spread():
    from spacelm.lib.report.findings import realized_power
    from spacelm.lib.report.plan import PlanEntry, planned_power

    e = PlanEntry("rerank_raises_grade_3_bm25_top3", n_needed=120)
    assert planned_power(e._replace(n_planned=120)) == 0.8
    assert planned_power(e._replace(n_planned=30)) < planned_power(e._replace(n_planned=71)) < 0.8
    assert planned_power(e) is None  # no planned n: nothing to say
    # the paper's BM25 top-3 grade-3 gain is +5.1 pp: a cell whose SE detects 5.1 pp has ~80% power
    cell = {"comparison": "reranked - retrieved", "retriever": "bm25", "top_k": 3, "measure": "share_3", "df": 1000}
    from scipy.stats import t

    se_at_80 = 5.1 / (t.ppf(0.975, 1000) + t.ppf(0.8, 1000))
    assert abs(realized_power([dict(cell, se=se_at_80)], 0.05) - 0.8) < 0.02
    assert realized_power([dict(cell, se=se_at_80 / 3)], 0.05) > 0.99
    two = realized_power([dict(cell, se=se_at_80), dict(cell, se=se_at_80)], 0.05)
    assert abs(two - 0.64) < 0.03  # every cell must find it: the product
    assert realized_power([dict(cell, top_k=4, se=1.0)], 0.05) is None  # no such cell in the paper
