"""The analysis plan: which findings a run tests, by which rule, at which level, clustered by what,
and how many questions each needs, fixed in the config before the run (`analysis_plan`). Its hash
goes into the run's manifest before the first stage, and every finding row says the plan entry
that fixed it, or *exploratory* when the plan names none.

The findings a plan may name are the registry `FINDINGS` (one :class:`FindingSpec` each, the way
ir_measures' measures describe themselves): the paper's claim, where its figure comes from, the
comparison and measure of the paired tests it reads, and the boundary of the judge's scale. A
plan entry (:class:`PlanEntry`) chooses its test, level, clustering unit and the questions it
needs (from `spacelm plan`'s power table on the previous run's variances).
"""

from __future__ import annotations

import hashlib
import json
from typing import NamedTuple

# the verdicts a label-read finding is held to (lib/report/findings.py's vocabulary)
NO_EVIDENCE, NOT_TESTED = "no evidence", "not tested"

PAPER = "paper: Belo, Soares & Guimarães, IAC-25, Table 1 and Section 5 (2,000-token chunks)"
FOLLOW_UP = (
    "follow-up: Belo, Guimarães & Soares, CVPR Workshop 2026 (github.com/rcBelo/rag-space-eval), 512-token chunks"
)


class FindingSpec(NamedTuple):
    """A finding of the paper that a run can test."""

    id: str
    title: str  # the claim, in the words the report prints
    source: str  # where the paper's figure comes from (PAPER or FOLLOW_UP)
    comparison: str  # the paired tests' comparison it reads ("" for a level)
    measure: str  # the paired tests' measure
    boundary: str  # the judge's boundary it reads (findings.BOUNDARY_NEEDS)
    per_retriever: bool  # a row per first-stage retriever beside the all-cells row


FINDINGS = {
    f.id: f
    for f in (
        FindingSpec(
            "rerank_lowers_grades_0_1",
            "Reranking lowers the share of grades 0 and 1 at every top-k",
            PAPER,
            "reranked - retrieved",
            "share_0_1",
            "ge2",
            True,
        ),
        FindingSpec(
            "rerank_raises_grade_3_bm25_top3",
            "Reranking raises the share of grade 3 (BM25, top-3)",
            PAPER,
            "reranked - retrieved",
            "share_3",
            "eq3",
            False,
        ),
        FindingSpec(
            "rerank_raises_grade_3",
            "Reranking raises the share of grade 3 (every retriever and top-k)",
            PAPER,
            "reranked - retrieved",
            "share_3",
            "eq3",
            True,
        ),
        FindingSpec(
            "grade_2_before_rerank_except_top10",
            "Retrieved lists hold more grade 2 than reranked ones, except at top-10",
            PAPER,
            "reranked - retrieved",
            "share_2",
            "ge2+eq3",
            True,
        ),
        FindingSpec(
            "rerank_matters_most_at_low_k",
            "Reranking matters most at low k: its grade-3 gain is larger at top-3 than at top-10",
            PAPER,
            "rerank gain: top-3 - top-10",
            "share_3",
            "eq3",
            True,
        ),
        FindingSpec(
            "dense_preferred",
            "The judge prefers the dense retriever to BM25",
            PAPER,
            "dense - bm25",
            "mean_grade",
            "ordinal",
            False,
        ),
        FindingSpec(
            "dense_preferred_after_rerank",
            "The judge prefers the dense retriever to BM25 after reranking too",
            PAPER,
            "dense+rerank - bm25+rerank",
            "mean_grade",
            "ordinal",
            False,
        ),
        FindingSpec(
            "grades_2_3_above_90", "Grades 2-3 exceed 90% in most cells", PAPER, "", "percent_2_3", "ge2", False
        ),
        FindingSpec(
            "chunks_512_rerank_raises_grade_3",
            "512-token chunks: reranking raises top-3 grade 3",
            FOLLOW_UP,
            "reranked - retrieved",
            "share_3",
            "eq3",
            False,
        ),
        FindingSpec(
            "chunks_2000_rerank_raises_grade_3",
            "2,000-token chunks: reranking raises top-3 grade 3",
            PAPER,
            "reranked - retrieved",
            "share_3",
            "eq3",
            False,
        ),
        # Table 2 (answers): the rules of lib/report/findings.py's Table 2 section
        FindingSpec(
            "faithfulness_changes_little",
            "Faithfulness changes little from standard to 3 wrong",
            PAPER,
            "",
            "",
            "",
            False,
        ),
        FindingSpec(
            "relevance_changes_little", "Relevance changes little from standard to 3 wrong", PAPER, "", "", "", False
        ),
        FindingSpec("noise_robustness_high", "Noise robustness is high", PAPER, "", "", "", False),
        FindingSpec("negative_rejection_level", "Negative rejection with 5 wrong passages", PAPER, "", "", "", False),
    )
}
BY_TITLE = {f.title: f.id for f in FINDINGS.values()}

# the tests a plan entry may choose: which p-values of a paired-test row must each fall below alpha
TESTS = {
    "t": ("p_value",),  # the cluster-robust paired t alone
    "t_and_permutation": ("p_value", "p_perm"),  # and the cluster sign-flip permutation test beside it
}
CLUSTERS = ("document", "source_chunk", "question")
ROLES = ("primary", "secondary")


