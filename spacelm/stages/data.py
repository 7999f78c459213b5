"""Reading what earlier stages wrote: documents, chunks, evaluation questions, rankings.
Stage modules and notebooks use these; library code receives the loaded data."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Optional

from ..config import Config
from ..lib.chunking import Chunk
from ..lib.documents import Document
from ..lib.io import read_jsonl


def documents_path(cfg: Config) -> Path:
    return cfg.processed_dir / "documents.jsonl"


def chunks_path(cfg: Config) -> Path:
    return cfg.processed_dir / "chunks.jsonl"


def questions_path(cfg: Config) -> Path:
    return cfg.synthetic_dir / "questions.jsonl"


def rankings_path(cfg: Config) -> Path:
    return cfg.run_dir / "retrieval" / "rankings.jsonl"


def golden_path(cfg: Config) -> Path:
    return cfg.path(cfg.corpus.golden_samples)


def load_documents(cfg: Config) -> list[Document]:
    return [Document(**row) for row in read_jsonl(documents_path(cfg))]


def load_chunks(cfg: Config) -> list[Chunk]:
    return [Chunk(**row) for row in read_jsonl(chunks_path(cfg))]


def load_questions(cfg: Config, chunks=None, answerable: Optional[bool] = True) -> list[dict]:
    """Evaluation questions: the kept synthetic questions when `questions.jsonl` holds any, else
    the golden samples (answerable ones located in the chunks).

    `answerable`: True (default) for the questions with a known source chunk, which retrieval
    metrics, grading and Table 2 use; False for the unanswerable ones; None for both.
    Each row: qid, task, question, answerable, unanswerable_kind, source_chunk_id (for an
    unanswerable question, the chunk it was written from, or None), doc_id, page_start,
    page_end, origin, answer, verdict. Pass `chunks` when the caller has them loaded already."""
    from ..lib.golden import load_golden, locate_samples

    chunks = {c.chunk_id: c for c in (chunks if chunks is not None else load_chunks(cfg))}
    rows = []
    qp = questions_path(cfg)
    if qp.is_file():
        for r in read_jsonl(qp):
            ans = r.get("answerable", True)
            if r.get("kept") and (r.get("source_chunk_id") in chunks or not ans):
                rows.append({"qid": r["qid"], "task": r["task"], "question": r["question"], "answerable": ans,
                             "unanswerable_kind": r.get("unanswerable_kind"),
                             "source_chunk_id": r.get("source_chunk_id"), "origin": r.get("origin", "synthetic"),
                             "answer": r.get("answer"), "verdict": r.get("verdict")})
        if not any(r["answerable"] for r in rows):
            warnings.warn(f"{qp}: no kept synthetic question; evaluating on the golden samples instead", stacklevel=2)
            rows = []
    if not rows:
        samples = load_golden(golden_path(cfg))
        found, _ = locate_samples(samples, list(chunks.values()), golden_path(cfg))
        rows = [{"qid": s.id, "task": s.task, "question": s.question, "answerable": s.answerable,
                 "unanswerable_kind": None if s.answerable else "golden", "source_chunk_id": found.get(s.id),
                 "origin": "golden", "answer": s.answer, "verdict": s.verdict}
                for s in samples if s.id in found or not s.answerable]
    for r in rows:
        c = chunks.get(r["source_chunk_id"])
        r.update(doc_id=c.doc_id if c else None, page_start=c.page_start if c else None,
                 page_end=c.page_end if c else None)
    rows.sort(key=lambda r: r["qid"])
    return [r for r in rows if answerable is None or r["answerable"] == answerable]


def load_rankings(cfg: Config) -> dict:
    """{system: {qid: [chunk_id, ...]}} from the retrieval stage."""
    out: dict = {}
    for r in read_jsonl(rankings_path(cfg)):
        out.setdefault(r["system"], {})[r["qid"]] = [d for d, _ in r["ranking"]]
    return out
