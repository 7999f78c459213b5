"""The judge-check stage end to end on the tiny corpus and a made-up labelled folder, its judge
a scripted stand-in (our wiring, not a model's quality): the contract files, absent sources
reported as not run, reuse when up to date."""
from __future__ import annotations

import json

from spacelm.lib import judge_check as J
from tests.lib.test_judge_check import ScriptedJudge


def test_judge_check_stage_writes_the_contract_and_reports_absent_sources(tiny_config, tiny_corpus, monkeypatch):
    """The stage end to end on the tiny corpus, its judge a scripted stand-in."""
    import pandas as pd

    from spacelm.config import CheckSource
    from spacelm.lib import llm as llm_pkg
    from spacelm.lib.llm import LLM
    from spacelm.stages import chunk, ingest
    from spacelm.stages import judge_check as stage

    golden = [{"id": f"g{i}", "task": "direct_qa", "question": q, "passage": p} for i, (q, p) in enumerate([
        ("What do operators compare with a threshold?", "Operators compare the probability of collision with a threshold"),
        ("What is reviewed after re-planning?", "The operators then reviewed the orbit determination."),
    ])]
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
    cfg = tiny_config
    cfg.judge_check.sources.append(CheckSource("absent", str(tiny_corpus / "nowhere")))
    cfg.judge_check.min_pairs = 2
    monkeypatch.setattr(llm_pkg, "open_llm", lambda c, d=None: LLM(c, backend=ScriptedJudge()))
    ingest.run(cfg)
    chunk.run(cfg)
    res = stage.run(cfg)
    out = cfg.run_dir / "judge_check"
    rel = json.loads((out / "relevance.json").read_text())
    assert [m["source"] for m in rel] == ["tiny", "absent", "golden (in-domain)"]
    need = {"source", "n_pairs", "auc", "auc_ci", "kappa_binary", "kappa_binary_ci", "kappa_weighted", "accuracy",
            "confusion", "verdict"}
    assert all(need <= set(m) for m in rel)
    tiny, absent, golden_m = rel
    assert tiny["n_pairs"] == 6 and tiny["verdict"] in J.VERDICTS and tiny["position_bias"]["n_pairs"] == 6
    assert absent["verdict"] == "not run" and "not found" in absent["why"] and absent["auc"] is None
    assert golden_m["n_pairs"] >= 2
    controls = pd.read_csv(out / "controls.csv")
    assert list(controls.columns[:3]) == ["rubric", "n", "pass_rate"] and "verdict" in controls.columns
    assert (out / "plots" / "confusion_tiny.png").is_file()
    assert res["sources"]["absent"] == "not run"
    assert stage.run(cfg)["skipped"]