class PlanEntry(NamedTuple):
    """One finding the plan fixes: its test (a key of `TESTS`), level, clustering unit, the
    questions it needs for 80% power at the paper's effect (None when no measured variance sizes
    it), and its role (one primary finding sizes the run)."""

    id: str
    role: str = "secondary"
    test: str = "t_and_permutation"
    alpha: float = 0.05
    cluster: str = "document"
    n_needed: int | None = None
    basis: str = ""  # where n_needed comes from (a run and its measured SD)
    question_set: str = "run"  # Table 1's question set it reads: the run's own ("run") or "golden"
    sd: float | None = None  # the pilot's per-question SD of the measure's paired difference
    n_planned: int | None = None  # the questions the run will read for it, after the exclusion rule
    underpowered: bool = False  # stated before the run: the budget cannot give it n_needed


def plan_problems(entries: list[PlanEntry]) -> list[str]:
    """What is wrong with a plan, one line each ([] when nothing): unknown findings, tests or
    clustering units, an entry named twice, not exactly one primary, a level outside (0, 0.5)."""
    out = []
    seen = set()
    for i, e in enumerate(entries):
        where = f"analysis_plan.findings[{i}]"
        if e.id not in FINDINGS:
            out.append(f"{where}.id: unknown finding {e.id!r} (known: {', '.join(sorted(FINDINGS))})")
        if (e.id, e.question_set) in seen:
            out.append(f"{where}.id: {e.id!r} is planned twice for the {e.question_set} questions; keep one entry")
        seen.add((e.id, e.question_set))
        if e.question_set not in ("run", "golden"):
            out.append(f"{where}.question_set: {e.question_set!r} is not run or golden")
        if e.test not in TESTS:
            out.append(f"{where}.test: unknown test {e.test!r} (known: {', '.join(TESTS)})")
        if e.cluster not in CLUSTERS:
            out.append(f"{where}.cluster: unknown unit {e.cluster!r} (known: {', '.join(CLUSTERS)})")
        if e.role not in ROLES:
            out.append(f"{where}.role: {e.role!r} is not one of {', '.join(ROLES)}")
        if not 0 < e.alpha < 0.5:
            out.append(f"{where}.alpha: {e.alpha} is not a level between 0 and 0.5")
        if e.n_needed is not None and e.n_needed < 2:
            out.append(f"{where}.n_needed: {e.n_needed} questions cannot give a test; give the power table's need")
        short = e.n_needed is not None and e.n_planned is not None and e.n_planned < e.n_needed
        if short and not e.underpowered:
            out.append(
                f"{where}: plans {e.n_planned} questions where {e.n_needed} are needed; mark it underpowered: true "
                "(the budget cannot power it) or plan the questions it needs"
            )
        if e.underpowered and e.n_needed is None:
            out.append(f"{where}.underpowered: name the n it would need (n_needed), from the pilot's spread")
    primaries = [e.id for e in entries if e.role == "primary"]
    if entries and len(primaries) != 1:
        out.append(f"analysis_plan.findings: {len(primaries)} entries are primary; exactly one finding sizes the run")
    return out


def plan_sha256(plan: dict) -> str:
    """The plan's fingerprint: sha256 of its canonical JSON (keys sorted, no spaces)."""
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def primary(entries: list[PlanEntry]) -> PlanEntry | None:
    return next((e for e in entries if e.role == "primary"), None)


def apply_plan(rows: list[dict], entries: list[PlanEntry]) -> list[dict]:
    """Each finding row with the plan entry that fixed it (`plan_entry`, `role`, `n_needed`), or
    `exploratory` when the plan names none. A planned finding whose run has fewer questions than
    the entry needs keeps its verdict and says it is underpowered in `verdict_reason`."""
    by_id = {(e.id, e.question_set): e for e in entries}
    out = []
    for r in rows:
        fid = r.get("id") or BY_TITLE.get(r.get("finding"), "")
        spec = FINDINGS.get(fid)
        r = dict(r, id=fid or None, scope=r.get("scope") or "all cells", question_set=r.get("question_set") or "run")
        r["source"] = r.get("source") or (spec.source if spec else None)
        e = by_id.get((fid, r["question_set"]))
        r.update(plan_entry=e.id if e else "exploratory", role=e.role if e else "exploratory")
        r["n_needed"] = e.n_needed if e else None
        r["power_planned"] = planned_power(e)
        have = _questions(r.get("n"))
        if e and e.n_needed and have is not None and have < e.n_needed:
            stated = ", as the plan stated before the run" if e.underpowered else ""
            note = f"underpowered{stated}: the plan needs {e.n_needed} questions, the run has {have}"
            r["verdict_reason"] = "; ".join(x for x in (r.get("verdict_reason"), note) if x)
            # a verdict read through labels needs the plan's n (the judge's keep their own rules)
            if r.get("instrument") == "labels" and r.get("verdict") not in (NO_EVIDENCE, NOT_TESTED):
                r["verdict"] = NO_EVIDENCE
        out.append(r)
    return out


def planned_power(e: PlanEntry | None) -> float | None:
    """The power the plan expected at its planned n: 0.8 where it plans the n it needs, else the
    normal approximation Φ((z_{1−α/2} + z_0.8) · √(n_planned / n_needed) − z_{1−α/2})."""
    from scipy.stats import norm

    if e is None or not e.n_needed or e.n_planned is None:
        return None
    if e.n_planned >= e.n_needed:
        return 0.8
    za = norm.ppf(1 - e.alpha / 2)
    return round(float(norm.cdf((za + norm.ppf(0.8)) * (e.n_planned / e.n_needed) ** 0.5 - za)), 2)


def _questions(n) -> int | None:
    """The questions of an `n` text ("60 / 25", "58-60 / 25"): the smallest count."""
    head = str(n or "").split("/")[0].strip().split("-")[0]
    return int(head) if head.isdigit() else None
