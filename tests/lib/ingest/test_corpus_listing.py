"""Which files of a corpus folder become documents, and what text of theirs (issue 43): links
leading out of the folder, hidden folders, duplicate files, hostile file names, control and
bidi-override characters, UTF-16 text."""

import os
import warnings
from pathlib import Path

import pytest

from spacelm.lib.ingest import documents
from spacelm.lib.io import InputError

TEXT = "Conjunction screening compares the probability of collision with a threshold. " * 12


def _ingest(folder: Path, exts=(".txt", ".md")):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = documents.ingest_corpus(folder, list(exts), [])
    return res, [str(w.message) for w in caught]


def test_a_symlink_leading_out_of_the_corpus_is_skipped_with_a_warning_naming_it(tmp_path):
    raw, outside = tmp_path / "raw", tmp_path / "elsewhere"
    raw.mkdir(), outside.mkdir()
    (raw / "ops.txt").write_text(TEXT)
    (outside / "secret.txt").write_text("root:x:0:0:root:/root:/bin/bash\n" * 20)
    (raw / "passwd.txt").symlink_to(outside / "secret.txt")
    (raw / "linked-dir").symlink_to(outside, target_is_directory=True)
    res, said = _ingest(raw)
    assert [d.doc_id for d in res.documents] == ["ops"]
    assert all("root:x" not in d.text for d in res.documents)
    (skip,) = [s for s in res.skipped if s.source.endswith("passwd.txt")]
    assert "symbolic link to a file outside the corpus folder" in skip.reason
    assert any(str(raw / "passwd.txt") in m and "outside the corpus folder" in m for m in said)
    assert documents.list_sources(raw, [".txt"], []) == [raw / "ops.txt"]


def test_a_symlink_inside_the_corpus_is_followed_and_the_corpus_folder_may_be_a_link(tmp_path):
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "ops.txt").write_text(TEXT)
    (real / "alias.txt").symlink_to(real / "sub" / "ops.txt")
    link = tmp_path / "raw"
    link.symlink_to(real, target_is_directory=True)
    res, said = _ingest(link)
    # the link inside is a second copy of the same bytes: one document, the other a duplicate
    assert [d.doc_id for d in res.documents] == ["alias"]
    assert [Path(s.source).name for s in res.skipped] == ["ops.txt"]
    assert "same content as" in res.skipped[0].reason and "outside" not in res.skipped[0].reason


def test_files_in_hidden_folders_are_not_ingested(tmp_path):
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "ops.md").write_text("# Ops\n\n" + TEXT)
    (tmp_path / ".ipynb_checkpoints" / "ops-checkpoint.md").write_text("# Ops draft\n\n" + TEXT + " draft")
    (tmp_path / "notes" / ".hidden.md").write_text("# Hidden\n\n" + TEXT + " hidden")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "README.md").write_text("# git\n\n" + TEXT + " git")
    res, _ = _ingest(tmp_path)
    assert [d.doc_id for d in res.documents] == ["ops"] and res.skipped == []


def test_a_duplicate_document_is_reported_and_the_second_skipped(tmp_path):
    (tmp_path / "a-report.txt").write_text(TEXT)
    (tmp_path / "b-copy.txt").write_text(TEXT)
    res, said = _ingest(tmp_path)
    assert [d.doc_id for d in res.documents] == ["a-report"]
    (skip,) = res.skipped
    assert skip.source.endswith("b-copy.txt") and "the same content as" in skip.reason
    assert str(tmp_path / "a-report.txt") in skip.reason and "duplicate" in skip.reason
    assert any("b-copy.txt" in m and "duplicate" in m for m in said)


def test_a_file_name_with_terminal_escapes_is_printed_escaped(tmp_path):
    name = "clear\x1b[2J\x1b[H\u202eevil.txt"
    (tmp_path / "good.txt").write_text(TEXT)
    (tmp_path / name).write_bytes(b"")  # empty: skipped with a warning naming it
    res, said = _ingest(tmp_path)
    (msg,) = [m for m in said if "clear" in m]
    assert "\x1b" not in msg and "\u202e" not in msg
    assert "clear\\x1b[2J\\x1b[H\\u202eevil.txt" in msg and "\x1b" not in res.skipped[0].reason


