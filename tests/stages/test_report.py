"""`build_report` from the files the stages wrote: what is there is shown, what is not is
said to be missing, and every link resolves."""

from __future__ import annotations

import json
import re

from spacelm.pipeline import run_stages
from spacelm.runner.manifest import Manifest
from spacelm.stages.report import build_report


def _links(report: str) -> list[str]:
    return re.findall(r"\]\(([^)]+)\)", report)


def _pages(path) -> tuple[str, str]:
    return path.read_text(), (path.parent / "report_details.md").read_text()


def test_report_of_a_partial_run_links_only_what_exists(tiny_config):
    m = Manifest(tiny_config)
    res = run_stages(tiny_config, upto="chunk", manifest=m)
    m.finish()
    path = build_report(tiny_config)
    report, details = _pages(path)
    run = tiny_config.run_dir
    assert path == run / "report.md"
    n_docs, n_chunks = res["ingest"]["documents"], res["chunk"]["chunks"]
    assert f"{n_docs} documents" in details and f"{n_chunks} chunks of at most 64 tokens" in details
    assert "## Table 1" in report and "## Table 2" in report
    assert report.count("_(not produced in this run)_") == 2  # Table 1, Table 2
    assert details.count("_(not produced in this run)_") >= 2  # retrieval, Table 1's tests
    links = _links(report) + _links(details)
    assert "plots/chunk_lengths.png" in links
    assert all((run / link.split("#")[0]).is_file() for link in links), links
    # the run-time table lists exactly the stages of this run, from the manifest
    rows = [ln.split("|")[1].strip() for ln in details.splitlines() if ln.startswith("| ") and "|---" not in ln]
    assert [r for r in rows if r in ("ingest", "chunk", "synth", "grade")] == ["ingest", "chunk"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert f"git `{manifest['git_commit']}`" in report


def test_report_links_every_section_of_its_details(tiny_config):
    """report.md ends with a list of the detail sections, one link per heading of report_details.md,
    each to the anchor a Markdown renderer gives that heading."""
    from spacelm.stages.report import headings

    report, details = _pages(build_report(tiny_config))
    wanted = headings(details)
    assert {h["title"] for h in wanted} >= {"Run time", "Models", "Corpus", "Judge checks", "Table 1 in detail"}
    linked = [link.split("#")[1] for link in _links(report) if link.startswith("report_details.md#")]
    assert linked == [h["anchor"] for h in wanted]
    assert headings("## Run time\n### A (b) — c\n## Run time\n# top") == [
        {"level": 2, "title": "Run time", "anchor": "run-time"},
        {"level": 3, "title": "A (b) — c", "anchor": "a-b--c"},
        {"level": 2, "title": "Run time", "anchor": "run-time-1"},
    ]


def test_report_without_a_manifest_still_builds(tiny_config):
    report, details = _pages(build_report(tiny_config))
    assert "# spacelm report" in report and "# spacelm report details" in details
    assert {link.split("#")[0] for link in _links(report)} == {"report_details.md"} and "report.md" in _links(details)


def _write_checks(cfg, verdicts: dict, controls: dict) -> None:
    import pandas as pd

    d = cfg.run_dir / "judge_check"
    d.mkdir(parents=True, exist_ok=True)
    rel = [
        {
            "source": s,
            "run": True,
            "verdict": v,
            "n_pairs": 90,
            "auc": 0.6,
            "auc_ci": [0.5, 0.7],
            "kappa_binary": 0.1,
            "kappa_binary_ci": [0.0, 0.2],
            "judge": {"name": cfg.models.judge.model},
        }
        for s, v in verdicts.items()
    ]
    (d / "relevance.json").write_text(json.dumps(rel))
    pd.DataFrame(
        [
            {
                "rubric": r,
                "n": 12,
                "pass_rate": 0.5,
                "pass_rate_ci_low": 0.2,
                "pass_rate_ci_high": 0.8,
                "mean_gap": 0.1,
                "missing": 0,
                "verdict": v,
            }
            for r, v in controls.items()
        ]
    ).to_csv(d / "controls.csv", index=False)


def test_banners_say_in_plain_words_when_a_judge_fails_or_was_never_checked(tiny_config):
    from spacelm.stages.report import judge_banner

    assert "Unchecked judge" in judge_banner(tiny_config, "table1")
    assert "Unchecked judge" in judge_banner(tiny_config, "table2")
    _write_checks(
        tiny_config, {"scifact": "fails", "trec": "weak"}, {"faithfulness": "valid", "negative_rejection": "fails"}
    )
    t1 = judge_banner(tiny_config, "table1")
    assert "scifact: **fails**" in t1 and "trec: **weak**" in t1 and "fails its check on scifact" in t1
    assert "n=90 pairs" in t1 and "0.60 [0.50, 0.70]" in t1
    t2 = judge_banner(tiny_config, "table2")
    assert "faithfulness: **valid**" in t2 and "fails its controls for negative_rejection" in t2
    _write_checks(tiny_config, {"scifact": "valid"}, {"faithfulness": "valid"})
    assert "⚠" not in judge_banner(tiny_config, "table1") and "⚠" not in judge_banner(tiny_config, "table2")
    tiny_config.models.judge.model = "embedded:qwen2.5-coder-0.5b"  # a table from a judge the checks did not measure
    assert "not this table's judge" in judge_banner(tiny_config, "table1")


def test_report_prints_reference_judges_refusal_rates_and_ppi_status(tiny_config):
    import pandas as pd

    from spacelm.stages.report import judge_banner, judge_check_section, ppi_lines, refusal_lines

    _write_checks(tiny_config, {"trec": "weak"}, {"negative_rejection": "weak", "refusal": "valid"})
    d = tiny_config.run_dir / "judge_check"
    rel = json.loads((d / "relevance.json").read_text())
    rel[0].update(
        labels="graded 0-3",
        kappa_weighted=0.3,
        accuracy=0.7,
        verdict_reason="cannot tell against gpt",
        reference_judges=[
            {
                "name": "gpt",
                "labels": "graded 0-3",
                "n_pairs": 90,
                "auc": 0.75,
                "auc_ci": [0.7, 0.8],
                "kappa_binary": 0.35,
                "kappa_binary_ci": [0.2, 0.5],
                "kappa_weighted": 0.6,
            }
        ],
    )
    (d / "relevance.json").write_text(json.dumps(rel))
    rel[0]["reference_judges"].append({**rel[0]["reference_judges"][0], "name": "few", "n_pairs": 29})
    rel[0].pop("position_bias", None)
    (d / "relevance.json").write_text(json.dumps(rel))
    section = "\n".join(judge_check_section(tiny_config))
    assert "| ↳ reference: gpt | graded 0-3 | 90 | 0.75 [0.70, 0.80] | 0.35 [0.20, 0.50] | 0.60 |" in section
    # under the suite's own minimum a reference's figures are not printed; a check that did not run says so
    assert "| ↳ reference: few | graded 0-3 | 29 | – | – | – | – | too few pairs to tell |" in section
    assert f"- {rel[0]['source']}: position bias: not measured (" in section
    # a source drawn below judge_check.min_pairs: its verdict and why, no figure of its own or at a boundary
    few = dict(rel[0], n_pairs=tiny_config.judge_check.min_pairs - 1, verdict="too few pairs to tell")
    (d / "relevance.json").write_text(json.dumps([few]))
    section = "\n".join(judge_check_section(tiny_config))
    row = next(x for x in section.splitlines() if x.startswith(f"| {few['source']} | graded 0-3 |"))
    assert row.count("| – ") == 4 and "0.75" not in section and "↳ reference" not in section
    assert "no figures below judge_check.min_pairs" in row
    (d / "relevance.json").write_text(json.dumps(rel))
    assert "Not passed" in judge_banner(tiny_config, "table2") and "negative_rejection" in judge_banner(
        tiny_config, "table2"
    )
    (tiny_config.run_dir / "answer_checks.json").write_text(
        json.dumps(
            {
                "refusals_where_passages_cannot_answer": [
                    {
                        "setting": "5_wrong",
                        "n": 4,
                        "refusal_rate_phrase": 0.5,
                        "phrase_ci_low": 0.15,
                        "phrase_ci_high": 0.85,
                        "refusal_rate_judge": 0.25,
                        "judge_ci_low": 0.05,
                        "judge_ci_high": 0.7,
                        "n_judge": 4,
                        "agreement": 0.75,
                        "kappa": 0.5,
                        "rubric_mean": 3.5,
                        "rubric_declines_rate": 0.5,
                        "n_rubric": 4,
                    }
                ]
            }
        )
    )
    lines = "\n".join(refusal_lines(tiny_config))
    assert "rubric mean (1–5 ⚠ not passed its controls)" in lines and "refusal rate (judge)" in lines
    assert "| 5_wrong | 4 | 0.50 [0.15, 0.85] | 0.25 [0.05, 0.70] | 0.75 | 0.50 | 3.50 | 0.50 |" in lines
    pd.DataFrame(
        [
            {
                "retriever": "bm25",
                "stage": "retrieved",
                "top_k": 3,
                "grade": 2,
                "percent": 50.0,
                "ppi_estimate": None,
                "ppi_ci_low": None,
                "ppi_ci_high": None,
                "n_human": 0,
            }
        ]
    ).to_csv(tiny_config.run_dir / "table1_relevance.csv", index=False)
    assert "no human labels" in "\n".join(ppi_lines(tiny_config))


def test_report_shows_fact_check_verdicts_with_their_n_and_says_when_none_is_labelled(tiny_config):
    from spacelm.lib.answer.answers import fact_check_table, score_verdict
    from spacelm.lib.io import write_dataframe
    from spacelm.lib.report.intervals import interval_methods
    from spacelm.stages.report import fact_check_lines

    run, name = tiny_config.run_dir, "fact_check_verdicts.csv"
    assert fact_check_lines(tiny_config) == [] and name not in interval_methods(run)  # a run made before it
    items = []
    for i, (label, text) in enumerate([("supported", "Supported. [1]"), ("refuted", "Supported. [1]")]):
        it = {"task": "fact_checking", "label": label, "answer": text, "setting": "standard", "pipeline": "table2"}
        it.update(rubrics=["faithfulness"], source_chunk_id=f"a:{i}", passage_ids=[f"a:{i}"])
        score_verdict(it)
        items.append(it)
    run.mkdir(parents=True, exist_ok=True)
    write_dataframe(fact_check_table([]), run / name)
    assert "carries a label" in "\n".join(fact_check_lines(tiny_config)) and name in interval_methods(run)
    write_dataframe(fact_check_table(items), run / name)
    lines = "\n".join(fact_check_lines(tiny_config))
    rows = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines.splitlines() if ln.startswith("| ")]
    assert rows[0] == ["setting", "pipeline", "n", "n_verdict", "accuracy", "ci_low", "ci_high"]
    assert [r[:5] for r in rows[1:]] == [["standard", "table2", "2", "2", "0.5"]]  # all labels: one row per setting


