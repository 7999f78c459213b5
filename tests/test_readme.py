"""The README's headline tables are generated from the committed standard run, never typed."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not (ROOT / "results" / "standard" / "manifest.json").is_file(),
                    reason="no committed standard run")
def test_readme_headline_tables_match_the_standard_run():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_tables.py"), "--check"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
