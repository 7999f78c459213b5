"""`spacelm label --serve`: the save/resume logic on its own, the server's guards, and the page in
headless Chromium (a key press saves a grade into human_labels.csv; a restart resumes)."""

from __future__ import annotations

import http.client
import json
import threading
from pathlib import Path

import pytest

from spacelm.lib.io import InputError
from spacelm.lib.judge.label_server import LabelStore, make_server
from spacelm.lib.judge.labelling import read_labels, write_labelling_files
from tests.browser import Browser, needs_chromium

ITEMS = [
    {
        "pair_id": f"q{i}::c{i}",
        "qid": f"q{i}",
        "chunk_id": f"c{i}",
        "question": f"Question {i}?",
        "passage": f"Passage {i} <script>window.__pwned = {i}</script>",
        "stratum": "bm25|1",
        "weight": 1.0,
    }
    for i in range(3)
]


@pytest.fixture
def labels(tmp_path) -> Path:
    folder = tmp_path / "labels"
    write_labelling_files(folder, ITEMS)
    return folder


def _csv(folder: Path) -> str:
    return (folder / "human_labels.csv").read_text(encoding="utf-8")


def test_store_saves_each_grade_and_resumes(labels):
    store = LabelStore(labels)
    assert (store.total, store.graded, store.first_ungraded()) == (3, 0, 0)
    store.set_grade("q1::c1", 2)
    assert _csv(labels) == "pair_id,grade\nq1::c1,2\n"
    store.set_grade("q0::c0", 0)
    assert _csv(labels) == "pair_id,grade\nq0::c0,0\nq1::c1,2\n"  # sample order
    # the file is what `spacelm label --check` and the grade stage read
    assert read_labels(labels / "human_labels.csv", {it["pair_id"] for it in ITEMS}) == {"q0::c0": 0, "q1::c1": 2}
    again = LabelStore(labels)  # a restart: grades kept, the first pair without one next
    assert again.grades == {"q0::c0": 0, "q1::c1": 2} and again.first_ungraded() == 2
    again.set_grade("q1::c1", 3)  # a grade changed
    again.set_grade("q0::c0", None)  # a grade taken back
    assert _csv(labels) == "pair_id,grade\nq1::c1,3\n" and again.first_ungraded() == 0
    assert not list(labels.glob(".human_labels.csv.*"))  # no temporary file left behind
    with pytest.raises(InputError, match="not one of 0, 1, 2, 3"):
        again.set_grade("q2::c2", 4)
    with pytest.raises(InputError, match="unknown pair id"):
        again.set_grade("nope", 1)


def test_store_resumes_from_a_hand_placed_jsonl_and_needs_a_sample(labels, tmp_path):
    (labels / "human_labels.jsonl").write_text('{"pair_id": "q2::c2", "grade": 1}\n')
    store = LabelStore(labels)
    assert store.grades == {"q2::c2": 1}
    store.set_grade("q0::c0", 3)
    assert _csv(labels) == "pair_id,grade\nq0::c0,3\nq2::c2,1\n"
    with pytest.raises(InputError, match="spacelm label --n N"):
        LabelStore(tmp_path / "empty")


@pytest.fixture
def served(labels):
    store = LabelStore(labels)
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
    grade = json.dumps({"pair_id": "q0::c0", "grade": 1})
    assert _request(server, "POST", "/grade", grade, {"Content-Type": "text/plain"})[0] == 415
    assert _request(server, "POST", "/grade", grade, {"Content-Type": "application/json", "Host": "x:1"})[0] == 403
    bad = json.dumps({"pair_id": "q0::c0", "grade": 7})
    assert _request(server, "POST", "/grade", bad, {"Content-Type": "application/json"})[0] == 400
    status, reply = _request(server, "POST", "/grade", grade, {"Content-Type": "application/json"})
    assert status == 200 and json.loads(reply) == {"graded": 1, "total": 3}
    assert _csv(labels) == "pair_id,grade\nq0::c0,1\n"


@needs_chromium
def test_page_grades_with_keys_saves_each_and_resumes(labels, tmp_path):
    store = LabelStore(labels)
    server = make_server(store)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with Browser(width=1000, height=700) as b:
            b.open(url)
            assert b.js("document.body.dataset.at") == "q0::c0"
            assert "0 of 3 graded" in b.js("document.getElementById('progress').textContent")
            assert "<script>window.__pwned = 0</script>" in b.js("document.querySelector('.passage').textContent")
            b.press("2")
            b.wait_for("document.body.dataset.at === 'q1::c1'")
            assert _csv(labels) == "pair_id,grade\nq0::c0,2\n"  # saved when given
            b.press("0")
            b.wait_for("document.body.dataset.at === 'q2::c2'")
            assert _csv(labels) == "pair_id,grade\nq0::c0,2\nq1::c1,0\n"
            assert "2 of 3 graded" in b.js("document.getElementById('progress').textContent")
            b.screenshot(tmp_path / "label.png")
            assert b.js("window.__pwned === undefined") is True
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    # a restart opens on the first pair not graded yet
    server = make_server(LabelStore(labels))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Browser(width=1000, height=700) as b:
            b.open(f"http://127.0.0.1:{server.server_address[1]}/")
            assert b.js("document.body.dataset.at") == "q2::c2"
            b.press("3")
            b.wait_for("document.body.dataset.at === 'done'")
            assert "3 of 3 graded" in b.js("document.getElementById('progress').textContent")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert read_labels(labels / "human_labels.csv", {it["pair_id"] for it in ITEMS}) == {
        "q0::c0": 2,
        "q1::c1": 0,
        "q2::c2": 3,
    }
    assert (tmp_path / "label.png").stat().st_size > 5_000


def test_label_takes_a_lock_on_the_labels_folder(tiny_config_file, capsys):
    """issue 43: two `spacelm label` processes could interleave their writes to labels/."""
    from spacelm.cli import main
    from spacelm.stages.lock import folder_lock

    config, run_dir = tiny_config_file
    with folder_lock(run_dir / "labels"):  # another process drawing or serving
        assert main(["label", "--config", str(config), "--n", "3"]) == 4
        assert main(["label", "--config", str(config), "--serve"]) == 4
    err = capsys.readouterr().err
    assert f"{run_dir / 'labels'} is in use by pid" in err
