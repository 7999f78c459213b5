"""Stage findings: the paper's findings beside this run's, computed once from the tests of the
grade and answer stages (and of the chunk-size study's Table 1, when it grades) and the verdicts
of the judge checks (see spacelm/lib/report/findings.py).

It writes `findings.json` (the rows, read by the report, the notebooks and the README script),
the same table as `paper_vs_run.csv`, and the forest plot of Table 1's cells. Table 2's
"changes little" findings are read at the config's margins (`findings.margins`), each against the
judge's control gap for the kinds of bad answer the config names (`findings.control_kinds`),
computed here from the judge check's scored controls. It runs after the answer stage and before
the notebooks, loads no model and takes a fraction of a second."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..config import Config
from ..lib import names
from ..runner.base import Stage, execute

# the grader of a finding read through labels, as the setup table names the judge beside the paper's
ASSESSOR_AS_JUDGE = "an LLM assessor's labels"

# the files it reads, relative to the run folder
READS = (
    names.PAIRED_TESTS,
    names.RELEVANT_SHARES,
    names.LABEL_PAIRED_TESTS,
    names.LABEL_RELEVANT_SHARES,
    "labels/standing.json",
    names.TABLE2,
    names.TABLE2_TESTS,
    names.LABEL_TABLE2_TESTS,
    names.NEGATIVE_PASSAGES,
    names.ANSWERS,
    names.JUDGE_RELEVANCE,
    names.JUDGE_CONTROLS,
    names.JUDGE_CONTROLS_ROWS,
    names.GRADING_SENSITIVITY,
)
GOLDEN_READS = (
    names.GOLDEN_PAIRED_TESTS,
    names.GOLDEN_RELEVANT_SHARES,
    names.GOLDEN_LABEL_PAIRED_TESTS,
    names.GOLDEN_LABEL_RELEVANT_SHARES,
)


def _read_csv(p: Path) -> list[dict]:
    import pandas as pd

    return pd.read_csv(p).to_dict("records") if p.is_file() else []


def read_judge_check(cfg) -> tuple:
    """(relevance results, controls rows) from the judge-check stage, or (None, None)."""
    import pandas as pd

    rel_p, ctl_p = cfg.run_dir / names.JUDGE_RELEVANCE, cfg.run_dir / names.JUDGE_CONTROLS
    rel = json.loads(rel_p.read_text()) if rel_p.is_file() else None
    ctl = pd.read_csv(ctl_p).to_dict("records") if ctl_p.is_file() else None
    return rel, ctl


def control_gaps(cfg: Config) -> dict:
    """{rubric: its control gap} for each "changes little" finding's rubric, from the judge check's
    scored controls (judge_check/controls.jsonl) of the kinds the config names for it
    (findings.control_kinds); {} when the judge check scored none."""
    from dataclasses import asdict

    from ..lib.io import read_jsonl
    from ..lib.report.findings import control_gap

    p = cfg.run_dir / names.JUDGE_CONTROLS_ROWS
    rows = read_jsonl(p) if p.is_file() else []
    if not rows:
        return {}
    return {rubric: control_gap(rows, rubric, kinds) for rubric, kinds in asdict(cfg.findings.control_kinds).items()}


def size_tests(cfg: Config) -> dict[int, Path]:
    """{chunk size: its Table 1 paired tests} of the chunk-size study, when it grades."""
    if not cfg.chunk_study.grade_questions:
        return {}
    return {size: cfg.run_dir / names.chunk_size_tests(size) for size in cfg.chunk_study.sizes}


def compute(cfg: Config) -> list[dict]:
    """The findings' rows (lib.findings.COLUMNS) from the run's files; [] before grade and answer."""
    from dataclasses import asdict

    from ..lib.report.findings import (
        five_wrong_missing,
        judge_verdicts,
        paper_vs_run,
        table1_findings,
        table2_findings,
    )
    from ..lib.report.setup_table import comparability, setup_rows

    run = cfg.run_dir
    rows = []
    tests, shares, instrument = table1_tests(cfg)
    if tests is not None:
        rows += table1_findings(
            _read_csv(tests),
            _read_csv(shares),
            cfg.chunking.max_tokens,
            {size: _read_csv(p) for size, p in size_tests(cfg).items() if p.is_file()},
            cfg.analysis_plan.entries(),
            sensitivity=_read_csv(run / names.GRADING_SENSITIVITY) if instrument == "judge" else None,
            instrument=instrument,
        )
    if (run / names.GOLDEN_PAIRED_TESTS).is_file():
        rows += golden_rows(cfg)
    rel, ctl = read_judge_check(cfg)
    t2_tests, t2_instrument = table2_tests(cfg)
    if t2_tests is not None:
        long = [r for r in _read_csv(run / names.TABLE2) if r.get("instrument", "judge") == t2_instrument]
        found = table2_findings(
            long,
            _read_csv(t2_tests),
            control_gaps(cfg) if t2_instrument == "judge" else assessor_gaps(cfg),
            asdict(cfg.findings.margins),
            five_wrong_missing(cfg.answer.n_wrong_values, cfg.answer.negative_n_wrong),
            negative_premise(cfg) if t2_instrument == "labels" else None,
        )
        holes: dict = {}
        for r in long:
            holes[r["metric"]] = holes.get(r["metric"], 0) + int(r.get("holes") or 0)
        rows += [dict(r, instrument=t2_instrument, holes=holes.get(r["judge"], 0)) for r in found]
    # what an absolute level needs to match (judge, chunk size) depends on the config alone
    from ..lib.report.plan import apply_plan

    setup = cfg.run_setup()
    comparable = {
        "judge": comparability(setup_rows(setup)),
        "labels": comparability(setup_rows(dataclasses.replace(setup, judge_model=ASSESSOR_AS_JUDGE))),
    }
    rows = paper_vs_run(rows, judge_verdicts(rel, ctl), comparable, grader_evidence(cfg, rel))
    return with_cluster(apply_plan(rows, cfg.analysis_plan.entries()), cfg)


def table1_tests(cfg: Config) -> tuple:
    """(paired tests, relevant shares, instrument) that Table 1's verdicts read: the assessor's
    labels' (grading/labels/) when the config reads labels, else the judge's; (None, None, None)
    before the grade stage."""
    run = cfg.run_dir
    if cfg.grading.instrument != "judge" and (run / names.LABEL_PAIRED_TESTS).is_file():
        return run / names.LABEL_PAIRED_TESTS, run / names.LABEL_RELEVANT_SHARES, "labels"
    if (run / names.PAIRED_TESTS).is_file():
        return run / names.PAIRED_TESTS, run / names.RELEVANT_SHARES, "judge"
    return None, None, None


def table2_tests(cfg: Config) -> tuple:
    """(Table 2's paired tests, instrument) its verdicts read: the assessor's rubric scores' when
    the config reads labels, else the judges'; (None, None) before the answer stage."""
    run = cfg.run_dir
    if cfg.answer.instrument != "judge" and (run / names.LABEL_TABLE2_TESTS).is_file():
        return run / names.LABEL_TABLE2_TESTS, "labels"
    if (run / names.TABLE2_TESTS).is_file():
        return run / names.TABLE2_TESTS, "judge"
    return None, None


def negative_premise(cfg: Config) -> dict | None:
    """Whether the negative setting's passages held no answer, by the assessor's grade of each
    passage its answers read (answer_labels/negative_passages.json, which the answer stage's tables
    write); None without that setting. A run whose tables predate that file reads as unlabelled."""
    from ..lib.report.findings import negative_premise as premise
    from .labels import negative_answers

    p = cfg.run_dir / names.NEGATIVE_PASSAGES
    if not p.is_file():
        answers = negative_answers(cfg)
        return premise([[None for _ in a.get("passage_ids") or [None]] for a in answers])
    rec = json.loads(p.read_text(encoding="utf-8"))
    return premise(rec["grades"], rec.get("missing"))


def assessor_gaps(cfg: Config) -> dict:
    """{rubric: the assessor's control gap} for each "changes little" finding's rubric, from its
    scores of the answer controls mixed into its batches (the judge's resolution, for labels)."""
    from dataclasses import asdict

    from ..lib.report.findings import control_gap
    from .labels import answer_control_rows

    rows = answer_control_rows(cfg)
    return {rubric: control_gap(rows, rubric, kinds) for rubric, kinds in asdict(cfg.findings.control_kinds).items()}


def with_cluster(rows: list[dict], cfg: Config) -> list[dict]:
    """Each row with the clustering unit its tests used (`cluster`): the unit named in the paired
    tests of its table (Table 1's for the relevance grader's findings, Table 2's for the answer
    judges'), "–" where the table has no test."""
    run = cfg.run_dir

    def unit(*paths: Path) -> str:
        for p in paths:
            found = {str(r.get("cluster")) for r in _read_csv(p) if str(r.get("cluster")) not in ("", "nan", "None")}
            if found:
                return ", ".join(sorted(found))
        return "–"

    t1 = unit(run / names.PAIRED_TESTS, run / names.GOLDEN_PAIRED_TESTS)
    t2 = unit(run / names.TABLE2_TESTS)
    return [dict(r, cluster=t1 if r.get("judge") == "grader" else t2) for r in rows]


def golden_rows(cfg: Config) -> list[dict]:
    """Table 1's findings on the golden questions (grading/golden/): the same rules as the run's own
    questions, each row marked `question_set` golden and named so. The chunk-size rows belong to
    the run's set alone."""
    from ..lib.report.findings import table1_findings

    run = cfg.run_dir
    tests_p, shares_p, instrument = run / names.GOLDEN_PAIRED_TESTS, run / names.GOLDEN_RELEVANT_SHARES, "judge"
    if cfg.grading.instrument != "judge" and (run / names.GOLDEN_LABEL_PAIRED_TESTS).is_file():
        tests_p, shares_p, instrument = (
            run / names.GOLDEN_LABEL_PAIRED_TESTS,
            run / names.GOLDEN_LABEL_RELEVANT_SHARES,
            "labels",
        )
    tests = _read_csv(tests_p)
    if tests and "comparison" not in tests[0]:  # a note: the golden set was not graded on its own (gold_check)
        return []
    rows = table1_findings(
        tests,
        _read_csv(shares_p),
        cfg.chunking.max_tokens,
        None,
        cfg.analysis_plan.entries(),
        question_set="golden",
        instrument=instrument,
    )
    return [r for r in rows if not r["id"].startswith("chunks_")]


def grader_evidence(cfg: Config, relevance: list | None) -> dict:
    """What Table 1's verdicts need of the relevance grader: the systems whose scorer it shares
    (from the config: spacelm/lib/instruments.py), its in-domain check (the first source marked
    in_domain that ran) and the bias bar."""
    from ..config.validate import shared_with_grader
    from ..lib.instruments import describe_sharing
    from ..lib.labels.store import RELEVANCE
    from .labels import standing_of

    ind = next((m for m in relevance or [] if m.get("run") and m.get("in_domain")), None)
    from ..lib.labels.store import ANSWERS

    return {
        "shared": describe_sharing(shared_with_grader(cfg)),
        "in_domain": ind,
        "bias_share": cfg.judge_check.bias_share_of_mde,
        "labels": standing_of(cfg, RELEVANCE),
        "answer_labels": standing_of(cfg, ANSWERS),
    }


def _outputs(cfg: Config) -> list[Path]:
    """findings.json always; the table and the forest plot once there are tests to read."""
    run = cfg.run_dir
    out = [run / names.FINDINGS]
    if (run / names.PAIRED_TESTS).is_file() or (run / names.TABLE2_TESTS).is_file():
        out.append(run / names.PAPER_VS_RUN)
    if (run / names.PAIRED_TESTS).is_file():
        out.append(run / names.PLOT_FOREST)
    return out


def build(cfg: Config, out) -> dict:
    from ..lib.io import write_json

    run = cfg.run_dir
    rows = compute(cfg)
    write_json(out(run / names.FINDINGS), rows)
    if rows:
        import pandas as pd

        from ..lib.io import write_dataframe
        from ..lib.report.findings import COLUMNS, forest_rows
        from ..lib.report.plots import forest_plot

        write_dataframe(pd.DataFrame(rows, columns=COLUMNS), out(run / names.PAPER_VS_RUN))
        tests, _, _ = table1_tests(cfg)
        if tests is not None:
            forest_plot(forest_rows(_read_csv(tests)), out(run / names.PLOT_FOREST))
    verdicts = [r.get("verdict") for r in rows]
    return {"findings": len(rows), "verdicts": {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}}


STAGE = Stage(
    name="findings",
    home=lambda cfg: cfg.run_dir,
    outputs=_outputs,
    build=build,
    sections=lambda cfg: [
        "chunking",
        "models.judge",
        "grading.method",
        "grading.calibration",
        "grading.allow_shared_scorer",
        "retrieval.dense",
        "retrieval.reranker",
        "judge_check.bias_share_of_mde",
        "findings.margins",
        "findings.control_kinds",
        "analysis_plan",
        "grading.instrument",
        "answer.instrument",
        # the 5-wrong finding's reason names the run's settings
        "answer.n_wrong_values",
        "answer.negative_n_wrong",
    ],
    reads=lambda cfg: [cfg.run_dir / f for f in READS + GOLDEN_READS] + list(size_tests(cfg).values()),
    doc="the paper's findings beside this run's (findings.json, paper_vs_run.csv), from the tests and judge checks",
    after=("chunk-sizes", "judge-check", "grade", "answer"),
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)


def read(cfg: Config) -> list[dict]:
    """The findings' rows as the stage wrote them (bringing the stage up to date first)."""
    run(cfg)
    return json.loads((cfg.run_dir / names.FINDINGS).read_text(encoding="utf-8"))
