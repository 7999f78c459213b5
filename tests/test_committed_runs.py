"""A one-stage command never rewrites a committed run or the data it read."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from spacelm.pipeline import CommittedRun, refuse_rewriting_committed
from spacelm.runner.provenance import git_tracked


def _repo(tmp_path):
    for rel in ("results/r/manifest.json", "data/synthetic/r/questions.jsonl", "data/processed/chunks.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    (tmp_path / ".gitignore").write_text("data/processed/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "run"], cwd=tmp_path, check=True)
    return SimpleNamespace(root=tmp_path, source="configs/r.yaml")


def test_a_stage_whose_outputs_are_committed_is_refused_naming_the_files_and_the_way_out(tmp_path):
    cfg = _repo(tmp_path)
    synth = SimpleNamespace(name="synth", outputs=lambda c: [tmp_path / "data/synthetic/r"])
    with pytest.raises(CommittedRun) as e:
        refuse_rewriting_committed(cfg, synth, "judge-check")
    text = str(e.value)
    assert "data/synthetic/r/questions.jsonl" in text and "`spacelm run --config configs/r.yaml`" in text
    assert "paths.synthetic_dir" in text
    # outputs git ignores (chunks rebuilt from the corpus) or never saw are the user's to rewrite
    chunk = SimpleNamespace(name="chunk", outputs=lambda c: [tmp_path / "data/processed", tmp_path / "elsewhere"])
    refuse_rewriting_committed(cfg, chunk, "chunk")
    assert git_tracked(tmp_path, [tmp_path / "results/r/manifest.json"]) == ["results/r/manifest.json"]
    assert git_tracked(tmp_path / "results", ["nothing-here"]) == []


def test_outside_a_git_work_tree_nothing_counts_as_committed(tmp_path):
    (tmp_path / "f").write_text("x")
    assert git_tracked(tmp_path, [tmp_path / "f"]) == []
