"""The judge-check stage end to end on the tiny corpus and a made-up labelled folder, its judge
a scripted stand-in (our wiring, not a model's quality): the contract files, absent sources
reported as not run, reuse when up to date."""

from __future__ import annotations

import json

from spacelm.lib.judge import validity as J
from tests.lib.judge.test_judge_check import ScriptedJudge


def test_judge_check_stage_writes_the_contract_and_reports_absent_sources(tiny_config, tiny_corpus, monkeypatch):
    """The stage end to end on the tiny corpus, its judge a scripted stand-in."""
    import pandas as pd

    from spacelm.config import CheckSource
    from spacelm.lib.llm import LLM
    from spacelm.runner.base import models_opened_by
    from spacelm.stages import chunk, ingest
    from spacelm.stages import judge_check as stage

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
    cfg = tiny_config
    cfg.judge_check.sources.append(CheckSource("absent", str(tiny_corpus / "nowhere")))
    cfg.judge_check.min_pairs = 2
    # reference judges beside the tiny source: one agrees with the labels everywhere
    from spacelm.lib.retrieval.beir import load_beir

    src = cfg.judge_check.sources[0]
    refs = src.path + "/reference_judges"
    import pathlib

    pathlib.Path(refs).mkdir()
    data = load_beir(pathlib.Path(src.path))
    ids, _ = data.passages()
    (pathlib.Path(refs) / "perfect.qrels.txt").write_text(
        "".join(f"{q} Q0 {d} {rel.get(d, 0)}\n" for q, rel in data.qrels.items() for d in ids)
    )
    # another that labelled only the pairs people judged (not the random negatives)
    (pathlib.Path(refs) / "partial.qrels.txt").write_text(
        "".join(f"{q} Q0 {d} {g}\n" for q, rel in data.qrels.items() for d, g in rel.items())
    )
    ingest.run(cfg)
    chunk.run(cfg)
    with models_opened_by(lambda c, d=None: LLM(c, backend=ScriptedJudge())):
        res = stage.run(cfg)
    out = cfg.run_dir / "judge_check"
    rel = json.loads((out / "relevance.json").read_text())
    assert [m["source"] for m in rel] == ["tiny", "absent", "golden (in-domain)"]
    need = {
        "source",
        "n_pairs",
        "auc",
        "auc_ci",
        "kappa_binary",
        "kappa_binary_ci",
        "kappa_weighted",
        "accuracy",
        "confusion",
        "verdict",
    }
    assert all(need <= set(m) for m in rel)
    tiny, absent, golden_m = rel
    assert tiny["n_pairs"] == 6 and tiny["verdict"] in J.VERDICTS and tiny["position_bias"]["n_pairs"] == 6
    assert absent["verdict"] == "not run" and "not found" in absent["why"] and absent["auc"] is None
    # the reason names the folder as the config does (no machine path) and where such a set comes from
    assert str(cfg.root) not in absent["why"] and "BEIR-layout folder" in absent["why"]
    assert absent["reference_judges"] == [] and golden_m["reference_judges"] == []
    partial, ref = tiny["reference_judges"]
    assert ref["name"] == "perfect" and ref["n_pairs"] == tiny["n_pairs"]
    # the verdict compares like with like: ours again on the pairs every reference labelled
    assert partial["n_pairs"] == tiny["ours_on_reference_pairs"]["n_pairs"] < tiny["n_pairs"]
    assert set(ref) >= {"name", "n_pairs", "kappa_binary", "kappa_binary_ci", "kappa_weighted", "auc", "auc_ci"}
    # those are the relevant passages only here: one class, so no verdict
    assert tiny["verdict"] == "too few pairs to tell" and "one class" in tiny["verdict_reason"]
    assert {"ours", "perfect", "partial"} == set(res["beside_reference_judges"]["tiny"])
    assert {"n_kinds", "ci_low", "ci_high"} <= set(pd.read_csv(out / "controls.csv").columns)
    assert golden_m["n_pairs"] >= 2
    controls = pd.read_csv(out / "controls.csv")
    assert list(controls.columns[:3]) == ["rubric", "n", "pass_rate"] and "verdict" in controls.columns
    assert (out / "plots" / "confusion_tiny.png").is_file()
    assert (out / "plots" / "calibration.png").is_file()  # drawn here, so notebook 04 shows it on a cold run
    assert res["sources"]["absent"] == "not run"
    # every source that ran is measured at each boundary its labels can check, and audited for bias
    # between the systems Table 1 grades (their top-k on the source's passages)
    assert set(tiny["boundaries"]) == {"ge2"} and set(tiny["boundary_verdicts"]) == {"ge2"}
    bias = tiny["system_bias"]
    from spacelm.config.validate import graded_systems

    assert set(bias["systems"]) == set(graded_systems(cfg)) and "bm25+rerank" in bias["systems"]
    for v in bias["systems"].values():
        assert {"n_pairs", "mean_residual", "ci_low", "ci_high"} <= set(v) and v["n_pairs"] >= 1
    assert "kendall_tau" in bias and tiny["bias_audit_coverage"]["top_k"] == cfg.judge_check.bias_top_k
    assert tiny["in_domain"] is False and golden_m.get("system_bias") is None
    assert stage.run(cfg)["skipped"]


def test_a_source_may_leave_out_its_bias_audit(tiny_config):
    from spacelm.stages import judge_check

    rows, by, coverage = judge_check._audit(tiny_config, None, None, [], "trec", True, audit=False)
    assert rows == [] and by == {} and coverage == {"not run": "judge_check.sources[trec].bias_audit is false"}
    tiny_config.judge_check.bias_audit = False
    assert judge_check._audit(tiny_config, None, None, [], "trec", True)[2] == {
        "not run": "judge_check.bias_audit is false"
    }
