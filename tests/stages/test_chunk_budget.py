"""The chunk-size study at equal reading budget on hand-built rankings: two chunkings of the same
two documents, where the large chunks win at equal k and lose at equal reader tokens."""

from __future__ import annotations

import pytest

from spacelm.lib import names
from spacelm.lib.ingest.chunking import Chunk
from spacelm.lib.report import chunk_budget as report_budget
from spacelm.stages import chunk_budget
from spacelm.stages.chunk_sizes import SizeRetrieval

QUESTIONS = [
    {"qid": "q1", "doc_id": "d", "span_start": 0, "span_end": 100},
    {"qid": "q2", "doc_id": "e", "span_start": 0, "span_end": 100},
]


def _chunk(cid: str, doc: str, start: int, end: int, tokens: int) -> Chunk:
    return Chunk(cid, doc, "x", 1, 1, start, end, tokens)


def _study() -> list[SizeRetrieval]:
    small = [_chunk("d:0", "d", 0, 100, 400), _chunk("d:1", "d", 100, 200, 400), _chunk("e:0", "e", 0, 100, 400)]
    large = [_chunk("D", "d", 0, 200, 1500), _chunk("E", "e", 0, 100, 1500)]
    small_ranked = {"q1": ["d:1", "d:0", "e:0"], "q2": ["e:0", "d:0", "d:1"]}
    large_ranked = {"q1": ["D", "E"], "q2": ["E", "D"]}
    return [
        SizeRetrieval(512, "golden", QUESTIONS, small, None, None, {"bm25": small_ranked}),
        SizeRetrieval(2000, "golden", QUESTIONS, large, None, None, {"bm25": large_ranked}),
    ]


def _rows():
    return [row for r in _study() for row in chunk_budget.question_rows(r, [1], [1000])]


def test_each_cut_reads_what_a_reader_would_and_the_rows_say_which_cut():
    t = chunk_budget.budget_table(_rows(), 200, 0).set_index(["chunk_size", "budget_kind", "budget"])
    # 1,000 tokens: two 400-token chunks at 512 (q1's second one is its span); a 1,500-token chunk is never read
    assert t.loc[(512, "tokens", 1000), "hit_rate"] == 1.0 and t.loc[(512, "tokens", 1000), "coverage"] == 1.0
    assert t.loc[(512, "tokens", 1000), "mean_tokens_read"] == 800
    assert t.loc[(2000, "tokens", 1000), "hit_rate"] == 0.0 and t.loc[(2000, "tokens", 1000), "n_read_nothing"] == 2
    # top-1: q1's first small chunk misses its span; every large first chunk holds it, at 1,500 tokens each
    assert t.loc[(512, "k", 1), "hit_rate"] == 0.5 and t.loc[(2000, "k", 1), "hit_rate"] == 1.0
    assert t.loc[(2000, "k", 1), "mean_tokens_read"] == 1500
    assert set(t["n_documents"]) == {2} and t["rule"].str.contains("equal k").sum() == 2


def test_sizes_are_compared_with_512_and_the_report_says_the_readings_disagree():
    rows = _rows()
    d = chunk_budget.budget_differences(rows, [2000, 512], 200, 0)
    assert set(d["size_a"]) == {512} and set(d["size_b"]) == {2000}
    at = d.set_index(["budget_kind", "measure"])
    assert at.loc[("tokens", "hit_rate"), "diff"] == pytest.approx(-1.0)
    assert at.loc[("k", "hit_rate"), "diff"] == pytest.approx(0.5)
    line = report_budget.agreement_line(chunk_budget.budget_table(rows, 200, 0))
    assert "512-token chunks (budget 1,000)" in line and "2000-token chunks (k 1)" in line and "disagree" in line
    assert chunk_budget.reference_size([256, 2000]) == 256 and chunk_budget.reference_size([256, 512, 2000]) == 512


def test_the_report_labels_equal_k_and_shows_figures_with_their_interval(tiny_config):
    cfg = tiny_config
    rows = _rows()
    table, diffs = chunk_budget.budget_table(rows, 200, 0), chunk_budget.budget_differences(rows, [512, 2000], 200, 0)
    (cfg.run_dir / "chunk_sizes").mkdir(parents=True)
    table.to_csv(cfg.run_dir / names.CHUNK_SIZES_EQUAL_BUDGET, index=False)
    diffs.to_csv(cfg.run_dir / names.CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES, index=False)
    text = "\n".join(report_budget.report_lines(cfg.run_dir))
    assert "| top-1 (equal k) " in text and "| 1,000 reader tokens " in text
    assert "n = 2 questions from 2 documents" in text and "Each size against 512 tokens" in text
    assert "1.000 [1.00, 1.00], 1,500 tokens" in text  # equal k shows the unequal reading


def test_a_reranked_list_reads_on_down_its_first_stage_beyond_its_pool():
    class Deep:
        def search(self, texts, k):
            return [[("c1", 3.0), ("c2", 2.0), ("c3", 1.0)][:k] for _ in texts]

    chunks = [_chunk(f"c{i}", "d", 0, 10, 100) for i in (1, 2, 3)]
    rankings = {"bm25": {"q1": [("c1", 3.0)]}, "bm25+rerank": {"q1": [("c2", 1.0)]}}
    got = chunk_budget.deep_rankings({"bm25": Deep()}, [{"qid": "q1", "question": "?"}], chunks, 250, rankings)
    assert got["bm25"]["q1"] == ["c1", "c2", "c3"]  # searched again: 250 tokens can need three 100-token chunks
    assert got["bm25+rerank"]["q1"] == ["c2", "c1", "c3"]
