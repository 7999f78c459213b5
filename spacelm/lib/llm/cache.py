"""A persistent cache of model calls in SQLite.

The key is a hash of everything that determines an answer: backend, model identity (name and
weights sha256), messages, sampling parameters, constraint and seed. A warm re-run therefore
makes no model call and returns byte-identical results; an interrupted run resumes where it
stopped because every finished call is already stored. SQLite in WAL mode with a busy timeout
lets several processes read and write the same file safely.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _retry_locked(fn, attempts: int = 50):
    """Run `fn`, retrying while another process holds the database lock. SQLite's busy timeout
    does not cover every case (switching to WAL mode when two processes open a new file)."""
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or i == attempts - 1:
                raise
            time.sleep(min(1.0, 0.02 * (i + 1)))


def _connect(path: Path) -> sqlite3.Connection:
    def open_() -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    return _retry_locked(open_)


log = logging.getLogger("spacelm")


def is_damage(e: BaseException) -> bool:
    """Whether a SQLite error means the file itself is damaged (not locked, not read-only)."""
    if not isinstance(e, sqlite3.DatabaseError):
        return False
    text = str(e).lower()
    return type(e) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text


def move_aside(path: Path, error: BaseException) -> Path:
    """Rename a damaged database (with its -wal/-shm files) to `<name>.damaged-<time>` beside
    it and say so; the caller starts an empty one, so the run goes on (its calls are made
    again) and the damaged file stays for inspection."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, aside)
    for extra in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + extra)
        if side.exists():
            os.replace(side, aside.with_name(aside.name + extra))
    log.warning(
        "the cache %s is damaged (%s): moved it aside to %s and started an empty one; "
        "the calls it held will be made again",
        path,
        error,
        aside.name,
    )
    return aside


def open_checked(path: Path, create_sql: str) -> sqlite3.Connection:
    """Open (creating) a cache database and read its schema; a damaged file is moved aside
    and replaced by an empty one."""

    def attempt() -> sqlite3.Connection:
        conn = _connect(path)
        try:
            _retry_locked(lambda: conn.execute(create_sql))
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    try:
        return attempt()
    except sqlite3.DatabaseError as e:
        if not is_damage(e) or not Path(path).exists():
            raise
        move_aside(path, e)
        return attempt()


def request_key(payload: dict) -> str:
    """Stable hash of a JSON-able request description."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    by_stage: dict = field(default_factory=dict)

    def count(self, stage: str | None, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        if stage:
            s = self.by_stage.setdefault(stage, {"hits": 0, "misses": 0})
            s["hits" if hit else "misses"] += 1


_CALLS_SQL = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"


class CallCache:
    """Key → JSON value store for model calls (thread- and process-safe). A damaged file,
    found when opening or while reading or writing, is moved aside and an empty cache
    takes its place (`moved_aside` lists where the damaged files went)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._generation = 0  # bumped when the file is replaced: each thread reconnects
        self._recover_lock = threading.Lock()
        self.moved_aside: list[Path] = []
        self.stats = CacheStats()
        before = set(self.path.parent.glob(self.path.name + ".damaged-*"))
        self._local.conn, self._local.generation = open_checked(self.path, _CALLS_SQL), 0
        self.moved_aside += sorted(set(self.path.parent.glob(self.path.name + ".damaged-*")) - before)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.generation != self._generation:
            conn = self._local.conn = _connect(self.path)
            self._local.generation = self._generation
        return conn

    def _guarded(self, fn):
        """Run `fn` on this thread's connection; if the file turns out damaged, move it aside
        once (whichever thread sees it first), start an empty cache and run `fn` again."""
        gen = self._generation
        try:
            return fn(self._conn())
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise
            with self._recover_lock:
                if gen == self._generation:  # no other thread has replaced the file yet
                    self.moved_aside.append(move_aside(self.path, e))
                    open_checked(self.path, _CALLS_SQL).close()
                    self._generation += 1
            return fn(self._conn())

    def get(self, key: str) -> Any | None:
        """The stored value, or None. A damaged row (its value not a JSON object) is a miss with a
        warning: the call is made again and its answer replaces the row."""
        row = self._guarded(lambda c: c.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone())
        if not row:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError) as e:
            return self.damaged_row(key, f"its value is not JSON ({e})")
        if not isinstance(value, dict):
            return self.damaged_row(key, f"its value is a JSON {type(value).__name__}, not an object")
        return value

    def damaged_row(self, key: str, why: str) -> None:
        """Say that one cached call is unusable (the caller treats it as a miss) and return None."""
        log.warning(
            "the cache %s holds a damaged entry %s… (%s): the call is made again and replaces it",
            self.path,
            key[:12],
            why,
        )
        return None

    def put(self, key: str, value: Any, model: str = "") -> None:
        row = (key, model, json.dumps(value, ensure_ascii=False), time.time())
        self._guarded(
            lambda c: _retry_locked(
                lambda: c.execute("INSERT OR REPLACE INTO calls (key, model, value, created) VALUES (?, ?, ?, ?)", row)
            )
        )

    def summary(self) -> dict:
        def read(c):
            (n,) = c.execute("SELECT COUNT(*) FROM calls").fetchone()
            return n, dict(c.execute("SELECT model, COUNT(*) FROM calls GROUP BY model").fetchall())

        n, per_model = self._guarded(read)
        return {
            "path": str(self.path),
            "entries": n,
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "per_model": per_model,
        }

    def clear(self, model: str | None = None) -> int:
        def delete(c):
            cur = c.execute("DELETE FROM calls WHERE model = ?", (model,)) if model else c.execute("DELETE FROM calls")
            c.execute("VACUUM")
            return cur.rowcount

        return self._guarded(delete)


