"""Labels as an instrument, end to end on a made-up run (no model): `spacelm label export` writes
blind batches with NIST calibration mixed in; `spacelm label import` refuses malformed batches and
assessors below the floor (random or constant grades), and otherwise fills the store; Table 1 read
through labels counts holes, and a hole withholds a verdict."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from spacelm.lib.ingest.chunking import Chunk
from spacelm.lib.io import InputError, read_jsonl

QUESTIONS = [f"q{i}" for i in range(6)]


def _nist(folder: Path, per_grade: int = 8) -> Path:
    """A TREC-DL-like folder: 4 * per_grade pairs, each NIST grade's passage saying so in words."""
    queries, corpus, qrels = [], [], []
    for i in range(4 * per_grade):
        g = i % 4
        queries.append({"_id": f"n{i}", "text": f"nist question {i}"})
        corpus.append({"_id": f"d{i}", "text": f"passage {i} of grade {g}"})
        qrels.append(f"n{i}\td{i}\t{g}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    return folder


def _chunk(cid: str, doc: str, start: int, text: str) -> Chunk:
    return Chunk(cid, doc, text, 1, 1, start, start + len(text), 10)


def fake_run(cfg, tmp_path: Path, chunks: list[Chunk] | None = None):
    """Six questions, one retriever (bm25) with its reranked list, top-k 2; chunk c<i> is question
    q<i>'s source. Judge grades: 2 everywhere."""
    from spacelm.runner.data import chunks_path, questions_path, rankings_path
    from spacelm.stages.grade import grade_label

    cfg.grading.retrievers = ["bm25"]
    cfg.grading.top_k = [2]
    cfg.grading.instrument = "both"
    cfg.grading.n_bootstrap = 50
    cfg.labels.calibration_pairs = str(_nist(tmp_path / "nist"))
    cfg.labels.calibration_per_grade = 8
    chunks = chunks or [_chunk(f"c{i}", f"doc{i % 3}", 100 * i, f"text of chunk {i}") for i in range(8)]
    cp = chunks_path(cfg)
    cp.parent.mkdir(parents=True, exist_ok=True)
    cp.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in chunks))
    qs = [
        {
            "qid": q,
            "question": f"question {q}?",
            "kept": True,
            "answerable": True,
            "source_chunk_id": f"c{i}",
            "doc_id": f"doc{i % 3}",
            "task": "direct_qa",
        }
        for i, q in enumerate(QUESTIONS)
    ]
    qp = questions_path(cfg)
    qp.parent.mkdir(parents=True, exist_ok=True)
    qp.write_text("".join(json.dumps(q) + "\n" for q in qs))
    rankings = []
    for i, q in enumerate(QUESTIONS):
        rankings.append({"system": "bm25", "qid": q, "ranking": [[f"c{i}", 2.0], ["c6", 1.0]]})
        rankings.append({"system": "bm25+rerank", "qid": q, "ranking": [["c7", 2.0], [f"c{i}", 1.0]]})
    rp = rankings_path(cfg)
    rp.parent.mkdir(parents=True, exist_ok=True)
    rp.write_text("".join(json.dumps(r) + "\n" for r in rankings))
    grades = []
    for i, q in enumerate(QUESTIONS):
        for c, purpose in ((f"c{i}", ["table", "validity_source"]), ("c6", ["table"]), ("c7", ["table"])):
            grades.append(
                {"qid": q, "chunk_id": c, "purpose": purpose, "prompt": grade_label(cfg), "grade": 2, "score": 2.0}
            )
    (cfg.run_dir / "grades.jsonl").write_text("".join(json.dumps(r) + "\n" for r in grades))
    (cfg.run_dir / "manifest.json").write_text("{}")
    return cfg


def answer_all(out: Path, how) -> None:
    """Write every batch's labels file: `how(key row) -> grade`."""
    key = {r["key"]: r for r in read_jsonl(out / "key.jsonl")}
    for b in sorted((out / "batches").glob("*.jsonl")):
        lines = [json.dumps({"key": r["key"], "grade": how(key[r["key"]])}) for r in read_jsonl(b)]
        (out / "labels" / f"{b.stem}.labels.jsonl").write_text("\n".join(lines) + "\n")


