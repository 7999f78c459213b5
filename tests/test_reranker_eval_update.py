"""`bench/reranker_eval.py --update`: a partial rerun (e.g. the in-domain set after its holes were
labelled) replaces only its own sets in the earlier output of the same checkpoint."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("reranker_eval", ROOT / "bench" / "reranker_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _record(sha: str, sets: dict, seconds: float) -> dict:
    return {"config": "c.yaml", "pool": 100, "checkpoint": {"sha256": sha}, "sets": sets, "seconds": seconds}


def test_a_partial_rerun_replaces_its_sets_and_keeps_the_others(tmp_path):
    bench = _bench()
    out = tmp_path / "reranker.json"
    out.write_text(json.dumps(_record("abc", {"golden/bm25": 1, "labels/bm25": 2, "trec/bm25": 3}, 900.0)))
    got = bench.updated(out, _record("abc", {"labels/bm25": 20, "labels-full/bm25": 21}, 60.0))
    assert got["sets"] == {"golden/bm25": 1, "labels/bm25": 20, "trec/bm25": 3, "labels-full/bm25": 21}
    assert got["seconds"] == 900.0 and got["remade"] == [{"sets": ["labels-full/bm25", "labels/bm25"], "seconds": 60.0}]
    with pytest.raises(SystemExit, match="another checkpoint"):
        bench.updated(out, _record("def", {"labels/bm25": 0}, 1.0))
    with pytest.raises(SystemExit, match="does not exist"):
        bench.updated(tmp_path / "none.json", _record("abc", {}, 1.0))


def test_short_passages_in_the_top_3_are_split_by_what_the_assessor_said_of_them():
    """measure(label_of=...): a short passage that is gold, one the assessor graded 2+, one graded
    lower and one with no label; the not-answering share counts the last two (its upper bound)."""
    bench = _bench()
    texts = {"gold": "g", "ans": "a", "toc": "1.2 Contents", "unk": "u", "long": "x" * 500}
    qrels = {"q": {"gold": 1}}
    grades = {"ans": 3, "toc": 0}
    lists = {
        k: [
            ["gold", "ans", "toc"],
        ]
        for k in ("before",)
    }
    lists["after"] = [["toc", "unk", "long"]]
    lists["cross-encoder alone"] = [["gold", "long", "ans"]]
    rows = {}
    bench.measure("run/bm25", rows, lists, ["q"], qrels, texts, 1, False, None, None, lambda q, d: grades.get(d))
    before, after, alone = (rows["run/bm25"][k] for k in ("before", "after", "cross-encoder alone"))
    assert before["short_top3"] == 1.0 and before["short_not_gold_top3"] == round(2 / 3, 4)
    assert before["short_not_answering_top3"] == round(1 / 3, 4) and before["short_unlabelled_top3"] == 0.0
    assert after["short_not_answering_top3"] == round(2 / 3, 4) and after["short_unlabelled_top3"] == round(1 / 3, 4)
    assert alone["short_not_gold_top3"] == round(1 / 3, 4) and alone["short_not_answering_top3"] == 0.0
