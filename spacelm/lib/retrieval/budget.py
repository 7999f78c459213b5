"""Reading a ranking under a budget: what a reader given the top of a ranked list actually sees of
a question's evidence span, so that chunk sizes can be compared at the same cost to the reader.

Two ways of cutting a ranking:

- **tokens** (equal reading budget): the ranked chunks are read in order while the running total
  of their tokens stays within the budget; the first chunk that would take it over the budget ends
  the reading (later, shorter chunks are not read). A first chunk longer than the budget alone
  means nothing is read for that question.
- **k** (equal number of chunks): the top-k chunks whatever their length; a 2,000-token chunk
  then gives the reader about eight times the text of a 256-token one.

Per question and cut: *hit* (1 when any read chunk shares at least one character with the
evidence span, else 0), *coverage* (the share of the span's characters the read chunks hold
together), the chunks and tokens read, and whether the ranked list ended before the cut did.
Means over questions get a 95% interval from a two-stage cluster bootstrap over documents
(questions written from one document are not independent); paired differences between two
chunkings are clustered the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .span_gold import ChunkSpan, Span, coverage, overlap

RULES = {
    "tokens": "ranked chunks read in order while their running token total stays within the budget; the first "
    "chunk that would pass it ends the reading (a first chunk longer than the budget: nothing read)",
    "k": "the top-k ranked chunks, whatever their length (equal k, not equal reading)",
}
MEASURES = ("hit_rate", "coverage")


def read_within_budget(ranked: Sequence[str], tokens: Mapping[str, int], budget: int) -> list[str]:
    """The chunks of `ranked` a reader with `budget` tokens reads (rule: :data:`RULES` "tokens")."""
    read, total = [], 0
    for cid in ranked:
        total += tokens[cid]
        if total > budget:
            break
        read.append(cid)
    return read


def read_top_k(ranked: Sequence[str], k: int) -> list[str]:
    return list(ranked[:k])


def budget_depth(token_counts: Sequence[int], budget: int) -> int:
    """How deep a ranking must go so that no reader with `budget` tokens runs out of it: one more
    than the most chunks that fit in the budget (the shortest ones, taken together)."""
    total, n = 0, 0
    for t in sorted(token_counts):
        total += t
        if total > budget:
            break
        n += 1
    return min(n + 1, len(token_counts))


class Reading(NamedTuple):
    """What one question's reader saw under one cut."""

    hit: float
    coverage: float
    chunks: int
    tokens: int
    list_ended: bool  # the ranked list ended before the cut: the reading may be short


def reading(span: Span, read: Sequence[str], chunks: Mapping[str, ChunkSpan], tokens, list_ended: bool) -> Reading:
    """Hit, coverage, chunks and tokens of the chunks `read` (see the module's doc)."""
    touched = any(
        chunks[c].doc_id == span.doc_id and overlap(span.start, span.end, chunks[c].start, chunks[c].end) > 0
        for c in read
    )
    return Reading(
        float(touched),
        coverage(span, list(read), chunks, len(read)),
        len(read),
        sum(tokens[c] for c in read),
        list_ended,
    )


def _means(rows: list[dict]) -> dict:
    n = max(len(rows), 1)
    return {"hit_rate": sum(r["hit"] for r in rows) / n, "coverage": sum(r["coverage"] for r in rows) / n}


def summarise(rows: list[dict], n_boot: int, seed: int) -> dict:
    """The mean hit rate and coverage of per-question `rows` (keys hit, coverage, chunks, tokens,
    list_ended, doc_id) with 95% cluster-bootstrap intervals over documents, the mean chunks and
    tokens read, and the counts behind them."""
    from ..stats import cluster_bootstrap_cis

    cis = cluster_bootstrap_cis(rows, [r["doc_id"] for r in rows], _means, n_boot, seed)
    n = max(len(rows), 1)
    out = {"n_questions": len(rows), "n_documents": len({r["doc_id"] for r in rows})}
    for m, v in _means(rows).items():
        out.update({m: v, f"{m}_ci_low": cis[m][0], f"{m}_ci_high": cis[m][1]})
    out.update(
        mean_chunks_read=sum(r["chunks"] for r in rows) / n,
        mean_tokens_read=sum(r["tokens"] for r in rows) / n,
        n_read_nothing=sum(r["chunks"] == 0 for r in rows),
        n_lists_ended=sum(bool(r["list_ended"]) for r in rows),
    )
    return out


def _paired_means(pairs: list[tuple[dict, dict]]) -> dict:
    n = max(len(pairs), 1)
    return {m: sum(b[k] - a[k] for a, b in pairs) / n for m, k in (("hit_rate", "hit"), ("coverage", "coverage"))}


def paired_differences(a: Mapping[str, dict], b: Mapping[str, dict], n_boot: int, seed: int) -> list[dict]:
    """b − a in hit rate and coverage over the questions both rows hold ({qid: row}, rows as in
    :func:`summarise`): per measure the mean difference, its 95% cluster-bootstrap interval over
    documents, and the two-sided cluster-robust t test's p-value (clusters: documents)."""
    from ..stats import cluster_bootstrap_cis, paired_difference

    qids = sorted(set(a) & set(b))
    pairs = [(a[q], b[q]) for q in qids]
    docs = [a[q]["doc_id"] for q in qids]
    cis = cluster_bootstrap_cis(pairs, docs, _paired_means, n_boot, seed)
    out = []
    for m, k in (("hit_rate", "hit"), ("coverage", "coverage")):
        t = paired_difference([x[k] for x, _ in pairs], [y[k] for _, y in pairs], docs)
        out.append(
            {
                "measure": m,
                "n_questions": len(qids),
                "n_documents": len(set(docs)),
                "mean_a": sum(x[k] for x, _ in pairs) / max(len(pairs), 1),
                "mean_b": sum(y[k] for _, y in pairs) / max(len(pairs), 1),
                "diff": t["diff"],
                "ci_low": cis[m][0],
                "ci_high": cis[m][1],
                "p_value": t["p_value"],
                "mde": t["mde"],
            }
        )
    return out
