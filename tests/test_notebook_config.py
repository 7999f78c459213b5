"""A notebook opened from `results/<run>/notebooks/` reads that run (issue 42): its resolved
config, found above the notebook, with `project_root` resolved from the file's folder, and in
reuse-only mode unless recomputing is allowed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spacelm.config import from_dict
from spacelm.notebooks import (
    LOCAL_RESOLVED_NAME,
    RECOMPUTE_ENV,
    find_resolved_config,
    notebook_config,
    write_resolved_config,
)
from spacelm.runner.base import REUSE_ONLY_ENV
from spacelm.runner.provenance import OUTSIDE

ROOT = Path(__file__).resolve().parents[1]


def _project(tmp_path: Path, tiny_corpus: Path, processed: str = "data/processed") -> Path:
    """A project in tmp_path whose run `mine` wrote its resolved config; returns the run's notebooks folder."""
    (tmp_path / "configs").mkdir()
    cfg = from_dict(
        {
            "run_name": "mine",
            "corpus": {"raw_dir": os.path.relpath(tiny_corpus, tmp_path)},
            "paths": {"processed_dir": processed},
        },
        source="configs/mine.yaml",
        root=str(tmp_path),
    )
    write_resolved_config(cfg)
    nb = cfg.run_dir / "notebooks"
    nb.mkdir(parents=True)
    return nb


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("SPACELM_CONFIG", REUSE_ONLY_ENV, RECOMPUTE_ENV):
        monkeypatch.setenv(k, "x")  # restored (to unset) after the test, whatever the code sets
        monkeypatch.delenv(k)
    return monkeypatch


def test_a_notebook_in_a_run_folder_reads_that_run_reuse_only(tmp_path, tiny_corpus, clean_env):
    nb = _project(tmp_path, tiny_corpus)
    clean_env.chdir(nb)
    assert find_resolved_config() == tmp_path / "results" / "mine" / "config.resolved.yaml"
    cfg = notebook_config()
    assert cfg.run_name == "mine" and Path(cfg.root) == tmp_path.resolve()
    assert cfg.processed_dir == tmp_path.resolve() / "data" / "processed"  # project_root resolved
    assert os.environ.get(REUSE_ONLY_ENV) == "1"


def test_recomputing_is_allowed_by_the_variable_or_the_parameter(tmp_path, tiny_corpus, clean_env):
    nb = _project(tmp_path, tiny_corpus)
    clean_env.chdir(nb)
    clean_env.setenv(RECOMPUTE_ENV, "1")
    notebook_config()
    assert REUSE_ONLY_ENV not in os.environ
    clean_env.delenv(RECOMPUTE_ENV)
    notebook_config()
    assert os.environ.get(REUSE_ONLY_ENV) == "1"
    notebook_config(recompute=True)
    assert REUSE_ONLY_ENV not in os.environ


def test_the_search_stops_at_the_run_folder(tmp_path, tiny_corpus, clean_env):
    """Outside any run folder the default config is read (and may compute)."""
    _project(tmp_path, tiny_corpus)
    (tmp_path / "configs" / "quick.yaml").write_text(
        f"run_name: other\ncorpus:\n  raw_dir: {os.path.relpath(tiny_corpus, tmp_path)}\n"
    )
    (tmp_path / "notebooks").mkdir()
    clean_env.chdir(tmp_path / "notebooks")
    assert find_resolved_config() is None
    assert notebook_config().run_name == "other" and REUSE_ONLY_ENV not in os.environ


def test_a_machine_path_is_hidden_in_the_committed_copy_only(tmp_path, tiny_corpus, clean_env):
    scratch = tmp_path / "elsewhere" / "scratch"
    (tmp_path / "proj").mkdir()
    nb = _project(tmp_path / "proj", tiny_corpus, processed=str(scratch))
    run = tmp_path / "proj" / "results" / "mine"
    public = (run / "config.resolved.yaml").read_text()
    assert str(scratch) not in public and f"{OUTSIDE}/scratch" in public
    assert str(scratch) in (run / LOCAL_RESOLVED_NAME).read_text()
    clean_env.chdir(nb)
    assert notebook_config().processed_dir == scratch  # the notebooks read this machine's copy


@pytest.mark.parametrize("run", ["standard", "quick"])
def test_the_committed_runs_notebooks_read_their_run(run):
    """The contract: `cd results/<run>/notebooks` with SPACELM_CONFIG unset prints the run's name."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPACELM_CONFIG", REUSE_ONLY_ENV, RECOMPUTE_ENV)}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", "from spacelm.notebooks import notebook_config; print(notebook_config().run_name)"],
        cwd=ROOT / "results" / run / "notebooks",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == run and "reuse-only" in out.stderr
