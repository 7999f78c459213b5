"""The external data sets a config can read (`spacelm/data/sets.json`): where each lives, whether it is
present and intact, and fetching it from its public source or from a mirror, every file checked
against the sha256 the project records (the copies the suite was measured on)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .io import sha256_file


@dataclass(frozen=True)
class DataSet:
    name: str
    what: str
    licence: str
    size: str
    dir: str  # where the configs read it, relative to the project root
    # "corpus-list" (its files in a corpus list), "archive" (a public zip), "mirror" (--from only),
    # "spans" (its text rebuilt from another set's documents by spans the project commits)
    kind: str
    files: dict = field(default_factory=dict)  # {relative path: sha256}
    url: str | None = None
    archive_root: str | None = None
    rows: dict = field(default_factory=dict)  # {relative path: lines}: checked on a public download
    source: str | None = None
    list: str | None = None
    read_by: tuple = ()
    spans: str | None = None  # kind "spans": the committed folder (project-relative) of its spans and grades
    needs: str | None = None  # kind "spans": the set whose documents hold the text
    ingest_config: str | None = None  # kind "spans": the config whose ingest gives those documents' text


class NeedsMirror(ValueError):
    """A set with no public archive in its layout was asked for without a mirror (--from DIR)."""


# --------------------------------------------------------------------------- spans: text rebuilt
# A labelled passage of a corpus the project does not ship is committed as where it lies, never as
# text: its document, its span in the labelled text, its span in the project's own ingest of the
# document and the few edits that turn that span into the labelled text (an edit may insert only
# characters that are no letter or digit: the control characters and spaces an older ingest kept),
# and the sha256 of the labelled text, which the rebuilt text must match.
SPAN_FIELDS = ("_id", "doc_id", "char_start", "char_end")
GOLDEN_NAME = "golden_samples.jsonl"  # a spans set's golden samples, their passages kept as spans
MAX_EDIT_INSERT = 4  # characters one edit may insert


def _edits(ours: str, labelled: str) -> list[list] | None:
    """Edits [offset in `ours`, characters removed, text inserted] turning `ours` into `labelled`,
    or None when one would insert a letter or digit, or more than MAX_EDIT_INSERT characters."""
    import difflib

    out = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, ours, labelled, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        ins = labelled[b0:b1]
        if len(ins) > MAX_EDIT_INSERT or any(c.isalnum() for c in ins):
            return None
        out.append([a0, a1 - a0, ins])
    return out


def _apply(ours: str, edits: list) -> str:
    out, at = [], 0
    for offset, removed, inserted in edits:
        out.append(ours[at:offset])
        out.append(inserted)
        at = offset + removed
    return "".join(out) + ours[at:]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _locate(text: str, labelled: str) -> tuple[int, int] | None:
    """Where `labelled` lies in `text` (a document of the project's ingest): verbatim, or else from
    where its first 40 printable characters stand to where its alignment with the text ends."""
    import difflib

    i = text.find(labelled)
    if i >= 0:
        return i, i + len(labelled)
    head = "".join(c for c in labelled if c.isprintable() or c in "\n\t")[:40].strip()
    i = text.find(head) if head else -1
    if i < 0:
        return None
    window = text[i : i + len(labelled) + 400]
    blocks = [
        b for b in difflib.SequenceMatcher(None, window, labelled, autojunk=False).get_matching_blocks() if b.size
    ]
    return (i, i + blocks[-1].a + blocks[-1].size) if blocks else None


def _span(doc: str | None, text: str) -> dict | None:
    """Where `text` lies in `doc` as a span record (`at`, `edits`, `sha256`), or None when it cannot
    be rebuilt from it exactly."""
    where = _locate(doc, text) if doc is not None else None
    edits = _edits(doc[where[0] : where[1]], text) if where else None
    if edits is None or _apply(doc[where[0] : where[1]], edits) != text:
        return None
    return {"at": list(where), "edits": edits, "sha256": _sha(text)}


def pack_spans(passages: list[dict], texts: dict[str, str]) -> tuple[list[dict], list[str]]:
    """Span records of labelled `passages` (rows with `_id`, `text`, `doc_id`, `char_start`,
    `char_end`) against `texts` ({doc_id: text of the project's ingest}): one record per passage
    whose text is rebuilt exactly, and the ids of those that cannot be (no text committed for them)."""
    out, left = [], []
    for p in passages:
        span = _span(texts.get(p["doc_id"]), p["text"])
        if span is None:
            left.append(p["_id"])
            continue
        out.append({**{k: p[k] for k in SPAN_FIELDS}, **span})
    return out, left


def rebuild_passages(spans: list[dict], texts: dict[str, str]) -> tuple[list[dict], list[str]]:
    """The labelled passages (`_id`, `text`, `doc_id`, `char_start`, `char_end`, in that order) from
    their span records and `texts` ({doc_id: text}), and a reason per passage that could not be
    rebuilt (its document missing, or its text not the labelled one: another ingest)."""
    rows, problems = [], []
    for s in spans:
        doc = texts.get(s["doc_id"])
        if doc is None:
            problems.append(f"{s['_id']}: document {s['doc_id']!r} is not in the ingested corpus")
            continue
        text = _apply(doc[s["at"][0] : s["at"][1]], s["edits"])
        if _sha(text) != s["sha256"]:
            problems.append(f"{s['_id']}: the text at {s['doc_id']} {s['at'][0]}-{s['at'][1]} is not the labelled one")
            continue
        rows.append({"_id": s["_id"], "text": text, **{k: s[k] for k in SPAN_FIELDS[1:]}})
    return rows, problems


def pack_golden(rows: list[dict], texts: dict[str, str]) -> tuple[list[dict], list[str]]:
    """Golden-sample rows (`id`, `doc_id`, `passage`, ...) with each passage replaced by its span
    record (`at`, `edits`, `sha256`: where it lies in the document's text of `texts`), every other key
    kept in its place; and the ids whose passage cannot be rebuilt exactly (a row with no passage, an
    unanswerable sample, keeps what it has)."""
    out, left = [], []
    for r in rows:
        if not r.get("passage"):
            out.append(dict(r))
            continue
        span = _span(texts.get(r.get("doc_id")), r["passage"])
        if span is None:
            left.append(str(r.get("id")))
            continue
        out.append({**r, "passage": span})
    return out, left


def rebuild_golden(rows: list[dict], texts: dict[str, str]) -> tuple[list[dict], list[str]]:
    """The golden samples from rows :func:`pack_golden` wrote and `texts` ({doc_id: text}), and a
    reason per sample whose passage could not be rebuilt (its document missing, or another ingest)."""
    out, problems = [], []
    for r in rows:
        span = r.get("passage")
        if not isinstance(span, dict):
            out.append(dict(r))
            continue
        doc = texts.get(r.get("doc_id"))
        if doc is None:
            problems.append(f"{r.get('id')}: document {r.get('doc_id')!r} is not in the ingested corpus")
            continue
        text = _apply(doc[span["at"][0] : span["at"][1]], span["edits"])
        if _sha(text) != span["sha256"]:
            problems.append(
                f"{r.get('id')}: the text at {r['doc_id']} {span['at'][0]}-{span['at'][1]} is not the sample's"
            )
            continue
        out.append({**r, "passage": text})
    return out, problems


@dataclass(frozen=True)
class FileState:
    file: str
    status: str  # ok | missing | damaged
    detail: str = ""


def registry() -> dict[str, DataSet]:
    raw = json.loads(resources.files("spacelm").joinpath("data/sets.json").read_text(encoding="utf-8"))
    return {
        name: DataSet(name=name, **{**spec, "read_by": tuple(spec.get("read_by", ()))})
        for name, spec in raw.items()
        if not name.startswith("_")
    }


def get(name: str) -> DataSet:
    sets = registry()
    if name not in sets:
        raise KeyError(f"no data set {name!r}: `spacelm data list` names them ({', '.join(sorted(sets))})")
    return sets[name]


def expected_files(ds: DataSet) -> dict[str, str]:
    """{relative path: sha256} of every file the set holds (a corpus list's from the list)."""
    if ds.kind == "corpus-list":
        from .ingest.corpus_list import load_corpus_list

        return {e.file: e.sha256 for e in load_corpus_list(ds.list).entries}
    return dict(ds.files)


def verify(ds: DataSet, folder: Path) -> list[FileState]:
    """One state per file of the set in `folder`: ok, missing, or damaged (another sha256)."""
    out = []
    for rel, sha in expected_files(ds).items():
        p = Path(folder) / rel
        if not p.is_file():
            out.append(FileState(rel, "missing"))
            continue
        got = sha256_file(p)  # read once: a corpus file is tens of megabytes
        ok = got == sha
        out.append(
            FileState(rel, "ok") if ok else FileState(rel, "damaged", f"sha256 {got[:12]}…, recorded {sha[:12]}…")
        )
    return out


def present(ds: DataSet, folder: Path) -> str:
    """ "present", "absent" or "incomplete (n of m files intact)"."""
    states = verify(ds, folder)
    ok = sum(s.status == "ok" for s in states)
    if ok == len(states):
        return "present"
    if not Path(folder).is_dir() or all(s.status == "missing" for s in states):
        return "absent"
    return f"incomplete ({ok} of {len(states)} files intact)"


def project_root() -> Path:
    """The checkout this package runs from (where `configs/` lives), else the current folder."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "configs").is_dir() else Path.cwd()


def default_dir(ds: DataSet) -> Path:
    """Where the configs read the set: its `dir` under the project root."""
    return (project_root() / ds.dir).resolve()


def fetch_hint(folder: Path) -> str:
    """The command that gets the set a config reads at `folder` (`spacelm data fetch NAME`), or where to
    read about such sets when the folder is none of the registry's."""
    target = Path(folder).resolve()
    for ds in registry().values():
        if default_dir(ds) != target:
            continue
        if ds.kind == "mirror":  # no public archive in its layout
            return (
                f"`spacelm data fetch {ds.name} --from DIR` copies it from a copy you hold (where it comes from: "
                "`spacelm data list`)"
            )
        return f"`spacelm data fetch {ds.name}` gets it (`spacelm data list` shows every set)"
    return "a BEIR-layout folder of your own (docs/team-corpus.md#judge-check-sources)"


def file_hint(path: Path) -> str | None:
    """The command that builds the file at `path` when it is a registered set's file
    (`spacelm data fetch NAME`), else None."""
    target = Path(path).resolve()
    for ds in registry().values():
        if ds.kind != "corpus-list" and any((default_dir(ds) / rel).resolve() == target for rel in ds.files):
            return f"`spacelm data fetch {ds.name}` builds it"
    return None


def _put(data: bytes, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.partial")
    tmp.write_bytes(data)
    os.replace(tmp, dest)


def _download(url: str, timeout: float = 120.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - the URL comes from the shipped registry
        return r.read()


def fetch(
    ds: DataSet,
    to: Path,
    mirror: Path | None = None,
    download: Callable[[str], bytes] = _download,
    texts: Callable[[], dict[str, str]] | None = None,
) -> list[FileState]:
    """Put the set into `to`: from `mirror` (a folder holding the same files) when given, else from
    its public source (NeedsMirror for a set that has none). A file is written (atomically) only when
    its sha256 is the recorded one, or, for a public archive whose bytes the project has not recorded,
    when its line count is; what is already intact is kept. Returns one state per file (ok, missing,
    damaged: the reason)."""
    to = Path(to)
    want = expected_files(ds)
    have = {s.file: s for s in verify(ds, to)}
    todo = [rel for rel in want if have[rel].status != "ok"]
    if not todo:
        return [FileState(rel, "ok", "already present") for rel in want]
    if mirror is not None:
        got = {rel: (Path(mirror) / rel) for rel in todo}
        out = []
        for rel, src in got.items():
            if not src.is_file():
                out.append(FileState(rel, "missing", f"not in {mirror}"))
                continue
            data = src.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            if sha != want[rel]:
                out.append(
                    FileState(rel, "damaged", f"{src}: sha256 {sha[:12]}…, recorded {want[rel][:12]}…; not written")
                )
                continue
            _put(data, to / rel)
            out.append(FileState(rel, "ok", f"copied from {mirror}"))
        return out + [FileState(rel, "ok", "already present") for rel in want if rel not in todo]
    if ds.kind == "corpus-list":
        from .ingest.corpus_list import fetch as fetch_listed
        from .ingest.corpus_list import load_corpus_list

        st = {"ok": "ok", "mismatch": "damaged", "failed": "missing"}
        return [
            FileState(r.file, st.get(r.status, r.status), r.detail) for r in fetch_listed(load_corpus_list(ds.list), to)
        ]
    if ds.kind == "archive" and ds.url:
        try:
            blob = download(ds.url)
        except Exception as exc:  # network, HTTP or URL errors: said per file
            return [FileState(rel, "missing", f"{ds.url}: {type(exc).__name__}: {exc}"[:200]) for rel in todo]
        out = []
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            names = set(z.namelist())
            for rel in todo:
                member = f"{ds.archive_root}/{rel}" if ds.archive_root else rel
                if member not in names:
                    out.append(FileState(rel, "missing", f"{ds.url} holds no {member}"))
                    continue
                data = z.read(member).replace(b"\r\n", b"\n")
                lines = data.count(b"\n")
                if hashlib.sha256(data).hexdigest() != want[rel] and ds.rows.get(rel) not in (None, lines):
                    out.append(
                        FileState(rel, "damaged", f"{lines} lines where {ds.rows[rel]} are recorded; not written")
                    )
                    continue
                _put(data, to / rel)
                same = hashlib.sha256(data).hexdigest() == want[rel]
                out.append(
                    FileState(
                        rel,
                        "ok",
                        "fetched" + ("" if same else ", line count as recorded (bytes differ from the measured copy)"),
                    )
                )
        return out + [FileState(rel, "ok", "already present") for rel in want if rel not in todo]
    if ds.kind == "spans" and texts is not None:
        return _fetch_spans(ds, to, todo, want, texts) + [
            FileState(rel, "ok", "already present") for rel in want if rel not in todo
        ]
    raise NeedsMirror(
        f"data set {ds.name!r} has no public archive in this layout: give a copy with `spacelm data fetch {ds.name} "
        f"--from DIR`. Where it comes from: {ds.source or 'its PROVENANCE.md'}"
    )


def _fetch_spans(
    ds: DataSet, to: Path, todo: list[str], want: dict[str, str], texts: Callable[[], dict[str, str]]
) -> list[FileState]:
    """A "spans" set's files: its committed ones copied, its passages' text rebuilt from `texts()`;
    each written only when its sha256 is the recorded one."""
    from .io import read_jsonl

    folder = project_root() / ds.spans
    out = []
    for rel in todo:
        if rel == "corpus.jsonl":  # labelled passages: their spans in passages.jsonl
            rows, problems = rebuild_passages(read_jsonl(folder / "passages.jsonl"), texts())
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
            how = f"rebuilt from {ds.needs}'s documents ({len(rows)} passages)"
        elif rel.endswith(GOLDEN_NAME):  # golden samples: each passage a span in the file of that name
            rows, problems = rebuild_golden(read_jsonl(folder / rel), texts())
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
            how = f"rebuilt from {ds.needs}'s documents ({sum(bool(r.get('passage')) for r in rows)} passages)"
        else:
            problems, data, how = [], (folder / rel).read_bytes(), f"copied from {ds.spans}"
        sha = hashlib.sha256(data).hexdigest()
        if problems or sha != want[rel]:
            why = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
            out.append(
                FileState(rel, "damaged", (why or f"sha256 {sha[:12]}…, recorded {want[rel][:12]}…") + "; not written")
            )
            continue
        _put(data, to / rel)
        out.append(FileState(rel, "ok", how))
    return out
