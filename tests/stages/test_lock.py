"""One run at a time per folder: a second run exits 4 naming the holder; a lock left by a
dead process is taken over."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from spacelm.runner.lock import RunLocked, folder_lock

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from spacelm.runner.lock import folder_lock
with folder_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(folder: Path, seconds: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_second_holder_is_refused_with_the_holders_pid(tmp_path):
    p = _hold(tmp_path, 30)
    try:
        with pytest.raises(RunLocked, match=f"pid {p.pid}"):
            with folder_lock(tmp_path):
                pass
    finally:
        p.kill()
        p.wait()


def test_lock_of_a_killed_process_is_taken_over(tmp_path):
    p = _hold(tmp_path, 30)
    p.kill()
    p.wait()
    with folder_lock(tmp_path):
        pass


def test_the_lock_file_names_no_folder_of_this_machine(tmp_path, monkeypatch):
    import json

    elsewhere = "/srv/labelling/batch-07"  # a folder no config names
    monkeypatch.setattr(sys, "argv", ["spacelm", "label", "import", "--from", elsewhere, "--run", str(tmp_path)])
    with folder_lock(tmp_path) as path:
        command = json.loads(Path(path).read_text())["command"]
    assert "/srv" not in command and str(tmp_path) not in command
    assert "--from <outside the project>/batch-07" in command


def test_wait_queues_behind_the_holder(tmp_path):
    p = _hold(tmp_path, 1.5)
    t0 = time.monotonic()
    with folder_lock(tmp_path, wait=True, poll_s=0.1):
        waited = time.monotonic() - t0
    p.wait()
    assert waited > 0.5


def test_cli_exits_4_when_the_run_folder_is_held(tmp_path, tiny_config_file):
    cfg_file, run_dir = tiny_config_file
    p = _hold(run_dir, 30)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "spacelm.cli", "ingest", "--config", str(cfg_file)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        p.kill()
        p.wait()
    assert r.returncode == 4, r.stderr
    assert f"pid {p.pid}" in r.stderr and "--wait" in r.stderr