def test_report_shows_the_question_checks_per_task_beside_the_golden_samples(tiny_config):
    import pandas as pd

    from spacelm.lib.io import write_dataframe
    from spacelm.lib.synth.screening import rejection_table
    from spacelm.stages.report import question_check_lines

    assert question_check_lines(tiny_config, {}) == []  # questions written before the checks
    recs = [
        {"task": "direct_qa", "drop_reason": "copy", "kept": False},
        {"task": "direct_qa", "drop_reason": "premise", "kept": False},
        {"task": "direct_qa", "drop_reason": None, "kept": True},
    ]
    gold = [{"task": "direct_qa", "drop_reason": None}, {"task": "direct_qa", "drop_reason": "copy"}]
    d = tiny_config.synthetic_dir
    d.mkdir(parents=True, exist_ok=True)
    write_dataframe(rejection_table(recs, {"a:1": "licence"}, gold), d / "rejections.csv")
    audit = [
        {"set": s, "task": "all", "n": 3, "coverage_mean": 0.5, "verbatim_median": 2, "verbatim_p90": 4}
        for s in ("written", "kept", "golden")
    ]
    write_dataframe(
        pd.DataFrame(
            [
                {
                    **a,
                    "share_copy": 0.1,
                    "share_outside_context": 0.0,
                    "share_outside_document": 0.0,
                    "share_boilerplate": 0.0,
                }
                for a in audit
            ]
        ),
        d / "question_audit.csv",
    )
    text = "\n".join(question_check_lines(tiny_config, {"synth": {"sources_skipped": {"licence": 1}}}))
    assert "1 skipped (licence 1)" in text
    rows = [[c.strip() for c in ln.split("|")[1:-1]] for ln in text.splitlines() if ln.startswith("| ")]
    header = rows[0]
    direct = dict(zip(header, rows[1]))
    assert (direct["written"], direct["rejected_copy"], direct["rejected_premise"], direct["kept"]) == (
        "3",
        "1",
        "1",
        "1",
    )
    assert ["golden", "3"] == [r[:2] for r in rows if r[0] == "golden"][0]  # the audit table's golden row