def truthful(row: dict) -> int:
    """An assessor that reads well: NIST's grade on calibration pairs; 3 for a question's own source
    chunk, 0 for the shared chunks c6 and c7."""
    if "truth" in row:
        return int(row["truth"])
    return 3 if row["chunk_id"] == "c" + row["qid"][1:] else 0


class StandInModels:
    """The grade stage's model turns with no model: each turn runs its function on None."""

    identity: dict = {}
    stats: dict = {}

    def use(self, role, fn, phase):
        return fn(None)

    def release(self):
        pass


def stand_in_judge(cfg, monkeypatch) -> list:
    """The grade stage's judge replaced by one that grades every pair 2; returns the list of the
    pairs it was asked to grade."""
    from spacelm.stages import grade

    asked: list = []

    def fake_grade_pairs(llm, todo, text_of, **kw):
        asked.extend(todo)
        return [dict(p, prompt=grade.grade_label(cfg), grade=2, score=2.0) for p in todo]

    monkeypatch.setattr(grade, "grade_pairs", fake_grade_pairs)
    return asked


@pytest.fixture
def run(tiny_config, tmp_path):
    return fake_run(tiny_config, tmp_path)


def test_export_writes_blind_batches_with_calibration_and_a_key_apart(run, tmp_path):
    from spacelm.stages.labels import export

    out = tmp_path / "export"
    meta = export(run, "pairs", 2, out)
    # 6 questions x (own chunk, c6, c7) = 18 distinct pairs; 32 NIST pairs; about 10% repeated
    assert meta["items"] == 18 and meta["calibration"] == 32 and meta["repeats"] == 5
    lines = [r for b in (out / "batches").glob("*.jsonl") for r in read_jsonl(b)]
    assert len(lines) == 55 and len({r["key"] for r in lines}) == 55
    assert all(set(r) == {"key", "question", "passage"} for r in lines)  # no system, setting or rank
    assert not any("bm25" in json.dumps(r) or "rerank" in json.dumps(r) for r in lines)
    assert (out / "brief.md").read_text().startswith("# Assessor's brief")
    key = read_jsonl(out / "key.jsonl")
    assert {r["role"] for r in key} == {"item", "calibration", "repeat"}
    rep = [r for r in key if r["role"] == "repeat"]
    first = {r["key"]: r for r in key}
    assert all(first[r["of"]]["batch"] != r["batch"] for r in rep)  # a repeat sits in another batch
    with pytest.raises(InputError, match="already holds an export"):
        export(run, "pairs", 2, out)


def test_import_refuses_a_malformed_batch_naming_it(run, tmp_path):
    from spacelm.stages.labels import export, import_labels

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    answer_all(out, truthful)
    f = out / "labels" / "batch-01.labels.jsonl"
    good = f.read_text().splitlines()
    f.write_text("\n".join(good[1:]) + "\n")  # a key missing
    with pytest.raises(InputError, match=r"batch-01.labels.jsonl: 1 key\(s\) of the batch have no answer"):
        import_labels(run, out, "tester")
    f.write_text("\n".join(good + good[:1]) + "\n")  # a key repeated
    with pytest.raises(InputError, match=r"batch-01.labels.jsonl:\d+: key '.*' is answered twice"):
        import_labels(run, out, "tester")
    bad = json.loads(good[0]) | {"grade": 4}
    f.write_text("\n".join([json.dumps(bad)] + good[1:]) + "\n")  # out of range
    with pytest.raises(InputError, match=r"batch-01.labels.jsonl:1: grade 4 .* is not one of 0, 1, 2, 3"):
        import_labels(run, out, "tester")
    assert not (run.labels_dir / "relevance.jsonl").exists()  # nothing stored


@pytest.mark.parametrize("how", ["random", "constant"])
def test_import_refuses_grades_no_reader_made(run, tmp_path, how):
    from spacelm.stages.labels import export, import_labels

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    rng = random.Random(3)
    answer_all(out, (lambda r: rng.randint(0, 3)) if how == "random" else (lambda r: 2))
    with pytest.raises(InputError, match="same answer" if how == "constant" else "below the floor"):
        import_labels(run, out, "script")
    assert not (run.labels_dir / "relevance.jsonl").exists()


