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
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional


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


def request_key(payload: dict) -> str:
    """Stable hash of a JSON-able request description."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    by_stage: dict = field(default_factory=dict)

    def count(self, stage: Optional[str], hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        if stage:
            s = self.by_stage.setdefault(stage, {"hits": 0, "misses": 0})
            s["hits" if hit else "misses"] += 1


class CallCache:
    """Key → JSON value store for model calls (thread- and process-safe)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.stats = CacheStats()
        _retry_locked(lambda: self._conn().execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"))

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path)
        return conn

    def get(self, key: str) -> Optional[Any]:
        row = self._conn().execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: Any, model: str = "") -> None:
        row = (key, model, json.dumps(value, ensure_ascii=False), time.time())
        _retry_locked(lambda: self._conn().execute(
            "INSERT OR REPLACE INTO calls (key, model, value, created) VALUES (?, ?, ?, ?)", row))

    def summary(self) -> dict:
        c = self._conn()
        n, = c.execute("SELECT COUNT(*) FROM calls").fetchone()
        per_model = dict(c.execute("SELECT model, COUNT(*) FROM calls GROUP BY model").fetchall())
        return {"path": str(self.path), "entries": n, "bytes": self.path.stat().st_size if self.path.exists() else 0,
                "per_model": per_model}

    def clear(self, model: Optional[str] = None) -> int:
        c = self._conn()
        cur = c.execute("DELETE FROM calls WHERE model = ?", (model,)) if model else c.execute("DELETE FROM calls")
        c.execute("VACUUM")
        return cur.rowcount


class EmbeddingCache:
    """(model key, text sha256) → float32 vector, in SQLite; shared across runs and processes."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = _connect(self.path)
        _retry_locked(lambda: self._conn.execute(
            "CREATE TABLE IF NOT EXISTS emb (model TEXT, text_sha TEXT, dim INTEGER, vec BLOB, PRIMARY KEY (model, text_sha))"))

    def get_many(self, model: str, shas: list) -> dict:
        import numpy as np

        out = {}
        uniq = list(dict.fromkeys(shas))
        for i in range(0, len(uniq), 500):
            part = uniq[i:i + 500]
            q = f"SELECT text_sha, vec FROM emb WHERE model = ? AND text_sha IN ({','.join('?' * len(part))})"
            for sha, blob in self._conn.execute(q, [model, *part]):
                out[sha] = np.frombuffer(blob, dtype=np.float32)
        return out

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
