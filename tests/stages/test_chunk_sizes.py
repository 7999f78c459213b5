"""The chunk-size study on a hand-built corpus: the same questions scored at two chunk sizes
against their evidence spans (BM25 only: no model needed)."""

from __future__ import annotations

import json

import pandas as pd

from spacelm.config import load_config
from spacelm.pipeline import run_stages
from spacelm.stages import chunk_sizes
from spacelm.stages.report import chunk_size_lines

TOPICS = {
    "debris": [
        "Fragments from the breakup spread along the orbit within weeks.",
        "Small debris below ten centimetres cannot be tracked from the ground.",
        "Explosions of spent upper stages were the main source of fragments in the 1980s.",
        "Removal of large derelict objects lowers the rate of future collisions.",
    ],
    "conjunctions": [
        "A conjunction warning lists the time of closest approach and the miss distance.",
        "Operators compare the probability of collision with a threshold of one in ten thousand.",
        "Covariance realism decides whether the computed probability can be trusted.",
        "A manoeuvre is planned when the risk stays above the threshold two days before the event.",
    ],
    "policy": [
        "The regulation asks operators to register every satellite with the national authority.",
        "Space traffic management needs shared data on the positions of objects.",
        "The council called for a common approach to collision avoidance services.",
        "Member states contribute sensors to the surveillance and tracking partnership.",
    ],
}


