import json

import pytest

from spacelm.lib import questions as synth
from spacelm.lib.golden import GoldenSample


@pytest.mark.parametrize("raw,expected", [
    ("Question: What altitude do Starlink satellites use?", ("What altitude do Starlink satellites use?", None)),
    ("1. **Statement:** The ISS has a Whipple shield.\nExplanation: ...", ("The ISS has a Whipple shield.", None)),
    ('"Summarise the debris mitigation rules for GEO."', ("Summarise the debris mitigation rules for GEO.", None)),
    ("Why?", (None, "too_short")),
    ("", (None, "empty")),
    ("What does the passage say about drag?", (None, "refers_to_passage")),
])
def test_parse_question(raw, expected):
    assert synth.parse_question(raw, min_words=3) == expected


def _golden(n=4):
    return [GoldenSample(id=f"{t}-{i}", task=t, question=f"{t} question {i}?", passage=f"passage {i}")
            for t in ("direct_qa", "analysis") for i in range(n)]


def test_plan_fixed_fewshot_shares_prefix_and_is_seeded(tiny_config):
    from spacelm.stages import chunk, ingest
    from spacelm.stages.data import load_chunks

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    chunks = load_chunks(tiny_config)
    tiny_config.synth.tasks = ["direct_qa", "analysis"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.synth.max_chunks = 3
    plan = synth.plan_generation(tiny_config, chunks, _golden())
    assert len(plan) == 6 and [p["task"] for p in plan] == ["direct_qa"] * 3 + ["analysis"] * 3
    direct = [p for p in plan if p["task"] == "direct_qa"]
    assert all(p["fewshot_ids"] == direct[0]["fewshot_ids"] for p in direct)  # fixed per task
    assert all(p["messages"][:-1] == direct[0]["messages"][:-1] for p in direct)  # shared prefix
    assert len(direct[0]["messages"]) == 1 + 2 * 2 + 1
    again = synth.plan_generation(tiny_config, chunks, _golden())
    assert [p["fewshot_ids"] for p in again] == [p["fewshot_ids"] for p in plan]
    tiny_config.synth.fewshot_sampling = "per_chunk"
    per_chunk = synth.plan_generation(tiny_config, chunks, _golden())
    assert len({tuple(p["fewshot_ids"]) for p in per_chunk if p["task"] == "direct_qa"}) > 1


def test_retention_table_counts_each_filter():
    recs = [
        {"task": "direct_qa", "drop_reason": None, "rank_bm25": 1, "rank_dense": None, "kept": True},
        {"task": "direct_qa", "drop_reason": "not_retrieved", "rank_bm25": None, "rank_dense": None, "kept": False},
        {"task": "analysis", "drop_reason": "duplicate", "kept": False},
        {"task": "analysis", "drop_reason": None, "rank_bm25": None, "rank_dense": 3, "kept": True},
    ]
    df = synth.retention_table(recs).set_index("task")
    assert df.loc["direct_qa", "valid"] == 2 and df.loc["direct_qa", "kept_bm25"] == 1
    assert df.loc["direct_qa", "kept_dense"] == 0 and df.loc["analysis", "kept_union"] == 1
    assert df.loc["all", "generated"] == 4 and df.loc["all", "retention_union_%"] == pytest.approx(66.7)


@pytest.mark.slow
def test_synth_stage_end_to_end_with_real_model(tiny_config, tiny_corpus):
    """Real embedded 0.5B model on the tiny corpus: writes questions, filters, exports."""
    pytest.importorskip("llama_cpp")
    rows = []
    for t in ("direct_qa", "summarization"):
        for i in range(2):
            rows.append({"id": f"{t}-{i}", "task": t, "question": f"What does note {i} say about collision avoidance?"
                         if t == "direct_qa" else f"Summarise what note {i} says about conjunction warnings.",
                         "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre."})
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tiny_config.synth.tasks = ["direct_qa", "summarization"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.synth.max_chunks = 2
    tiny_config.synth.filter_top_n = 3
    tiny_config.models.question_writer.model = "embedded:qwen2.5-coder-0.5b"
    tiny_config.models.question_writer.max_tokens = 48
    from spacelm.pipeline import run_stages

    res = run_stages(tiny_config, upto="synth")["synth"]
    out = tiny_config.synthetic_dir
    recs = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    # one call per distinct prompt (the tiny corpus repeats its text, so two chunks can give the same prompt)
    distinct = len({r["prompt_hash"] for r in recs})
    assert res["generated"] == 4 and res["llm"]["calls"] == distinct
    for r in recs:
        assert {"qid", "task", "question", "source_chunk_id", "doc_id", "fewshot_ids", "kept", "drop_reason",
                "prompt_hash", "model"} <= set(r)
        assert r["kept"] == (r["drop_reason"] is None)
    kept = [r for r in recs if r["kept"]]
    queries = (out / "beir" / "queries.jsonl").read_text().splitlines()
    assert len(queries) == len(kept)
    import datasets

    assert len(datasets.load_from_disk(str(out / "hf_dataset"))) == len(kept)
    # a forced re-run is answered from the cache: no model call, identical output
    first = (out / "questions.jsonl").read_bytes()
    res2 = run_stages(tiny_config, upto="synth", force=True)["synth"]
    assert res2["llm"]["calls"] == 0 and res2["llm"]["cache_hits"] == distinct
    assert (out / "questions.jsonl").read_bytes() == first
