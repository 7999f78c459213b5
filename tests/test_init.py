"""`spacelm init`: a team's config written from the quick config, its settings its own, then checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from spacelm.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_init_writes_a_config_of_the_teams_own_and_checks_it(tmp_path, capsys):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "data" / "raw", docs, ignore=shutil.ignore_patterns("golden_samples.jsonl", "README.md"))
    shutil.copy(ROOT / "data" / "raw" / "golden_samples.jsonl", tmp_path / "golden.jsonl")
    out = tmp_path / "team.yaml"
    args = ["init", "--corpus", str(docs), "--golden", str(tmp_path / "golden.jsonl"), "--name", "my-team"]
    rc = main([*args, "--out", str(out)])
    said = capsys.readouterr()
    assert rc == 0, said.out + said.err
    assert "check passed" in said.out and f"spacelm run --config {out}" in said.out
    cfg = yaml.safe_load(out.read_text())
    assert cfg["run_name"] == "my-team" and cfg["corpus"]["raw_dir"] == "docs"
    assert cfg["paths"]["processed_dir"] == "data/processed/my-team"
    assert cfg["retrieval"]["reranker"]["model"] == "trained:ce-minilm-my-team"  # never the quick config's model
    assert "file_list" not in cfg["corpus"]
    # the quick config's in-domain labels grade its own corpus, never the team's
    names = [s["name"] for s in cfg["judge_check"]["sources"]]
    assert "space-corpus" not in names and "scifact" in names
    assert not any(s.get("in_domain") for s in cfg["judge_check"]["sources"])
    subjects = (out.parent / cfg["synth"]["unanswerable"]["subjects"]).resolve()
    assert subjects == tmp_path / "data" / "my-team" / "out_of_corpus_subjects.txt"  # the team's own copy
    assert subjects.is_file()
    # the labelled sets the quick config reads are read from the same folders, wherever the config is written
    src = (out.parent / cfg["retrieval"]["reranker"]["train"]["labelled"][0]["path"]).resolve()
    assert src == (ROOT / "../shared/beir/scifact").resolve()
    # never over a config, and a bad name or folder is named with its fix
    assert main([*args, "--out", str(out)]) == 2 and "init never overwrites" in capsys.readouterr().err
    assert main([*args[:-1], "My Team", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--name 'My Team'" in capsys.readouterr().err
    assert main(["init", "--corpus", str(tmp_path / "none"), "--golden", "g", "--name", "t"]) == 2
