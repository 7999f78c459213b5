"""One lint and format command for the whole project: `python -m ruff check` and `python -m ruff
format --check` (rules and line length 120 in pyproject.toml) over the package, tests, bench and
scripts. Part of the fast tier, so a change that breaks either fails before review."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["spacelm", "tests", "bench", "scripts"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args, *TARGETS], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_passes():
    res = _ruff("check", "--no-cache")
    assert res.returncode == 0, (
        f"ruff check found problems (fix with `python -m ruff check --fix {' '.join(TARGETS)}`):\n"
        + res.stdout
        + res.stderr
    )


def test_ruff_format_is_applied():
    res = _ruff("format", "--check", "--no-cache")
    assert res.returncode == 0, (
        f"files not formatted (run `python -m ruff format {' '.join(TARGETS)}`):\n" + res.stdout + res.stderr
    )
