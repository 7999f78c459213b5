"""Corpus lists: verify a folder offline, fetch from sources with sha256 checks, attribution."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from spacelm.cli import main
from spacelm.lib.ingest import corpus_list as cl
from spacelm.lib.io import InputError

SHARED = Path(__file__).resolve().parents[4] / "shared" / "space_corpus"
HEADER = "file\tsha256\tbytes\tpages\tlicence\tsource\tattribution\n"


def _row(name: str, data: bytes, sources: str) -> str:
    return f"{name}\t{hashlib.sha256(data).hexdigest()}\t{len(data)}\t1\tCC-BY-4.0\t{sources}\t{name}, by someone.\n"


@pytest.fixture
def listed(tmp_path):
    """A list of three files (one joined from two parts) served by a fake downloader."""
    files = {"a.pdf": b"%PDF-a" * 10, "b.txt": b"plain text b", "c.pdf": b"part one|part two"}
    served = {
        "http://x/a": files["a.pdf"],
        "http://x/b": files["b.txt"],
        "http://x/c1": b"part one|",
        "http://x/c2": b"part two",
    }
    text = (
        "# a comment line\n"
        + HEADER
        + _row("a.pdf", files["a.pdf"], "http://x/a")
        + _row("b.txt", files["b.txt"], "http://x/b")
        + _row("c.pdf", files["c.pdf"], "http://x/c1 http://x/c2")
    )
    path = tmp_path / "mini.tsv"
    path.write_text(text)
    return cl.load_corpus_list(str(path)), files, served


def test_verify_reports_ok_missing_and_changed_bytes(listed, tmp_path):
    lst, files, _ = listed
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(files["a.pdf"])
    damaged = bytearray(files["b.txt"])
    damaged[3] ^= 0xFF  # same size, other bytes
    (folder / "b.txt").write_bytes(bytes(damaged))
    got = {s.file: s.status for s in cl.verify_folder(lst, folder)}
    assert got == {"a.pdf": "ok", "b.txt": "mismatch", "c.pdf": "missing"}


def test_fetch_downloads_checks_and_joins_parts(listed, tmp_path):
    lst, files, served = listed
    folder = tmp_path / "fetched"
    calls = []

    def download(url):
        calls.append(url)
        return served[url]

    got = {s.file: s.status for s in cl.fetch(lst, folder, download)}
    assert got == {"a.pdf": "ok", "b.txt": "ok", "c.pdf": "ok"}
    assert (folder / "c.pdf").read_bytes() == files["c.pdf"]
    assert all(s.status == "ok" for s in cl.verify_folder(lst, folder))
    calls.clear()
    again = cl.fetch(lst, folder, download)  # everything present: nothing downloaded
    assert calls == [] and all(s.detail == "already present" for s in again)


def test_fetch_refuses_wrong_bytes_and_reports_failures(listed, tmp_path):
    lst, _, served = listed
    folder = tmp_path / "fetched"

    def download(url):
        if url == "http://x/b":
            raise OSError("network unreachable")
        return b"tampered" if url == "http://x/a" else served[url]

    got = {s.file: s for s in cl.fetch(lst, folder, download)}
    assert got["a.pdf"].status == "mismatch" and not (folder / "a.pdf").exists()
    assert got["b.txt"].status == "failed" and "network unreachable" in got["b.txt"].detail
    assert got["c.pdf"].status == "ok"
    assert not list(folder.glob(".*partial"))  # nothing half-written left behind


def test_bad_list_names_file_and_line(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text(HEADER + "x.pdf\tnot-a-hash\t1\t1\tCC\thttp://x\tX\n")
    with pytest.raises(InputError, match=r"bad.tsv:2: 'sha256'"):
        cl.load_corpus_list(str(p))
    with pytest.raises(InputError, match="known lists: .*space_corpus"):
        cl.load_corpus_list("no-such-list")


def test_shipped_list_identity_and_attribution():
    lst = cl.load_corpus_list("space_corpus")
    ident = cl.identity(lst)
    assert ident["files"] == 27 and ident["pages"] == 1007 and len(ident["list_sha256"]) == 64
    md = cl.attribution_markdown(lst)
    assert md.count("\n- `") == 27 and "Licence:" in md


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/space_corpus not beside the checkout")
def test_cli_verify_shared_corpus(capsys):
    assert main(["corpus", "verify", str(SHARED)]) == 0
    out = capsys.readouterr().out
    assert "27 of 27 files ok" in out


def test_cli_verify_exits_1_on_a_damaged_folder(listed, tmp_path, capsys):
    lst, files, _ = listed
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(files["a.pdf"])
    assert main(["corpus", "verify", str(folder), "--list", str(lst.path)]) == 1
    captured = capsys.readouterr()
    assert "1 of 3 files ok" in captured.out and "spacelm corpus fetch" in captured.err
