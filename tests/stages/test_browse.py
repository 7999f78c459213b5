"""The drill-down (`spacelm browse`, `spacelm show`, browse.html): what it gathers from a run's
files, its filters, the missing-text path, and the page in a real browser (headless Chromium),
where corpus and model text holding script must show as text and run nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spacelm.cli import main
from spacelm.config import load_config
from spacelm.lib.report.browse import embed_json, render_page
from spacelm.stages.browse import collect, text_policy, write_browse
from tests.browser import Browser, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 2; document.title = 'pwned'\">"
CLOSE = "</script><script>window.__pwned = 3</script><!--"


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _answer(qid, setting, answerable=True, **kw):
    row = {
        "qid": qid,
        "setting": setting,
        "pipeline": "table2",
        "answerable": answerable,
        "answer": "an answer",
        "scores": {},
        "expected_scores": {},
        "refusal": False,
        "refused_phrase": False,
        "leakage": None,
        "citation_support": None,
        "claim_support": None,
        "passage_ids": ["c1"],
        "wrong_ids": [],
    }
    row.update(kw)
    return row


@pytest.fixture
def fake_run(tmp_path) -> Path:
    """A project in tmp_path with one run folder, results/fake: two systems' rankings, grades,
    answers, questions, and chunk text of which two passages carry script."""
    resolved = (ROOT / "results" / "quick" / "config.resolved.yaml").read_text(encoding="utf-8")
    run = tmp_path / "results" / "fake"
    run.mkdir(parents=True)
    (run / "config.resolved.yaml").write_text(resolved.replace("run_name: quick", "run_name: fake"), encoding="utf-8")
    (tmp_path / "configs").mkdir()
    _jsonl(
        tmp_path / "data" / "processed" / "chunks.jsonl",
        [
            {"chunk_id": "c1", "doc_id": "d", "text": "Conjunction screening runs daily."},
            {"chunk_id": "c2", "doc_id": "d", "text": f"before {SCRIPT} after"},
            {"chunk_id": "c3", "doc_id": "d", "text": f"image {IMG} here"},
            {"chunk_id": "c4", "doc_id": "d", "text": "Another passage."},
        ],
    )
    _jsonl(
        tmp_path / "data" / "synthetic" / "questions.jsonl",
        [
            {"qid": "q1", "task": "direct_qa", "question": f"How often? {IMG}", "source_chunk_id": "c1", "kept": True},
            {"qid": "q2", "task": "direct_qa", "question": "Who won in 1800?", "answerable": False, "kept": True},
        ],
    )
    _jsonl(
        run / "retrieval" / "rankings.jsonl",
        [
            {"qid": "q1", "system": "bm25", "ranking": [["c2", 3.0], ["c1", 2.0], ["c3", 1.0], ["c4", 0.5]]},
            {"qid": "q1", "system": "dense", "ranking": [["c1", 0.9], ["c4", 0.5]]},
            {"qid": "q2", "system": "bm25", "ranking": [["c4", 1.0]]},
            {"qid": "q2", "system": "dense", "ranking": [["c3", 0.4]]},
        ],
    )
    _jsonl(
        run / "grades.jsonl",
        [
            {"qid": "q1", "chunk_id": "c2", "purpose": ["table"], "prompt": "p", "grade": 0},
            {"qid": "q1", "chunk_id": "c1", "purpose": ["table"], "prompt": "p", "grade": 3},
            {"qid": "q1", "chunk_id": "c1", "purpose": ["swapped"], "prompt": "other", "grade": 1},
        ],
    )
    _jsonl(
        run / "answers.jsonl",
        [
            _answer("q1", "standard", scores={"faithfulness": 1, "relevance": 4}, answer=f"said {CLOSE}"),
            _answer("q1", "closed_book", refusal=True, answer="I cannot answer."),
            _answer("q2", "unanswerable", answerable=False, scores={"negative_rejection": 5}, answer="In 1800, X."),
        ],
    )
    return run


def _cfg(run: Path):
    return load_config(run / "config.resolved.yaml")


def test_collect_gathers_passages_grades_answers_and_flags(fake_run):
    data = collect(_cfg(fake_run), fake_run)
    by = {q["qid"]: q for q in data["questions"]}
    assert set(by) == {"q1", "q2"} and data["systems"] == ["bm25", "dense"] and data["text_available"]
    q1 = by["q1"]
    assert [p["chunk_id"] for p in q1["systems"]["bm25"]] == ["c2", "c1", "c3", "c4"]
    # the table's grades (not the order-swap row), the source flagged, ungraded as None
    assert [(p["grade"], p["is_source"]) for p in q1["systems"]["bm25"]] == [(0, False), (3, True), (None, False)] + [
        (None, False)
    ]
    assert q1["source_grade"] == 3 and q1["question"].startswith("How often?")
    assert q1["flags"] == {"refused": True, "answered_unanswerable": False, "grade0_top3": True, "low_scores": True}
    assert by["q2"]["flags"] == {
        "refused": False,
        "answered_unanswerable": True,
        "grade0_top3": False,
        "low_scores": False,
    }
    assert data["passages"]["c2"] == f"before {SCRIPT} after"
    assert [a["setting"] for a in q1["answers"]] == ["standard", "closed_book"]


def test_missing_chunk_text_names_the_model_free_rebuild(fake_run):
    (fake_run.parents[1] / "data" / "processed" / "chunks.jsonl").unlink()
    data = collect(_cfg(fake_run), fake_run)
    assert not data["text_available"] and data["passages"] == {}
    assert "spacelm chunk --config results/fake/config.resolved.yaml" in data["text_note"]
    assert "not available" in render_page(data) or "not available" in data["text_note"]


def test_text_policy_leaves_listed_corpora_with_unclear_licences_out(fake_run):
    cfg = _cfg(fake_run)
    assert text_policy(cfg)[0]  # no corpus list: the project's or team's own text
    listed = load_config(fake_run / "config.resolved.yaml", sets=["corpus.file_list=space_corpus"])
    ok, why = text_policy(listed)
    assert not ok and "space_corpus" in why
    data = collect(listed, fake_run)
    assert data["passages"] == {} and "--text yes" in data["text_note"]


def test_embedded_json_cannot_close_its_script_block():
    text = embed_json({"a": CLOSE, "b": "x & y > z"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": CLOSE, "b": "x & y > z"}


def test_show_prints_question_passages_and_answers(fake_run, capsys):
    assert main(["show", "--run", str(fake_run), "--qid", "q1"]) == 0
    out = capsys.readouterr().out
    assert "How often?" in out and "grade 0  c2" in out and "<- source" in out
    assert "faithfulness 1" in out and "refusal yes" in out
    assert main(["show", "--run", str(fake_run), "--filter", "answered_unanswerable"]) == 0
    out = capsys.readouterr().out
    assert "q2" in out and "q1 " not in out
    assert main(["show", "--run", str(fake_run)]) == 0
    assert "flags: refused,grade0_top3,low_scores" in capsys.readouterr().out
    assert main(["show", "--run", str(fake_run), "--qid", "nope"]) == 2


def test_browse_command_writes_one_self_contained_page(fake_run, capsys):
    assert main(["browse", "--run", str(fake_run)]) == 0
    page = (fake_run / "browse.html").read_text(encoding="utf-8")
    assert "passage text included" in capsys.readouterr().out
    # nothing fetched from elsewhere, and the payloads only as escaped JSON
    head, rest = page.split('<script type="application/json" id="browse-data">')
    data, tail = rest.split("</script>", 1)
    assert json.loads(data)["run"] == "fake"
    own = head + tail  # the page's own markup and script: no source, link or request to anywhere
    assert not any(x in own for x in (" src=", " href=", "http://", "https://", "fetch(", "XMLHttpRequest"))
    assert SCRIPT not in page and "<img" not in page and CLOSE not in page
    assert page.count("<script") == 2  # the data block and the page's own script


@needs_chromium
def test_page_renders_filters_and_runs_no_corpus_script(fake_run, tmp_path):
    write_browse(_cfg(fake_run), fake_run / "browse.html", fake_run)
    url = (fake_run / "browse.html").as_uri()
    with Browser() as b:
        b.open(url + "#qid=q1")
        visible = "document.querySelectorAll('#list button:not([hidden])').length"
        assert b.js(visible) == 2
        detail = b.js("document.getElementById('detail').textContent")
        # the payloads are on the page as text ...
        assert SCRIPT in detail and IMG in detail and CLOSE in detail
        # ... and none of them ran or became an element
        assert b.js("window.__pwned === undefined") is True
        assert b.js("document.title") == "spacelm drill-down: fake"
        assert b.js("document.querySelectorAll('#detail img, #detail script, #list img').length") == 0
        assert b.js("document.scripts.length") == 2
        # a filter changes the visible set
        b.js("document.getElementById('f-answered_unanswerable').click()")
        assert b.js(visible) == 1
        assert b.js("document.querySelector('#list button:not([hidden])').dataset.qid") == "q2"
        assert "filter=answered_unanswerable" in b.js("location.hash")
        b.js("document.getElementById('f-answered_unanswerable').click()")
        b.js("const s = document.getElementById('search'); s.value = 'conjunction'")
        b.js("document.getElementById('search').dispatchEvent(new Event('input'))")
        assert b.js(visible) == 1
        # a filter named in the address applies when the page opens
        b.open(url + "#filter=grade0_top3")
        assert b.js(visible) == 1 and b.js("document.body.textContent.includes('showing 1 of 2')")
        b.screenshot(tmp_path / "browse.png")
        assert b.js("window.__pwned === undefined") is True
    assert (tmp_path / "browse.png").stat().st_size > 10_000


def test_committed_quick_page_is_small_and_current_enough():
    page = ROOT / "results" / "quick" / "browse.html"
    assert page.is_file() and page.stat().st_size < 3_000_000
    text = page.read_text(encoding="utf-8")
    assert "__SPACELM_BROWSE_DATA__" not in text and '"run":"quick"' in text


@needs_chromium
def test_committed_quick_page_opens_from_disk():
    with Browser() as b:
        b.open((ROOT / "results" / "quick" / "browse.html").as_uri())
        assert b.js("document.querySelectorAll('#list button').length") >= 10
        assert b.js("document.getElementById('detail').textContent.length") > 100


def test_the_page_opens_on_an_answerable_graded_question(fake_run):
    root = fake_run.parents[1]
    with (root / "data" / "synthetic" / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q0", "task": "direct_qa", "question": "Ungraded?", "kept": True}) + "\n")
    with (fake_run / "retrieval" / "rankings.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q0", "system": "bm25", "ranking": [["c4", 1.0]]}) + "\n")
    data = collect(_cfg(fake_run), fake_run)
    # graded and answerable, then answerable, then unanswerable (q0 sorts first by id alone)
    assert [q["qid"] for q in data["questions"]] == ["q1", "q0", "q2"]
