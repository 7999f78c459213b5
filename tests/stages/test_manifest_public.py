"""manifest.json holds no credentials and no machine paths (issue 26, defects #11 and #12):
a `user:pass@` base_url and absolute paths under the models folder and the checkout."""

from __future__ import annotations

import dataclasses
import json

from spacelm.stages.manifest import Manifest


def test_manifest_hides_credentials_and_machine_paths(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    judge = dataclasses.replace(tiny_config.models.judge, backend="openai", base_url="http://bob:pa55word@gpu:8000/v1")
    cfg = dataclasses.replace(tiny_config, models=dataclasses.replace(tiny_config.models, judge=judge))
    m = Manifest(cfg)
    m.record_model("grade", {"name": "embedded:x", "path": str(tmp_path / "models" / "x.gguf"), "sha256": "ab"})
    m.record_stage("notebooks", {"executed": [f"{cfg.root}/results/test/notebooks/01.ipynb"]})
    text = (cfg.run_dir / "manifest.json").read_text()
    data = json.loads(text)
    assert "pa55word" not in text and data["config"]["models"]["judge"]["base_url"] == "http://***@gpu:8000/v1"
    assert data["models"]["grade"]["path"] == "models:x.gguf"
    assert data["stages"]["notebooks"]["executed"] == ["results/test/notebooks/01.ipynb"]
    assert str(tmp_path / "models") not in text and f"{cfg.root}/" not in text
    assert m.data["models"]["grade"]["path"].startswith("/")  # only the written copy is changed