def test_a_good_assessor_is_imported_and_table1_reads_its_labels(run, tmp_path):
    from spacelm.stages import findings, grade
    from spacelm.stages.labels import export, import_labels, read_standing

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    answer_all(out, truthful)
    rec = import_labels(run, out, "tester")
    assert rec["standing"]["passes"] and rec["standing"]["value"] == 1.0 and rec["labels_added"] >= 18
    # the manifest's update (as `spacelm label import` records it) names the store the import left
    # and the standing it measured
    from spacelm.runner.manifest import Manifest

    (run.run_dir / "manifest.json").write_text(json.dumps({"stages": {"grade": {}}, "config": {}, "run_name": "r"}))
    manifest = Manifest(run, command="label import")
    manifest.record_stage("labels", rec)
    manifest.finish()
    update = json.loads((run.run_dir / "manifest.json").read_text())["updates"][-1]
    assert update["command"].startswith("label") and update["label_store_sha256"] == rec["store_sha256"]
    assert update["standing"]["passes"] and update["standing"]["value"] == 1.0
    st = read_standing(run)["assessors"][0]
    assert st["kind"] == "relevance" and st["n_calibration"] == 32 and st["self_agreement"]["exact"] == 1.0
    assert (run.labels_dir / "qrels.trec").is_file()
    grade.recompute(run)
    import pandas as pd

    t = pd.read_csv(run.run_dir / "table1_relevance.csv")
    assert set(t["instrument"]) == {"judge", "labels"}
    lab = t[(t.instrument == "labels") & (t.stage == "retrieved") & (t.grade == 3)].iloc[0]
    # retrieved top-2 is (own chunk: 3, c6: 0) for every question: 50% grade 3, no hole
    assert lab["percent"] == 50.0 and lab["holes"] == 0 and lab["judged"] == 12
    agree = json.loads((run.run_dir / "grading/labels/judge_vs_labels.json").read_text())
    assert agree["n_pairs"] == 18
    rows = findings.compute(run)
    t1 = [r for r in rows if r.get("judge") == "grader"]
    assert t1 and all(r["instrument"] == "labels" for r in t1)
    assert all(r["holes"] in (0, None) for r in t1)


def test_a_hole_withholds_the_verdict_and_export_lists_exactly_the_holes(run, tmp_path):
    from spacelm.stages import findings, grade
    from spacelm.stages.labels import export, import_labels

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    # the assessor graded everything, but one item's labels are dropped from the store afterwards
    answer_all(out, truthful)
    import_labels(run, out, "tester")
    store = run.labels_dir / "relevance.jsonl"
    rows = read_jsonl(store)
    dropped = [r for r in rows if r["chunk_id"] == "c7" and r["qid"] == "q0"]
    store.write_text("".join(json.dumps(r) + "\n" for r in rows if r not in dropped))
    grade.recompute(run)
    tests = [r for r in findings.compute(run) if r.get("judge") == "grader" and r.get("instrument") == "labels"]
    reads_c7 = [r for r in tests if r["holes"]]
    assert reads_c7 and all(r["verdict"] == "no evidence" and "have no label" in r["verdict_reason"] for r in reads_c7)
    again = export(run, "pairs", 1, tmp_path / "holes")
    assert again["items"] == 1
    (item,) = [r for r in read_jsonl(tmp_path / "holes" / "key.jsonl") if r["role"] == "item"]
    assert (item["qid"], item["chunk_id"]) == ("q0", "c7")


def test_a_rechunked_corpus_keeps_a_label_only_where_the_span_matches(run, tmp_path):
    from spacelm.lib.labels.store import LabelStore, Span
    from spacelm.stages.labels import export, import_labels

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    answer_all(out, truthful)
    import_labels(run, out, "tester")
    st = LabelStore(run.labels_dir)
    question_of = {q: f"question {q}?" for q in QUESTIONS}
    same = _chunk("other-id-0", "doc0", 0, "text of chunk 0")  # same document, span, text: new id
    moved = _chunk("c1", "doc1", 101, "text of chunk 1")  # same id, span shifted by one
    edited = _chunk("c2", "doc2", 200, "text of chunk 2, edited")  # same start, other text
    spans = {c.chunk_id: Span.of_chunk(c) for c in (same, moved, edited)}
    got = st.relevance_grades([("q0", "other-id-0"), ("q1", "c1"), ("q2", "c2")], question_of, spans)
    assert got == {("q0", "other-id-0"): 3, ("q1", "c1"): None, ("q2", "c2"): None}