# --------------------------------------------------------------------------- the report as a stage
def test_report_and_findings_are_declared_stages_and_the_template_is_an_input(tiny_config, monkeypatch):
    from spacelm.runner import base
    from spacelm.runner.base import fingerprint_of, stage_inputs
    from spacelm.stages import BY_NAME, LAST, STAGES, report

    assert report.STAGE in STAGES and LAST is report.STAGE and STAGES[-1] is report.STAGE
    assert BY_NAME["findings"].after and "findings" in report.STAGE.after
    key = f"file:{base.display_path(tiny_config, report.TEMPLATE)}"
    before = stage_inputs(report.STAGE, tiny_config)
    assert key in before
    assert all(f"file:{base.display_path(tiny_config, p)}" in before for p in report.SECTIONS.glob("*.md"))
    orig = base.file_hash
    monkeypatch.setattr(base, "file_hash", lambda p: orig(p) + ("-edited" if p == report.TEMPLATE else ""))
    after = stage_inputs(report.STAGE, tiny_config)
    assert fingerprint_of(after) != fingerprint_of(before) and after[key] != before[key]


def test_build_report_is_atomic_and_stamped(tiny_config):
    from spacelm.runner.base import freshness
    from spacelm.stages import report

    path = build_report(tiny_config)
    assert freshness(report.STAGE, tiny_config)[0] == "up to date"
    assert not list(tiny_config.run_dir.glob(".staging-*")) and (tiny_config.run_dir / ".report.stamp.json").is_file()
    assert json.loads((tiny_config.run_dir / "findings.json").read_text()) == []  # no tests yet: no findings
    path.write_text("damaged")
    report.TEMPLATE.touch()  # a stamp decides, not a time: the report is still current ...
    assert freshness(report.STAGE, tiny_config)[0] == "up to date"
    assert build_report(tiny_config).read_text() != "damaged"  # ... and `spacelm report` rewrites it anyway


