import json
import subprocess
import sys
from pathlib import Path

import pytest

from spacelm.pipeline import run_stages
from spacelm.runs import Manifest

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_records_stages_and_config(tiny_config):
    m = Manifest(tiny_config)
    run_stages(tiny_config, upto="chunk", manifest=m, log=lambda s: None)
    m.finish()
    data = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert set(data["stages"]) >= {"ingest", "chunk"}
    assert data["config"]["chunking"]["max_tokens"] == 64
    assert "semchunk" in data["packages"] and data["finished"]
    assert all("seconds" in s for s in data["stages"].values())


def test_cli_chunk_and_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("chunking:\n  size: 3\n")
    r = subprocess.run([sys.executable, "-m", "spacelm.cli", "chunk", "--config", str(bad)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "chunking.size" in r.stderr and str(bad) in r.stderr


def test_unknown_stage_is_an_error(tiny_config):
    with pytest.raises(ValueError, match="unknown stage"):
        run_stages(tiny_config, upto="nope", log=lambda s: None)
