from spacelm.config import from_dict
from spacelm.lib.report.setup_table import COLUMNS, comparability, setup_rows


def test_the_papers_setup_matches_on_judge_and_chunk_size_only_when_both_are_the_papers():
    ours = from_dict({"chunking": {"max_tokens": 256}, "models": {"judge": {"model": "embedded:qwen2.5-coder-1.5b"}}})
    rows = setup_rows(ours.run_setup(), sizes={"grade": (30, 19)})
    assert all(set(COLUMNS) <= set(r) for r in rows)
    by = {r["component"]: r for r in rows}
    assert by["judge"]["match"] == "no" and by["chunking"]["match"] == "no"
    assert by["Table 1 questions"]["this_run"] == "30 questions / 19 source chunks"
    assert comparability(rows) == (
        "no: chunks of 256 vs 2,000 tokens; judge embedded:qwen2.5-coder-1.5b vs Llama 3.3 70B"
    )
    paper = from_dict(
        {
            "chunking": {"max_tokens": 2000},
            "models": {"judge": {"backend": "vllm", "model": "meta-llama/Llama-3.3-70B-Instruct"}},
        }
    )
    rows = setup_rows(paper.run_setup())
    assert comparability(rows) == "yes"
    assert {r["component"]: r["match"] for r in rows}["judge"] == "yes"


def test_a_trained_reranker_says_what_it_was_trained_on_and_what_was_held_out():
    cfg = from_dict({"retrieval": {"reranker": {"kind": "cross-encoder", "model": "trained:ce-x"}}})
    stage = {
        "pairs": 540,
        "sources": [
            {"name": "synthetic", "questions_written": 10, "questions_kept": 7, "writer": "w", "training_chunks": 90},
            {"name": "scifact", "split": "train", "queries": 50},
        ],
        "held_out": {"chunks": 12, "questions": 9},
    }
    by = {r["component"]: r for r in setup_rows(cfg.run_setup(), stages={"train-reranker": stage})}
    assert by["reranker and its pool"]["this_run"] == (
        "cross-encoder reranker trained:ce-x over top 10% of the chunks; trained on 7 of 10 synthetic "
        "questions by w over 90 chunks + scifact train (50 queries) (540 pairs), 12 chunks of the 9 "
        "evaluation questions held out"
    )
    plain = {r["component"]: r for r in setup_rows(cfg.run_setup())}
    assert plain["reranker and its pool"]["this_run"].endswith("of the chunks")


def test_the_wrong_passages_row_names_how_each_setting_drew_them_and_matches_only_the_papers():
    """The paper added unrelated in-domain passages: a run matches it when both the noise settings
    and the negative setting draw other documents' chunks at random; a run with no answer stage says so."""
    rows = {r["component"]: r for r in setup_rows(from_dict({}).run_setup(), sizes={"answer": (5, 5)})}
    assert rows["Table 2 wrong passages"]["match"] == "yes"
    split = from_dict({"answer": {"wrong_sampling": "bm25", "negative_sampling": "random"}}).run_setup()
    assert (split.wrong_sampling, split.negative_sampling) == ("bm25", "random")
    row = {r["component"]: r for r in setup_rows(split, sizes={"answer": (5, 5)})}["Table 2 wrong passages"]
    assert row["match"] == "no" and row["this_run"].startswith("noise: BM25's top chunks of any document")
    assert row["this_run"].endswith("negative setting: chunks of other documents at random")
    alike = from_dict({"answer": {"wrong_sampling": "hard"}}).run_setup()
    assert alike.negative_sampling == "hard"
    none = {r["component"]: r for r in setup_rows(split)}["Table 2 wrong passages"]
    assert none["this_run"] == "– (no answer stage)"
