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