def test_the_cli_prints_warnings_and_errors_with_escapes(capsys):
    import logging

    from spacelm.cli import _say, _short_warning
    from spacelm.lib.redact import RedactingFilter

    _say("bad \x1b]0;title\x07 name")
    assert capsys.readouterr().err == "spacelm: bad \\x1b]0;title\\x07 name\n"
    assert _short_warning("x\x1b[2Jy", UserWarning, "f", 1) == "UserWarning: x\\x1b[2Jy"
    record = logging.LogRecord("spacelm", logging.WARNING, "f", 1, "file %s", ("a\x1bb",), None)
    RedactingFilter().filter(record)
    assert record.getMessage() == "file a\\x1bb"


def test_control_and_bidi_characters_are_removed_from_the_text_and_counted(tmp_path):
    # (a NUL in a text file makes it binary data; from a PDF it is removed like the rest, see strip_controls)
    hostile = "Launch\x01 window \x1b[31mopens\x1b[0m at \u202enoon\u202c.\x7f Tab\tkept.\u2066iso\u2069 \u200fmark"
    (tmp_path / "ops.txt").write_text(hostile + "\n\n" + TEXT)
    res, _ = _ingest(tmp_path)
    (doc,) = res.documents
    assert doc.text.startswith("Launch window [31mopens[0m at noon. Tab kept.iso mark")
    for ch in "\x01\x1b\x7f\u202e\u202c\u2066\u2069\u200f":
        assert ch not in doc.text
    assert doc.dropped_chars["control_character"] == 9
    rows = [d for d in res.dropped if d["reason"] == "control_character"]
    assert [(r["page"], r["chars"]) for r in rows] == [(1, 9)]


def test_strip_controls_removes_nul_and_turns_form_feeds_into_line_breaks():
    assert documents.strip_controls("a\x00b\x0cc\u202ed\x85e\r\nf\tg") == ("ab\ncd\ne\r\nf\tg", 2)


def test_the_ingest_summary_counts_the_control_characters(tiny_config, tiny_corpus):
    from spacelm.stages import ingest

    (tiny_corpus / "notes.txt").write_text("Orbit\u202e raised\x1b.\n\n" + TEXT)
    cfg = tiny_config
    result = ingest.compute(cfg)
    summary = ingest.write(cfg, result, lambda p: p)
    assert summary["dropped_chars"]["control_character"] == 2


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_text_with_a_byte_order_mark_is_read_as_text(tmp_path, encoding):
    data = ("# Orbits\n\nÉté: " + TEXT).encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    (tmp_path / "ops.md").write_bytes(data)
    res, _ = _ingest(tmp_path)
    (doc,) = res.documents
    assert doc.title == "Orbits" and "Été: Conjunction screening" in doc.text


def test_utf16_without_a_byte_order_mark_says_save_it_as_utf8(tmp_path):
    (tmp_path / "good.txt").write_text(TEXT)
    (tmp_path / "ops.md").write_bytes(("# Orbits\n\n" + TEXT).encode("utf-16-le"))
    res, _ = _ingest(tmp_path)
    (skip,) = res.skipped
    assert "ops.md" in skip.reason and "UTF-16" in skip.reason and "save it as UTF-8" in skip.reason
    assert "binary data" not in skip.reason


def test_a_file_that_is_not_utf8_says_save_as_utf8(tmp_path):
    (tmp_path / "ops.txt").write_bytes(("Été " + TEXT).encode("cp1252"))
    with pytest.raises(InputError, match=r"ops.txt.*not valid UTF-8.*save the file as UTF-8"):
        documents.ingest_file(tmp_path / "ops.txt")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads anything")
def test_listing_ignores_nothing_but_what_it_should(tmp_path):
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "README.md").write_text(TEXT + " readme")
    assert [p.name for p in documents.list_sources(tmp_path, [".txt", ".md"], ["readme.md"])] == ["a.txt"]