def test_judge_against_labels_on_the_same_pairs_by_hand(run, tmp_path):
    """Judge 2 on every pair; labels 3 on the 6 source pairs, 0 on the 12 others. At >= 2 the judge
    says relevant on all 18: κ 0 (no agreement beyond chance). At grade >= 1 the same. The judge's
    bias: on bm25's pairs (source 3, c6 0) residual at ge2 = mean(1 - 1, 1 - 0) = 0.5; on
    bm25+rerank's (c7 0, source 3) the same: difference 0."""
    from spacelm.stages import grade
    from spacelm.stages.labels import export, import_labels

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    answer_all(out, truthful)
    import_labels(run, out, "tester")
    grade.recompute(run)
    agree = json.loads((run.run_dir / "grading/labels/judge_vs_labels.json").read_text())
    b = agree["agreement"]["boundaries"]
    assert b["ge2"]["kappa"] == 0.0 and b["ge2"]["n_label"] == 6 and b["ge2"]["n_judge"] == 18
    bias = agree["system_bias"]
    assert bias["systems"]["bm25"]["by_boundary"]["ge2"]["mean_residual"] == pytest.approx(0.5)
    assert bias["differences"]["bm25 - bm25+rerank"]["ge2"]["diff"] == pytest.approx(0.0)


def test_label_export_and_import_wait_for_nobody_holding_the_run(run, tmp_path, monkeypatch, capsys):
    """A stage holding the run's folders (it may be replacing grades.jsonl) keeps `spacelm label` out:
    exit 4 naming the holder, nothing exported."""
    from spacelm import cli
    from spacelm.pipeline import write_folders
    from spacelm.runner.lock import folder_locks

    monkeypatch.setattr(cli, "load_config", lambda *a, **k: run)
    out = tmp_path / "export-held"
    with folder_locks(write_folders(run)):
        assert cli.main(["label", "export", "--out", str(out)]) == 4
        assert cli.main(["label", "import", "--from", str(out)]) == 4
    assert not out.exists()
    assert "pid" in capsys.readouterr().err


def test_export_of_a_callers_pairs_batches_those_not_yet_labelled_and_only_them(run, tmp_path):
    from spacelm.lib.labels.store import Span, text_sha
    from spacelm.stages.labels import _chunks, export, import_labels

    chunks = _chunks(run)
    # the bench's holes: question q0's text against chunks c3 and c4, not a Table 1 pair
    pairs = [
        {
            "qid": "x0",
            "chunk_id": cid,
            "question": "Which limits hold for the pass?",
            "passage": chunks[cid].text,
            "question_sha": text_sha("Which limits hold for the pass?"),
            **Span.of_chunk(chunks[cid]).fields(),
        }
        for cid in ("c3", "c4")
    ]
    meta = export(run, "pairs", 1, tmp_path / "a", pairs=pairs)
    items = [r for r in read_jsonl(tmp_path / "a" / "key.jsonl") if r["role"] == "item"]
    assert meta["items"] == 2 and {r["chunk_id"] for r in items} == {"c3", "c4"}
    answer_all(tmp_path / "a", lambda r: int(r["truth"]) if "truth" in r else (3 if r["chunk_id"] == "c3" else 0))
    assert import_labels(run, tmp_path / "a", "tester")["labels_added"] == 2
    with pytest.raises(InputError, match="no unlabelled pairs"):
        export(run, "pairs", 1, tmp_path / "b", pairs=pairs)
    with pytest.raises(ValueError, match="relevance"):
        export(run, "questions", 1, tmp_path / "c", pairs=pairs)


