"""`spacelm label serve`: one batch of an export graded in a browser (people are assessors
too): the save/resume logic on its own, the server's guards, and the page in headless Chromium (a
key press saves a grade into labels/<batch>.labels.jsonl, the file `spacelm label import` reads)."""

from __future__ import annotations

import http.client
import json
import threading
from pathlib import Path

import pytest

from spacelm.lib.io import InputError
from spacelm.lib.labels.batches import read_answers
from spacelm.lib.labels.server import BatchLabels, make_server
from tests.browser import Browser, needs_chromium

ITEMS = [
    {"key": f"p{i}", "question": f"Question {i}?", "passage": f"Passage {i} <script>window.__pwned = {i}</script>"}
    for i in range(3)
]


@pytest.fixture
def labels(tmp_path) -> Path:
    """An export folder with one batch of three relevance items."""
    folder = tmp_path / "export"
    (folder / "batches").mkdir(parents=True)
    (folder / "export.json").write_text(json.dumps({"kind": "relevance"}))
    (folder / "batches" / "batch-01.jsonl").write_text("".join(json.dumps(it) + "\n" for it in ITEMS))
    return folder


def _saved(folder: Path) -> str:
    return (folder / "labels" / "batch-01.labels.jsonl").read_text(encoding="utf-8")


def _line(key, g) -> str:
    return json.dumps({"key": key, "grade": g}) + "\n"


def test_batch_saves_each_grade_and_resumes(labels):
    store = BatchLabels(labels, "batch-01")
    assert (store.total, store.graded, store.first_ungraded()) == (3, 0, 0)
    store.set_grade("p1", 2)
    assert _saved(labels) == _line("p1", 2)
    store.set_grade("p0", 0)
    assert _saved(labels) == _line("p0", 0) + _line("p1", 2)  # batch order
    again = BatchLabels(labels, "batch-01")  # a restart: grades kept, the first item without one next
    assert again.grades == {"p0": 0, "p1": 2} and again.first_ungraded() == 2
    again.set_grade("p1", 3)  # a grade changed
    again.set_grade("p0", None)  # a grade taken back
    assert _saved(labels) == _line("p1", 3) and again.first_ungraded() == 0
    with pytest.raises(InputError, match="not one of 0, 1, 2, 3"):
        again.set_grade("p2", 4)
    with pytest.raises(InputError, match="unknown key"):
        again.set_grade("nope", 1)
    again.set_grade("p0", 1)
    again.set_grade("p2", 0)
    # a whole batch is what import reads
    assert read_answers(labels / "labels" / "batch-01.labels.jsonl", "relevance", {"p0", "p1", "p2"}) == {
        "p0": 1,
        "p1": 3,
        "p2": 0,
    }


def test_batch_page_needs_an_export_of_pairs_and_a_batch(labels, tmp_path):
    with pytest.raises(InputError, match="spacelm label export"):
        BatchLabels(tmp_path / "empty", "batch-01")
    with pytest.raises(InputError, match="one of batch-01"):
        BatchLabels(labels, "batch-09")
    (labels / "export.json").write_text(json.dumps({"kind": "answers"}))
    with pytest.raises(InputError, match="grades relevance pairs"):
        BatchLabels(labels, "batch-01")


@pytest.fixture
def served(labels):
    store = BatchLabels(labels, "batch-01")
    server = make_server(store)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, store
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _request(server, method, path, body=None, headers=None):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    hdrs = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    conn.request(method, path, body=body, headers=hdrs)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def test_server_binds_loopback_and_guards_its_requests(served, labels):
    server, store = served
    assert server.server_address[0] == "127.0.0.1"
    status, page = _request(server, "GET", "/")
    assert status == 200 and b"<script>window.__pwned" not in page
    assert _request(server, "GET", "/", headers={"Host": "evil.example"})[0] == 403
    grade = json.dumps({"pair_id": "p0", "grade": 1})
    assert _request(server, "POST", "/grade", grade, {"Content-Type": "text/plain"})[0] == 415
    assert _request(server, "POST", "/grade", grade, {"Content-Type": "application/json", "Host": "x:1"})[0] == 403
    bad = json.dumps({"pair_id": "p0", "grade": 7})
    assert _request(server, "POST", "/grade", bad, {"Content-Type": "application/json"})[0] == 400
    status, reply = _request(server, "POST", "/grade", grade, {"Content-Type": "application/json"})
    assert status == 200 and json.loads(reply) == {"graded": 1, "total": 3}
    assert _saved(labels) == _line("p0", 1)


@needs_chromium
def test_page_grades_with_keys_saves_each_and_resumes(labels, tmp_path):
    store = BatchLabels(labels, "batch-01")
    server = make_server(store)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with Browser(width=1000, height=700) as b:
            b.open(url)
            assert b.js("document.body.dataset.at") == "p0"
            assert "0 of 3 graded" in b.js("document.getElementById('progress').textContent")
            assert "<script>window.__pwned = 0</script>" in b.js("document.querySelector('.passage').textContent")
            b.press("2")
            b.wait_for("document.body.dataset.at === 'p1'")
            assert _saved(labels) == _line("p0", 2)  # saved when given
            b.press("0")
            b.wait_for("document.body.dataset.at === 'p2'")
            assert _saved(labels) == _line("p0", 2) + _line("p1", 0)
            assert "2 of 3 graded" in b.js("document.getElementById('progress').textContent")
            b.screenshot(tmp_path / "label.png")
            assert b.js("window.__pwned === undefined") is True
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    # a restart opens on the first pair not graded yet
    server = make_server(BatchLabels(labels, "batch-01"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Browser(width=1000, height=700) as b:
            b.open(f"http://127.0.0.1:{server.server_address[1]}/")
            assert b.js("document.body.dataset.at") == "p2"
            b.press("3")
            b.wait_for("document.body.dataset.at === 'done'")
            assert "3 of 3 graded" in b.js("document.getElementById('progress').textContent")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert read_answers(labels / "labels" / "batch-01.labels.jsonl", "relevance", {"p0", "p1", "p2"}) == {
        "p0": 2,
        "p1": 0,
        "p2": 3,
    }
    assert (tmp_path / "label.png").stat().st_size > 5_000