def test_chunk_size_study_scores_the_same_questions_at_each_size(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for doc, sentences in TOPICS.items():
        (raw / f"{doc}.txt").write_text("\n\n".join(" ".join([s] * 3) for s in sentences), encoding="utf-8")
    golden = [
        {
            "id": "g1",
            "task": "direct_qa",
            "question": "How small is debris that cannot be tracked from the ground?",
            "passage": TOPICS["debris"][1],
            "doc_id": "debris",
        },
        {
            "id": "g2",
            "task": "direct_qa",
            "question": "What threshold of collision probability do operators use?",
            "passage": TOPICS["conjunctions"][1],
            "doc_id": "conjunctions",
        },
        {
            "id": "g3",
            "task": "analysis",
            "question": "Who contributes sensors to the tracking partnership?",
            "passage": TOPICS["policy"][3],
            "doc_id": "policy",
        },
    ]
    (raw / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
    (tmp_path / "c.yaml").write_text("run_name: cs\n")
    cfg = load_config(
        tmp_path / "c.yaml",
        {
            "run_name": "cs",
            "corpus": {"raw_dir": str(raw), "golden_samples": str(raw / "golden.jsonl")},
            "paths": {
                "processed_dir": str(tmp_path / "p"),
                "synthetic_dir": str(tmp_path / "s"),
                "results_dir": str(tmp_path / "r"),
                "cache_dir": str(tmp_path / "c"),
            },
            "chunking": {"max_tokens": 40},
            "retrieval": {"systems": ["bm25"], "k_values": [1, 3], "pool": 5},
            "grading": {"top_k": [1, 3]},
            "answer": {"retrieve_k": 3},
            "chunk_study": {"sizes": [24, 200], "systems": ["bm25"], "question_sets": ["golden"]},
        },
    )
    run_stages(cfg, upto="chunk")
    summary = chunk_sizes.run(cfg)
    assert summary["question_sets"] == {"golden": 3}
    table = pd.read_csv(cfg.run_dir / "chunk_sizes" / "summary.csv")
    assert sorted(table["chunk_size"]) == [24, 200] and set(table["n_questions"]) == {3}
    small, large = (table[table.chunk_size == s].iloc[0] for s in (24, 200))
    # one 200-token chunk holds a whole document, so a question's span lies in one gold chunk
    assert large["gold_chunks_per_question"] == 1.0
    # BM25 finds these by their words at both sizes; the whole span is covered by the top-3
    assert small["coverage@3"] == 1.0 and large["coverage@3"] == 1.0
    assert (cfg.run_dir / "chunk_sizes" / "24" / "golden" / "retrieval" / "summary.csv").is_file()
    # every figure with its interval, and each size against the smallest on the same questions
    assert {"ndcg@3_ci_low", "ndcg@3_ci_high", "recall@3_ci_low"} <= set(table.columns)
    diffs = pd.read_csv(cfg.run_dir / "chunk_sizes" / "differences.csv")
    assert list(diffs["metric"]) == ["ndcg@3", "recall@3"] and set(diffs["size_b"]) == {200}
    row = diffs.iloc[0]
    assert row["n_questions"] == 3 and abs(row["diff"] - (large["ndcg@3"] - small["ndcg@3"])) < 1e-3
    costs = pd.read_csv(cfg.run_dir / "chunk_sizes" / "costs.csv")
    assert list(costs["chunk_size"]) == [24, 200] and costs["chunks"].iloc[0] > costs["chunks"].iloc[1]
    # BM25 alone: no dense model is named, loaded or declared
    assert costs["dense_model"].isna().all() and summary["dense_model"] is None
    assert "dense" not in chunk_sizes.STAGE.models(cfg)
    lines = chunk_size_lines(cfg, {})
    assert lines[0] == "## Chunk sizes" and sum(ln.startswith("|") and " 24 |" in ln for ln in lines) >= 2
    text = "\n".join(lines)  # no grading, no reranker, no run questions here: the report does not speak of them
    assert "graded relevance" not in text and "truncated reranker" not in text and "synthetic questions" not in text
    assert "calibrated score" not in text
    # graded by the calibrated judge at a size beyond its cosine encoder's window: the report says what it cannot see
    cfg.chunk_study.grade_questions, cfg.grading.method = 2, "calibrated"
    cfg.chunk_study.sizes = [24, 300]
    text = "\n".join(chunk_size_lines(cfg, {}))  # the default grader reads no embedding: nothing to say
    assert "Table 1's grade here is a calibrated score" not in text
    cfg.grading.calibration = "qwen2.5-coder-1.5b"  # the old grader, with the MiniLM cosine
    text = "\n".join(chunk_size_lines(cfg, {}))
    assert "calibrated score" in text and "embedded:minilm" in text and "at most 256 word pieces" in text


def test_sizes_are_compared_on_the_questions_placed_at_both_clustered_by_their_own_source_chunk():
    """Hand-built per-question scores: the difference is larger − smallest over the questions
    both sizes placed, clustered by the source chunk each question had in the run's chunking
    (so q1 and q2, from one chunk, count as one cluster), Holm-adjusted over sizes."""
    from spacelm.stages.retrieve import RetrievalEval

    questions = [
        {"qid": "q1", "source_chunk_id": "d:0"},
        {"qid": "q2", "source_chunk_id": "d:0"},
        {"qid": "q3", "source_chunk_id": "d:1"},
        {"qid": "q4", "source_chunk_id": "e:0"},
    ]
    scores = {
        100: {"q1": 0.0, "q2": 0.5, "q3": 1.0, "q4": 0.0},
        400: {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 0.5},
        900: {"q1": 1.0, "q3": 1.0, "q4": 1.0},  # q2's evidence was not placed at 900
    }
    retrieval = [
        chunk_sizes.SizeRetrieval(
            size,
            "golden",
            [],
            [],
            RetrievalEval(
                None, [{"qid": q, "system": "bm25", "ndcg@10": v} for q, v in per_q.items()], [], {"bm25": {}}, {}, {}
            ),
        )
        for size, per_q in scores.items()
    ]
    d = chunk_sizes.size_differences(retrieval, {"golden": questions}, ["ndcg@10"])
    assert list(d["size_b"]) == [400, 900] and set(d["size_a"]) == {100}
    at400, at900 = d.iloc[0], d.iloc[1]
    assert at400["n_questions"] == 4 and at400["n_source_chunks"] == 3
    assert abs(at400["diff"] - (3.5 - 1.5) / 4) < 1e-9 and abs(at400["mean_a"] - 1.5 / 4) < 1e-9
    assert at900["n_questions"] == 3 and abs(at900["diff"] - 2.0 / 3) < 1e-9
    assert (d["p_holm"] >= d["p_value"]).all()


def test_table1_at_each_size_asks_the_judge_through_the_stage_seam(tiny_config):
    """Table 1 per chunk size grades through `ModelTurns` (the seam `spacelm run` and `spacelm
    plan` share), one phase per size, on the same chosen questions at every size."""
    from spacelm.lib.ingest.chunking import Chunk
    from spacelm.lib.llm import LLM
    from spacelm.runner.base import ModelTurns, models_opened_by
    from spacelm.stages.retrieve import RetrievalEval
    from tests.lib.judge.test_judge_check import ScriptedJudge

    cfg = tiny_config
    cfg.grading.retrievers = ["bm25"]
    cfg.chunk_study.systems = ["bm25", "bm25+rerank"]
    cfg.chunk_study.grade_questions = 2
    cfg.chunk_study.grade_top_k = [2]
    retrieval = []
    for size, per_chunk in ((24, 1), (200, 4)):
        chunks = []
        for doc in ("debris", "conjunctions"):
            s = TOPICS[doc]
            for i in range(0, len(s), per_chunk):
                t = " ".join(s[i : i + per_chunk])
                chunks.append(Chunk(f"{doc}:{i // per_chunk}", doc, t, 1, 1, 0, len(t), len(t.split())))
        questions = [
            {
                "qid": f"q{j}",
                "question": TOPICS["debris"][j],
                "source_chunk_id": f"debris:{j // per_chunk}",
                "doc_id": "debris",
                "task": "direct_qa",
            }
            for j in range(3)
        ]
        ranked = {q["qid"]: [(c.chunk_id, 1.0) for c in chunks[:2]] for q in questions}
        reranked = {q: list(reversed(r)) for q, r in ranked.items()}
        evaluation = RetrievalEval(None, [], [], {"bm25": ranked, "bm25+rerank": reranked}, {}, {})
        retrieval.append(chunk_sizes.SizeRetrieval(size, "run", questions, chunks, evaluation))
    phases = []
    backend = ScriptedJudge()
    with models_opened_by(lambda c, d=None: LLM(c, backend=backend)):
        turns = ModelTurns(cfg, "chunk-sizes")
        real_use = turns.use
        turns.use = lambda role, fn, phase="": phases.append((role, phase)) or real_use(role, fn, phase)
        graded = chunk_sizes.grade_sizes(cfg, retrieval, {"run": retrieval[0].questions}, turns)
    assert phases == [("judge", "relevance grades at 24"), ("judge", "relevance grades at 200")]
    assert [g.size for g in graded] == [24, 200]
    assert [g.stats["graded_questions"] for g in graded] == [2, 2]  # the same chosen questions at both sizes
    assert {r["qid"] for r in graded[0].rows} == {r["qid"] for r in graded[1].rows}
    assert sum(g.stats["judge_calls"] for g in graded) == len(backend.requests) == turns.stats["judge"]["calls"]
    assert all(set(g.table["chunk_size"]) == {g.size} for g in graded)
    # Table 1's paired tests per size, clustered over the chunk holding each question's evidence at that size
    assert all(set(g.tests["chunk_size"]) == {g.size} for g in graded)
    assert set(graded[0].tests["comparison"]) == {"reranked - retrieved"}
    assert set(graded[0].tests["n_questions"]) == {2}
    assert set(graded[0].tests["n_source_chunks"]) == {2} and set(graded[1].tests["n_source_chunks"]) == {1}
