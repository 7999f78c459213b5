"""File names and encodings (issue 57, item 3): a corpus file whose name holds a newline must not
start a forged line of the log or of a warning, a name starting with '-' must not read as an
option, a UTF-16 text file is read and said so, and a file in another encoding is skipped with a
warning naming it, the offending byte's offset and the fix."""

import logging
import os
import re
import warnings
from pathlib import Path

import pytest

from spacelm.lib.ingest import documents
from spacelm.lib.redact import shown_name

ROOT = Path(__file__).resolve().parents[3]
TEXT = "Conjunction screening compares the probability of collision with a threshold. " * 12
# a name that, printed raw, would add a line the log's reader takes for spacelm's own
FORGED = "notes\n2025-01-01 00:00:00,000 ERROR [spacelm] all stages done.txt"
FORGED_SHOWN = "notes\\n2025-01-01 00:00:00,000 ERROR [spacelm] all stages done.txt"


def _ingest(folder: Path, exts=(".txt", ".md")):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = documents.ingest_corpus(folder, list(exts), [])
    return res, [str(w.message) for w in caught]


def test_shown_name_escapes_every_control_and_guards_a_leading_dash():
    assert (
        shown_name("a\nb\rc\td\x1be\x7ff\x85g\u2028h\u202ei.md") == "a\\nb\\rc\\td\\x1be\\x7ff\\x85g\\u2028h\\u202ei.md"
    )
    assert shown_name("-rf.md") == "./-rf.md" and shown_name(Path("--help.txt")) == "./--help.txt"
    assert shown_name(Path("/corpus/-rf.md")) == "/corpus/-rf.md"  # only a name that starts with '-' reads as an option
    assert shown_name(os.fsdecode(b"caf\xe9.txt")) == "caf\\xe9.txt"  # a byte that is not UTF-8, as the byte
    assert shown_name("Été orbit-notes (v2).md") == "Été orbit-notes (v2).md"  # an ordinary name is left alone
    assert len(shown_name(FORGED).splitlines()) == 1


def test_a_newline_in_a_name_stays_on_one_line_of_the_warnings_and_the_skip_list(tmp_path):
    (tmp_path / "good.txt").write_text(TEXT)
    (tmp_path / FORGED).write_bytes(b"")  # empty: skipped with a warning naming it
    (tmp_path / "-rf.txt").write_text(TEXT)  # read first; good.txt, the same bytes, is its duplicate
    res, said = _ingest(tmp_path)
    assert [d.doc_id for d in res.documents] == ["rf"]
    assert len(said) == 2 and all(len(m.splitlines()) == 1 for m in said)
    (empty,) = [m for m in said if "empty file" in m]
    assert f"{tmp_path}/{FORGED_SHOWN}: empty file" in empty
    (dup,) = [m for m in said if "duplicate" in m]
    assert dup.startswith(f"skipping {tmp_path}/good.txt: the same content as {tmp_path}/-rf.txt")
    assert {Path(s.source).name for s in res.skipped} == {FORGED, "good.txt"}  # the source itself unchanged


