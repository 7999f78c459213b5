"""One error path (issue 26): file-system errors, a report of a run that never ran, and the
log's warnings reach the user as one line with the documented exit code; `--debug` shows
the traceback. Each test names the defect it covers."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spacelm import cli

ROOT = Path(__file__).resolve().parents[1]


def _spacelm(*args, limit_bytes=None, cwd=ROOT):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "spacelm.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        preexec_fn=limit if limit_bytes else None,
        timeout=300,
    )


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("spacelm:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_read_only_run_folder_is_one_line_exit_2(tiny_config_file, monkeypatch, capsys):
    """Defect #7: a read-only run folder printed a traceback with exit 1. (Root ignores folder
    permissions, so the read-only file system is simulated where outputs are created.)"""
    import tempfile

    cfg, _ = tiny_config_file

    def read_only(*a, dir=None, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert cli.main(["ingest", "--config", str(cfg)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "Read-only file system" in line and "processed" in line and "writable" in line
    with pytest.raises(OSError):
        cli.main(["--debug", "ingest", "--config", str(cfg)])


def test_full_disk_is_one_line_exit_2(tiny_config_file):
    """Defect #7: EFBIG (a file-size limit, as on a full disk) printed a traceback with exit 1."""
    cfg, _ = tiny_config_file
    r = _spacelm("ingest", "--config", str(cfg), limit_bytes=3000)
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert "File too large" in line and "free disk space" in line and "documents" in line  # the output named


def test_results_dir_that_is_a_file_is_one_line_exit_2(tiny_config_file, tmp_path):
    """Defect #7: `paths.results_dir` set to a file printed a traceback with exit 1."""
    cfg, _ = tiny_config_file
    afile = tmp_path / "not-a-folder"
    afile.write_text("x")
    r = _spacelm("ingest", "--config", str(cfg), "--set", f"paths.results_dir={afile}")
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert str(afile) in line and "a file stands where a folder is needed" in line


def test_report_of_a_run_that_never_ran_is_exit_2(tiny_config_file, capsys):
    """Defect #14: exit 0 with "Config None" and another run's synthetic-question table."""
    cfg, run = tiny_config_file
    assert cli.main(["report", "--config", str(cfg)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "'nbtest' has not run yet" in line and "spacelm run --config" in line
    assert not run.exists()  # nothing written for a run that never ran
    run.mkdir(parents=True)  # a folder without a manifest (a run that stopped before its first stage)
    assert cli.main(["report", "--config", str(cfg)]) == 2
    assert not (run / "report.md").exists()


def test_report_takes_the_run_lock(tiny_config_file, capsys):
    """Defect #14: `report` wrote while another process held the folder."""
    from spacelm.runner.lock import folder_lock

    cfg, run = tiny_config_file
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"run_name": "nbtest", "stages": {}}))
    with folder_lock(run):
        assert cli.main(["report", "--config", str(cfg)]) == 4
    assert "--wait" in capsys.readouterr().err and not (run / "report.md").exists()
    assert cli.main(["report", "--config", str(cfg)]) == 0 and (run / "report.md").is_file()


def test_warnings_print_category_and_message_only(tmp_path):
    """Defect #18: Python warnings printed their source line after the message, and a file
    left open at exit printed a ResourceWarning."""
    script = tmp_path / "warn.py"
    script.write_text(
        textwrap.dedent("""
        import sys, warnings
        sys.argv = ["spacelm"]
        from spacelm.cli import quiet_warnings, setup_logging
        setup_logging()
        quiet_warnings()
        leaked = open(__file__)
        doc, drops = warnings.warn("a PDF page has no text layer", UserWarning), 0
        del leaked
    """)
    )
    r = subprocess.run(
        [sys.executable, "-X", "dev", str(script)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "[py.warnings] UserWarning: a PDF page has no text layer", r.stderr


def test_notebook_kernels_do_not_warn_about_tcp(tmp_path):
    """Defect #18: every executed notebook's kernel printed "Kernel is running over TCP without
    encryption" to the run's log (seven per run)."""
    pytest.importorskip("ipykernel")
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    src = tmp_path / "n.ipynb"
    nbformat.write(nb, src)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("run_name: t\n")
    code = (
        "import sys; from pathlib import Path; from spacelm.notebooks import execute_notebook; "
        f"execute_notebook(Path({str(src)!r}), Path({str(tmp_path / 'out.ipynb')!r}), Path({str(cfg)!r}), "
        f"cwd=Path({str(tmp_path)!r}), timeout=120)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert r.returncode == 0, r.stderr
    assert "42" in (tmp_path / "out.ipynb").read_text() and "without encryption" not in r.stderr, r.stderr


def test_a_closed_stdout_is_not_a_backend_failure():
    """`spacelm plan | head -1`: the reader goes away; spacelm stops silently with 141 (128 +
    SIGPIPE, as a shell reports it), not "model backend unavailable" (issue 43)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        r = subprocess.run(
            [sys.executable, "-m", "spacelm.cli", "models", "list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 141, r.stderr
    assert r.stderr == "", r.stderr
