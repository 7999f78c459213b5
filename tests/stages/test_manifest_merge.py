"""A one-stage command keeps what the run finished (issue 42): it merges the records of the
stages it computed into the run's manifest, keeps every other record and the run-level
fields, writes nothing when it computed nothing, and no machine path reaches the file."""

from __future__ import annotations

import json

from spacelm.pipeline import run_stages
from spacelm.runner.manifest import OUTSIDE, Manifest


def _full_run(cfg) -> dict:
    from spacelm.stages import stages_for

    m = Manifest(cfg)
    m.record_start(stages_for(cfg))
    run_stages(cfg, upto="chunk", manifest=m)
    # stand-ins for the records of the later stages a full run writes
    m.record_stage("grade", {"questions": 3, "skipped": False, "seconds": 9.0, "wall_seconds": 9.0})
    m.record_stage("answer", {"answers": 6, "skipped": False, "seconds": 4.0, "wall_seconds": 4.0})
    m.finish()
    return json.loads(m.path.read_text())


def test_a_one_stage_write_keeps_every_other_stage_record(tiny_config):
    before = _full_run(tiny_config)
    m = Manifest(tiny_config, command="grade")
    m.record_stage("grade", {"questions": 4, "skipped": False, "seconds": 2.0, "wall_seconds": 2.0})
    after = json.loads(m.path.read_text())
    assert set(after["stages"]) == set(before["stages"]) == {"ingest", "chunk", "grade", "answer"}
    for name in ("ingest", "chunk", "answer"):
        assert after["stages"][name] == before["stages"][name]
    assert after["stages"]["grade"]["questions"] == 4
    # the run's own timing stays the run's; the seconds this command took are its update's
    assert after["stages"]["grade"]["wall_seconds"] == 9.0 and after["stages"]["grade"]["seconds"] == 9.0
    assert after["updates"][0]["seconds"] == {"grade": 2.0}
    for key in ("cold", "total_seconds", "started", "finished", "command", "model_time", "sizes", "start_state"):
        assert after[key] == before[key], key
    assert [u["command"] for u in after["updates"]] == ["grade"] and after["updates"][0]["stages"] == ["grade"]
    m.finish()  # finishing a one-stage command leaves the run's figures alone
    assert json.loads(m.path.read_text())["total_seconds"] == before["total_seconds"]


def test_a_forced_stage_command_updates_its_own_record_only(tiny_config):
    before = _full_run(tiny_config)
    run_stages(tiny_config, upto="chunk", force=True)  # `spacelm chunk --force`
    after = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert set(after["stages"]) == set(before["stages"])
    assert after["stages"]["ingest"] == before["stages"]["ingest"]  # reused: its record stays the run's
    assert after["stages"]["chunk"]["finished"] >= before["stages"]["chunk"]["finished"]
    assert after["stages"]["chunk"]["outputs"]  # the hashes of what it wrote
    assert after["cold"] == before["cold"] and after["total_seconds"] == before["total_seconds"]
    assert after["updates"][-1]["stages"] == ["chunk"] and after["updates"][-1]["config_changes"] == {}


def test_a_command_that_computes_nothing_writes_nothing(tiny_config):
    _full_run(tiny_config)
    path = tiny_config.run_dir / "manifest.json"
    text = path.read_text()
    run_stages(tiny_config, upto="ingest")  # `spacelm ingest`: up to date, reused
    assert path.read_text() == text


def test_a_scratch_path_override_is_written_as_a_placeholder(tiny_config, tmp_path):
    """The tiny config's folders all lie outside the project (in the test's temp folder): the
    manifest names them `<outside the project>/<name>`, in values and in input names."""
    _full_run(tiny_config)
    text = (tiny_config.run_dir / "manifest.json").read_text()
    assert str(tmp_path) not in text and "/dev/shm" not in text and "/tmp/" not in text
    data = json.loads(text)
    assert data["config"]["paths"]["processed_dir"] == f"{OUTSIDE}/processed"
    # input names keep the folder the config names (`<outside the project>/processed/…`), as stamps do
    assert f"file:{OUTSIDE}/processed/documents.jsonl" in data["stages"]["chunk"]["inputs"]


def test_public_path_keeps_relative_config_paths(tiny_config):
    import dataclasses
    import os

    from spacelm.runner.manifest import public_path

    corpus = dataclasses.replace(tiny_config.corpus, raw_dir="../shared/corpus")
    cfg = dataclasses.replace(tiny_config, corpus=corpus)
    root = cfg.root
    assert public_path(os.path.join(root, "data", "x.jsonl"), cfg) == "data/x.jsonl"
    assert public_path(os.path.normpath(os.path.join(root, "../shared/corpus/a.pdf")), cfg) == "../shared/corpus/a.pdf"
    assert public_path("../shared/corpus/a.pdf", cfg) == "../shared/corpus/a.pdf"
    assert public_path("/srv/scratch/processed", cfg) == f"{OUTSIDE}/processed"
    assert public_path(os.path.expanduser("~/notes/x.txt"), cfg) == "~/notes/x.txt"