def test_the_run_log_has_one_line_per_event_whatever_a_file_is_called(tiny_config, tiny_corpus, monkeypatch):
    from spacelm.cli import _short_warning
    from spacelm.runner.runlog import run_log
    from spacelm.stages import ingest

    (tiny_corpus / FORGED).write_bytes(b"")
    (tiny_corpus / "ops\r\x1b[2Jnote.md").write_bytes("caf\xe9 orbit ".encode("latin-1") + TEXT.encode())
    monkeypatch.setattr(warnings, "formatwarning", _short_warning)  # as the command line prints warnings
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        logging.captureWarnings(False)  # a test before may have left it on, which would make the next call a no-op
        logging.captureWarnings(True)
        try:
            with run_log(tiny_config, "ingest") as path:
                result = ingest.compute(tiny_config)
        finally:
            logging.captureWarnings(False)
    lines = path.read_text(encoding="utf-8").splitlines()
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \[")
    assert lines and all(stamp.match(line) for line in lines), lines
    assert not any("ERROR [spacelm] all stages done" in line[:60] for line in lines)
    assert sum(FORGED_SHOWN in line and "empty file" in line for line in lines) == 1, lines
    assert sum("ops\\r\\x1b[2Jnote.md" in line and "offset 3" in line for line in lines) == 1
    # the skip list a person reads names each file as the log does, by its public path
    reasons = sorted(s.reason for s in result.skipped)
    assert all(len(r.splitlines()) == 1 for r in reasons) and "\x1b" not in "".join(reasons)
    assert reasons[0].startswith("<outside the project>/raw/notes\\n2025") and "empty file" in reasons[0]
    assert reasons[1].startswith("<outside the project>/raw/ops\\r\\x1b[2Jnote.md: not valid UTF-8")


def test_the_documents_table_shows_the_source_escaped_and_the_jsonl_keeps_it(tiny_config, tiny_corpus):
    from spacelm.stages import ingest

    (tiny_corpus / "guide.md").rename(tiny_corpus / "guide\nv2.md")
    result = ingest.compute(tiny_config)
    (doc,) = [d for d in result.documents if d.doc_id == "guide-v2"]
    assert doc.source.endswith("raw/guide\nv2.md")  # the data keeps the file's name as it is
    assert "<outside the project>/raw/guide\\nv2.md" in result.table["source"].tolist()


def test_a_corpus_list_check_shows_an_unlisted_dash_name_as_a_path(tmp_path):
    from spacelm.check import CheckReport, _corpus_folder
    from spacelm.config import load_config

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha")
    (folder / "-rf.txt").write_text(TEXT)
    (folder / "b\nc.md").write_text(TEXT)
    listed = tmp_path / "team.tsv"
    sha = "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8"  # sha256 of b"alpha"
    listed.write_text(
        "file\tsha256\tbytes\tpages\tlicence\tsource\tattribution\n"
        f"a.txt\t{sha}\t5\t1\tCC-BY-4.0\thttps://example.org/a.txt\tA, CC BY 4.0\n"
    )
    cfg = load_config(ROOT / "configs" / "quick.yaml", sets=[f"corpus.raw_dir={folder}", f"corpus.file_list={listed}"])
    rep = CheckReport()
    assert _corpus_folder(cfg, rep)
    (warning,) = [p.text for p in rep.warnings]
    assert "2 file(s) not in corpus list 'team' will be ingested too: ./-rf.txt, b\\nc.md;" in warning
    assert len(warning.splitlines()) == 1


@pytest.mark.parametrize(
    "encoding,named", [("utf-16", "UTF-16-LE"), ("utf-16-be", "UTF-16-BE"), ("utf-32", "UTF-32-LE")]
)
def test_utf16_text_with_a_byte_order_mark_is_read_and_the_log_says_so(tmp_path, caplog, encoding, named):
    data = ("# Orbits\n\nÉté: " + TEXT).encode(encoding)
    if encoding == "utf-16-be":  # Python writes no mark for an explicit byte order
        data = b"\xfe\xff" + data
    (tmp_path / "ops.md").write_bytes(data)
    with caplog.at_level(logging.INFO, logger="spacelm"):
        res, said = _ingest(tmp_path)
    (doc,) = res.documents
    assert "Été: Conjunction screening" in doc.text and said == []
    (line,) = [r.getMessage() for r in caplog.records if "decoded from" in r.getMessage()]
    assert line.startswith(f"{tmp_path / 'ops.md'}: decoded from {named}")


def test_a_utf8_file_is_read_without_a_word_about_its_encoding(tmp_path, caplog):
    (tmp_path / "ops.md").write_bytes(b"\xef\xbb\xbf" + ("# Orbits\n\nÉté: " + TEXT).encode())
    with caplog.at_level(logging.INFO, logger="spacelm"):
        res, _ = _ingest(tmp_path)
    assert len(res.documents) == 1 and not [r for r in caplog.records if "decoded from" in r.getMessage()]


def test_utf16_without_a_byte_order_mark_is_refused_naming_the_file_the_encoding_and_the_fix(tmp_path):
    (tmp_path / "good.txt").write_text(TEXT)
    (tmp_path / "ops.md").write_bytes(("# Orbits\n\n" + TEXT).encode("utf-16-le"))
    res, said = _ingest(tmp_path)
    (msg,) = said
    assert msg == (
        f"skipping {tmp_path / 'ops.md'}: looks like UTF-16 text without a byte-order mark; save it as UTF-8"
    )
    assert [Path(s.source).name for s in res.skipped] == ["ops.md"]


def test_a_latin1_file_is_skipped_with_a_warning_naming_it_the_offset_and_the_fix(tmp_path):
    (tmp_path / "good.txt").write_text(TEXT)
    (tmp_path / "notes.md").write_bytes(("# Notes\n\nCaf\xe9 orbit " + TEXT).encode("latin-1"))
    res, said = _ingest(tmp_path)
    assert [d.doc_id for d in res.documents] == ["good"]
    (msg,) = said
    assert msg == (
        f"skipping {tmp_path / 'notes.md'}: not valid UTF-8 (byte 0xe9 at offset 12); it reads as Windows-1252 "
        "(Latin-1) text, which `iconv -f cp1252 -t utf-8` converts; save the file as UTF-8"
    )
    from spacelm.lib.io import _guess

    assert _guess(b"caf\x81") == "" and _guess("\u20ac 5".encode("cp1252"))  # 0x81: no Windows-1252 letter
    assert res.skipped[0].reason == msg.removeprefix("skipping ")


def test_a_name_that_is_not_utf8_is_ingested_stored_escaped_and_reused(tiny_config, tiny_corpus):
    """Issue 57: a corpus file whose name holds bytes that are not UTF-8 crashed the writing of
    documents.jsonl (and of the stage's stamp). The file is read by its real path; the outputs
    name it as `shown_name` does (the byte as \\xe9); a second run finds the stage up to date."""
    import json

    from spacelm.stages import chunk, ingest

    raw = os.fsencode(tiny_corpus)
    with open(os.path.join(raw, b"caf\xe9 notes.txt"), "w") as f:
        f.write("Caf orbit notes. " + TEXT)
    with open(os.path.join(raw, b"\xe9\xe8.md"), "w") as f:  # no letter of the name is UTF-8
        f.write("# Other\n\n" + TEXT.replace("threshold", "limit"))
    first = ingest.run(tiny_config)
    assert not first["skipped"] and first["documents"] == 5
    rows = [json.loads(x) for x in (tiny_config.processed_dir / "documents.jsonl").read_text("utf-8").splitlines()]
    by_name = {r["source"].rsplit("/", 1)[-1]: r for r in rows}
    assert {"caf\\xe9 notes.txt", "\\xe9\\xe8.md"} <= set(by_name)
    assert "Caf orbit notes." in by_name["caf\\xe9 notes.txt"]["text"]  # read from the file itself
    assert by_name["caf\\xe9 notes.txt"]["doc_id"] == "caf-notes"
    assert by_name["\\xe9\\xe8.md"]["doc_id"].startswith("doc-")  # its hash taken over the name's bytes
    stamp = (tiny_config.processed_dir / ".ingest.stamp.json").read_text("utf-8")
    assert "caf\\\\xe9 notes.txt" in stamp
    assert ingest.run(tiny_config)["skipped"]  # the stamp read back: the stage is up to date
    assert chunk.run(tiny_config)["chunks"] > 0


def test_a_value_put_into_a_log_message_keeps_to_its_line(tiny_config):
    """A log call that names a file or quotes a reply without `shown_name`: its arguments' line
    breaks are written as escapes, so the value cannot start a forged line of the run log."""
    from pathlib import Path

    from spacelm.runner.runlog import run_log

    log = logging.getLogger("spacelm.test")
    with run_log(tiny_config, "ingest") as path:
        log.warning("reading %s", "notes\n2025-01-01 00:00:00,000 ERROR [spacelm] forged")
        log.warning("reading %(f)s", {"f": Path("a\rb.md")})
        log.warning("kept %d documents", 3)
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if "spacelm.test" in x or "reading" in x]
    assert len(lines) == 3 and not any(x.startswith("2025-01-01") for x in path.read_text().splitlines())
    assert "notes\\n2025-01-01" in lines[0] and "a\\rb.md" in lines[1]
