"""Reading what earlier stages wrote: documents, chunks, evaluation questions, rankings.
Stage modules and notebooks use these; library code receives the loaded data."""
from __future__ import annotations

import warnings
from pathlib import Path

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


def load_questions(cfg: Config, chunks=None) -> list[dict]:
    """Evaluation questions with their known source chunk: the kept synthetic questions when
    `questions.jsonl` holds any, else the golden samples located in the chunks.

    Each row: qid, task, question, source_chunk_id, doc_id, page_start, page_end, origin,
    answer, verdict. Pass `chunks` when the caller has them loaded already."""
    from ..lib.golden import load_golden, locate_samples

    chunks = {c.chunk_id: c for c in (chunks if chunks is not None else load_chunks(cfg))}
    rows = []
    qp = questions_path(cfg)
    if qp.is_file():
        for r in read_jsonl(qp):
            if r.get("kept") and r.get("source_chunk_id") in chunks:
                rows.append({"qid": r["qid"], "task": r["task"], "question": r["question"],
                             "source_chunk_id": r["source_chunk_id"], "origin": "synthetic",
                             "answer": r.get("answer"), "verdict": r.get("verdict")})
        if not rows:
            warnings.warn(f"{qp}: no kept synthetic question; evaluating on the golden samples instead", stacklevel=2)
    if not rows:
        samples = load_golden(golden_path(cfg))
        found, _ = locate_samples(samples, list(chunks.values()), golden_path(cfg))
        rows = [{"qid": s.id, "task": s.task, "question": s.question, "source_chunk_id": found[s.id],
                 "origin": "golden", "answer": s.answer, "verdict": s.verdict} for s in samples if s.id in found]
    for r in rows:
        c = chunks[r["source_chunk_id"]]
        r.update(doc_id=c.doc_id, page_start=c.page_start, page_end=c.page_end)
    rows.sort(key=lambda r: r["qid"])
    return rows


def load_rankings(cfg: Config) -> dict:
    """{system: {qid: [chunk_id, ...]}} from the retrieval stage."""
    out: dict = {}
    for r in read_jsonl(rankings_path(cfg)):
        out.setdefault(r["system"], {})[r["qid"]] = [d for d, _ in r["ranking"]]
    return out
