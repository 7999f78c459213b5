"""Synthetic questions (stage 2): few-shot generation from golden samples, and the retrieval
filter. This module also provides the evaluation questions for the later stages."""
from __future__ import annotations

from pathlib import Path


def questions_path(cfg) -> Path:
    return cfg.synthetic_dir / "questions.jsonl"


def load_questions(cfg, max_questions=None) -> list[dict]:
    """Evaluation questions with their known source chunk: the kept synthetic questions when
    `data/synthetic/questions.jsonl` exists, else the golden samples located in the chunks.

    Each row: qid, task, question, source_chunk_id, doc_id, page_start, page_end, origin."""
    from .chunk import load_chunks
    from .golden import load_golden, locate_chunk
    from .io import read_jsonl

    chunks = {c.chunk_id: c for c in load_chunks(cfg)}
    rows = []
    qp = questions_path(cfg)
    if qp.is_file():
        for r in read_jsonl(qp):
            if r.get("kept") and r.get("source_chunk_id") in chunks:
                rows.append({"qid": r["qid"], "task": r["task"], "question": r["question"],
                             "source_chunk_id": r["source_chunk_id"], "origin": "synthetic",
                             "answer": r.get("answer"), "verdict": r.get("verdict")})
    else:
        by_doc: dict = {}
        for c in chunks.values():
            by_doc.setdefault(c.doc_id, []).append(c)
        for s in load_golden(cfg.path(cfg.corpus.golden_samples)):
            cid = locate_chunk(s, by_doc)
            if cid in chunks:
                rows.append({"qid": s.id, "task": s.task, "question": s.question, "source_chunk_id": cid,
                             "origin": "golden", "answer": s.answer, "verdict": s.verdict})
    for r in rows:
        c = chunks[r["source_chunk_id"]]
        r.update(doc_id=c.doc_id, page_start=c.page_start, page_end=c.page_end)
    rows.sort(key=lambda r: r["qid"])
    return rows[:max_questions] if max_questions else rows
