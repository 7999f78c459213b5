"""Reading a ranking under a token budget: the cut rule, hit and coverage on hand-built chunks,
and intervals clustered by document."""

from __future__ import annotations

import pytest

from spacelm.lib.retrieval.budget import (
    budget_depth,
    paired_differences,
    read_top_k,
    read_within_budget,
    reading,
    summarise,
)
from spacelm.lib.retrieval.span_gold import ChunkSpan, Span

TOKENS = {"a": 300, "b": 200, "c": 100}


def test_a_reader_stops_at_the_first_chunk_that_would_pass_the_budget():
    ranked = ["a", "b", "c"]
    assert read_within_budget(ranked, TOKENS, 600) == ["a", "b", "c"]
    assert read_within_budget(ranked, TOKENS, 500) == ["a", "b"]
    # b would pass 450; c would fit after a but is ranked after b: the reading ends at b
    assert read_within_budget(ranked, TOKENS, 450) == ["a"]
    # a first chunk longer than the budget alone: nothing is read
    assert read_within_budget(ranked, TOKENS, 250) == []
    assert read_top_k(ranked, 2) == ["a", "b"]


def test_the_depth_a_budget_can_need_is_the_shortest_chunks_that_fit_plus_one():
    assert budget_depth([10, 50, 20, 30], 60) == 4  # 10 + 20 + 30 fit, the fourth would not
    assert budget_depth([10, 50, 20, 30], 25) == 2
    assert budget_depth([10, 20], 1000) == 2  # never deeper than the chunks there are


CHUNKS = {
    "a": ChunkSpan("a", "d", 0, 120),  # 20 characters of the span
    "b": ChunkSpan("b", "d", 150, 400),  # 50 characters of the span
    "c": ChunkSpan("c", "e", 100, 200),  # another document, same offsets
    "g": ChunkSpan("g", "d", 199, 300),  # one character of the span
}
SPAN = Span("d", 100, 200)
TOK = {"a": 120, "b": 250, "c": 100, "g": 101}


@pytest.mark.parametrize(
    "read, hit, cov",
    [([], 0.0, 0.0), (["a"], 1.0, 0.2), (["a", "b"], 1.0, 0.7), (["c"], 0.0, 0.0), (["g"], 1.0, 0.01)],
)
def test_hit_is_any_character_of_the_span_read_and_coverage_the_share_read(read, hit, cov):
    r = reading(SPAN, read, CHUNKS, TOK, False)
    assert r.hit == hit and r.coverage == pytest.approx(cov)
    assert r.chunks == len(read) and r.tokens == sum(TOK[c] for c in read)


def _row(doc: str, hit: float, cov: float = None, chunks: int = 1) -> dict:
    cov = hit if cov is None else cov
    return {"doc_id": doc, "hit": hit, "coverage": cov, "chunks": chunks, "tokens": 10 * chunks, "list_ended": False}


def test_summary_counts_questions_documents_and_readers_who_read_nothing():
    rows = [_row("d1", 1.0, 0.5), _row("d1", 0.0, 0.0, chunks=0), _row("d2", 1.0, 1.0)]
    s = summarise(rows, 200, 0)
    assert s["hit_rate"] == pytest.approx(2 / 3) and s["coverage"] == pytest.approx(0.5)
    assert (s["n_questions"], s["n_documents"], s["n_read_nothing"]) == (3, 2, 1)
    assert s["mean_chunks_read"] == pytest.approx(2 / 3) and s["mean_tokens_read"] == pytest.approx(20 / 3)


def test_the_interval_is_as_wide_as_the_documents_not_the_questions():
    """Ten documents of ten questions each, every question of a document alike (five all hit,
    five all miss): the evidence is ten documents, so the interval must be about as wide as a
    share of 10; one that treated the 100 questions as independent would be about a third as wide."""
    rows = [_row(f"d{i}", float(i < 5)) for i in range(10) for _ in range(10)]
    s = summarise(rows, 2000, 1)
    assert s["hit_rate"] == 0.5
    assert s["hit_rate_ci_high"] - s["hit_rate_ci_low"] > 0.45
    independent = summarise([dict(r, doc_id=str(i)) for i, r in enumerate(rows)], 2000, 1)
    assert independent["hit_rate_ci_high"] - independent["hit_rate_ci_low"] < 0.25


def test_paired_differences_are_b_minus_a_over_the_shared_questions_clustered_by_document():
    a = {"q1": _row("d1", 0.0), "q2": _row("d1", 0.0), "q3": _row("d2", 1.0), "q4": _row("d3", 1.0)}
    b = {"q1": _row("d1", 1.0), "q2": _row("d1", 1.0), "q3": _row("d2", 1.0), "q5": _row("d4", 0.0)}
    hit, cov = paired_differences(a, b, 500, 0)
    assert hit["measure"] == "hit_rate" and cov["measure"] == "coverage"
    assert (hit["n_questions"], hit["n_documents"]) == (3, 2)
    assert hit["diff"] == pytest.approx(2 / 3) and hit["mean_a"] == pytest.approx(1 / 3)
    assert hit["ci_low"] <= hit["diff"] <= hit["ci_high"]
