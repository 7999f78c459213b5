"""Small file helpers shared by every stage: atomic writes, strict JSONL reading, hashing."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PathLike = str | Path


class InputError(ValueError):
    """Bad user input (a file we cannot use); the message names the file and what to fix."""


# byte-order marks and the encodings they announce; UTF-32's first, as its LE mark starts like UTF-16's
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    """(encoding, BOM length) when `data` starts with a byte-order mark, else None."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc, len(bom)
    return None


def decode_text(data: bytes, where: PathLike, fallback: str | None = None) -> str:
    """Text from bytes: by its byte-order mark (UTF-8, UTF-16, UTF-32, as editors and spreadsheets
    write them), else UTF-8, else `fallback` (e.g. "cp1252") when given. An InputError naming
    `where` says how to re-save a file it cannot read."""
    found = bom_encoding(data)
    if found:
        enc, n = found
        try:
            return data[n:].decode(enc)
        except UnicodeDecodeError as e:
            raise InputError(
                f"{where}: starts with a {enc.upper()} byte-order mark but byte {e.start + n} is not {enc.upper()}; "
                "save the file as UTF-8"
            ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if looks_utf16(data):
            raise InputError(
                f"{where}: looks like UTF-16 text without a byte-order mark; save the file as UTF-8"
            ) from None
        if fallback:
            try:
                return data.decode(fallback)
            except UnicodeDecodeError:
                pass
        raise InputError(
            f"{where}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}){_guess(data)}; "
            "save the file as UTF-8"
        ) from None


def _guess(data: bytes) -> str:
    """The likely encoding of bytes that are not UTF-8, as words for an error message: Windows-1252
    (a superset of Latin-1 in its printable range) when every byte decodes and no C1 control is
    left, the common case of a file saved by an older Windows or macOS editor."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return ""
    if any(0x80 <= ord(c) <= 0x9F for c in text):
        return ""
    return "; it reads as Windows-1252 (Latin-1) text, which `iconv -f cp1252 -t utf-8` converts"


def looks_utf16(data: bytes) -> bool:
    """Whether bytes without a BOM look like UTF-16 text: most of every other byte is NUL."""
    head = data[:1024]
    if len(head) < 4:
        return False
    even, odd = head[0::2], head[1::2]
    return max(even.count(0) / len(even), odd.count(0) / len(odd)) > 0.6


def current_umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux), else
    by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


@contextmanager
def atomic_open(path: PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[Any]:
    """Open a temporary file beside `path`; rename it over `path` only if the block succeeds,
    so an interrupted run never leaves a half-written output behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; an output gets the mode any new file would (0666 less the umask)
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(
            fd, mode, encoding=None if "b" in mode else encoding, newline=None if "b" in mode else "\n"
        ) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename is None:  # a failed write names no file: name the output
            raise OSError(e.errno, e.strerror or str(e), str(path)) from e
        raise


def describe_os_error(e: OSError) -> str:
    """One line for a file-system error: the file it concerns, what went wrong and what to
    do, so the command line never answers a read-only folder or a full disk with a traceback."""
    name = e.filename if e.filename is not None else "a file"
    if e.filename2 is not None:
        name = f"{name} -> {e.filename2}"
    what = e.strerror or str(e)
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        fix = (
            "make it writable, or point the run elsewhere (--set paths.results_dir=DIR, "
            "paths.cache_dir, paths.processed_dir)"
        )
    elif e.errno in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", -1)):
        fix = (
            "free disk space (or raise the file-size limit) and run the same command again: "
            "finished outputs and model calls are kept, it resumes"
        )
    elif e.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        fix = (
            "a file stands where a folder is needed, or a folder where a file is: move it away, or "
            "set the path in the config (paths.*) to a folder"
        )
    elif e.errno == errno.ENOENT:
        fix = "check the path (relative paths in a config resolve against the config's project)"
    else:
        fix = "check the path and its permissions"
    return f"{name}: {what}; {fix}"


def write_text(path: PathLike, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def write_json(path: PathLike, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n")


def write_jsonl(path: PathLike, rows: Iterable[dict]) -> int:
    n = 0
    with atomic_open(path) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
            n += 1
    return n


def read_jsonl(path: PathLike) -> list[dict]:
    """Read a JSONL file; a bad line raises :class:`InputError` naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(
                    f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno}); each line must be one JSON object"
                ) from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            rows.append(obj)
    return rows


def write_dataframe(df, path: PathLike, index: bool = False) -> None:
    """Write a pandas DataFrame as CSV or Markdown (by extension), atomically."""
    path = Path(path)
    if path.suffix == ".md":
        from .tables import markdown_table

        write_text(path, markdown_table(df, index=index) + "\n")
    elif path.suffix == ".tex":
        write_text(path, df.to_latex(index=index, escape=True) + "\n")
    else:
        with atomic_open(path) as f:
            df.to_csv(f, index=index, lineterminator="\n")


def sha256_file(path: PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def stat_key(path: PathLike, st: os.stat_result) -> str:
    """What must be unchanged for a stored hash of `path` to stand: the path, its inode, size,
    mtime and ctime (in ns). Restoring a file's mtime after editing it still changes its ctime,
    which no user call can set back, so edited bytes are always hashed again."""
    return f"{path}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


_REMEMBERED: dict[str, str] = {}


def sha256_file_remembered(path: PathLike) -> str:
    """sha256 of a file, remembered in this process while `stat_key` is unchanged: fingerprints
    and `status` hash the same corpus, run files and modules for every stage they look at."""
    key = stat_key(path, os.stat(path))
    if key not in _REMEMBERED:
        _REMEMBERED[key] = sha256_file(path)
    return _REMEMBERED[key]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
