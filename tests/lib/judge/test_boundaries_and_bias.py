"""A relevance judge measured at each boundary the findings read, audited for bias between the
systems it grades, and reference judges scored on their own labels: hand-built cases."""

from __future__ import annotations

import pytest

from spacelm.config import JudgeCheckConfig
from spacelm.lib.judge import validity as J


def _row(q, d, label, grade, score=None):
    kind = "positive" if label >= 2 else "negative"
    return {
        "qid": q,
        "chunk_id": d,
        "label": label,
        "grade": grade,
        "score": score,
        "expected_grade": None,
        "kind": kind,
    }


def test_kappa_precision_and_recall_at_each_boundary_by_hand():
    """Labels 3,3,2,1,0,0 and grades 3,2,2,2,1,0 (one query each, so the CI units are pairs).
    ge1: labels 1,1,1,1,0,0 vs judge 1,1,1,1,1,0: agreement 5/6, chance (4/6)(5/6)+(2/6)(1/6) =
    22/36, kappa (30/36 - 22/36)/(14/36) = 8/14; precision 4/5, recall 4/4.
    ge2: labels 1,1,1,0,0,0 vs judge 1,1,1,1,0,0: agreement 5/6, chance (3/6)(4/6)+(3/6)(2/6) =
    1/2, kappa (5/6 - 1/2)/(1/2) = 2/3; precision 3/4, recall 3/3.
    eq3: labels 1,1,0,0,0,0 vs judge 1,0,0,0,0,0: agreement 5/6, chance (2/6)(1/6)+(4/6)(5/6) =
    22/36, kappa 8/14; precision 1/1, recall 1/2.
    Per grade: grade 2 is given to labels 3,2,1: precision 1/3; grade 3 to label 3: 1."""
    rows = [_row(f"q{i}", f"d{i}", lab, g) for i, (lab, g) in enumerate(zip([3, 3, 2, 1, 0, 0], [3, 2, 2, 2, 1, 0]))]
    m = J.boundary_agreement(rows, n_boot=200, seed=0, graded=True, with_auc=False)
    b = m["boundaries"]
    assert b["ge1"]["kappa"] == pytest.approx(8 / 14, abs=1e-4)
    assert b["ge1"]["precision"] == pytest.approx(0.8) and b["ge1"]["recall"] == 1.0
    assert b["ge2"]["kappa"] == pytest.approx(2 / 3, abs=1e-4)
    assert b["ge2"]["precision"] == 0.75 and b["ge2"]["recall"] == 1.0
    assert b["eq3"]["kappa"] == pytest.approx(8 / 14, abs=1e-4)
    assert b["eq3"]["precision"] == 1.0 and b["eq3"]["recall"] == 0.5
    assert (b["eq3"]["n_label"], b["eq3"]["n_judge"]) == (2, 1)
    assert m["per_grade"]["2"]["n"] == 3 and m["per_grade"]["2"]["precision"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["per_grade"]["3"]["precision"] == 1.0
    for k in ("kappa", "precision", "recall"):
        lo, hi = b["ge2"][f"{k}_ci"]
        assert lo <= b["ge2"][k] <= hi


def test_binary_labels_check_only_the_relevance_boundary():
    rows = [_row("q1", "a", 1, 3), _row("q1", "b", 0, 1), _row("q2", "c", 1, 1), _row("q2", "d", 0, 0)]
    m = J.boundary_agreement(rows, n_boot=50, seed=0, graded=False)
    assert set(m["boundaries"]) == {"ge2"} and m["boundaries"]["ge2"]["recall"] == 0.5


def test_a_boundary_verdict_reads_its_own_kappa_and_the_pairs_on_each_side():
    th = JudgeCheckConfig(min_pairs=30, boundary_kappa=0.4, boundary_kappa_low=0.2, min_boundary_pairs=10)
    m = {
        "n_pairs": 100,
        "boundaries": {
            "ge1": {"cut": "grade >= 1", "n_label": 60, "kappa": 0.55, "kappa_ci": [0.35, 0.7]},
            "ge2": {"cut": "grade >= 2", "n_label": 40, "kappa": 0.3, "kappa_ci": [0.1, 0.5]},
            "eq3": {"cut": "grade = 3", "n_label": 5, "kappa": 0.9, "kappa_ci": [0.6, 1.0]},
        },
    }
    v = J.boundary_verdicts(m, th)
    assert v["ge1"][0] == "valid" and v["ge2"][0] == "weak"
    assert v["eq3"][0] == "too few pairs to tell"  # 5 labels above the cut
    m["boundaries"]["ge2"]["kappa_ci"] = [0.0, 0.15]
    assert J.boundary_verdicts(m, th)["ge2"][0] == "fails"


def test_the_bias_audit_catches_a_judge_that_adds_one_to_one_systems_passages():
    """Two systems retrieve 3 passages for each of 8 queries, with the same labels (2, 1, 0); a
    stand-in judge grades each pair at its label, but adds 1 (to at most 3) to the passages only
    system A retrieved. A's residual is about +1, B's 0, and the A - B difference's CI excludes 0;
    the honest judge shows no difference."""
    rows, a_only, b_only, both = [], set(), set(), set()
    for q in range(8):
        qid = f"q{q}"
        for j, lab in enumerate((2, 1, 0)):
            da, db = f"a{q}{j}", f"b{q}{j}"
            rows += [_row(qid, da, lab, min(3, lab + 1)), _row(qid, db, lab, lab)]
            a_only.add((qid, da))
            b_only.add((qid, db))
        rows.append(_row(qid, f"s{q}", 3, 3))
        both.add((qid, f"s{q}"))
    got = J.system_bias(rows, {"A": a_only | both, "B": b_only | both}, n_boot=300, seed=0, graded=True)
    assert got["systems"]["A"]["mean_residual"] == pytest.approx(3 / 4)  # 3 of 4 pairs +1
    assert got["systems"]["B"]["mean_residual"] == 0.0
    d = J.bias_between(got, "A", "B")
    assert d["diff"] == pytest.approx(0.75) and d["ci_low"] > 0
    # the other order reads the same difference negated, at a boundary too
    assert J.bias_between(got, "B", "A")["diff"] == pytest.approx(-0.75)
    # at grade >= 2: A's label-1 passages move to grade 2 (one of 4 pairs per query: +0.25)
    assert J.bias_between(got, "A", "B", "ge2")["diff"] == pytest.approx(0.25)
    assert got["systems"]["A"]["n_pairs"] == 32 and got["n_queries"] == 8
    honest = [dict(r, grade=r["label"]) for r in rows]
    flat = J.system_bias(honest, {"A": a_only | both, "B": b_only | both}, n_boot=300, seed=0, graded=True)
    assert J.bias_between(flat, "A", "B")["diff"] == 0.0


def test_kendall_tau_compares_the_systems_ranking_by_judge_and_by_labels():
    rows, sets = [], {}
    # three systems whose passages carry labels 0, 1, 2 and a judge that reverses their order
    for s, (lab, grade) in zip("XYZ", [(0, 3), (1, 2), (2, 1)]):
        sets[s] = set()
        for q in range(4):
            rows.append(_row(f"q{q}", f"{s}{q}", lab, grade))
            sets[s].add((f"q{q}", f"{s}{q}"))
    got = J.system_bias(rows, sets, n_boot=50, seed=0, graded=True)
    assert got["kendall_tau"] == pytest.approx(-1.0)


def test_a_reference_judge_is_ranked_by_its_own_labels_never_by_our_score():
    """Regression: our rows carry a score that ranks the pairs backwards; the reference agrees
    with the labels. Its AUC must be its own (1.0), not ours (0.0)."""
    rows = [
        _row("q1", "a", 3, 0, score=-2.0),
        _row("q1", "b", 0, 3, score=2.0),
        _row("q2", "c", 2, 0, score=-1.0),
        _row("q2", "d", 1, 3, score=1.0),
    ]
    refs = {"ref": {("q1", "a"): 3, ("q1", "b"): 0, ("q2", "c"): 2, ("q2", "d"): 1}}
    ours = J.agreement(rows, 50, 0, graded=True)
    theirs = J.reference_agreement(rows, refs, 50, 0, graded=True)[0]
    assert ours["auc"] == 0.0 and theirs["auc"] == 1.0
    assert theirs["boundaries"]["ge2"]["kappa"] == 1.0


def test_boundary_cis_resample_queries_so_repeating_a_querys_pairs_adds_no_certainty():
    """Twelve queries, one pair each, against the same twelve with each pair repeated four times
    (four pairs per query that always agree or disagree together). The bootstrap draws queries,
    and kappa, precision and recall do not change when every count is multiplied by four, so every
    interval is the same. Drawing pairs instead would treat the 48 pairs as independent and narrow
    the >= 2 kappa's interval from [0.17, 1.0] to about [0.45, 0.87]."""
    grades = [(3, 3), (3, 2), (2, 2), (2, 1), (1, 2), (1, 1), (0, 0), (0, 1), (3, 3), (2, 3), (1, 0), (0, 0)]
    one = [_row(f"q{i}", f"d{i}", lab, g) for i, (lab, g) in enumerate(grades)]
    four = [_row(f"q{i}", f"d{i}.{j}", lab, g) for i, (lab, g) in enumerate(grades) for j in range(4)]
    a = J.boundary_agreement(one, n_boot=400, seed=0, graded=True)
    b = J.boundary_agreement(four, n_boot=400, seed=0, graded=True)
    assert b["n_pairs"] == 48
    for cut in ("ge1", "ge2", "eq3"):
        for k in ("kappa", "precision", "recall"):
            assert b["boundaries"][cut][k] == pytest.approx(a["boundaries"][cut][k], abs=1e-4)
            assert b["boundaries"][cut][f"{k}_ci"] == pytest.approx(a["boundaries"][cut][f"{k}_ci"], abs=1e-4)
    assert b["auc_ci"] == pytest.approx(a["auc_ci"], abs=1e-4)
    assert b["kappa_weighted_linear_ci"] == pytest.approx(a["kappa_weighted_linear_ci"], abs=1e-4)
    # the interval is not degenerate: twelve queries leave the >= 2 kappa wide open
    lo, hi = a["boundaries"]["ge2"]["kappa_ci"]
    assert hi - lo > 0.6


def test_a_bias_read_in_the_other_order_negates_and_swaps_its_bounds():
    """Stored as A - B = +0.5 [+0.2, +0.9]; read as B - A it is -0.5 [-0.9, -0.2]: the lower bound
    stays below the upper one."""
    bias = {"differences": {"A - B": {"grade": {"diff": 0.5, "ci_low": 0.2, "ci_high": 0.9}}}}
    assert J.bias_between(bias, "A", "B") == {"diff": 0.5, "ci_low": 0.2, "ci_high": 0.9}
    back = J.bias_between(bias, "B", "A")
    assert back == {"diff": -0.5, "ci_low": -0.9, "ci_high": -0.2}
    assert back["ci_low"] <= back["diff"] <= back["ci_high"]
    # a measure not stored in either order is not measured
    assert J.bias_between(bias, "B", "A", "eq3") is None


def test_a_boundary_with_a_high_kappa_but_a_low_lower_bound_is_not_valid():
    """kappa 0.6 clears the point bar 0.4, but its interval [0.15, 0.85] reaches down under the
    lower-bound bar 0.2: the boundary is weak, not valid. Raise the lower bound to 0.2 and it is."""
    th = JudgeCheckConfig(min_pairs=30, boundary_kappa=0.4, boundary_kappa_low=0.2, min_boundary_pairs=10)
    m = {"n_pairs": 100, "boundaries": {"ge2": {"cut": "grade >= 2", "n_label": 40, "kappa": 0.6}}}
    m["boundaries"]["ge2"]["kappa_ci"] = [0.15, 0.85]
    assert J.boundary_verdicts(m, th)["ge2"][0] == "weak"
    m["boundaries"]["ge2"]["kappa_ci"] = [0.2, 0.85]
    assert J.boundary_verdicts(m, th)["ge2"][0] == "valid"
