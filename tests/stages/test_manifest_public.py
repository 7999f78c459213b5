"""manifest.json holds no credentials and no machine paths (issue 26, defects #11 and #12):
a `user:pass@` base_url and absolute paths under the models folder and the checkout."""

from __future__ import annotations

import dataclasses
import json

from spacelm.runner.manifest import Manifest


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


def test_documents_name_a_corpus_outside_the_project_without_its_machine_path(tiny_config, tiny_corpus, tmp_path):
    """issue 43: documents.jsonl carried the absolute path of a corpus outside the project."""
    from spacelm.runner.provenance import OUTSIDE
    from spacelm.stages import ingest

    (tiny_corpus / "sub").mkdir()
    (tiny_corpus / "sub" / "empty.txt").write_bytes(b"")
    (tiny_corpus / "z-copy.md").write_bytes((tiny_corpus / "guide.md").read_bytes())
    result = ingest.compute(tiny_config)
    ingest.write(tiny_config, result, lambda p: p)
    written = "".join(p.read_text() for p in ingest.outputs(tiny_config))
    assert str(tmp_path) not in written
    assert sorted(d.source for d in result.documents) == [
        f"{OUTSIDE}/raw/guide.md",
        f"{OUTSIDE}/raw/notes.txt",
        f"{OUTSIDE}/raw/ops-note.pdf",
    ]
    reasons = {s.source: s.reason for s in result.skipped}
    assert set(reasons) == {f"{OUTSIDE}/raw/z-copy.md", f"{OUTSIDE}/raw/sub/empty.txt"}
    copy = reasons[f"{OUTSIDE}/raw/z-copy.md"]
    assert copy.startswith(f"{OUTSIDE}/raw/z-copy.md: the same content as {OUTSIDE}/raw/guide.md")


def test_vllm_servers_name_no_machine_path(tiny_config, monkeypatch):
    """issue 43: the manifest's vllm_servers named the server's python by its absolute path."""
    import spacelm.lib.llm.vllm_server as vs

    monkeypatch.setattr(vs, "installed_vllm", lambda python: ("vllm", "0.6.3"))
    judge = dataclasses.replace(
        tiny_config.models.judge, backend="vllm-server", server_python="/opt/secret-team/venv/bin/python"
    )
    cfg = dataclasses.replace(tiny_config, models=dataclasses.replace(tiny_config.models, judge=judge))
    m = Manifest(cfg)
    m.save()
    data = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert data["vllm_servers"]["judge"] == "0.6.3 (vllm) at <outside the project>/python"
    assert "/opt/secret-team" not in json.dumps(data)
