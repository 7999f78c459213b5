"""`spacelm status` and reuse-only notebooks recognise a committed run folder (issue 42): stamps
are never committed, so a fresh clone has none; the run's manifest records each stage's output
hashes and config, and a stage whose recorded outputs are there unchanged, under the same
config, reads as up to date from the manifest."""

from __future__ import annotations

import dataclasses
import json

import pytest

from spacelm.pipeline import run_stages, status
from spacelm.runner.base import REUSE_ONLY_ENV, StaleStage, execute
from spacelm.runner.manifest import Manifest
from spacelm.stages import stages_for


def _committed_run(cfg):
    """ingest and chunk run and recorded; then every stamp removed, as in a fresh clone."""
    m = Manifest(cfg)
    run_stages(cfg, upto="chunk", manifest=m)
    m.finish()
    for st in stages_for(cfg):
        st.stamp_path(cfg).unlink(missing_ok=True)
    return json.loads(m.path.read_text())


def _rows(cfg) -> dict:
    return {r["stage"]: r for r in status(cfg)}


def test_status_reads_a_committed_manifest_without_stamps(tiny_config):
    data = _committed_run(tiny_config)
    assert data["stages"]["chunk"]["outputs"] and data["stages"]["ingest"]["outputs"]
    rows = _rows(tiny_config)
    for name in ("ingest", "chunk"):
        assert rows[name]["state"] == "up to date" and rows[name]["from_manifest"], rows[name]
    assert rows["synth"]["state"] == "never run" and not rows["synth"]["from_manifest"]


def test_a_changed_output_or_config_makes_it_stale(tiny_config):
    _committed_run(tiny_config)
    chunks = tiny_config.processed_dir / "chunks.jsonl"
    chunks.write_text(chunks.read_text() + "\n")
    row = _rows(tiny_config)["chunk"]
    assert row["state"] == "stale" and any("output changed" in c and "chunks.jsonl" in c for c in row["changed"])
    chunking = dataclasses.replace(tiny_config.chunking, max_tokens=128)
    row = _rows(dataclasses.replace(tiny_config, chunking=chunking))["chunk"]
    assert any(c.startswith("config:chunking") for c in row["changed"])


def test_a_missing_output_is_stale(tiny_config):
    _committed_run(tiny_config)
    (tiny_config.processed_dir / "documents.csv").unlink()
    row = _rows(tiny_config)["ingest"]
    assert row["state"] == "stale" and any("output missing" in c for c in row["changed"])


def test_reuse_only_reads_the_stage_from_the_manifest(tiny_config, monkeypatch):
    """A notebook (reuse-only) gets the recorded summary; outside reuse-only the stage runs."""
    from spacelm.stages import BY_NAME

    data = _committed_run(tiny_config)
    monkeypatch.setenv(REUSE_ONLY_ENV, "1")
    got = execute(BY_NAME["chunk"], tiny_config)
    assert got["skipped"] and got["from_manifest"] and got["chunks"] == data["stages"]["chunk"]["chunks"]
    chunks = tiny_config.processed_dir / "chunks.jsonl"
    chunks.write_text(chunks.read_text() + "\n")
    with pytest.raises(StaleStage, match="output changed"):
        execute(BY_NAME["chunk"], tiny_config)
    monkeypatch.delenv(REUSE_ONLY_ENV)
    assert not execute(BY_NAME["chunk"], tiny_config)["skipped"]  # `spacelm chunk` recomputes it


def test_cli_status_says_from_the_committed_manifest(tiny_config, capsys, monkeypatch):
    from spacelm import cli

    _committed_run(tiny_config)
    monkeypatch.setattr(cli, "_cfg", lambda args: tiny_config)
    from spacelm.check import CheckReport

    monkeypatch.setattr("spacelm.check.run_check", lambda *a, **k: CheckReport())  # tests/test_check.py
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("chunk"))
    # one thing per stage, and the summary agrees with it: committed and intact, and a run recomputes it
    assert "committed: its outputs are as the manifest records them" in line and "a run recomputes it" in line
    summary = next(x for x in out.splitlines() if x.startswith("a run would recompute:"))
    assert "chunk" in summary and "committed and intact" in out