def test_the_negative_settings_passages_are_graded_as_pairs_and_read_as_its_premise(run, tmp_path):
    """`label export --what negative`: the passages the negative setting's answers read, graded 0-3
    like Table 1's pairs; the premise is read from those grades (a passage graded 2 or more holds
    the answer), never from whether the answer was right; a hole leaves it unshown."""
    from spacelm.lib import names
    from spacelm.lib.io import write_json, write_jsonl
    from spacelm.lib.report import findings as F
    from spacelm.runner.data import chunks_path
    from spacelm.stages.findings import negative_premise
    from spacelm.stages.labels import export, import_labels, negative_passages

    assert negative_premise(run) is None  # no answers: no negative setting
    answers = []
    for i, q in enumerate(QUESTIONS):
        for setting, rubrics, ids in (
            ("standard", ["faithfulness"], [f"c{i}"]),  # not the negative setting: never exported
            ("5_wrong_only", ["negative_rejection"], ["c6", "c7"] if i < 5 else ["c5", "c6"]),
        ):
            answers.append(
                {"qid": q, "question": f"question {q}?", "setting": setting, "rubrics": rubrics, "passage_ids": ids}
            )
    write_jsonl(run.run_dir / names.ANSWERS, answers)
    got = negative_premise(run)  # tables written before the premise had its file: unlabelled
    assert (got["n"], got["holes"], got["state"], got["holds"]) == (6, 6, "unlabelled", False)

    def tables():  # what the answer stage's tables write (answer.write_tables), at each recompute
        write_json(run.run_dir / names.NEGATIVE_PASSAGES, negative_passages(run, answers))

    tables()
    assert negative_premise(run)["state"] == "unlabelled"
    out = tmp_path / "negative"
    meta = export(run, "negative", 1, out)
    items = [r for r in read_jsonl(out / "key.jsonl") if r["role"] == "item"]
    assert meta["items"] == 12 and {(r["qid"], r["chunk_id"]) for r in items} >= {("q5", "c5"), ("q0", "c7")}
    assert all(r["question_set"] == "negative" for r in items)
    answer_all(out, truthful)  # q5's own chunk c5 is graded 3: that question's passages held its answer
    import_labels(run, out, "tester")
    tables()
    got = negative_premise(run)
    assert (got["n"], got["answering"], got["holes"]) == (6, 1, 0)
    assert got["state"] == "too few" and got["ci"][0] < 1 / 6 < got["ci"][1]
    with pytest.raises(InputError, match="no unlabelled passages of the negative setting"):
        export(run, "negative", 1, tmp_path / "again")
    # the run's chunks gone: the labels cannot be found by span, and the reason says so (no path)
    chunks_path(run).unlink()
    tables()
    got = negative_premise(run)
    assert got["state"] == "no chunks" and not got["holds"] and str(tmp_path) not in json.dumps(got)
    assert "spacelm report --recompute" in F.premise_failed(got)


