"""TREC run and qrels files: the formats trec_eval, ranx, ir_measures and pytrec_eval read.

A run file has six whitespace-separated columns per line: `qid Q0 docid rank score tag`; a qrels
file four: `qid 0 docid relevance`. Ids are written as they are (they hold no whitespace: a chunk id
is `doc-id:n`); a line with whitespace in an id is refused rather than written misaligned."""

from __future__ import annotations

from pathlib import Path


def _id(x) -> str:
    s = str(x)
    if not s or any(c.isspace() for c in s):
        raise ValueError(f"a TREC id must be non-empty and hold no whitespace: {s!r}")
    return s


def run_text(rankings: dict, tag: str) -> str:
    """`rankings`: {qid: [(docid, score), ...]} best first. Ranks count from 1 in list order;
    scores are made strictly decreasing within a query where they tie, so a reader that sorts by
    score (trec_eval, ranx) keeps the list's order."""
    lines = []
    for qid in sorted(rankings):
        prev = None
        for rank, (doc, score) in enumerate(rankings[qid], 1):
            s = round(float(score), 6)
            if prev is not None and s >= prev:
                s = round(prev - 1e-6, 6)
            prev = s
            lines.append(f"{_id(qid)} Q0 {_id(doc)} {rank} {s:.6f} {_id(tag)}")
    return "\n".join(lines) + ("\n" if lines else "")


def qrels_text(qrels: dict) -> str:
    """`qrels`: {qid: {docid: relevance (int)}}."""
    lines = [f"{_id(qid)} 0 {_id(doc)} {int(rel)}" for qid in sorted(qrels) for doc, rel in sorted(qrels[qid].items())]
    return "\n".join(lines) + ("\n" if lines else "")


def read_run(path: Path) -> dict:
    """{qid: {docid: score}} from a run file (the shape pytrec_eval takes)."""
    out: dict = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            qid, _, doc, _, score, _ = line.split()
            out.setdefault(qid, {})[doc] = float(score)
    return out


def read_qrels(path: Path) -> dict:
    """{qid: {docid: relevance}} from a qrels file."""
    out: dict = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            qid, _, doc, rel = line.split()
            out.setdefault(qid, {})[doc] = int(rel)
    return out
