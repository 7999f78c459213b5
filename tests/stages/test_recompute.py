"""`spacelm report --recompute`: Table 1 and its tests rebuilt from a run's stored grades and
rankings, with the questions clustered by the source chunk their validity pair names."""

from __future__ import annotations

import json

import pandas as pd

from spacelm.config import from_dict
from spacelm.stages import grade


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_grade_tables_from_stored_grades_cluster_by_source_chunk(tmp_path):
    cfg = from_dict(
        {
            "run_name": "r",
            "paths": {"results_dir": str(tmp_path), "synthetic_dir": str(tmp_path / "syn")},
            "grading": {"retrievers": ["bm25"], "top_k": [1, 2], "n_bootstrap": 50, "consistency_check": False},
        }
    )
    run = cfg.run_dir
    # four questions from two source chunks (q1, q2 from c1; q3, q4 from c2)
    source = {"q1": "c1", "q2": "c1", "q3": "c2", "q4": "c2"}
    rankings, grades = [], []
    for q, src in source.items():
        rankings += [
            {"system": "bm25", "qid": q, "ranking": [["a", 1.0], ["b", 0.5]]},
            {"system": "bm25+rerank", "qid": q, "ranking": [["b", 1.0], ["a", 0.5]]},
        ]
        grades += [
            {
                "qid": q,
                "chunk_id": "a",
                "purpose": ["table"],
                "prompt": "relevance",
                "grade": 1,
                "expected_grade": None,
            },
            {
                "qid": q,
                "chunk_id": "b",
                "purpose": ["table"],
                "prompt": "relevance",
                "grade": 3 if src == "c1" else 2,
                "expected_grade": None,
            },
            {
                "qid": q,
                "chunk_id": src,
                "purpose": ["validity_source"],
                "prompt": "relevance",
                "grade": 3,
                "expected_grade": None,
            },
            {
                "qid": q,
                "chunk_id": "z",
                "purpose": ["validity_random"],
                "prompt": "relevance",
                "grade": 0,
                "expected_grade": None,
            },
        ]
    _write(run / "retrieval" / "rankings.jsonl", rankings)
    _write(run / "grades.jsonl", grades)
    summary = grade.recompute(cfg)
    assert summary["questions"] == 4 and summary["sample"]["source_chunks"] == 2
    tests = pd.read_csv(run / "grading" / "paired_tests.csv")
    top1 = tests[(tests.measure == "mean_grade") & (tests.top_k == 1)].iloc[0]
    # top-1 mean grade: retrieved 1 for all; reranked 3, 3, 2, 2: difference 1.5 on 4 questions / 2 chunks;
    # cluster means 2 and 1 -> residual sums 2·0.5 and 2·(-0.5): se² = 2/1 · (1 + 1) / 16 = 0.25
    assert top1["diff"] == 1.5 and top1["n_questions"] == 4 and top1["n_source_chunks"] == 2
    assert abs(top1["se"] - 0.5) < 1e-9 and top1["df"] == 1
    note = (run / "table1_relevance.md").read_text()
    assert "4 questions from 2 source chunks" in note and "cluster bootstrap" in note
    # the default unit is the document (here each chunk id names its own document): named in every clustered table
    assert set(tests["cluster"]) == {"document"} and set(tests["n_documents"]) == {2}
    table = pd.read_csv(run / "table1_relevance.csv")
    assert set(table["cluster"]) == {"document"} and "documents, then questions" in note
    sens = pd.read_csv(run / "grading" / "sensitivity.csv")
    assert len(sens) == len(tests) and set(sens["lodo_doc_most"].dropna()) <= {"c1", "c2"}


def test_answers_of_a_corpus_not_to_be_quoted_keep_no_gate_evidence(tmp_path, monkeypatch):
    """The answerability gate's evidence is a sentence quoted from a passage: for a corpus whose
    licence does not allow quoting, answers.jsonl keeps the gate's scores and drops the sentence."""
    import json
    import shutil
    from pathlib import Path

    import pytest

    import spacelm.stages.browse as browse
    from spacelm.config import load_config
    from spacelm.stages import answer

    root = Path(__file__).resolve().parents[2]
    run = root / "results" / "quick"
    rows = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
    if not any(isinstance(r.get("gate"), dict) and r["gate"].get("evidence") for r in rows):
        pytest.skip("the committed quick run's answers carry no gate evidence")
    shutil.copytree(run, tmp_path / "results" / "quick")
    cfg = load_config(run / "config.resolved.yaml", sets=[f"paths.results_dir={tmp_path / 'results'}"])
    monkeypatch.setattr(browse, "text_policy", lambda c: (False, "a listed corpus"))
    answer.recompute(cfg)
    again = [json.loads(x) for x in (cfg.run_dir / "answers.jsonl").read_text().splitlines()]
    gated = [r for r in again if isinstance(r.get("gate"), dict)]
    assert gated and all(r["gate"]["evidence"] is None and "score" in r["gate"] for r in gated)
    assert [r["answer"] for r in again] == [r["answer"] for r in rows]