def test_stage_code_is_its_module_and_the_definitions_it_reaches():
    """The grade stage's code inputs: its own module whole, and for each module it imports a name
    from, the definitions it reaches there (docs/stages.md, "When is a stage stale?"); the rule
    itself is tested in tests/stages/test_base.py."""
    import ast
    from pathlib import Path

    import spacelm
    from spacelm.runner.base import code_inputs
    from spacelm.stages import BY_NAME

    pkg = Path(spacelm.__file__).parent
    named = set()
    for node in ast.walk(ast.parse((pkg / "stages" / "grade.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level and node.module:  # relative imports of a name
            parent = ["spacelm", "stages"][: 3 - node.level]
            module = ".".join(parent + [node.module])
            if any(not pkg.joinpath(*module.split(".")[1:], a.name).with_suffix(".py").is_file() for a in node.names):
                named.add(module)
    keys = code_inputs(BY_NAME["grade"].code)
    assert BY_NAME["grade"].code == ("spacelm.stages.grade",) and "code:spacelm.stages.grade" in keys
    assert {"spacelm.lib.io", "spacelm.runner.data"} <= named
    # (a name a package re-exports counts where it is defined: Config in spacelm.config.schema)
    reached = {k.split(":", 1)[1] for k in keys}
    assert all(any(r == m or r.startswith(m + ".") for r in reached) for m in named), named - reached


def test_the_report_is_worded_in_jinja_templates_only():
    """One presentation layer: the home-made `@@ block` format and its reader are gone; every
    section of the two pages is a Jinja2 template of spacelm/templates/report/."""
    from pathlib import Path

    import spacelm
    from spacelm.stages import report

    pkg = Path(spacelm.__file__).parent
    assert not (pkg / "lib" / "report" / "templates.py").exists() and not (pkg / "templates" / "report.md").exists()
    for p in pkg.rglob("*.py"):
        assert "lib.report.templates" not in p.read_text() and "read_blocks" not in p.read_text(), p
    for p in (pkg / "templates").rglob("*.md"):
        assert not any(line.startswith("@@ ") for line in p.read_text().splitlines()), p
    assert report.TEMPLATE.parent == report.SECTIONS and {"page.md", "details.md"} <= {
        p.name for p in report.SECTIONS.glob("*.md")
    }


def test_committed_reports_show_the_first_screen_and_link_the_rest():
    """results/<run>/report.md: header, what the run found first, the setup and the findings
    beside the paper's, Tables 1 and 2, then links; at most 200 lines. Every section of the
    committed report_details.md is linked from it."""
    from pathlib import Path

    from spacelm.stages.report import headings

    root = Path(__file__).resolve().parents[2]
    for run in ("quick", "standard"):
        report, details = _pages(root / "results" / run / "report.md")
        top = [ln for ln in report.splitlines() if ln.startswith("## ")]
        assert top[:3] == [
            "## What this run found",
            "## This run's setup beside the paper's",
            "## The paper and this run",
        ]
        assert top[3].startswith("## Table 1") and top[4].startswith("## Table 2"), top
        assert len(report.splitlines()) <= 200, (run, len(report.splitlines()))
        linked = {link.split("#")[1] for link in _links(report) if link.startswith("report_details.md#")}
        assert linked == {h["anchor"] for h in headings(details)}, run


def test_finding_notes_keep_only_the_parts_that_say_something():
    from spacelm.stages.report import finding_rows

    row = {"finding": "a | b", "paper": None, "this_run": 1.5, "ci": "", "verdict": "holds here", "n": 40}
    row.update(instrument="judge", verdict_reason="–", boundary="valid", judge_bias=None, sensitivity="")
    row.update(role="primary", plan_entry="e1", n_needed=91, source="paper")
    (r,) = finding_rows([row])
    assert (r["finding"], r["paper"], r["this_run"], r["ci"]) == ("a \\| b", "–", "1.5", "–")
    assert r["note"] == {
        "boundary": "valid",
        "judge_bias": None,
        "sensitivity": None,
        "reason": None,
        "plan_entry": "e1",
        "role": "primary",
        "source": "paper",
        "need": "91",
    }


def test_committed_quick_report_regenerates_byte_identical(tmp_path):
    """`spacelm report` on a copy of results/quick writes report.md and the tables beside it
    exactly as committed (no model is loaded: every figure comes from the run's files)."""
    import shutil
    from pathlib import Path

    from spacelm.config import load_config

    root = Path(__file__).resolve().parents[2]
    run = root / "results" / "quick"
    shutil.copytree(run, tmp_path / "results" / "quick")
    syn = root / "data" / "synthetic"
    if not (syn / "retention.csv").is_file():
        import pytest

        pytest.skip("data/synthetic/retention.csv is not here (a run writes it); the report shows its table")
    cfg = load_config(
        run / "config.resolved.yaml",
        sets=[f"paths.results_dir={tmp_path / 'results'}", f"paths.processed_dir={tmp_path / 'processed'}"],
    )
    out = build_report(cfg)
    import re

    # the headline names the commit that wrote the report (this checkout's HEAD, which moves)
    commit = re.compile(rb"Run (and report )?made by the code at .*?(?=\n)")
    for name in ("report.md", "report_details.md", "paper_vs_run.csv", "setup_vs_paper.csv", "manifest.json"):
        new, old = (out.parent / name).read_bytes(), (run / name).read_bytes()
        assert commit.sub(b"", new) == commit.sub(b"", old), name


def test_the_headline_names_the_runs_commit_and_the_reports():
    from spacelm.stages.report import commit_line

    assert commit_line("abc", "abc") == "Run and report made by the code at git `abc`."
    later = commit_line("abc", "def")
    assert "git `abc`" in later and "**this report was written later, by git `def`**" in later
    assert "unrecorded commit" in commit_line(None, "def")
    assert "not recorded" in commit_line("abc", None)


def test_a_table1_study_reports_that_it_holds_no_answer_stage(tmp_path):
    """With answer.enabled false the report's Table 2, pipelines and answerability sections give way
    to one line naming the run that holds them (no empty tables, no links to plots never drawn)."""
    import shutil
    from pathlib import Path

    from spacelm.config import load_config

    root = Path(__file__).resolve().parents[2]
    run = root / "results" / "quick"
    shutil.copytree(run, tmp_path / "results" / "quick")
    for name in ("table2_answer_quality.md", "table2_tests.csv", "plots/answer_scores.png"):
        (tmp_path / "results" / "quick" / name).unlink(missing_ok=True)
    cfg = load_config(
        run / "config.resolved.yaml",
        sets=[
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.processed_dir={tmp_path / 'processed'}",
            "answer.enabled=false",
        ],
    )
    text = "\n".join(_pages(build_report(cfg)))
    assert "This run holds no answer stage (`answer.enabled: false`)" in text
    assert "## Pipelines A / B / C" not in text and "plots/answer_scores.png" not in text


def test_where_table1_reads_labels_the_report_counts_the_questions_the_screening_kept(tiny_config):
    from spacelm.lib import names
    from spacelm.lib.io import write_json
    from spacelm.stages.report import _manifest

    run = tiny_config.run_dir
    grade = {"questions": 11, "scale": names.scale(11)}
    write_json(run / names.MANIFEST, {"stages": {"grade": grade}, "sizes": {"table1_questions": 11}})
    write_json(run / names.QUESTION_SCREENING, {"questions": 121, "screened": 121, "kept_for_table1": 77})
    assert _manifest(tiny_config)["stages"]["grade"]["questions"] == 11  # the judge's tables: its sample
    tiny_config.grading.instrument = "both"
    m = _manifest(tiny_config)
    assert m["stages"]["grade"]["questions"] == 77 and m["stages"]["grade"]["judged_questions"] == 11
    assert m["sizes"]["table1_questions"] == 77 and m["stages"]["grade"]["scale"] == names.scale(77)


def test_the_calibration_plot_shows_only_when_a_source_graded_pairs(tiny_config):
    """A judge check whose sources all did not run draws an empty calibration frame: the report
    leaves it out, and shows it once a source has a confusion matrix."""
    from spacelm.lib import names
    from spacelm.stages.report import judge_check_section

    _write_checks(tiny_config, {"trec": "weak"}, {"refusal": "valid"})
    d = tiny_config.run_dir / "judge_check"
    plot = tiny_config.run_dir / names.JUDGE_CALIBRATION
    plot.parent.mkdir(parents=True, exist_ok=True)
    plot.write_bytes(b"\x89PNG\r\n\x1a\n")
    rel = json.loads((d / "relevance.json").read_text())
    (d / "relevance.json").write_text(json.dumps([{**rel[0], "run": False, "why": "folder not found"}]))
    assert "judge calibration" not in "\n".join(judge_check_section(tiny_config))
    (d / "relevance.json").write_text(json.dumps([{**rel[0], "accuracy": 0.7, "confusion": {"0": {"0": 3}}}]))
    assert "![judge calibration]" in "\n".join(judge_check_section(tiny_config))
