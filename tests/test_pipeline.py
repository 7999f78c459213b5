import json
import subprocess
import sys
from pathlib import Path

import pytest

from spacelm.pipeline import run_stages
from spacelm.runner.manifest import Manifest

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_records_stages_and_config(tiny_config):
    m = Manifest(tiny_config)
    run_stages(tiny_config, upto="chunk", manifest=m)
    m.finish()
    data = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert set(data["stages"]) >= {"ingest", "chunk"}
    assert data["config"]["chunking"]["max_tokens"] == 64
    assert "semchunk" in data["packages"] and data["finished"]
    assert all("seconds" in s for s in data["stages"].values())


def test_cli_chunk_and_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("chunking:\n  size: 3\n")
    r = subprocess.run(
        [sys.executable, "-m", "spacelm.cli", "chunk", "--config", str(bad)], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 2 and "chunking.size" in r.stderr and str(bad) in r.stderr


def test_unknown_stage_is_an_error(tiny_config):
    with pytest.raises(ValueError, match="unknown stage"):
        run_stages(tiny_config, upto="nope")


@pytest.mark.slow
def test_retrieval_stage_end_to_end_on_tiny_corpus(tiny_config, tiny_corpus):
    """ingest → chunk → retrieve (bm25, dense, bm25+rerank, hybrid) on golden samples."""
    import pandas as pd

    golden = [
        {"id": f"g{i}", "task": "direct_qa", "question": q, "passage": p}
        for i, (q, p) in enumerate(
            [
                (
                    "What do operators compare with a threshold?",
                    "Operators compare the probability of collision with a threshold",
                ),
                ("What is reviewed after re-planning?", "The operators then reviewed the orbit determination."),
            ]
        )
    ]
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
    tiny_config.retrieval.systems = ["bm25", "dense", "bm25+rerank", "hybrid"]
    tiny_config.retrieval.reranker.model = "embedded:minilm"
    tiny_config.retrieval.pool = 10
    from spacelm.stages import chunk, ingest
    from spacelm.stages import retrieve as retrieval

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    res = retrieval.run(tiny_config)
    assert res["questions"] == 2 and res["question_origin"] == ["golden"]
    out = tiny_config.run_dir / "retrieval"
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.system) == ["bm25", "dense", "bm25+rerank", "hybrid"]
    assert {"recall@10", "mrr@10", "ndcg@10", "hit_rate@10", "strict@10", "doc@10", "near_page@10"} <= set(
        summary.columns
    )
    rows = [json.loads(x) for x in (out / "per_query.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["top10"] for r in rows)
    assert (summary["doc@10"] >= summary["strict@10"]).all()
    assert retrieval.run(tiny_config)["skipped"]


def test_manifest_holds_only_the_stages_of_this_run(tiny_config):
    """A later run (`spacelm run`) of fewer stages does not inherit the earlier run's stage
    entries (a one-stage command merges instead: tests/stages/test_manifest_merge.py)."""
    first = Manifest(tiny_config)
    run_stages(tiny_config, upto="chunk", manifest=first)
    first.finish()
    assert set(json.loads((tiny_config.run_dir / "manifest.json").read_text())["stages"]) == {"ingest", "chunk"}
    second = Manifest(tiny_config)
    run_stages(tiny_config, upto="ingest", manifest=second)
    second.finish()
    data = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert set(data["stages"]) == {"ingest"} and data["command"] == "run"
    assert data["total_seconds"] == data["stages"]["ingest"]["wall_seconds"]


def test_a_run_records_whether_it_started_cold_and_times_the_whole_process(tiny_config):
    """`cold` is true only with an empty call cache and no stage done; `total_seconds` is then
    the process's wall time, at least the stages' sum."""
    from spacelm.stages import stages_for

    m = Manifest(tiny_config)
    m.record_start(stages_for(tiny_config))
    assert m.data["cold"] is True and m.data["start_state"] == {"call_cache_files": 0, "stages_done": []}
    run_stages(tiny_config, upto="chunk", manifest=m)
    m.finish()
    assert m.data["total_seconds"] >= m.data["stage_seconds"] > 0
    again = Manifest(tiny_config)
    again.record_start(stages_for(tiny_config))  # ingest and chunk are done now
    assert again.data["cold"] is False and again.data["start_state"]["stages_done"] == ["ingest", "chunk"]
    tiny_config.cache_dir.mkdir(parents=True, exist_ok=True)
    (tiny_config.cache_dir / "calls.sqlite").write_bytes(b"x")
    for st in stages_for(tiny_config):
        st.stamp_path(tiny_config).unlink(missing_ok=True)
    warm = Manifest(tiny_config)
    warm.record_start(stages_for(tiny_config))
    assert warm.data["cold"] is False and warm.data["start_state"]["call_cache_files"] == 1


def test_the_analysis_plan_is_on_file_before_the_first_stage(tiny_config):
    """record_start writes the manifest with the plan's sha256 before any stage runs; changing
    the plan changes the hash."""
    from dataclasses import replace

    from spacelm.config.schema import AnalysisPlanConfig, PlanFindingConfig
    from spacelm.lib.report.plan import plan_sha256
    from spacelm.stages import stages_for

    tiny_config.analysis_plan = AnalysisPlanConfig(
        fixed="before the run", findings=[PlanFindingConfig("rerank_raises_grade_3_bm25_top3", role="primary")]
    )
    m = Manifest(tiny_config)
    m.record_start(stages_for(tiny_config))
    on_disk = json.loads((tiny_config.run_dir / "manifest.json").read_text())
    assert on_disk["stages"] == {} and on_disk["analysis_plan_findings"] == 1
    assert on_disk["analysis_plan_sha256"] == plan_sha256(tiny_config.to_dict()["analysis_plan"])
    first = on_disk["analysis_plan_sha256"]
    tiny_config.analysis_plan = replace(tiny_config.analysis_plan, fixed="another plan")
    m2 = Manifest(tiny_config)
    m2.record_start(stages_for(tiny_config))
    assert m2.data["analysis_plan_sha256"] != first


def test_a_table1_study_runs_no_answer_stage_and_no_answer_notebooks(tiny_config, monkeypatch):
    from spacelm import notebooks as N
    from spacelm.stages import stages_for

    ran = []
    monkeypatch.setattr(N, "execute_notebook", lambda src, dest, cfg_file, cwd=None: ran.append(src.name[:2]))
    assert "answer" in [s.name for s in stages_for(tiny_config)]
    N.execute_notebooks(tiny_config, Path("unused.yaml"))
    assert ran == ["01", "02", "03", "04", "05", "06"]
    tiny_config.answer.enabled = False
    assert "answer" not in [s.name for s in stages_for(tiny_config)]
    ran.clear()
    N.execute_notebooks(tiny_config, Path("unused.yaml"))
    assert ran == ["01", "02", "03", "04"]
    tiny_config.answer.enabled, tiny_config.grading.enabled = True, False  # a Table 2 study
    assert "grade" not in [s.name for s in stages_for(tiny_config)]
    ran.clear()
    N.execute_notebooks(tiny_config, Path("unused.yaml"))
    assert ran == ["01", "02", "03", "05", "06"]
