"""Corpus lists: which files a corpus holds, where each comes from, and how to check them.

A corpus whose files may not be redistributed (or are simply too large to commit) is shipped as
a *list*: one TSV row per file with its name, sha256, size, pages, licence, public source URL(s)
and the attribution line that must accompany excerpts. From the list:

- :func:`verify_folder` checks a folder offline: every listed file present with its sha256;
- :func:`fetch` downloads missing or damaged files from their sources, checks each against its
  sha256 and reports what is still missing (a file of several parts is joined in order);
- :func:`identity` is what a run's manifest records (name, the list's own sha256, file count);
- :func:`attribution_markdown` is the attribution list placed beside outputs that quote documents.

Lists named by a bare name live in ``spacelm/data/corpora/<name>.tsv``; a path to a ``.tsv``
file works too, so a team can ship its own.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from ..io import InputError, sha256_file

LISTS_DIR = Path(str(resources.files("spacelm").joinpath("data", "corpora")))
COLUMNS = ("file", "sha256", "bytes", "pages", "licence", "source", "attribution")


class CorpusEntry(NamedTuple):
    """One listed file."""

    file: str
    sha256: str
    bytes: int
    pages: int | None
    licence: str
    sources: tuple[str, ...]  # URLs; several are parts joined in order
    attribution: str


class CorpusList(NamedTuple):
    name: str
    path: Path
    entries: tuple[CorpusEntry, ...]


class FileStatus(NamedTuple):
    """What verify/fetch found for one listed file: ok, missing, mismatch or failed (with why)."""

    file: str
    status: str
    detail: str = ""


def list_path(name: str) -> Path:
    """The TSV of corpus list `name` (a bare name under spacelm/data/corpora, or a path)."""
    p = Path(name)
    if p.suffix == ".tsv" or os.sep in name:
        return p
    return LISTS_DIR / f"{name}.tsv"


def available_lists() -> list[str]:
    return sorted(p.stem for p in LISTS_DIR.glob("*.tsv"))


def load_corpus_list(name: str) -> CorpusList:
    """Read and validate a corpus list; errors name the file, the line and the fix."""
    path = list_path(name)
    if not path.is_file():
        known = ", ".join(available_lists()) or "none"
        raise InputError(f"corpus list {name!r}: no file {path}; known lists: {known} (or give a .tsv path)")
    text = path.read_text(encoding="utf-8")
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise InputError(f"{path}: empty corpus list; write a header row ({', '.join(COLUMNS)}) and one row per file")
    header_no, header = lines[0]
    cols = header.split("\t")
    missing = [c for c in COLUMNS if c not in cols]
    if missing:
        raise InputError(f"{path}:{header_no}: header lacks column(s) {missing}; the columns are {', '.join(COLUMNS)}")
    entries, seen = [], {}
    for lineno, line in lines[1:]:
        row = next(csv.reader(io.StringIO(line), delimiter="\t"))
        if len(row) != len(cols):
            raise InputError(f"{path}:{lineno}: {len(row)} fields, the header has {len(cols)}; separate fields by tabs")
        r = dict(zip(cols, row))
        where = f"{path}:{lineno}"
        if not r["file"] or "/" in r["file"] or r["file"].startswith("."):
            raise InputError(f"{where}: 'file' must be a plain file name, got {r['file']!r}")
        if r["file"] in seen:
            raise InputError(f"{where}: file {r['file']!r} listed twice (first on line {seen[r['file']]})")
        seen[r["file"]] = lineno
        sha = r["sha256"].strip().lower()
        if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
            raise InputError(f"{where}: 'sha256' must be 64 hex digits, got {r['sha256']!r}")
        try:
            size = int(r["bytes"])
            pages = int(r["pages"]) if r["pages"].strip() else None
        except ValueError:
            raise InputError(f"{where}: 'bytes' and 'pages' must be whole numbers") from None
        sources = tuple(r["source"].split())
        if not sources:
            raise InputError(f"{where}: no 'source' URL; give where the file can be downloaded")
        entries.append(CorpusEntry(r["file"], sha, size, pages, r["licence"], sources, r["attribution"].strip()))
    return CorpusList(path.stem, path, tuple(entries))


def identity(cl: CorpusList) -> dict:
    """What a run records about the list it was checked against."""
    return {
        "name": cl.name,
        "list_sha256": sha256_file(cl.path),
        "files": len(cl.entries),
        "pages": sum(e.pages or 0 for e in cl.entries),
        "bytes": sum(e.bytes for e in cl.entries),
    }


def verify_folder(cl: CorpusList, folder: Path) -> list[FileStatus]:
    """Check every listed file in `folder` (offline): ok, missing, or mismatch (size or sha256)."""
    folder = Path(folder)
    out = []
    for e in cl.entries:
        p = folder / e.file
        if not p.is_file():
            out.append(FileStatus(e.file, "missing", f"not in {folder}"))
        elif p.stat().st_size != e.bytes:
            out.append(FileStatus(e.file, "mismatch", f"{p.stat().st_size} bytes, the list says {e.bytes}"))
        else:
            got = sha256_file(p)
            out.append(
                FileStatus(e.file, "ok")
                if got == e.sha256
                else FileStatus(e.file, "mismatch", f"sha256 {got[:12]}…, the list says {e.sha256[:12]}…")
            )
    return out


def unlisted_files(cl: CorpusList, folder: Path, extensions=(".pdf", ".md", ".txt")) -> list[str]:
    """Files of the corpus folder that the list does not name (a run would ingest them too)."""
    listed = {e.file for e in cl.entries}
    return sorted(
        p.name
        for p in Path(folder).iterdir()
        if p.is_file() and p.suffix.lower() in extensions and p.name not in listed and p.name != "README.md"
    )


def _download(url: str, timeout: float = 60.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - URLs come from the shipped list
        return r.read()


def fetch(
    cl: CorpusList,
    folder: Path,
    download: Callable[[str], bytes] = _download,
    progress: Callable[[str], None] | None = None,
) -> list[FileStatus]:
    """Download every listed file not already present and intact; each is checked against its
    sha256 before it is put in place (atomically), so a failed or wrong download leaves nothing
    behind. Returns one status per file: ok (present or fetched), mismatch or failed."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    present = {s.file: s for s in verify_folder(cl, folder)}
    out = []
    for e in cl.entries:
        if present[e.file].status == "ok":
            out.append(FileStatus(e.file, "ok", "already present"))
            continue
        if progress:
            progress(e.file)
        try:
            data = b"".join(download(u) for u in e.sources)
        except Exception as exc:  # network, HTTP or URL errors: reported per file, the rest go on
            out.append(FileStatus(e.file, "failed", f"{type(exc).__name__}: {exc}"[:200]))
            continue
        got = hashlib.sha256(data).hexdigest()
        if got != e.sha256:
            parts = f" (joined from {len(e.sources)} parts)" if len(e.sources) > 1 else ""
            out.append(
                FileStatus(
                    e.file,
                    "mismatch",
                    f"downloaded {len(data)} bytes{parts} with sha256 {got[:12]}…, "
                    f"the list says {e.sha256[:12]}…; not written",
                )
            )
            continue
        tmp = folder / f".{e.file}.partial"
        tmp.write_bytes(data)
        os.replace(tmp, folder / e.file)
        out.append(FileStatus(e.file, "ok", "fetched"))
    return out


def attribution_markdown(cl: CorpusList) -> str:
    """The attribution list for outputs quoting the corpus's documents (Markdown)."""
    lines = [
        f"# Sources of the quoted documents (corpus list `{cl.name}`)",
        "",
        "Excerpts of these documents (questions, passages, answers) are quoted under their licences; "
        "each file's public source and sha256 are in the corpus list.",
        "",
    ]
    lines += [f"- `{e.file}` — {e.attribution}" for e in cl.entries]
    return "\n".join(lines) + "\n"
