"""Execute every notebook top to bottom (nbclient), in pipeline order, against a tiny corpus
with the embedded models (the 0.5B LLM to keep it fast)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from spacelm.notebooks import execute_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.slow
def test_spacelm_run_end_to_end_with_set_keeps_its_results_through_the_notebooks(tmp_path, tiny_config_file):
    """`spacelm run --set ...` on a tiny corpus: every stage, the notebooks against the run's
    resolved config, the report last. The notebook step recomputes nothing (stage outputs are
    byte-identical before and after it), and every link in report.md resolves."""
    cfg_file, run = tiny_config_file
    over = ["--set", "answer.max_questions=1", "--set", "grading.top_k=[1,2]"]
    cmd = [sys.executable, "-m", "spacelm.cli", "run", "--config", str(cfg_file), *over]
    r = subprocess.run(cmd + ["--no-notebooks"], capture_output=True, text=True, cwd=ROOT, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    outputs = {
        p: p.read_bytes()
        for p in run.rglob("*")
        # the manifest and the report (its stamp) are written after the notebooks on every run
        if p.is_file()
        and p.suffix in (".csv", ".jsonl", ".json")
        and p.name not in ("manifest.json", ".report.stamp.json")
    }
    assert outputs
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    assert {p: p.read_bytes() for p in outputs} == outputs, "the notebook step changed a stage's outputs"
    resolved = yaml.safe_load((run / "config.resolved.yaml").read_text())
    assert resolved["answer"]["max_questions"] == 1 and resolved["grading"]["top_k"] == [1, 2]
    manifest = json.loads((run / "manifest.json").read_text())
    # the notebooks run again, and the report, which reads the manifest, is written anew after them
    assert all(s.get("skipped") for n, s in manifest["stages"].items() if n not in ("notebooks", "report")), manifest[
        "stages"
    ]
    for src in NOTEBOOKS:
        nb = nbformat.read(run / "notebooks" / src.name, as_version=4)
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{src.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        assert "computed in this run" not in text, f"{src.name} recomputed a stage"
    answers = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
    assert len({a["qid"] for a in answers if a["answerable"]}) == 1
    report = (run / "report.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", report)
    assert any(link.startswith("plots/") for link in links)
    missing = [link for link in links if not link.startswith("http") and not (run / link.split("#")[0]).exists()]
    assert not missing, f"report.md links to missing files: {missing}"


@pytest.mark.slow
def test_notebooks_run_top_to_bottom(tmp_path, tiny_config_file):
    cfg_file, run = tiny_config_file
    assert NOTEBOOKS, "no notebooks found"
    for src in NOTEBOOKS:
        out = execute_notebook(
            src, tmp_path / "executed" / src.name, cfg_file, cwd=src.parent, timeout=900, reuse_only=False
        )
        nb = nbformat.read(out, as_version=4)
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{src.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    import pandas as pd

    t1 = pd.read_csv(run / "table1_relevance.csv")
    assert list(t1.columns[:6]) == ["retriever", "stage", "top_k", "grade", "percent", "n"]
    assert set(t1.stage) == {"retrieved", "reranked"} and set(t1.grade) == {0, 1, 2, 3}
    validity = json.loads((run / "judge_validity.json").read_text())
    assert {"auc", "n_pairs"} <= set(validity)
    grades = [json.loads(x) for x in (run / "grades.jsonl").read_text().splitlines()]
    assert grades and all("raw" in g for g in grades)
    t2 = pd.read_csv(run / "table2_answer_quality.csv")
    assert list(t2.columns[:5]) == ["metric", "setting", "mean", "std", "n"]
    assert set(t2.setting) == {"standard", "1_wrong", "2_wrong"}
    assert set(pd.read_csv(run / "pipelines.csv").pipeline) == {"A", "B", "C"}
    answers = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
    assert len([a for a in answers if a["answerable"]]) == 6 and all(a["answer"] for a in answers)
    # the answerability contract: the refusal table, one row per claim, the new pipeline columns
    ans = pd.read_csv(run / "answerability.csv")
    assert list(ans.columns[:8]) == [
        "gate",
        "n_answerable",
        "n_unanswerable",
        "answer_rate",
        "refusal_precision",
        "refusal_recall",
        "refusal_f1",
        "false_refusal_rate",
    ]
    assert list(ans.gate) == ["off", "on"]
    claims = [json.loads(x) for x in (run / "claims.jsonl").read_text().splitlines()]
    assert all({"qid", "setting", "pipeline", "claim", "cited", "supported", "p_supported"} <= set(c) for c in claims)
    assert {"claim_faithfulness", "citation_precision", "citation_recall", "overall_pass"} <= set(
        pd.read_csv(run / "pipelines.csv").columns
    )
    questions = [json.loads(x) for x in (tmp_path / "synthetic" / "questions.jsonl").read_text().splitlines()]
    assert all(isinstance(q["answerable"], bool) for q in questions)


def test_committed_notebooks_have_no_outputs():
    for p in NOTEBOOKS:
        nb = nbformat.read(p, as_version=4)
        assert all(
            not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code"
        ), p.name
