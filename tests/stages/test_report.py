"""`build_report` from the files the stages wrote: what is there is shown, what is not is
said to be missing, and every link resolves."""
from __future__ import annotations

import json
import re

from spacelm.pipeline import run_stages
from spacelm.stages.manifest import Manifest
from spacelm.stages.report import build_report


def _links(report: str) -> list[str]:
    return re.findall(r"\]\(([^)]+)\)", report)


def test_report_of_a_partial_run_links_only_what_exists(tiny_config):
    m = Manifest(tiny_config)
    res = run_stages(tiny_config, upto="chunk", manifest=m)
    m.finish()
    path = build_report(tiny_config)
    report = path.read_text()
    run = tiny_config.run_dir
    assert path == run / "report.md"
    n_docs, n_chunks = res["ingest"]["documents"], res["chunk"]["chunks"]
    assert f"{n_docs} documents" in report and f"{n_chunks} chunks of at most 64 tokens" in report
    assert "## Table 1" in report and "## Table 2" in report
    assert report.count("_(not produced in this run)_") >= 3  # retrieval, Table 1, Table 2
    links = _links(report)
    assert "plots/chunk_lengths.png" in links
    assert all((run / link).is_file() for link in links), links
    # the run-time table lists exactly the stages of this run, from the manifest
    rows = [ln.split("|")[1].strip() for ln in report.splitlines() if ln.startswith("| ") and "|---" not in ln]
    assert [r for r in rows if r in ("ingest", "chunk", "synth", "grade")] == ["ingest", "chunk"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert f"git `{manifest['git_commit']}`" in report


def test_report_without_a_manifest_still_builds(tiny_config):
    report = build_report(tiny_config).read_text()
    assert "# spacelm report" in report and _links(report) == []


def _write_checks(cfg, verdicts: dict, controls: dict) -> None:
    import pandas as pd

    d = cfg.run_dir / "judge_check"
    d.mkdir(parents=True, exist_ok=True)
    rel = [{"source": s, "run": True, "verdict": v, "n_pairs": 90, "auc": 0.6, "auc_ci": [0.5, 0.7],
            "kappa_binary": 0.1, "kappa_binary_ci": [0.0, 0.2], "judge": {"name": cfg.models.judge.model}}
           for s, v in verdicts.items()]
    (d / "relevance.json").write_text(json.dumps(rel))
    pd.DataFrame([{"rubric": r, "n": 12, "pass_rate": 0.5, "pass_rate_ci_low": 0.2, "pass_rate_ci_high": 0.8,
                   "mean_gap": 0.1, "missing": 0, "verdict": v} for r, v in controls.items()]).to_csv(
        d / "controls.csv", index=False)


def test_banners_say_in_plain_words_when_a_judge_fails_or_was_never_checked(tiny_config):
    from spacelm.stages.report import judge_banner

    assert "Unchecked judge" in judge_banner(tiny_config, "table1")
    assert "Unchecked judge" in judge_banner(tiny_config, "table2")
    _write_checks(tiny_config, {"scifact": "fails", "trec": "weak"}, {"faithfulness": "valid",
                                                                       "negative_rejection": "fails"})
    t1 = judge_banner(tiny_config, "table1")
    assert "scifact: **fails**" in t1 and "trec: **weak**" in t1 and "fails its check on scifact" in t1
    assert "n=90 pairs" in t1 and "0.60 [0.50, 0.70]" in t1
    t2 = judge_banner(tiny_config, "table2")
    assert "faithfulness: **valid**" in t2 and "fails its controls for negative_rejection" in t2
    _write_checks(tiny_config, {"scifact": "valid"}, {"faithfulness": "valid"})
    assert "⚠" not in judge_banner(tiny_config, "table1") and "⚠" not in judge_banner(tiny_config, "table2")
    tiny_config.models.judge.model = "embedded:qwen2.5-coder-0.5b"  # a table from a judge the checks did not measure
    assert "not this table's judge" in judge_banner(tiny_config, "table1")
