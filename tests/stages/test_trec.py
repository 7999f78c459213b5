"""TREC run and qrels files: written by retrieve and grade, read as they are by ranx and pytrec_eval."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from spacelm.lib.retrieval.trec import qrels_text, read_qrels, read_run, run_text

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "results" / "quick" / "retrieval"


def test_run_and_qrels_format_round_trip(tmp_path):
    run = {"q1": [("d:1", 2.0), ("d:2", 2.0), ("d:3", 1.5)], "q0": [("d:9", 0.3)]}
    text = run_text(run, "bm25+rerank")
    lines = text.splitlines()
    assert lines[0] == "q0 Q0 d:9 1 0.300000 bm25+rerank"
    assert all(len(x.split()) == 6 for x in lines)
    got = read_run(_write(tmp_path / "r.trec", text))
    assert list(got["q1"]) == ["d:1", "d:2", "d:3"]
    scores = list(got["q1"].values())
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3  # ties broken in list order
    q = {"q1": {"d:1": 1, "d:4": 0}}
    assert read_qrels(_write(tmp_path / "q.trec", qrels_text(q))) == q
    with pytest.raises(ValueError):
        run_text({"q 1": [("d", 1.0)]}, "x")


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def _quick_files():
    runs = sorted(QUICK.glob("run.*.trec"))
    if not runs:
        pytest.skip("results/quick/retrieval holds no TREC run files")
    return runs


def test_quick_trec_files_read_by_ranx_match_the_summary():
    from ranx import Qrels, Run, evaluate

    summary = pd.read_csv(QUICK / "summary.csv").set_index("system")
    qrels = Qrels.from_file(str(QUICK / "qrels.trec"), kind="trec")
    for path in _quick_files():
        system = path.name[len("run.") : -len(".trec")]
        run = Run.from_file(str(path), kind="trec")
        assert set(run.keys()) == set(qrels.keys())  # answerable questions only
        got = evaluate(qrels, run, ["ndcg@10", "recall@10"])
        assert got["ndcg@10"] == pytest.approx(summary.loc[system, "ndcg@10"], abs=1e-3), system
        assert got["recall@10"] == pytest.approx(summary.loc[system, "recall@10"], abs=1e-3), system


def test_quick_judge_qrels_read_by_pytrec_eval():
    import pytrec_eval

    _quick_files()
    judge = read_qrels(QUICK / "qrels.judge.trec")
    assert judge and all(g in (0, 1, 2, 3) for q in judge.values() for g in q.values())
    assert set(judge) <= set(read_qrels(QUICK / "qrels.trec"))  # answerable questions only
    ev = pytrec_eval.RelevanceEvaluator(judge, {"ndcg_cut"})
    out = ev.evaluate(read_run(QUICK / "run.bm25.trec"))
    assert out and all(0 <= v["ndcg_cut_10"] <= 1 for v in out.values())
