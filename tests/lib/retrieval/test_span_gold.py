"""Chunk-independent gold: spans located verbatim, the overlap rule, coverage, across chunkings."""

from __future__ import annotations

import pytest

from spacelm.lib.retrieval.span_gold import (
    ChunkSpan,
    Span,
    best_chunk,
    coverage,
    is_relevant,
    locate_passage,
    span_qrels,
)


def test_locate_passage_ignores_whitespace_case_and_quote_style():
    doc = "Intro.\n\nThe  screening volume is\nthin radially \u2014 and \u201cwide\u201d along-track. Next."
    hit = locate_passage('the screening volume is thin radially - and "wide" along-track.', doc)
    assert hit is not None
    a, b = hit
    assert doc[a:b].startswith("The  screening") and doc[a:b].endswith("along-track.")
    assert locate_passage("not in the document at all", doc) is None
    assert locate_passage("   ", doc) is None


def test_overlap_rule_by_hand():
    span = Span("d", 100, 200)  # 100 characters
    # a long chunk holding the whole span: overlap 100 >= 0.5 * min(100, 1000)
    assert is_relevant(span, ChunkSpan("big", "d", 0, 1000))
    # a small chunk inside the span: overlap 40 >= 0.5 * 40
    assert is_relevant(span, ChunkSpan("small", "d", 120, 160))
    # grazing the edge: 30 of 100 shared < 0.5 * min(100, 100)
    assert not is_relevant(span, ChunkSpan("edge", "d", 170, 270))
    # exactly half: 50 >= 0.5 * 100
    assert is_relevant(span, ChunkSpan("half", "d", 150, 250))
    assert not is_relevant(span, ChunkSpan("other-doc", "e", 0, 1000))


def test_qrels_compare_across_chunk_sizes():
    """One span under three chunkings: each gives gold, and coverage is comparable."""
    span = {"q": Span("d", 250, 350)}
    small = [ChunkSpan(f"s{i}", "d", i * 100, (i + 1) * 100) for i in range(10)]  # span across s2 and s3
    medium = [ChunkSpan(f"m{i}", "d", i * 200, (i + 1) * 200) for i in range(5)]  # m1 = 200-400
    large = [ChunkSpan("l0", "d", 0, 1000)]
    assert span_qrels(span, small) == {"q": {"s2": 1, "s3": 1}}  # 50 of 100 each
    assert span_qrels(span, medium) == {"q": {"m1": 1}}  # m1 holds 250-350 entirely
    assert span_qrels(span, large) == {"q": {"l0": 1}}
    by_id = {c.chunk_id: c for c in small}
    assert coverage(span["q"], ["s2", "s7"], by_id, 1) == pytest.approx(0.5)
    assert coverage(span["q"], ["s2", "s3"], by_id, 2) == pytest.approx(1.0)
    assert coverage(span["q"], ["s7", "s2", "s2"], by_id, 3) == pytest.approx(0.5)  # no double counting


def test_overlap_rule_on_uneven_chunks_and_fallback_to_best_overlap():
    span = {"q": Span("d", 90, 300)}  # 210 characters: c1 lies inside it, c2 shares 105 of its 205
    chunks = [ChunkSpan("c0", "d", 0, 95), ChunkSpan("c1", "d", 95, 195), ChunkSpan("c2", "d", 195, 400)]
    assert best_chunk(span["q"], chunks) == "c2"
    assert span_qrels(span, chunks) == {"q": {"c1": 1, "c2": 1}}
    # a chunk grazing a short span fails the rule; the span keeps its best-overlapping chunk
    short = {"q": Span("d", 90, 100)}  # 10 characters, 5 of them in c0 (95 long) and 5 in c1
    assert span_qrels(short, chunks) == {"q": {"c0": 1, "c1": 1}}
    graze = {"q": Span("d", 180, 400)}  # c1 shares 15 of its 100: no; c2 shares all of its 205: yes
    assert span_qrels(graze, chunks) == {"q": {"c2": 1}}
    assert span_qrels({"q": Span("nowhere", 0, 10)}, chunks) == {}
