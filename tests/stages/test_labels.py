"""Human labels in a run folder: the grade stage's prediction-powered columns read them, and
`spacelm label --check` rejects a bad file with exit code 2 naming the file and line. No model."""

from __future__ import annotations

import json

import pytest

from spacelm.lib.judge.labelling import pair_id


def _fake_run(cfg):
    """Two questions, bm25 retrieved and reranked lists of 2 passages, judge grades."""
    cfg.grading.retrievers = ["bm25"]
    cfg.grading.top_k = [2]
    questions = [{"qid": "q1", "question": "one?"}, {"qid": "q2", "question": "two?"}]
    rankings = {"bm25": {"q1": ["a", "b"], "q2": ["c", "d"]}, "bm25+rerank": {"q1": ["b", "e"], "q2": ["c", "f"]}}
    grades = {("q1", "a"): 3, ("q1", "b"): 2, ("q2", "c"): 0, ("q2", "d"): 1, ("q1", "e"): 2, ("q2", "f"): 2}
    return questions, rankings, grades


def test_grade_stage_ppi_columns_from_labels_placed_in_the_run(tiny_config):
    from spacelm.stages import grade

    cfg = tiny_config
    questions, rankings, grades = _fake_run(cfg)
    rows, diffs, human = grade.prediction_powered(cfg, questions, rankings, grades)
    assert human == {} and all(r["ppi_estimate"] is None and r["n_human"] == 0 for r in rows)
    d = grade.labels_dir(cfg)
    d.mkdir(parents=True)
    # every pair labelled: the estimate is the human share. Retrieved (a, b, c, d): people say
    # 2 on a and b only -> grade-2 share 50%; the judge says 25% (b only)
    labels = {("q1", "a"): 2, ("q1", "b"): 2, ("q2", "c"): 0, ("q2", "d"): 0, ("q1", "e"): 0, ("q2", "f"): 2}
    (d / "human_labels.csv").write_text("pair_id,grade\n" + "".join(f"{pair_id(*k)},{g}\n" for k, g in labels.items()))
    rows, diffs, human = grade.prediction_powered(cfg, questions, rankings, grades)
    r2 = next(r for r in rows if r["stage"] == "retrieved" and r["grade"] == 2)
    assert r2["n_human"] == 4 and r2["ppi_estimate"] == pytest.approx(50.0)
    # reranked (b, e, c, f): people 2-3 on b, f = 50%; retrieved 50%: difference 0 pp; judge says
    # reranked 75% (b, e, f) - retrieved 50% (a, b) = +25 pp
    (dr,) = diffs
    assert dr["judge_only"] == pytest.approx(25.0) and dr["ppi_estimate"] == pytest.approx(0.0)
    # the labels file is an input of the grade stage (it goes stale when labels appear)
    assert d / "human_labels.csv" in grade.STAGE.reads(cfg)


def test_label_check_exits_2_naming_file_and_line(tiny_config_file, capsys):
    from spacelm.cli import main

    path, run = tiny_config_file
    d = run / "labels"
    d.mkdir(parents=True)
    (d / "to_label.jsonl").write_text(json.dumps({"pair_id": "q1::a", "weight": 1.0}) + "\n")
    (d / "human_labels.csv").write_text("pair_id,grade\nq1::a,7\n")
    assert main(["label", "--config", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "human_labels.csv:2" in err and "not one of 0, 1, 2, 3" in err
    (d / "human_labels.csv").write_text("pair_id,grade\nq1::a,2\n")
    assert main(["label", "--config", str(path), "--check"]) == 0
    assert json.loads(capsys.readouterr().out)["labelled_pairs"] == 1
    # drawing a sample before the run is graded: exit 2 saying what to run first
    assert main(["label", "--config", str(path), "--n", "5"]) == 2
    assert "grades.jsonl not found" in capsys.readouterr().err


def test_label_sample_writes_the_files_from_the_graded_pairs(tiny_config, monkeypatch):
    from types import SimpleNamespace as C

    from spacelm.lib.io import read_jsonl
    from spacelm.stages import grade

    cfg = tiny_config
    questions, rankings, grades = _fake_run(cfg)
    cfg.run_dir.mkdir(parents=True)
    (cfg.run_dir / "grades.jsonl").write_text(
        "".join(
            json.dumps({"qid": q, "chunk_id": c, "grade": g, "prompt": cfg.grading.prompt}) + "\n"
            for (q, c), g in grades.items()
        )
    )
    monkeypatch.setattr(grade, "load_chunks", lambda cfg: [C(chunk_id=c, text=f"text of {c}") for c in "abcdef"])
    monkeypatch.setattr(grade, "load_rankings", lambda cfg: rankings)
    monkeypatch.setattr(grade, "load_questions", lambda cfg, chunks: questions)
    files = grade.label_sample(cfg, 4)
    sample = read_jsonl(files[0])
    assert len(sample) == 4 and len({s["pair_id"] for s in sample}) == 4
    # strata: bm25 holds a(3) b(2) c(0) d(1); the reranked list adds e(2) f(2)
    assert {s["stratum"].split("|")[0] for s in sample} <= {"bm25", "bm25+rerank"}
    assert all("grade" not in s for s in sample) and "text of" in sample[0]["passage"]
    assert grade.label_sample(cfg, 4) == files and read_jsonl(files[0]) == sample  # seeded
