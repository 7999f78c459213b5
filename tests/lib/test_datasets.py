"""The external data sets: the registry, checking a folder, fetching from a mirror or a public archive."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest

from spacelm.lib import datasets as dsets


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_the_registry_names_each_set_a_config_reads_with_its_licence_and_where_it_goes():
    sets = dsets.registry()
    assert {"space_corpus", "scifact", "trec-dl-2020", "space-corpus-labels"} <= set(sets)
    for ds in sets.values():
        assert ds.licence and ds.size and ds.dir and ds.what
        assert ds.kind in ("corpus-list", "archive", "mirror", "spans")
        assert all(len(sha) == 64 for sha in dsets.expected_files(ds).values())
    with pytest.raises(KeyError, match="spacelm data list"):
        dsets.get("msmarco")


def test_a_mirror_copy_is_written_only_when_its_sha256_is_the_recorded_one(tmp_path):
    good, bad = b"row 1\nrow 2\n", b"tampered\n"
    ds = dsets.DataSet("t", "w", "l", "1 kB", "x", "mirror", files={"a.tsv": _sha(good), "sub/b.tsv": _sha(good)})
    mirror = tmp_path / "mirror"
    (mirror / "sub").mkdir(parents=True)
    (mirror / "a.tsv").write_bytes(good)
    (mirror / "sub" / "b.tsv").write_bytes(bad)
    to = tmp_path / "to"
    states = {s.file: s for s in dsets.fetch(ds, to, mirror)}
    assert states["a.tsv"].status == "ok" and (to / "a.tsv").read_bytes() == good
    assert states["sub/b.tsv"].status == "damaged" and not (to / "sub" / "b.tsv").exists()
    assert dsets.present(ds, to) == "incomplete (1 of 2 files intact)"
    (mirror / "sub" / "b.tsv").write_bytes(good)
    again = {s.file: s.detail for s in dsets.fetch(ds, to, mirror)}
    assert again == {"a.tsv": "already present", "sub/b.tsv": f"copied from {mirror}"}
    assert dsets.present(ds, to) == "present" and dsets.present(ds, tmp_path / "nowhere") == "absent"
    with pytest.raises(dsets.NeedsMirror, match="--from DIR"):
        dsets.fetch(ds, tmp_path / "again")


def test_a_public_archive_is_unpacked_file_by_file_and_checked(tmp_path):
    corpus, queries = b'{"_id": "1"}\n{"_id": "2"}\n', b'{"_id": "q"}\r\n'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("set/corpus.jsonl", corpus)
        z.writestr("set/queries.jsonl", queries)
    ds = dsets.DataSet(
        "t",
        "w",
        "l",
        "1 kB",
        "x",
        "archive",
        url="https://example.org/set.zip",
        archive_root="set",
        files={"corpus.jsonl": _sha(corpus), "queries.jsonl": "0" * 64, "qrels/test.tsv": "1" * 64},
        rows={"queries.jsonl": 1, "qrels/test.tsv": 2},
    )
    asked = []
    states = {s.file: s for s in dsets.fetch(ds, tmp_path, download=lambda u: asked.append(u) or buf.getvalue())}
    assert asked == ["https://example.org/set.zip"]
    assert states["corpus.jsonl"].status == "ok" and states["corpus.jsonl"].detail == "fetched"
    # bytes other than the measured copy's (CRLF normalised), but its line count as recorded: kept, and said
    assert states["queries.jsonl"].status == "ok" and "bytes differ" in states["queries.jsonl"].detail
    assert (tmp_path / "queries.jsonl").read_bytes() == b'{"_id": "q"}\n'
    assert (
        states["qrels/test.tsv"].status == "missing"
        and "holds no set/qrels/test.tsv" in states["qrels/test.tsv"].detail
    )

    def offline(url):
        raise OSError("no network")

    failed = dsets.fetch(ds, tmp_path / "off", download=offline)
    assert {s.status for s in failed} == {"missing"} and "no network" in failed[0].detail


def test_data_list_and_fetch_from_the_command_line(tmp_path, capsys):
    from spacelm.cli import main

    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "scifact  [" in out and "licence: CC BY-NC 2.0" in out
    assert main(["data", "fetch", "nothing-by-this-name"]) == 2
    assert main(["data", "fetch", "trec-dl-2020", "--to", str(tmp_path / "t")]) == 2
    assert "--from DIR" in capsys.readouterr().err
    assert main(["data", "fetch", "scifact", "--from", str(tmp_path / "missing")]) == 2


# --------------------------------------------------------------------------- spans: text rebuilt
DOC = "Header line.\n\nThe CARA team screens each conjunction. It acts at 1e-4.\n\nThe end."
LABELLED = "The CARA team screens\x07 each conjunction. It acts at 1e-4."  # an older ingest kept a \x07


def _passage(text=LABELLED, start=3):
    return {"_id": "d:1", "text": text, "doc_id": "d", "char_start": start, "char_end": start + len(text)}


def test_a_passage_is_packed_as_where_it_lies_and_rebuilt_to_the_labelled_text():
    spans, left = dsets.pack_spans([_passage()], {"d": DOC})
    assert left == []
    (s,) = spans
    assert "text" not in s and s["at"] == [DOC.index("The CARA"), DOC.index("\n\nThe end")]
    assert s["edits"] == [[len("The CARA team screens"), 0, "\x07"]]
    rows, problems = dsets.rebuild_passages(spans, {"d": DOC})
    assert problems == [] and rows == [_passage()]
    assert list(rows[0]) == ["_id", "text", "doc_id", "char_start", "char_end"]  # the labelled file's order


def test_no_letter_or_digit_is_committed_and_another_ingest_is_named():
    """An edit that would need corpus text leaves the passage out of the pack; a document whose
    text moved since the pack fails its sha256 and is named, and so is a missing one."""
    spans, left = dsets.pack_spans([_passage("The CARA team screens each conjunction. It acts at 2e-4.")], {"d": DOC})
    assert spans == [] and left == ["d:1"]
    spans, _ = dsets.pack_spans([_passage()], {"d": DOC})
    rows, problems = dsets.rebuild_passages(spans, {"d": "Another header.\n\n" + DOC})
    assert rows == [] and "is not the labelled one" in problems[0] and "d " in problems[0]
    rows, problems = dsets.rebuild_passages(spans, {})
    assert rows == [] and "document 'd' is not in the ingested corpus" in problems[0]


def test_a_spans_set_is_fetched_byte_for_byte_or_not_written(tmp_path, monkeypatch):
    import json

    spans, _ = dsets.pack_spans([_passage()], {"d": DOC})
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "passages.jsonl").write_text(json.dumps(spans)[1:-1] + "\n")
    (tmp_path / "lab" / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td:1\t3\n")
    corpus = (json.dumps(_passage(), ensure_ascii=False) + "\n").encode()
    files = {"corpus.jsonl": _sha(corpus), "qrels.tsv": _sha((tmp_path / "lab" / "qrels.tsv").read_bytes())}
    ds = dsets.DataSet("t", "w", "l", "1 kB", "x", "spans", files=files, spans="lab", needs="c")
    monkeypatch.setattr(dsets, "project_root", lambda: tmp_path)
    states = {s.file: s for s in dsets.fetch(ds, tmp_path / "to", texts=lambda: {"d": DOC})}
    assert all(s.status == "ok" for s in states.values()), states
    assert (tmp_path / "to" / "corpus.jsonl").read_bytes() == corpus
    states = {s.file: s for s in dsets.fetch(ds, tmp_path / "again", texts=lambda: {"d": DOC.replace("CARA", "CARB")})}
    assert states["corpus.jsonl"].status == "damaged" and not (tmp_path / "again" / "corpus.jsonl").exists()
    with pytest.raises(dsets.NeedsMirror):
        dsets.fetch(ds, tmp_path / "none")  # no documents given: a mirror is the other way


def test_the_committed_in_domain_labels_hold_spans_and_grades_and_no_text():
    import json

    ds = dsets.get("space-corpus-labels")
    folder = dsets.project_root() / ds.spans
    rows = [json.loads(line) for line in (folder / "passages.jsonl").read_text().splitlines()]
    assert len(rows) == 372 and all("text" not in r and len(r["sha256"]) == 64 for r in rows)
    assert all(not any(c.isalnum() for e in r["edits"] for c in e[2]) for r in rows)
    for rel in ("queries.jsonl", "qrels.tsv"):
        assert _sha((folder / rel).read_bytes()) == ds.files[rel]


def _golden(passage=LABELLED):
    return {
        "id": "g1",
        "task": "direct_qa",
        "question": "Who screens?",
        "passage": passage,
        "doc_id": "d",
        "answer": "CARA",
    }


def test_a_golden_sample_keeps_its_own_words_and_its_passage_as_a_span(tmp_path, monkeypatch):
    """The question and answer stay; the passage becomes where it lies; the fetch rebuilds the file
    byte for byte, keys in their order, and writes nothing when the documents moved."""
    import json

    una = {
        "id": "g2",
        "task": "direct_qa",
        "question": "Who built the Moon?",
        "passage": "",
        "doc_id": "",
        "answer": "",
    }
    packed, left = dsets.pack_golden([_golden(), una], {"d": DOC})
    assert left == [] and packed[1] == una
    assert packed[0]["question"] == "Who screens?" and set(packed[0]["passage"]) == {"at", "edits", "sha256"}
    assert "CARA team" not in json.dumps(packed)
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / dsets.GOLDEN_NAME).write_text("".join(json.dumps(r) + "\n" for r in packed))
    built = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [_golden(), una]).encode()
    ds = dsets.DataSet(
        "g", "w", "l", "1 kB", "x", "spans", files={dsets.GOLDEN_NAME: _sha(built)}, spans="gold", needs="c"
    )
    monkeypatch.setattr(dsets, "project_root", lambda: tmp_path)
    (state,) = dsets.fetch(ds, tmp_path / "to", texts=lambda: {"d": DOC})
    assert state.status == "ok" and (tmp_path / "to" / dsets.GOLDEN_NAME).read_bytes() == built
    (state,) = dsets.fetch(ds, tmp_path / "moved", texts=lambda: {"d": "x" + DOC})
    assert state.status == "damaged" and "g1" in state.detail and not (tmp_path / "moved").exists()
    assert dsets.pack_golden([_golden("The CARA team screens nothing at all.")], {"d": DOC})[1] == ["g1"]


def test_the_committed_golden_samples_hold_spans_and_no_passage_text():
    import json

    ds = dsets.get("space-corpus-golden")
    rows = [json.loads(x) for x in (dsets.project_root() / ds.spans / dsets.GOLDEN_NAME).read_text().splitlines()]
    answerable = [r for r in rows if r["answerable"]]
    assert len(rows) == 98 and len(answerable) == 77
    assert all(isinstance(r["passage"], dict) and len(r["passage"]["sha256"]) == 64 for r in answerable)
    assert all(r["passage"] == "" for r in rows if not r["answerable"])
    assert "data/space_corpus/golden_samples.jsonl" in (dsets.project_root() / ".gitignore").read_text()


def test_a_missing_golden_file_a_set_builds_names_the_command(tmp_path, monkeypatch):
    """`spacelm check` names the fetch that builds a missing file of a registered set, and the
    config key for any other missing golden file."""
    from spacelm.check import CheckReport, _golden
    from spacelm.config import from_dict

    monkeypatch.setattr(dsets, "project_root", lambda: tmp_path)  # a clone where nothing is built yet
    path = dsets.default_dir(dsets.get("space-corpus-golden")) / dsets.GOLDEN_NAME
    assert dsets.file_hint(path) == "`spacelm data fetch space-corpus-golden` builds it"
    assert dsets.file_hint(tmp_path / "golden_samples.jsonl") is None
    for golden, says in (
        (path, "`spacelm data fetch space-corpus-golden`"),
        (tmp_path / "g.jsonl", "corpus.golden_samples"),
    ):
        rep = CheckReport()
        assert _golden(from_dict({"corpus": {"golden_samples": str(golden)}}), rep) is None
        assert len(rep.errors) == 1 and says in rep.errors[0].text


def test_the_hint_for_a_set_with_no_public_archive_asks_for_a_copy():
    sets = dsets.registry()
    trec, scifact = sets["trec-dl-2020"], sets["scifact"]
    assert trec.kind == "mirror" and "--from DIR" in dsets.fetch_hint(dsets.default_dir(trec))
    assert "--from" not in dsets.fetch_hint(dsets.default_dir(scifact))  # it has a public archive