def test_a_folders_hash_leaves_out_what_git_ignores(tmp_path):
    """A clone holds no git-ignored file (the real corpus's beir/corpus.jsonl): a folder output's public
    hash leaves such files out, so the folder as committed hashes as the run recorded it; a change to a
    file git keeps still changes it."""
    import subprocess

    from spacelm.runner.base import file_hash, public_hash

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("out/beir/corpus.jsonl\n")
    beir = tmp_path / "out" / "beir"
    beir.mkdir(parents=True)
    (beir / "queries.jsonl").write_text('{"_id": "q1"}\n')
    (beir / "corpus.jsonl").write_text('{"_id": "c1", "text": "licensed text"}\n')
    recorded = public_hash(beir, str(tmp_path))
    assert recorded != file_hash(beir)  # the corpus file is left out
    (beir / "corpus.jsonl").unlink()  # as a clone has it
    assert public_hash(beir, str(tmp_path)) == recorded
    (beir / "queries.jsonl").write_text('{"_id": "q2"}\n')
    assert public_hash(beir, str(tmp_path)) != recorded


def test_the_report_command_records_the_findings_it_recomputes(tiny_config):
    """`spacelm report` recomputes the findings under a later commit's rules: their record and output
    hashes go into the run's manifest, so the committed folder reads up to date from it."""
    from spacelm.cli import record_report
    from spacelm.stages import BY_NAME

    _committed_run(tiny_config)
    before = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    record_report(tiny_config)
    after = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert set(before["stages"]) < set(after["stages"]) and "findings" in after["stages"]
    assert after["stages"]["findings"]["outputs"] and after["stages"]["chunk"] == before["stages"]["chunk"]
    assert after["stages"]["report"]["outputs"]
    for name in ("findings", "report"):
        BY_NAME[name].stamp_path(tiny_config).unlink(missing_ok=True)
        row = _rows(tiny_config)[name]
        assert row["state"] == "up to date", (name, row)


def test_a_manifest_recorded_under_the_old_code_rule_reads_as_before(tiny_config):
    """A committed manifest written when a stage's code was its import closure (`code:<module>` for
    every module it imported, no `defs:`) reads as it did: its code entries are never compared (its
    `git_commit` names the code), only its config, input files and outputs; a changed output still shows."""
    from spacelm.lib.io import write_json

    data = _committed_run(tiny_config)
    for rec in data["stages"].values():
        inputs = {k: v for k, v in rec["inputs"].items() if not k.startswith(("code:", "defs:"))}
        rec["inputs"] = inputs | {"code:spacelm.lib.answer.claims": "0" * 16, "code:spacelm.runner.base": "1" * 16}
    write_json(tiny_config.run_dir / "manifest.json", data)
    rows = _rows(tiny_config)
    for name in ("ingest", "chunk"):
        assert rows[name]["state"] == "up to date" and rows[name]["from_manifest"], rows[name]
    chunks = tiny_config.processed_dir / "chunks.jsonl"
    chunks.write_text(chunks.read_text() + "\n")
    assert _rows(tiny_config)["chunk"]["state"] == "stale"


def test_a_committed_run_the_code_moved_past_is_shown_as_committed_saying_so(tiny_config, monkeypatch, tmp_path):
    """A reuse-only reader (a notebook) of a run whose manifest git tracks gets the recorded
    summary of a stage that is stale now, with the reasons (`stale`), instead of a StaleStage; an
    output gone (not one git ignores) still stops it."""
    import subprocess

    from spacelm.notebooks import describe_stage
    from spacelm.stages import BY_NAME

    cfg = dataclasses.replace(tiny_config, root=str(tmp_path))
    data = _committed_run(cfg)
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", "-f", str(cfg.run_dir / "manifest.json"))
    chunks = cfg.processed_dir / "chunks.jsonl"
    chunks.write_text(chunks.read_text() + "\n")
    monkeypatch.setenv(REUSE_ONLY_ENV, "1")
    got = execute(BY_NAME["chunk"], cfg)
    assert got["skipped"] and got["chunks"] == data["stages"]["chunk"]["chunks"]
    assert any("output changed" in r and "chunks.jsonl" in r for r in got["stale"]), got["stale"]
    assert "shown as committed" in describe_stage(cfg, "chunk", got)
    chunks.unlink()
    with pytest.raises(StaleStage):
        execute(BY_NAME["chunk"], cfg)
