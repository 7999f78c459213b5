"""Chunk-independent gold: a question's evidence as a character span of its document.

A question's gold is the passage it was written from (a golden sample's verbatim passage, or a
synthetic question's source chunk) located as ``(doc_id, start, end)`` in the cleaned document
text. Any chunking of the same documents can then be scored against it:

- a chunk is *relevant* when it overlaps the span by at least ``min_share`` of the shorter of
  the two (so a 2,000-token chunk holding a 256-token span counts, and so does a 256-token chunk
  lying inside a long span, but not one grazing its edge);
- *span coverage@k* is the share of the span's characters that the top-k chunks cover together:
  it needs no relevance threshold and reads the same whatever the chunk size.

Recall, nDCG and MRR computed from these qrels, and coverage, compare across chunk sizes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

MIN_SHARE = 0.5


class Span(NamedTuple):
    doc_id: str
    start: int
    end: int

    def __len__(self) -> int:  # characters
        return max(0, self.end - self.start)


class ChunkSpan(NamedTuple):
    chunk_id: str
    doc_id: str
    start: int
    end: int


_WS = re.compile(r"\s+")
_FOLD = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u00a0": " "}
)


def _normalised_with_map(text: str) -> tuple[str, list[int]]:
    """`text` with whitespace runs collapsed to one space, quotes/dashes folded and lower-cased,
    and for every character of the result its offset in `text`."""
    out, where = [], []
    prev_space = True
    for i, ch in enumerate(text.translate(_FOLD)):
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                where.append(i)
            prev_space = True
            continue
        out.append(ch.lower())
        where.append(i)
        prev_space = False
    return "".join(out), where


def locate_passage(passage: str, doc_text: str) -> tuple[int, int] | None:
    """(start, end) of `passage` in `doc_text`, matching up to whitespace, case, curly quotes and
    dashes; None when it is not there verbatim."""
    needle = _WS.sub(" ", passage.translate(_FOLD)).strip().lower()
    if not needle:
        return None
    hay, where = _normalised_with_map(doc_text)
    i = hay.find(needle)
    if i < 0:
        return None
    return where[i], where[i + len(needle) - 1] + 1


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    return max(0, min(a_end, b_end) - max(a_start, b_start))


def is_relevant(span: Span, chunk: ChunkSpan, min_share: float = MIN_SHARE) -> bool:
    """The overlap rule: shared characters ≥ `min_share` × the shorter of span and chunk."""
    if chunk.doc_id != span.doc_id:
        return False
    shorter = min(len(span), chunk.end - chunk.start)
    return shorter > 0 and overlap(span.start, span.end, chunk.start, chunk.end) >= min_share * shorter


def relevant_chunks(span: Span, chunks: Iterable[ChunkSpan], min_share: float = MIN_SHARE) -> list[str]:
    return [c.chunk_id for c in chunks if is_relevant(span, c, min_share)]


def best_chunk(span: Span, chunks: Iterable[ChunkSpan]) -> str | None:
    """The chunk sharing most characters with the span (ties: the earlier chunk)."""
    best, most = None, 0
    for c in chunks:
        if c.doc_id == span.doc_id:
            n = overlap(span.start, span.end, c.start, c.end)
            if n > most:
                best, most = c.chunk_id, n
    return best


def span_qrels(spans: dict[str, Span], chunks: Sequence[ChunkSpan], min_share: float = MIN_SHARE) -> dict:
    """{qid: {chunk_id: 1}} under the overlap rule; a question whose span no chunk meets keeps its
    best-overlapping chunk (so every located question has gold)."""
    by_doc: dict[str, list[ChunkSpan]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out = {}
    for qid, s in spans.items():
        pool = by_doc.get(s.doc_id, [])
        rel = relevant_chunks(s, pool, min_share) or [b for b in [best_chunk(s, pool)] if b]
        if rel:
            out[qid] = {cid: 1 for cid in rel}
    return out


def coverage(span: Span, ranked: Sequence[str], chunks_by_id: dict[str, ChunkSpan], k: int) -> float:
    """Share of the span's characters covered by the union of the top-k chunks."""
    if len(span) == 0:
        return 0.0
    pieces = sorted(
        (max(c.start, span.start), min(c.end, span.end))
        for c in (chunks_by_id[cid] for cid in ranked[:k] if cid in chunks_by_id)
        if c.doc_id == span.doc_id and overlap(span.start, span.end, c.start, c.end) > 0
    )
    covered, reach = 0, span.start
    for a, b in pieces:
        a = max(a, reach)
        if b > a:
            covered += b - a
            reach = b
    return covered / len(span)


def mean_coverage(spans: dict[str, Span], rankings: dict[str, Sequence[str]], chunks_by_id: dict, k: int) -> float:
    vals = [coverage(s, rankings.get(q, []), chunks_by_id, k) for q, s in spans.items()]
    return sum(vals) / len(vals) if vals else float("nan")
