"""The drill-down (`spacelm browse`, `spacelm show`, browse.html): what it gathers from a run's
files, its filters, the missing-text path, and the page in a real browser (headless Chromium),
where corpus and model text holding script must show as text and run nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spacelm.cli import main
from spacelm.config import load_config
from spacelm.lib.judge.calibrated import FEWSHOT_MIRROR, FEWSHOT_YESNO
from spacelm.lib.labels.store import text_sha
from spacelm.lib.report.browse import embed_json, question_lines
from spacelm.stages.browse import collect, text_policy, write_browse
from tests.browser import Browser, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 2; document.title = 'pwned'\">"
CLOSE = "</script><script>window.__pwned = 3</script><!--"
CALIBRATED = "calibrated:qwen2.5-coder-1.5b-llm-only"  # the shipped grader the quick config uses
ASSESSOR = "LLM assessor: Test (helper session), brief revision 1"
SCREENER = "LLM assessor: Test (helper session), screening brief revision 1"
CHUNKS = {
    "c1": "Conjunction screening runs daily.",
    "c2": f"before {SCRIPT} after",
    "c3": f"image {IMG} here",
    "c4": "Another passage.",
}
Q1 = f"How often? {IMG}"


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


def _chunk(cid: str) -> dict:
    """A chunk row of document d, each chunk 100 characters after the one before."""
    n = int(cid[1:])
    text = CHUNKS[cid]
    return {
        "chunk_id": cid,
        "doc_id": "d",
        "text": text,
        "page_start": 1,
        "page_end": 1,
        "char_start": 100 * n,
        "char_end": 100 * n + len(text),
        "n_tokens": len(text.split()),
    }


def _grade(qid, cid, grade, score, p_yes, p_mirror):
    """A table grade of the calibrated grader, as grade_pairs_calibrated writes it."""
    return {
        "qid": qid,
        "chunk_id": cid,
        "purpose": ["table"],
        "prompt": CALIBRATED,
        "grade": grade,
        "expected_grade": None,
        "score": score,
        "p_relevant": 0.5,
        "features": {"fewshot_yes": p_yes, "fewshot_mirror": p_mirror, "fewshot_both": (p_yes + 1 - p_mirror) / 2},
        "probs": None,
        "raw": "",
        "prompt_tokens": 900,
        "cached": False,
    }


def _key_fields(question: str, cid: str) -> dict:
    """The fields a label row is keyed by: the question's text and the chunk's span."""
    c = _chunk(cid)
    return {
        "question": question,
        "question_sha": text_sha(question),
        "chunk_id": cid,
        "doc_id": c["doc_id"],
        "char_start": c["char_start"],
        "char_end": c["char_end"],
        "text_sha": text_sha(c["text"]),
    }


def _standing(kind: str, name: str) -> dict:
    return {"assessor": name, "kind": kind, "n_calibration": 100, "figure": "kappa_ge2", "value": 0.5, "floor": 0.4}


def _add_labels(run: Path, screen: str | None = None) -> None:
    """The run's label store: the assessor's grade 2 for (q1, c1) only, and when `screen` is given
    the screener's verdict on q1 against its source chunk c1; standing.json names both."""
    labels = run / "labels"
    common = {"batch": "batch-01", "date": "2026-11-28", "export": "e1", "brief_sha256": "0" * 64}
    _jsonl(
        labels / "relevance.jsonl",
        [
            {
                "kind": "relevance",
                "qid": "q1",
                **_key_fields(Q1, "c1"),
                "grade": 2,
                "assessor": ASSESSOR,
                "key": "r1",
                **common,
            }
        ],
    )
    standing = [dict(_standing("relevance", ASSESSOR), passes=True)]
    if screen:
        _jsonl(
            labels / "screening.jsonl",
            [
                {
                    "kind": "screening",
                    "qid": "q1",
                    **_key_fields(Q1, "c1"),
                    "screen": screen,
                    "assessor": SCREENER,
                    "key": "s1",
                    **common,
                }
            ],
        )
        standing.append(dict(_standing("screening", SCREENER), figure="agreement", value=0.9, floor=0.8, passes=True))
    (labels / "standing.json").write_text(json.dumps({"assessors": standing, "imports": []}), encoding="utf-8")