def screen_questions(run, tmp_path, verdict: dict) -> dict:
    """Synth kept q0-q4 and dropped q5 with its premise check; an assessor screens every question
    (`verdict` {qid: screen}, else answerable), golden questions calibrating it; the labels imported.
    Returns the export's summary."""
    from spacelm.runner.data import questions_path
    from spacelm.stages.labels import export, import_labels

    qp = questions_path(run)
    qs = read_jsonl(qp)
    for q in qs:
        q.update(kept=q["qid"] != "q5", drop_reason="premise" if q["qid"] == "q5" else None)
    qp.write_text("".join(json.dumps(q) + "\n" for q in qs))
    gp = run.run_dir / "grades.jsonl"  # a dropped question is never graded
    gp.write_text("".join(json.dumps(r) + "\n" for r in read_jsonl(gp) if r["qid"] != "q5"))
    golden = tmp_path / "golden.jsonl"
    rows = [
        {
            "id": f"a{i}",
            "task": "direct_qa",
            "question": f"golden {i}?",
            "passage": f"golden passage {i}",
            "answerable": True,
        }
        for i in range(22)
    ]
    rows += [
        {"id": f"u{i}", "task": "direct_qa", "question": f"unanswerable {i}?", "answerable": False} for i in range(10)
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run.corpus.golden_samples = str(golden)
    out = tmp_path / "screen"
    meta = export(run, "questions", 1, out)
    key = {r["key"]: r for r in read_jsonl(out / "key.jsonl")}
    meta["suite"] = {r["suite"] for r in key.values() if r["role"] == "item"}

    def screen(r):
        if "truth" in r:
            return "answerable" if r["truth"] else "not_answerable"
        return verdict.get(r["qid"], "answerable")

    for b in sorted((out / "batches").glob("*.jsonl")):
        lines = [json.dumps({"key": r["key"], "screen": screen(key[r["key"]])}) for r in read_jsonl(b)]
        (out / "labels" / f"{b.stem}.labels.jsonl").write_text("\n".join(lines) + "\n")
    import_labels(run, out, "tester")
    return meta


def test_questions_the_assessor_screens_out_leave_table1_and_the_checks_are_measured_against_it(run, tmp_path):
    from spacelm.stages import grade
    from spacelm.stages.labels import section

    meta = screen_questions(run, tmp_path, {"q0": "false_premise", "q5": "not_answerable"})
    assert meta["items"] == 6 and meta["suite"] == {"kept", "premise"}
    grade.recompute(run)
    facts = json.loads((run.run_dir / "grading" / "question_screening.json").read_text())
    assert (facts["screened"], facts["rejected"], facts["rejected_qids"], facts["kept_for_table1"]) == (
        5,
        1,
        ["q0"],
        4,
    )
    assert facts["per_task"]["direct_qa"]["reasons"] == {"false_premise": 1}
    assert facts["by_suite_verdict"] == {
        "kept": {"screened": 5, "answerable": 4},
        "premise": {"screened": 1, "answerable": 0},
    }
    import pandas as pd

    t = pd.read_csv(run.run_dir / "table1_relevance.csv")
    # q0 left: 4 questions x top-2 = 8 passages per retrieved cell
    assert set(t[t.instrument == "judge"]["n_questions"]) == {4}
    assert section(run).screening["rejected"] == 1
    from spacelm.stages.report import labels_section

    page = labels_section(run)  # the template words these facts (it renders, every row present)
    assert "| direct_qa | 5 | 5 | 1 |" in page.replace("  ", " ") or "| 5 | 5 | 1 |" in page


def test_leaving_screened_out_questions_never_moves_the_deep_draw():
    from spacelm.lib.judge.relevance import TableDesign, deep_qids

    design = TableDesign(("bm25",), (3, 10), 13, 3)
    qs = [{"qid": f"q{i}"} for i in range(10)]
    deep = deep_qids(design, qs)
    gone = sorted(deep)[0]
    marked = [dict(q, deep=q["qid"] in deep) for q in qs if q["qid"] != gone]
    assert deep_qids(design, marked) == deep - {gone}
    # unmarked, the same list draws 3 again, one of them a question graded only to top-3
    redrawn = deep_qids(design, [q for q in qs if q["qid"] != gone])
    assert len(redrawn) == 3 and redrawn != deep - {gone}


def test_the_judge_grades_a_sample_and_the_labels_read_every_question(run, tmp_path, monkeypatch):
    """grading.judge_questions: the embedded judge grades 3 of the 6 questions (seeded), the grade
    stage lists all 6 in grading/table1_questions.json, the labels' export asks for every question's
    pairs, Table 1 through labels reads all 6 and the judge's own table and its agreement with the
    labels rest on its 3."""
    import pandas as pd

    from spacelm.lib.io import read_jsonl
    from spacelm.runner.data import load_chunks, load_questions, load_rankings
    from spacelm.stages import grade
    from spacelm.stages.labels import export, import_labels

    run.grading.judge_questions = 3
    asked = stand_in_judge(run, monkeypatch)
    chunks = load_chunks(run)
    result = grade.compute(run, chunks, load_questions(run, chunks), load_rankings(run), StandInModels())
    grade.write(run, result, load_rankings(run), "stand-in", lambda p: p)
    sample = {p["qid"] for p in asked}
    assert len(sample) == 3 and len(result.questions) == 6
    design = json.loads((run.run_dir / "grading/table1_questions.json").read_text())["run"]
    assert len(design["questions"]) == 6 and set(design["judged"]) == sample
    assert {r["qid"] for r in read_jsonl(run.run_dir / "grades.jsonl")} == sample

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    keyed = [r for r in read_jsonl(out / "key.jsonl") if "truth" not in r]
    assert {r["qid"] for r in keyed} == set(QUESTIONS)  # the labels are asked for every question
    answer_all(out, truthful)
    import_labels(run, out, "tester")
    grade.recompute(run)
    t = pd.read_csv(run.run_dir / "table1_relevance.csv")
    assert set(t[t.instrument == "labels"]["n_questions"]) == {6} and set(t[t.instrument == "labels"]["holes"]) == {0}
    assert set(t[t.instrument == "judge"]["n_questions"]) == {3}
    agree = json.loads((run.run_dir / "grading/labels/judge_vs_labels.json").read_text())
    assert agree["n_pairs"] == 9  # the judge's 3 questions x (own chunk, c6, c7)


def test_judge_questions_needs_the_labels_to_read_every_question(tiny_config):
    from spacelm.config import ConfigError
    from spacelm.config.validate import validate

    tiny_config.grading.judge_questions = 3
    tiny_config.grading.instrument = "judge"
    with pytest.raises(ConfigError, match="grading.judge_questions"):
        validate(tiny_config, "test.yaml")


def test_the_golden_set_has_its_own_table1_through_labels_beside_the_judges_sample(tiny_config, tmp_path, monkeypatch):
    """Issue 54: with grading.question_sets [run, golden] and instrument both, the golden samples are a
    second Table 1 set: the judge grades a sample of them, the export asks the assessor for every
    golden question's pairs, and grading/golden/labels/ holds their Table 1 and paired tests (no
    holes), which the golden set's findings read."""
    import pandas as pd

    from spacelm.lib import names
    from spacelm.lib.ingest.documents import Document
    from spacelm.runner.data import documents_path, load_chunks, load_questions, load_rankings
    from spacelm.stages import findings, gold_check, grade
    from spacelm.stages.labels import export, import_labels

    texts = {f"c{i}": f"text of chunk {i}" for i in range(8)} | {f"c{8 + j}": f"golden passage {j}" for j in range(4)}
    docs, chunks, at = {}, [], {"doc0": "", "doc1": "", "doc2": ""}
    for i, (cid, text) in enumerate(texts.items()):
        doc = f"doc{i % 3}"
        chunks.append(_chunk(cid, doc, len(at[doc]), text))
        at[doc] += text + "\n\n"
    for doc, text in at.items():
        docs[doc] = Document(doc, f"{doc}.txt", "txt", text, [0], 1)
    run = fake_run(tiny_config, tmp_path, chunks)
    dp = documents_path(run)
    dp.write_text("".join(json.dumps(vars(d)) + "\n" for d in docs.values()))
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"id": f"a{j}", "task": "direct_qa", "question": f"golden {j}?", "passage": f"golden passage {j}"}
        for j in range(4)
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run.corpus.golden_samples = str(golden)
    run.grading.question_sets = ["run", "golden"]
    run.grading.judge_questions = 2
    gp = run.run_dir / names.GOLDEN_RANKINGS
    gp.parent.mkdir(parents=True, exist_ok=True)
    ranked = []
    for j in range(4):
        ranked.append({"system": "bm25", "qid": f"a{j}", "ranking": [[f"c{8 + j}", 2.0], ["c6", 1.0]]})
        ranked.append({"system": "bm25+rerank", "qid": f"a{j}", "ranking": [["c7", 2.0], [f"c{8 + j}", 1.0]]})
    gp.write_text("".join(json.dumps(r) + "\n" for r in ranked))

    stand_in_judge(run, monkeypatch)
    chunks = load_chunks(run)
    questions = load_questions(run, chunks)
    gs = gold_check.golden_inputs(run, chunks, questions)
    result = grade.compute(run, chunks, questions, load_rankings(run), StandInModels(), gs)
    grade.write(run, result, load_rankings(run), "stand-in", lambda p: p)
    assert len(result.golden.questions) == 4 and len({r["qid"] for r in result.golden.rows}) == 2

    own = {f"a{j}": f"c{8 + j}" for j in range(4)} | {q: f"c{q[1:]}" for q in QUESTIONS}

    def reader(row):
        return int(row["truth"]) if "truth" in row else (3 if own.get(row["qid"]) == row["chunk_id"] else 0)

    out = tmp_path / "export"
    export(run, "pairs", 2, out)
    asked = {r["qid"] for r in read_jsonl(out / "key.jsonl") if "truth" not in r}
    assert {f"a{j}" for j in range(4)} <= asked
    answer_all(out, reader)
    import_labels(run, out, "tester")
    grade.recompute(run)
    tests = pd.read_csv(run.run_dir / names.GOLDEN_LABEL_PAIRED_TESTS)
    assert set(tests["n_questions"]) == {4} and set(tests["holes"]) == {0}
    t1 = pd.read_csv(run.run_dir / names.GOLDEN_LABEL_TABLE1)
    own_share = t1[(t1.stage == "retrieved") & (t1.grade == 3)].iloc[0]
    assert own_share["percent"] == 50.0  # the golden passage first, c6 (grade 0) second
    judge_t1 = pd.read_csv(run.run_dir / names.GOLDEN_TABLE1)
    assert set(judge_t1["n_questions"]) == {2}
    golden_rows = [r for r in findings.golden_rows(run)]
    assert golden_rows and all(r["instrument"] == "labels" and r["question_set"] == "golden" for r in golden_rows)


