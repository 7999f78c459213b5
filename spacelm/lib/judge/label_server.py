"""Grading the labelling sample in a browser: `spacelm label --serve`.

A small HTTP server bound to 127.0.0.1 only shows the drawn sample (`to_label.jsonl`) one pair at a
time, question and passage (never the judge's grade); keys 0-3 grade it. Each grade is saved when
it is given, by rewriting `human_labels.csv` (pair_id,grade: the file `spacelm label --check` and
the grade stage read) atomically, so the file is always whole. Started again, the page opens on
the first pair not graded yet: the grades already in the file are kept and skipped.

The server answers only requests addressed to it by its loopback name (the Host header), and
takes a grade only as a JSON POST, which another web site's page cannot send to it without a
CORS preflight this server never grants.
"""

from __future__ import annotations

import csv
import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..io import InputError, atomic_open, read_jsonl
from ..names import HUMAN_LABELS, TO_LABEL
from .labelling import GRADE_HELP, LABEL_COLUMNS, labels_file, read_labels

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "label.html"
DATA_MARK = "__SPACELM_LABEL_DATA__"
HOST = "127.0.0.1"


class LabelStore:
    """The drawn sample of a labels folder and the grades given so far, saved on every change."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        sample = self.folder / TO_LABEL
        if not sample.is_file():
            raise InputError(f"{sample} not found: draw the sample first with `spacelm label --n N`")
        self.items = [
            {"pair_id": r["pair_id"], "question": r.get("question", ""), "passage": r.get("passage", "")}
            for r in read_jsonl(sample)
        ]
        self.order = [it["pair_id"] for it in self.items]
        self.path = self.folder / HUMAN_LABELS
        found = labels_file(self.folder)  # the CSV, else a JSONL file placed by hand: resumed from either
        self.grades: dict = read_labels(found, set(self.order)) if found is not None else {}
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def graded(self) -> int:
        return len(self.grades)

    def first_ungraded(self) -> int:
        """The index of the first pair with no grade (the total when every pair has one)."""
        return next((i for i, p in enumerate(self.order) if p not in self.grades), self.total)

    def set_grade(self, pair_id: str, grade) -> None:
        """Record `grade` (0-3, or None to take a grade back) for `pair_id` and save the file."""
        if pair_id not in self.grades and pair_id not in set(self.order):
            raise InputError(f"unknown pair id {pair_id!r}: not in {self.folder / TO_LABEL}")
        if grade is not None and (isinstance(grade, bool) or grade not in (0, 1, 2, 3)):
            raise InputError(f"grade {grade!r} for {pair_id} is not one of 0, 1, 2, 3")
        with self._lock:
            if grade is None:
                self.grades.pop(pair_id, None)
            else:
                self.grades[pair_id] = int(grade)
            self.save()

    def save(self) -> None:
        """Write human_labels.csv (pair_id,grade; graded pairs in sample order) atomically."""
        with atomic_open(self.path) as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(LABEL_COLUMNS)
            for pid in self.order:
                if pid in self.grades:
                    w.writerow([pid, self.grades[pid]])

    def state(self) -> dict:
        return {
            "items": self.items,
            "grades": self.grades,
            "start": self.first_ungraded(),
            "help": GRADE_HELP,
            "file": self.path.name,
        }


def page(store: LabelStore) -> str:
    """The labelling page with the sample and the grades so far embedded (escaped JSON)."""
    from ..report.browse import embed_json

    return TEMPLATE.read_text(encoding="utf-8").replace(DATA_MARK, embed_json(store.state()), 1)


def make_server(store: LabelStore, port: int = 0) -> ThreadingHTTPServer:
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
