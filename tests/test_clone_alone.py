"""A clone with nothing beside it (no ../shared): the quick config checks clean and its first stages run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_clone_with_nothing_beside_it_checks_the_quick_config_and_runs_its_first_stages(tmp_path):
    clone = tmp_path / "empty" / "spacelm"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    assert not (clone.parent.parent / "shared").exists() and not (clone.parent / "shared").exists()
    env = {**os.environ, "PYTHONPATH": str(clone)}

    def spacelm(*args):
        return subprocess.run(
            [sys.executable, "-c", "import sys; from spacelm.cli import main; sys.exit(main())", *args],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    check = spacelm("check", "--config", "configs/quick.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    # the sets kept outside the repository are named, each as optional, never as an error
    assert "../shared/beir/scifact not found: an optional set" in check.stdout + check.stderr
    for stage in ("ingest", "chunk"):
        done = spacelm(stage, "--config", "configs/quick.yaml")
        assert done.returncode == 0, f"{stage}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


@pytest.mark.slow
def test_the_one_stage_commands_a_user_reaches_for_leave_a_committed_run_as_committed(tmp_path):
    clone = tmp_path / "spacelm"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "PYTHONPATH": str(clone)}
    quick = ["--config", "configs/quick.yaml"]
    said = {}
    for cmd in (
        ["chunk", *quick],
        ["train-reranker", *quick],
        ["judge-check", *quick, "--set", "run_name=hidden", "--set", f"paths.results_dir={tmp_path / 'scratch'}"],
        ["browse", "--run", "results/quick", "--out", str(tmp_path / "browse.html")],
        ["browse", "--run", "results/quick"],  # the default page: the committed one is left as it is
        ["label", "export", *quick, "--out", str(tmp_path / "labels")],
        # a whole run under another name: its upstream outputs are the committed run's, so it refuses
        ["run", *quick, "--no-notebooks", "--set", "run_name=mine", "--set", f"paths.results_dir={tmp_path / 'mine'}"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from spacelm.cli import main; sys.exit(main())", *cmd],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        said[" ".join(cmd[:2])] = said[cmd[0]] = (done.returncode, done.stdout[-1500:] + done.stderr[-1500:])
        changed = subprocess.run(
            ["git", "status", "--porcelain", "results/", "data/"], cwd=clone, capture_output=True, text=True
        ).stdout
        assert changed == "", f"{' '.join(cmd)} changed committed files:\n{changed}\n{said[cmd[0]][1]}"
    # each ran, or refused before writing anything with the reason and what to do (exit 2), never a crash
    for name, (rc, text) in said.items():
        assert rc == 0 or (rc == 2 and "error:" in text), (name, rc, text)
    assert said["chunk"][0] == 0  # rebuilding the chunk text (what browse's banner asks for) runs
    # train-reranker in a fresh clone would rewrite synth's committed questions: refused, saying why
    assert "a one-stage command never rewrites a committed run" in said["train-reranker"][1]
    # ran, or refused for the committed run's sake; label export in a lone clone lacks the NIST pairs that
    # measure the assessor, and says how to get them
    rc, text = said["judge-check"]
    assert rc == 0 or "never rewrites a committed run" in text, text
    rc, text = said["label"]
    assert rc == 0 or "never rewrites a committed run" in text or "data fetch trec-dl-2020 --from DIR" in text, text
    assert said["run"][0] == 0 or "(not the committed run's folder) never rewrites" in said["run"][1], said["run"]
    assert "left as it is" in said["browse --run"][1] and (clone / "results/quick/browse.local.html").is_file()
    # `report` rewrites the run's report and records that it did, in the manifest's updates, nothing else
    import json

    before = json.loads((clone / "results/quick/manifest.json").read_text()).get("updates", [])
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from spacelm.cli import main; sys.exit(main())", "report", *quick],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    changed = subprocess.run(
        ["git", "status", "--porcelain", "results/", "data/"], cwd=clone, capture_output=True, text=True
    ).stdout.split("\n")
    allowed = {"results/quick/report.md", "results/quick/report_details.md", "results/quick/manifest.json"}
    assert {line[3:] for line in changed if line} <= allowed, changed
    after = json.loads((clone / "results/quick/manifest.json").read_text()).get("updates", [])
    assert len(after) == len(before) + 1