@pytest.fixture
def fake_run(tmp_path) -> Path:
    """A project in tmp_path with one run folder, results/fake: two systems' rankings, grades,
    answers, questions, and chunk text of which two passages carry script."""
    resolved = (ROOT / "results" / "quick" / "config.resolved.yaml").read_text(encoding="utf-8")
    run = tmp_path / "results" / "fake"
    run.mkdir(parents=True)
    (run / "config.resolved.yaml").write_text(resolved.replace("run_name: quick", "run_name: fake"), encoding="utf-8")
    (tmp_path / "configs").mkdir()
    _jsonl(tmp_path / "data" / "processed" / "chunks.jsonl", [_chunk(c) for c in CHUNKS])
    _jsonl(
        tmp_path / "data" / "synthetic" / "questions.jsonl",
        [
            {"qid": "q1", "task": "direct_qa", "question": Q1, "source_chunk_id": "c1", "kept": True},
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
            _grade("q1", "c2", 0, -1.5, 0.21, 0.74),
            _grade("q1", "c1", 3, 1.234, 0.8, 0.3),
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
    assert [(p["grade"], p["chunk_id"] == q1["source_chunk_id"]) for p in q1["systems"]["bm25"]] == [
        (0, False),
        (3, True),
        (None, False),
    ] + [(None, False)]
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


def test_missing_chunks_and_corpus_name_the_fetch_and_show_no_labels(fake_run):
    _add_labels(fake_run, screen="false_premise")
    (fake_run.parents[1] / "data" / "processed" / "chunks.jsonl").unlink()
    data = collect(_cfg(fake_run), fake_run)  # the corpus folder (data/raw of the project) is not there either
    assert not data["text_available"] and data["passages"] == {}
    assert "put the corpus files back in data/raw" in data["text_note"]
    assert "`spacelm browse --run results/fake`" in data["text_note"] and "spacelm chunk" not in data["text_note"]
    # labels are keyed by passage span: without the chunks none is matched (and none is guessed)
    q1 = next(q for q in data["questions"] if q["qid"] == "q1")
    assert all("label" not in p for p in q1["pairs"].values()) and "screening" not in q1
    assert q1["pairs"]["c1"]["judge"]["score"] == 1.234  # the judge's reply and score need no chunk
    # a listed corpus that is a registered data set: its fetch is the one command named
    listed = load_config(
        fake_run / "config.resolved.yaml",
        sets=["corpus.file_list=space_corpus", f"corpus.raw_dir={fake_run.parents[1] / 'absent'}"],
    )
    assert "put the corpus files back" not in collect(listed, fake_run)["text_note"]
    shared = load_config(
        fake_run / "config.resolved.yaml",
        sets=["corpus.file_list=space_corpus", "corpus.raw_dir=../shared/space_corpus"],
    )
    note = collect(shared, fake_run)["text_note"]
    assert "`spacelm data fetch space_corpus`" in note and "`spacelm browse --run results/fake --text yes`" in note


def test_chunks_rebuilt_in_memory_from_the_corpus_write_nothing(tmp_path):
    """A copy of the quick run, its corpus and questions without the processed folder (a clone): the
    page's chunks come from ingest and chunk of the corpus in memory, are the ones the run recorded,
    carry the labels' spans, and nothing is written."""
    import shutil

    for rel in ("results/quick", "data/raw"):
        shutil.copytree(ROOT / rel, tmp_path / rel)
    (tmp_path / "data" / "synthetic").mkdir()
    shutil.copy(ROOT / "data" / "synthetic" / "questions.jsonl", tmp_path / "data" / "synthetic")
    run = tmp_path / "results" / "quick"
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    data = collect(load_config(run / "config.resolved.yaml"), run)
    assert data["chunks_match_manifest"] is True and data["text_note"] == ""
    assert data["text_available"] and any("label" in p for q in data["questions"] for p in q["pairs"].values())
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before  # nothing written, nothing added


def test_graded_pair_carries_prompt_reply_score_label_and_assessor(fake_run):
    _add_labels(fake_run)
    data = collect(_cfg(fake_run), fake_run)
    judge = data["judge"]
    assert judge["method"] == "calibrated" and judge["grade_features"] == ["fewshot_both"]
    assert judge["derived"] == {"fewshot_both": ["fewshot_yes", "fewshot_mirror"]} and len(judge["cut_points"]) == 3
    # the two calls the grade stage makes on a pair, each with the question and the passage in its prompt
    assert [c["feature"] for c in judge["calls"]] == ["fewshot_yes", "fewshot_mirror"]
    for call, instruction in zip(judge["calls"], (FEWSHOT_YESNO, FEWSHOT_MIRROR)):
        user = call["messages"][-1]["parts"]
        assert {"field": "question"} in user and {"field": "passage"} in user and instruction in user[-1]
        assert call["options"] == ["yes", "no"] and call["reads"] == "share"
    q1 = next(q for q in data["questions"] if q["qid"] == "q1")
    c1, c2 = q1["pairs"]["c1"], q1["pairs"]["c2"]
    assert c1["judge"] == {
        "grade": 3,
        "score": 1.234,
        "features": {"fewshot_yes": 0.8, "fewshot_mirror": 0.3, "fewshot_both": 0.75},
    }
    assert data["assessors"][c1["label"]["assessor"]]["name"] == ASSESSOR and c1["label"]["grade"] == 2
    assert "label" not in c2 and c2["judge"]["grade"] == 0  # graded, not labelled
    assert "c4" not in q1["pairs"]  # neither graded nor labelled
    # the order-swap row is not the table's: its grade is nowhere
    assert all(p.get("judge", {}).get("grade") != 1 for p in q1["pairs"].values())
    # the terminal names the label beside the judge's grade
    lines = "\n".join(question_lines(data, q1))
    assert "grade 3, assessor's grade 2  c1" in lines and "grade 0  c2" in lines


def test_a_prompt_judge_shows_its_raw_reply_and_digit_probabilities(fake_run):
    row = {"qid": "q1", "chunk_id": "c1", "purpose": ["table"], "prompt": "relevance", "grade": 2}
    row.update(expected_grade=1.9, probs={"0": 0.1, "1": 0.2, "2": 0.4, "3": 0.3}, raw="2")
    _jsonl(fake_run / "grades.jsonl", [row])
    data = collect(_cfg(fake_run), fake_run)
    (call,) = data["judge"]["calls"]
    assert data["judge"]["method"] == "prompt" and call["reads"] == "digit" and call["options"] == ["0", "1", "2", "3"]
    q1 = next(q for q in data["questions"] if q["qid"] == "q1")
    assert q1["pairs"]["c1"]["judge"] == {
        "grade": 2,
        "expected_grade": 1.9,
        "probs": {"0": 0.1, "1": 0.2, "2": 0.4, "3": 0.3},
        "raw": "2",
    }


def test_screening_verdict_shows_on_the_question_and_sorts_it_after(fake_run):
    _add_labels(fake_run, screen="false_premise")
    root = fake_run.parents[1]
    with (root / "data" / "synthetic" / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q3", "task": "direct_qa", "question": "When?", "kept": True}) + "\n")
    with (fake_run / "grades.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(_grade("q3", "c4", 1, -0.88, 0.5, 0.5)) + "\n")
    with (fake_run / "retrieval" / "rankings.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q3", "system": "bm25", "ranking": [["c4", 1.0]]}) + "\n")
    data = collect(_cfg(fake_run), fake_run)
    by = {q["qid"]: q for q in data["questions"]}
    assert by["q1"]["screening"]["screen"] == "false_premise"
    assert data["assessors"][by["q1"]["screening"]["assessor"]]["name"] == SCREENER
    assert "screening" not in by["q3"]
    # the page opens on a graded answerable question the assessor did not screen out
    assert [q["qid"] for q in data["questions"]] == ["q3", "q1", "q2"]


def test_text_policy_leaves_listed_corpora_with_unclear_licences_out(fake_run):
    cfg = _cfg(fake_run)
    assert text_policy(cfg)[0]  # no corpus list: the project's or team's own text
    listed = load_config(fake_run / "config.resolved.yaml", sets=["corpus.file_list=space_corpus"])
    ok, why = text_policy(listed)
    assert not ok and "space_corpus" in why
    data = collect(listed, fake_run)
    assert data["passages"] == {} and "--text yes" in data["text_note"]
    # an answer copies its passages, a reference answer is written from one: neither goes in either
    answers = [a for q in data["questions"] for a in q["answers"]]
    assert answers and all(a["answer"] is None and a["answer_words"] >= 0 for a in answers)
    assert all(q["reference_answer"] is None for q in data["questions"])
    assert any(a["scores"] for a in answers)  # the scores and flags stay
    shown = collect(cfg, fake_run)
    assert any(a["answer"] for q in shown["questions"] for a in q["answers"])


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


@needs_chromium
def test_page_shows_prompt_reply_score_label_and_assessor_of_a_graded_pair(fake_run):
    _add_labels(fake_run, screen="answerable")
    write_browse(_cfg(fake_run), fake_run / "browse.html", fake_run)
    page = (fake_run / "browse.html").read_text(encoding="utf-8")
    assert "human" not in page.lower()
    with Browser() as b:
        b.open((fake_run / "browse.html").as_uri() + "#qid=q1")
        passage = "document.querySelector('#detail .system [data-cid=\"%s\"]').textContent"
        c1, c2 = b.js(passage % "c1"), b.js(passage % "c2")
        # the prompt (instructions, question and passage as the judge read them), the replies, the score
        assert FEWSHOT_YESNO in c1 and FEWSHOT_MIRROR in c1 and "You grade search results" in c1
        assert f'"""\n{Q1}\n"""' in c1 and f'"""\n{CHUNKS["c1"]}\n"""' in c1
        assert c1.startswith("#2 c1 grade 3") and "source" in c1  # its rank in bm25, the question's source
        assert "yes 0.800, no 0.200" in c1 and "yes 0.300, no 0.700" in c1 and "1.234" in c1
        # the assessor's label, with the assessor as the standing names it
        assert "assessor's grade 2" in c1 and f"grade 2 by {ASSESSOR}" in c1
        # a graded pair without a label: its judge's reply, and no label row or badge
        assert "yes 0.210, no 0.790" in c2 and "assessor" not in c2
        assert b.js("document.querySelectorAll('#detail details.judge[open]').length") == 0  # collapsed
        detail = b.js("document.getElementById('detail').textContent")
        assert f"Screened as answerable by {SCREENER}" in detail
        assert "human" not in b.js("document.body.textContent").lower()
        assert b.js("window.__pwned === undefined") is True