def test_a_calibration_item_shown_again_in_a_later_pass_counts_once_at_its_latest_answer():
    from spacelm.stages.labels import once_per_item

    first = [{"qid": f"g{i}", "truth": True, "value": i != 0, "export": "a"} for i in range(3)]
    again = [{"qid": "g0", "truth": True, "value": True, "export": "b"}, {"qid": "g9", "truth": False, "value": False}]
    got = once_per_item("screening", first + again)
    assert sorted(r["qid"] for r in got) == ["g0", "g1", "g2", "g9"]
    assert next(r for r in got if r["qid"] == "g0")["export"] == "b"
    # relevance rows name only the NIST query, and each pass draws other pairs: all are kept
    rel = [{"qid": "nist:1", "truth": 2, "value": 2}, {"qid": "nist:1", "truth": 0, "value": 1}]
    assert once_per_item("relevance", rel) == rel


def test_answers_leave_out_screened_questions_and_the_judges_score_only_their_sample(run, tmp_path, monkeypatch):
    from spacelm.runner.data import load_chunks, load_questions, load_rankings
    from spacelm.stages import answer

    screen_questions(run, tmp_path, {"q0": "false_premise", "q5": "not_answerable"})
    cfg = run
    cfg.answer.instrument, cfg.answer.judge_questions, cfg.answer.max_questions = "both", 2, None
    cfg.answer.n_wrong_values, cfg.answer.negative_n_wrong, cfg.answer.wrong_sampling = [0, 1], 0, "random"
    cfg.answer.pipelines, cfg.answer.retriever, cfg.answer.max_unanswerable = ["B"], "bm25", 0
    cfg.answer.gate.enabled = cfg.answer.reference_answers = cfg.answer.claims = cfg.answer.refusal_judge = False
    cfg.answer.binary_judges = False
    judged: list = []

    def fake_generate(llm, items, text_of, design):
        for it in items:
            it["answer"] = f"An answer to {it['question']}"

    def fake_judge(llm, items, binary, text_of, checks=None, scoring="digit"):
        for it in items:
            judged.append(it["qid"])
            it["scores"].update({r: 4 for r in it["rubrics"]})

    monkeypatch.setattr(answer, "generate", fake_generate)
    monkeypatch.setattr(answer, "judge_answers", fake_judge)
    chunks = load_chunks(cfg)
    res = answer.compute(cfg, chunks, load_questions(cfg, chunks), [], load_rankings(cfg), StandInModels())
    answered = {it["qid"] for it in res.items}
    assert answered == {"q1", "q2", "q3", "q4"}  # q0 screened out; q5 dropped by synth
    assert len(set(judged)) == 2 and set(judged) <= answered
    assert {it["qid"] for it in res.items if it["judged"]} == set(judged)
    assert all(it["scores"] == {} for it in res.items if not it["judged"])
    # the assessor scores every answer; the judges' tables read their sample
    assert len(res.items) == 4 * 3  # two settings and pipeline B per question


def test_answer_calibration_gives_the_findings_kinds_half_of_their_rubrics_share():
    """The margin of a "changes little" verdict reads the assessor's gap on findings.control_kinds:
    half of that rubric's calibration controls are of those kinds, the rest keep the other kinds in."""
    from spacelm.stages.labels import _calibration_mix

    kinds = {"faithfulness": ["a", "b", "c", "d", "x", "y"], "relevance": ["r", "s"], "noise_robustness": ["n"]}
    controls = [{"rubric": r, "kind": k, "i": i} for i in range(10) for r, ks in kinds.items() for k in ks]
    rubrics = ("faithfulness", "relevance", "noise_robustness")
    mix = _calibration_mix(controls, rubrics, 20, {"faithfulness": ["x", "y"]})
    by = lambda r: [c["kind"] for c in mix if c["rubric"] == r]
    assert len(mix) == 20 and [len(by(r)) for r in ("faithfulness", "relevance", "noise_robustness")] == [7, 7, 6]
    assert sum(k in ("x", "y") for k in by("faithfulness")) >= 3 and {"a", "b"} <= set(by("faithfulness"))
    assert len({id(c) for c in mix}) == 20  # no control twice
