"""An instrument never shares a model, a feature or a score with what it measures: the config check
refuses a relevance grader that reads the scorer of a system it grades, naming both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spacelm.config import ConfigError, from_dict
from spacelm.lib.instruments import Instrument, model_key, shared_scorers, system_scorers

ROOT = Path(__file__).resolve().parents[2]
# the old embedded grader: the judge's few-shot P(yes) and the all-MiniLM-L6-v2 cosine
SHARING = {"grading": {"method": "calibrated", "calibration": "qwen2.5-coder-1.5b"}}


def test_a_grader_reading_the_dense_retrievers_cosine_is_refused_naming_both():
    with pytest.raises(ConfigError) as e:
        from_dict(dict(SHARING, retrieval={"dense": {"model": "embedded:minilm"}}))
    msg = str(e.value)
    assert "grading.calibration" in msg and "qwen2.5-coder-1.5b" in msg
    assert "dense ranks by cosine (embedded:minilm)" in msg and "allow_shared_scorer" in msg


def test_the_declared_exception_loads_and_an_independent_grader_needs_none():
    cfg = from_dict(dict(SHARING, grading=dict(SHARING["grading"], allow_shared_scorer=True)))
    assert cfg.grading.allow_shared_scorer
    # the same grader beside a dense retriever on another model shares nothing
    from_dict(dict(SHARING, retrieval={"dense": {"model": "embedded:mpnet"}, "reranker": {"kind": "none"}}))
    # nor when no graded system reads MiniLM (BM25 only)
    from_dict(
        dict(
            SHARING,
            retrieval={"systems": ["bm25", "bm25+rerank"]},
            grading=dict(SHARING["grading"], retrievers=["bm25"]),
        )
    )


def test_the_prompt_grader_is_refused_when_an_llm_reranker_is_the_judge_itself():
    with pytest.raises(ConfigError, match="bm25\\+rerank ranks by relevance digit"):
        from_dict({"retrieval": {"reranker": {"kind": "llm"}}, "grading": {"method": "prompt"}})


def test_systems_scorers_and_model_identity_by_hand():
    class R:
        class dense:
            model = "sentence-transformers/all-MiniLM-L6-v2"

        class reranker:
            kind = "biencoder"
            model = "embedded:mpnet"

    got = system_scorers(["bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid"], R)
    assert got == {
        "bm25": set(),
        "dense": {"minilm"},
        "bm25+rerank": {"mpnet"},
        "dense+rerank": {"minilm", "mpnet"},
        "hybrid": {"minilm"},
    }
    assert model_key("all-MiniLM-L6-v2") == model_key("embedded:minilm") == "minilm"
    judge = Instrument("grader", "0-3", {"fewshot_yes": "embedded:qwen2.5-coder-1.5b", "cosine": "embedded:mpnet"})
    assert shared_scorers(judge, got) == {
        "bm25+rerank": ["cosine (embedded:mpnet)"],
        "dense+rerank": ["cosine (embedded:mpnet)"],
    }


def test_judge_check_exits_2_before_any_model_call_naming_both(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "run_name: sharing\ngrading:\n  method: calibrated\n  calibration: qwen2.5-coder-1.5b\n"
        "retrieval:\n  dense:\n    model: embedded:minilm\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "spacelm.cli", "judge-check", "--config", str(cfg)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "dense ranks by cosine (embedded:minilm)" in r.stderr and "qwen2.5-coder-1.5b" in r.stderr
    assert "Traceback" not in r.stderr and not (ROOT / "results" / "sharing").exists()


def test_the_chunk_size_studys_table1_is_checked_with_its_own_dense_model():
    """The study grades its dense system with chunk_study.dense_model: a grader reading that model's
    cosine is refused even when the run's own dense retriever is another model."""
    study = {"sizes": [256, 512], "grade_questions": 5, "systems": ["bm25", "dense", "bm25+rerank", "dense+rerank"]}
    cfg = dict(SHARING, retrieval={"dense": {"model": "embedded:mpnet"}, "reranker": {"kind": "none"}})
    from_dict(cfg)  # MiniLM is no graded system's model here
    with pytest.raises(ConfigError, match="dense ranks by cosine"):
        from_dict(dict(cfg, chunk_study=dict(study, dense_model="embedded:minilm")))


def test_a_trained_cross_encoder_counts_as_its_base_model_for_independence():
    """A reranker fine-tuned from MiniLM reads MiniLM's lineage: a grader on MiniLM's cosine is refused
    even for BM25 + that reranker, naming the reranker."""
    train = {"questions": 0, "labelled": [{"name": "s", "path": "x"}]}
    rr = {"kind": "cross-encoder", "model": "trained:ce-x", "train": train}
    with pytest.raises(ConfigError, match="bm25\\+rerank"):
        from_dict(
            dict(
                SHARING,
                retrieval={"systems": ["bm25", "bm25+rerank"], "reranker": rr},
                grading=dict(SHARING["grading"], retrievers=["bm25"]),
            )
        )
    cfg = from_dict({"retrieval": {"reranker": rr}})
    assert system_scorers(["bm25+rerank"], cfg.retrieval)["bm25+rerank"] == {"trained:ce-x", "minilm"}
