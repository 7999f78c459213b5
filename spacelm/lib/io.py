"""Small file helpers shared by every stage: atomic writes, strict JSONL reading, hashing."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

PathLike = Union[str, Path]


class InputError(ValueError):
    """Bad user input (a file we cannot use); the message names the file and what to fix."""


@contextmanager
def atomic_open(path: PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[Any]:
    """Open a temporary file beside `path`; rename it over `path` only if the block succeeds,
    so an interrupted run never leaves a half-written output behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding, newline=None if "b" in mode else "\n") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


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
                raise InputError(f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno}); "
                                 "each line must be one JSON object") from None
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


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