class EmbeddingCache:
    """(model key, text sha256) → float32 vector, in SQLite; shared across runs and processes."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = open_checked(
            self.path,
            "CREATE TABLE IF NOT EXISTS emb (model TEXT, text_sha TEXT, dim INTEGER, "
            "vec BLOB, PRIMARY KEY (model, text_sha))",
        )

    def get_many(self, model: str, shas: list) -> dict:
        """{sha: vector} of the texts cached for `model`. A damaged row (not a float32 vector of
        its recorded size, of a size other than the model's other rows, or not finite) is left
        out with a warning: the text is encoded again and its row replaced."""
        import numpy as np

        found, bad = {}, {}
        uniq = list(dict.fromkeys(shas))
        for i in range(0, len(uniq), 500):
            part = uniq[i : i + 500]
            q = f"SELECT text_sha, dim, vec FROM emb WHERE model = ? AND text_sha IN ({','.join('?' * len(part))})"
            for sha, dim, blob in self._conn.execute(q, [model, *part]):
                if not isinstance(blob, bytes) or not isinstance(dim, int) or dim < 1 or len(blob) != 4 * dim:
                    size = len(blob) if isinstance(blob, (bytes, str)) else type(blob).__name__
                    bad[sha] = f"{size} bytes for {dim!r} dimensions"
                    continue
                vec = np.frombuffer(blob, dtype=np.float32)
                if not np.isfinite(vec).all():
                    bad[sha] = "values that are not finite"
                    continue
                found[sha] = vec
        if found:  # every vector of one model has the model's size: the rare odd one is damaged
            usual = Counter(v.shape[0] for v in found.values()).most_common(1)[0][0]
            for sha in [s for s, v in found.items() if v.shape[0] != usual]:
                bad[sha] = f"{found.pop(sha).shape[0]} dimensions where the model's others have {usual}"
        if bad:
            sha, why = next(iter(bad.items()))
            log.warning(
                "the embedding cache %s holds %d damaged entr%s (e.g. %s…: %s): those texts are encoded again "
                "and their entries replaced",
                self.path,
                len(bad),
                "y" if len(bad) == 1 else "ies",
                sha[:12],
                why,
            )
        return found

    def summary(self) -> dict:
        (n,) = self._conn.execute("SELECT COUNT(*) FROM emb").fetchone()
        per_model = dict(self._conn.execute("SELECT model, COUNT(*) FROM emb GROUP BY model").fetchall())
        return {
            "path": str(self.path),
            "entries": n,
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "per_model": per_model,
        }

    def clear(self) -> int:
        """Remove every stored vector; the number removed."""
        cur = _retry_locked(lambda: self._conn.execute("DELETE FROM emb"))
        self._conn.execute("VACUUM")
        return cur.rowcount

    def close(self) -> None:
        self._conn.close()

    def put_many(self, model: str, items: list) -> None:
        rows = [(model, sha, int(v.shape[0]), v.astype("float32").tobytes()) for sha, v in items]

        def write() -> None:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?)", rows)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

        _retry_locked(write)
