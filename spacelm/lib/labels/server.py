"""Grading a batch of an export in a browser: `spacelm label serve --from DIR --batch NAME`.

People are assessors too: the page shows the items of one blind batch of relevance pairs
(`DIR/batches/<name>.jsonl`) one at a time, question and passage only; keys 0-3 grade an item.
Each grade is saved when it is given, by rewriting `DIR/labels/<name>.labels.jsonl` atomically
(the file `spacelm label import` reads, one `{"key", "grade"}` line per graded item), so the file
is always whole. Started again, the page opens on the first item not graded yet.

The server answers only requests addressed to it by its loopback name (the Host header), and
takes a grade only as a JSON POST, which another web site's page cannot send to it without a
CORS preflight this server never grants.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..io import InputError, atomic_open, read_jsonl
from .batches import read_answers
from .store import RELEVANCE

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "label.html"
DATA_MARK = "__SPACELM_LABEL_DATA__"
HOST = "127.0.0.1"
GRADE_HELP = (
    "3 = dedicated to the question, states the exact answer; 2 = some answer, partial or unclear or among "
    "other material; 1 = on the topic, does not answer; 0 = unrelated. Grade only what the passage says "
    "(brief.md beside the batches has the whole brief)."
)


class BatchLabels:
    """One batch of an export folder and the grades given so far, saved on every change."""

    def __init__(self, folder: Path, batch: str):
        self.folder = Path(folder)
        meta = self.folder / "export.json"
        if not meta.is_file():
            raise InputError(f"{meta} not found: --from must be a folder written by `spacelm label export`")
        kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
        if kind != RELEVANCE:
            raise InputError(f"{meta}: the page grades relevance pairs; this export holds {kind} items")
        src = self.folder / "batches" / f"{batch}.jsonl"
        if not src.is_file():
            have = sorted(p.stem for p in (self.folder / "batches").glob("*.jsonl"))
            raise InputError(f"{src} not found: --batch is one of {', '.join(have) or 'none'}")
        self.items = [
            {"pair_id": r["key"], "question": r.get("question", ""), "passage": r.get("passage", "")}
            for r in read_jsonl(src)
        ]
        self.order = [it["pair_id"] for it in self.items]
        self.path = self.folder / "labels" / f"{batch}.labels.jsonl"
        self.grades: dict = self._resume()
        self._lock = threading.Lock()

    def _resume(self) -> dict:
        """The grades already in the labels file (a whole batch is checked as import checks it; a
        partial one line by line)."""
        if not self.path.is_file():
            return {}
        out = {}
        for i, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    raise InputError(f"{self.path}:{i}: not a JSON object; fix or remove the line") from None
                out[str(row.get("key"))] = row.get("grade")
        if set(out) == set(self.order):
            return read_answers(self.path, RELEVANCE, set(self.order))
        return {k: v for k, v in out.items() if k in set(self.order) and v in (0, 1, 2, 3)}

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def graded(self) -> int:
        return len(self.grades)

    def first_ungraded(self) -> int:
        """The index of the first item with no grade (the total when every item has one)."""
        return next((i for i, p in enumerate(self.order) if p not in self.grades), self.total)

    def set_grade(self, key: str, grade) -> None:
        """Record `grade` (0-3, or None to take a grade back) for `key` and save the file."""
        if key not in set(self.order):
            raise InputError(f"unknown key {key!r}: not in this batch")
        if grade is not None and (isinstance(grade, bool) or grade not in (0, 1, 2, 3)):
            raise InputError(f"grade {grade!r} for {key} is not one of 0, 1, 2, 3")
        with self._lock:
            if grade is None:
                self.grades.pop(key, None)
            else:
                self.grades[key] = int(grade)
            self.save()

    def save(self) -> None:
        """Write the labels file (graded items in batch order) atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(self.path) as f:
            for key in self.order:
                if key in self.grades:
                    f.write(json.dumps({"key": key, "grade": self.grades[key]}) + "\n")

    def state(self) -> dict:
        return {
            "items": self.items,
            "grades": self.grades,
            "start": self.first_ungraded(),
            "help": GRADE_HELP,
            "file": str(Path("labels") / self.path.name),
        }


def page(store: BatchLabels) -> str:
    """The labelling page with the sample and the grades so far embedded (escaped JSON)."""
    from ..report.browse import embed_json

    return TEMPLATE.read_text(encoding="utf-8").replace(DATA_MARK, embed_json(store.state()), 1)


def make_server(store: BatchLabels, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:`port` (0: a free port) for `store`; call serve_forever() on it."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "spacelm-label"

        def log_message(self, format, *args):  # noqa: A002 - quiet: the terminal shows progress instead
            pass

        def _host_ok(self) -> bool:
            port = self.server.server_address[1]
            return self.headers.get("Host", "") in {f"{HOST}:{port}", f"localhost:{port}"}

        def _send(self, status: int, body: str, ctype: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, obj) -> None:
            self._send(status, json.dumps(obj), "application/json")

        def do_GET(self):  # noqa: N802 - the http.server name
            if not self._host_ok():
                return self._send(HTTPStatus.FORBIDDEN, "wrong host", "text/plain")
            if self.path.split("?")[0] in ("/", "/index.html"):
                return self._send(HTTPStatus.OK, page(store), "text/html; charset=utf-8")
            if self.path == "/state":
                return self._json(HTTPStatus.OK, store.state())
            self._send(HTTPStatus.NOT_FOUND, "not found", "text/plain")

        def do_POST(self):  # noqa: N802
            if not self._host_ok():
                return self._send(HTTPStatus.FORBIDDEN, "wrong host", "text/plain")
            if self.path != "/grade":
                return self._send(HTTPStatus.NOT_FOUND, "not found", "text/plain")
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
                return self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON"})
            try:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(min(n, 65536)) or b"{}")
                store.set_grade(str(body.get("pair_id")), body.get("grade"))
            except (ValueError, InputError, AttributeError) as e:
                return self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
            except OSError as e:
                return self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"could not save: {e}"})
            if getattr(self.server, "on_grade", None):
                self.server.on_grade(store)
            self._json(HTTPStatus.OK, {"graded": store.graded, "total": store.total})

    return ThreadingHTTPServer((HOST, port), Handler)
