"""Power before the run: for each of the paper's findings, the questions (and source chunks) a run
needs to detect the paper's effect with 80% power under the rule its verdict applies
(spacelm/lib/report/findings.py), beside the questions the config will produce.

The spread comes from the last run of the same config when its paired-test tables are there
(the SD of the per-question differences and the design effect of the plan's cluster unit,
`grading.cluster`, per cell; when the last run clustered by another unit its Table 1 tests are
recomputed at the plan's unit from its stored grades), else from `DEFAULT_SD` with no clustering
(a stated default). Rules:

- a single pre-specified cell: two-sided t test at α = 0.05;
- "every cell" (intersection-union): each cell at α = 0.05; the questions needed are the most any
  cell needs for 80% power on its own (the joint power is lower when cells are not perfectly
  correlated);
- "changes little" (two one-sided tests, margin ±0.25): the questions for the 90% CI to fall
  within the margin with 80% power when the true difference is the paper's;
- absolute levels: no number of questions helps while judge and chunk size differ from the
  paper's ("not comparable")."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from pathlib import Path

from .. import names
from .findings import ALPHA, LITTLE, PAPER_TABLE2, POWER, _num, paper_effect
from .setup_table import RunSetup, comparability, setup_rows

COLUMNS = [
    "finding",
    "rule",
    "paper_effect",
    "questions_needed",
    "written_needed",  # questions to write so that the needed ones survive the screen (a labelled pilot's rate)
    "source_chunks_needed",
    "questions_planned",
    "source_chunks_planned",
    "spread_from",
    "cluster",
    "clusters_needed",
    "clusters_planned",
]
# SD of per-question differences when no earlier run gives one (pp for shares, grade / rubric points)
DEFAULT_SD = {"share_0_1": 20.0, "share_2": 25.0, "share_3": 10.0, "mean_grade": 0.35, "rubric": 0.9}


def spread(row: dict | None, key: str) -> tuple[float, float, float, str]:
    """(SD of the per-question differences, design effect, questions per source chunk, basis) of a
    paired-test row; tables written before the clustered tests carry only `mde` (α = 0.05, n − 1
    degrees of freedom), from which the SD is solved back; no row: the default."""
    from scipy.stats import t

    if row is None:
        return DEFAULT_SD[key], 1.0, 1.0, "default"
    n = _num(row.get("n_questions")) or 0
    chunks = _num(row.get("n_source_chunks")) or n or 1
    per = n / chunks if chunks else 1.0
    sd = _num(row.get("sd"))
    if sd is not None:
        return sd, max(1.0, _num(row.get("deff")) or 1.0), per, "last run"
    mde = _num(row.get("mde"))
    if mde is not None and n >= 2:
        return mde * n**0.5 / (t.ppf(1 - ALPHA / 2, n - 1) + t.ppf(POWER, n - 1)), 1.0, per, "last run (unclustered)"
    return DEFAULT_SD[key], 1.0, 1.0, "default"


def per_cluster(row: dict | None) -> float:
    """Questions per cluster of the unit a paired-test row was clustered by (`n_clusters`; a table
    written before the unit was named: per source chunk); 1 without a row."""
    if row is None:
        return 1.0
    n = _num(row.get("n_questions")) or 0
    g = _num(row.get("n_clusters")) or _num(row.get("n_source_chunks")) or n or 1
    return n / g if g else 1.0


def table_unit(rows: list[dict]) -> str:
    """The cluster unit of a stored Table 1 paired-test table (before the unit was named, the
    tests clustered by source chunk)."""
    units = {str(r.get("cluster")) for r in rows if isinstance(r.get("cluster"), str)}
    return units.pop() if len(units) == 1 else "source_chunk"


MAX_N = 100_000  # questions: beyond this the table says "≥ 100,000"


def _need(effect, sd, deff, alpha=ALPHA, power=POWER) -> int | None:
    from ..stats import questions_needed

    return questions_needed(effect, sd, alpha, power, deff, MAX_N)


def _cells(last: list[dict], comparison: str, measure: str, retrievers, ks) -> list[tuple]:
    """(paper effect, last-run row or None) per cell of a Table 1 family."""
    out = []
    for r in retrievers if comparison == "reranked - retrieved" else ["dense vs bm25"]:
        for k in ks:
            row = next(
                (
                    x
                    for x in last
                    if x["comparison"] == comparison
                    and x["measure"] == measure
                    and str(x["retriever"]) == r
                    and int(x["top_k"]) == int(k)
                ),
                None,
            )
            out.append((paper_effect(comparison, "bm25" if r == "dense vs bm25" else r, k, measure), row))
    return out


@dataclass(frozen=True)
class PowerPlan:
    """What the power table needs from a config: the run folder whose last tables give the spread
    (`root`, the project folder, shortens its name in the table), Table 1's retrievers and top-k,
    the questions each table will have (None: not capped), and the setup (for comparability)."""

    run_dir: Path
    root: str | None
    retrievers: tuple[str, ...]
    top_k: tuple[int, ...]
    planned_table1: int | None
    planned_table2: int | None
    setup: RunSetup
    cluster: str = "document"


def power_table(plan: PowerPlan, last_run: Path | None = None, recluster=None) -> list[dict]:
    """The power table for `plan`, from the paired-test tables of `last_run` (a run folder,
    default `plan.run_dir`) when they exist. When its Table 1 tests were clustered by another unit
    than `plan.cluster`, `recluster(unit)` (when given) returns them recomputed at that unit (rows as
    `grading/paired_tests.csv` holds them, or None when the run's grades are not there)."""
    import pandas as pd

    run = Path(last_run) if last_run else plan.run_dir
    read = lambda p: pd.read_csv(p).to_dict("records") if p.is_file() else []
    shown = run  # the run folder as the table names it: relative to the project, no machine path
    if plan.root and run.is_absolute() and run.is_relative_to(Path(plan.root)):
        shown = run.relative_to(Path(plan.root))
    t1, t2 = read(run / names.PAIRED_TESTS), read(run / names.TABLE2_TESTS)
    labelled = [r for r in read(run / names.LABEL_PAIRED_TESTS) if not r.get("holes")]
    if t1 and recluster is not None and table_unit(t1) != plan.cluster:
        t1 = recluster(plan.cluster) or t1
    if labelled and (recluster is None or table_unit(labelled) == plan.cluster):
        t1 = labelled  # a labelled pilot: the spread of the instrument the verdicts read
    labelled2 = [r for r in read(run / names.LABEL_TABLE2_TESTS) if not r.get("holes")]
    t2 = labelled2 or t2  # answers the assessor scored: the same for Table 2
    rejected = screened_out_share(run)
    unit = table_unit(t1) if t1 else plan.cluster
    ks, retrievers = plan.top_k, list(plan.retrievers)
    planned1, planned2 = plan.planned_table1, plan.planned_table2
    rows = []

    def add(finding, rule, effect_text, cells, planned, key, iut=True):
        needs, bases, per, per_g = [], set(), 1.0, 1.0
        for effect, last in cells:
            sd, deff, per_c, basis = spread(last, key)
            bases.add(basis)
            per, per_g = max(per, per_c), max(per_g, per_cluster(last))
            if effect:
                needs.append(_need(effect, sd, deff))
        need = max((n for n in needs if n is not None), default=None) if iut else (needs[0] if needs else None)
        rows.append(
            {
                "finding": finding,
                "rule": rule,
                "paper_effect": effect_text,
                "questions_needed": need,
                "source_chunks_needed": None if need is None else ceil(need / per),
                "questions_planned": planned,
                "source_chunks_planned": None if planned is None else ceil(planned / per),
                "written_needed": written(need, rejected),
                "spread_from": ", ".join(sorted(bases))
                + (" (labels)" if t1 is labelled and labelled else "")
                + (f" ({shown})" if any("last" in b for b in bases) else ""),
                **_clusters(unit, need, planned, per_g),
            }
        )

    def effects(cells):
        vals = [e for e, _ in cells if e is not None]
        return "–" if not vals else (f"{min(vals):+.2f} to {max(vals):+.2f}" if len(vals) > 1 else f"{vals[0]:+.2f}")

    rr = "reranked - retrieved"
    for finding, measure, _sign_ok in (
        ("Reranking lowers the share of grades 0 and 1 at every top-k", "share_0_1", None),
        ("Reranking raises the share of grade 3 (every retriever and top-k)", "share_3", None),
        ("Retrieved lists hold more grade 2 than reranked ones, except at top-10", "share_2", None),
    ):
        cells = _cells(t1, rr, measure, retrievers, ks)
        add(finding, "intersection-union, each cell α = 0.05", effects(cells) + " pp", cells, planned1, measure)
    top3 = _cells(t1, rr, "share_3", ["bm25"], [3])
    add(
        "Reranking raises the share of grade 3 (BM25, top-3)",
        "one test, α = 0.05",
        effects(top3) + " pp",
        top3,
        planned1,
        "share_3",
        iut=False,
    )
    if {"bm25", "dense"} <= set(retrievers):
        cells = _cells(t1, "dense - bm25", "mean_grade", retrievers, ks)
        add(
            "The judge prefers the dense retriever to BM25",
            "intersection-union, each top-k α = 0.05",
            effects(cells) + " grade",
            cells,
            planned1,
            "mean_grade",
        )
    for metric in ("faithfulness", "relevance"):
        paper_diff = PAPER_TABLE2[(metric, "3_wrong")][0] - PAPER_TABLE2[(metric, "standard")][0]
        last = next(
            (
                x
                for x in t2
                if x["metric"] == metric
                and str(x["setting_b"]).endswith("_wrong")
                and not str(x["setting_b"]).endswith("only")
            ),
            None,
        )
        sd, deff, per, basis = spread(last, "rubric")
        # TOST at α: the 90% CI inside ±margin; as a two-sided test at 2α with power 1 − (1 − power)/2
        need = _need(LITTLE - abs(paper_diff), sd, deff, 2 * ALPHA, 1 - (1 - POWER) / 2)
        rows.append(
            {
                "finding": f"{metric.capitalize()} changes little from standard to 3 wrong",
                "rule": f"equivalence (TOST), margin ±{LITTLE}",
                "paper_effect": f"{paper_diff:+.2f} points",
                "questions_needed": need,
                "written_needed": written(need, rejected),
                "source_chunks_needed": None if need is None else ceil(need / per),
                "questions_planned": planned2,
                "source_chunks_planned": None if planned2 is None else ceil(planned2 / per),
                "spread_from": basis
                + (" (labels)" if labelled2 and last is not None else "")
                + (f" ({shown})" if "last" in basis else ""),
                **_clusters(table_unit([last]) if last else plan.cluster, need, planned2, per_cluster(last)),
            }
        )
    comparable = comparability(setup_rows(plan.setup))
    for finding, paper in (
        ("Grades 2-3 exceed 90% in most cells", "above 90%"),
        ("Noise robustness is high", "4.87"),
        ("Negative rejection", "3.14"),
    ):
        rows.append(
            {
                "finding": finding,
                "rule": "absolute level",
                "paper_effect": paper,
                "questions_needed": None if comparable == "yes" else "not comparable",
                "source_chunks_needed": None,
                "questions_planned": planned2 if "Negative" in finding or "Noise" in finding else planned1,
                "source_chunks_planned": None,
                "spread_from": comparable if comparable != "yes" else "–",
            }
        )
    return rows


def _clusters(unit: str, need, planned, per: float) -> dict:
    """The unit's columns of a power row: the clusters needed and planned at `per` questions each."""
    return {
        "cluster": unit,
        "clusters_needed": None if not isinstance(need, int) else ceil(need / per),
        "clusters_planned": None if planned is None else ceil(planned / per),
    }


def screened_out_share(run: Path) -> float | None:
    """The share of a run's written questions the assessor screened out (grading/question_screening.json),
    None when none was screened."""
    import json

    p = Path(run) / names.QUESTION_SCREENING
    if not p.is_file():
        return None
    f = json.loads(p.read_text(encoding="utf-8"))
    return f.get("rejected_share") if f.get("screened") else None


def written(need, rejected: float | None):
    """Questions to write so that `need` survive a screen rejecting `rejected` of them (None: no screen
    measured, so the need itself)."""
    if not isinstance(need, (int, float)) or rejected is None or rejected >= 1:
        return need
    return min(MAX_N, ceil(need / (1 - rejected)))


def format_power(rows: list[dict], wide: bool = True) -> str:
    """The power table as text for `spacelm plan`: a table (`wide`), or one block per finding that
    fits 100 columns."""
    import pandas as pd

    if not rows:
        return ""

    def cell(v):
        if v is None or (isinstance(v, float) and v != v):
            return "–"
        if isinstance(v, (int, float)):
            return f"≥ {MAX_N:,}" if v >= MAX_N else f"{int(v):,}"
        return str(v)

    if not wide:
        lines = ["Power: questions needed to detect the paper's effect with 80% power under each verdict's rule:"]
        for r in rows:
            c = {k: cell(r.get(k)) for k in COLUMNS}
            lines.append(f"- {c['finding']} ({c['rule']}; paper's effect {c['paper_effect']})")
            if r.get("questions_needed") == "not comparable":  # spread_from holds the reason
                lines.append(f"    not comparable ({c['spread_from']}); questions planned: {c['questions_planned']}")
                continue
            lines.append(
                f"    questions: {c['questions_needed']} needed ({c['written_needed']} written, at the screen's "
                f"rejection rate), {c['questions_planned']} planned; source chunks: "
                f"{c['source_chunks_needed']} needed, {c['source_chunks_planned']} planned; clusters ({c['cluster']}): "
                f"{c['clusters_needed']} needed, {c['clusters_planned']} planned; SD from {c['spread_from']}"
            )
        return "\n".join(lines)
    df = pd.DataFrame([{k: cell(r.get(k)) for k in COLUMNS} for r in rows], columns=COLUMNS)
    return (
        "Power: questions needed to detect the paper's effect with 80% power under each verdict's rule "
        "(spacelm/lib/report/findings.py), beside what this config plans; `cluster` names the unit whose design "
        "effect and questions per cluster give the clusters needed\n" + df.to_string(index=False)
    )
