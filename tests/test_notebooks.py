"""Execute every notebook top to bottom (nbclient), in pipeline order, against a tiny corpus
with the embedded models (the 0.5B LLM to keep it fast)."""
import json
from pathlib import Path

import nbformat
import pytest
import yaml

from spacelm.notebooks import execute_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture
def tiny_config_file(tmp_path, tiny_corpus):
    rows = []
    for t in ("direct_qa", "summarization"):
        for i in range(2):
            rows.append({"id": f"{t}-{i}", "task": t,
                         "question": f"What does note {i} say about collision probability thresholds?" if t == "direct_qa"
                         else f"Summarise what note {i} says about planning manoeuvres.",
                         "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre."})
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    small = {"backend": "llamacpp", "model": "embedded:qwen2.5-coder-0.5b", "n_ctx": 2048, "max_tokens": 48}
    p = tmp_path / "test.yaml"
    p.write_text(yaml.safe_dump({
        "run_name": "nbtest",
        "corpus": {"raw_dir": str(tiny_corpus), "golden_samples": str(tiny_corpus / "golden_samples.jsonl")},
        "paths": {"processed_dir": str(tmp_path / "processed"), "results_dir": str(tmp_path / "results"),
                  "synthetic_dir": str(tmp_path / "synthetic"), "cache_dir": str(tmp_path / "cache")},
        "chunking": {"max_tokens": 64},
        "retrieval": {"systems": ["bm25", "dense", "bm25+rerank", "hybrid"], "pool": 10,
                      "reranker": {"kind": "biencoder", "model": "embedded:minilm"}},
        "models": {"question_writer": small, "generator": small, "judge": dict(small, max_tokens=8)},
        "synth": {"tasks": ["direct_qa", "summarization"], "n_fewshot": 2, "max_chunks": 2, "filter_top_n": 5},
        "grading": {"retrievers": ["bm25"], "top_k": [1, 3], "max_questions": 2, "n_bootstrap": 100},
        "answer": {"max_questions": 1, "n_wrong_values": [0, 1], "negative_n_wrong": 2, "retrieve_k": 2,
                   "n_bootstrap": 100},
    }))
    return p


def test_notebooks_run_top_to_bottom(tmp_path, tiny_config_file):
    assert NOTEBOOKS, "no notebooks found"
    for src in NOTEBOOKS:
        out = execute_notebook(src, tmp_path / "executed" / src.name, str(tiny_config_file), cwd=src.parent, timeout=900)
        nb = nbformat.read(out, as_version=4)
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{src.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    run = tmp_path / "results" / "nbtest"
    assert (run / "plots" / "chunk_lengths.png").is_file()
    if (ROOT / "notebooks" / "04_relevance_grading.ipynb").exists():
        import pandas as pd

        t1 = pd.read_csv(run / "table1_relevance.csv")
        assert list(t1.columns[:6]) == ["retriever", "stage", "top_k", "grade", "percent", "n"]
        assert set(t1.stage) == {"retrieved", "reranked"} and set(t1.grade) == {0, 1, 2, 3}
        validity = json.loads((run / "judge_validity.json").read_text())
        assert {"auc", "n_pairs"} <= set(validity)
        grades = [json.loads(x) for x in (run / "grades.jsonl").read_text().splitlines()]
        assert grades and all("raw" in g for g in grades)
    if (ROOT / "notebooks" / "05_answer_quality.ipynb").exists():
        import pandas as pd

        t2 = pd.read_csv(run / "table2_answer_quality.csv")
        assert list(t2.columns[:5]) == ["metric", "setting", "mean", "std", "n"]
        assert set(t2.setting) == {"standard", "1_wrong", "2_wrong"}
        assert set(pd.read_csv(run / "pipelines.csv").pipeline) == {"A", "B", "C"}
        answers = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
        assert len(answers) == 6 and all(a["answer"] for a in answers)


def test_committed_notebooks_have_no_outputs():
    for p in NOTEBOOKS:
        nb = nbformat.read(p, as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in nb.cells if c.cell_type == "code"), p.name
