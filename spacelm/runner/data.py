"""Reading what earlier stages wrote: documents, chunks, evaluation questions, rankings.
Stage modules and notebooks use these; library code receives the loaded data."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.ingest.chunking import Chunk
from ..lib.ingest.documents import Document
from ..lib.io import read_jsonl


def documents_path(cfg: Config) -> Path:
    return cfg.processed_dir / names.DOCUMENTS


def chunks_path(cfg: Config) -> Path:
    return cfg.processed_dir / names.CHUNKS


def questions_path(cfg: Config) -> Path:
    return cfg.synthetic_dir / names.QUESTIONS


def rankings_path(cfg: Config) -> Path:
    return cfg.run_dir / names.RANKINGS


def golden_path(cfg: Config) -> Path:
    return cfg.path(cfg.corpus.golden_samples)


def write_attribution(cfg: Config, path: Path) -> Path:
    """Write the attribution list of `corpus.file_list` to `path` (for outputs quoting the
    corpus); without a list, a note that the documents' sources were not recorded."""
    from ..lib.ingest.corpus_list import attribution_markdown, load_corpus_list
    from ..lib.io import atomic_open

    with atomic_open(path) as f:
        if cfg.corpus.file_list:
            f.write(attribution_markdown(load_corpus_list(str(cfg.corpus.file_list))))
        else:
            f.write(
                f"# Sources of the quoted documents\n\nThe corpus (`{cfg.corpus.raw_dir}`) was not checked against "
                "a corpus list, so its documents' sources and licences are not recorded here; name one with "
                "`corpus.file_list` (see `spacelm corpus`).\n"
            )
    return path


def load_documents(cfg: Config) -> list[Document]:
    return [Document(**row) for row in read_jsonl(documents_path(cfg))]


def load_chunks(cfg: Config) -> list[Chunk]:
    return [Chunk(**row) for row in read_jsonl(chunks_path(cfg))]


def load_questions(cfg: Config, chunks=None, answerable: bool | None = True, docs=None) -> list[dict]:
    """Evaluation questions: the kept synthetic questions when `questions.jsonl` holds any, else
    the golden samples (answerable ones located in the corpus).

    `answerable`: True (default) for the questions with known evidence, which retrieval
    metrics, grading and Table 2 use; False for the unanswerable ones; None for both.
    Each row: qid, task, question, answerable, unanswerable_kind, source_chunk_id (for an
    unanswerable question, the chunk it was written from, or None), doc_id, page_start,
    page_end, span_start, span_end (the evidence as characters of the document: chunk-independent
    gold, see `lib/retrieval/span_gold.py`), origin, answer, verdict, label (a fact-checking
    claim's true verdict, written by synth; None in older files and for golden rows, whose
    `verdict` says it). Questions written from another chunking of the same documents map onto
    these chunks by their span. Pass `chunks` (and `docs`) when the caller has them loaded already."""
    chunks = {c.chunk_id: c for c in (chunks if chunks is not None else load_chunks(cfg))}
    rows = []
    qp = questions_path(cfg)
    if qp.is_file():
        for r in read_jsonl(qp):
            ans = r.get("answerable", True)
            has_span = r.get("span_start") is not None and r.get("doc_id")
            if r.get("kept") and (r.get("source_chunk_id") in chunks or has_span or not ans):
                rows.append(
                    {
                        "qid": r["qid"],
                        "task": r["task"],
                        "question": r["question"],
                        "answerable": ans,
                        "unanswerable_kind": r.get("unanswerable_kind"),
                        "source_chunk_id": r.get("source_chunk_id"),
                        "origin": r.get("origin", "synthetic"),
                        "answer": r.get("answer"),
                        "verdict": r.get("verdict"),
                        "label": r.get("label"),
                        "doc_id": r.get("doc_id"),
                        "span_start": r.get("span_start"),
                        "span_end": r.get("span_end"),
                    }
                )
        if not any(r["answerable"] for r in rows):
            warnings.warn(f"{qp}: no kept synthetic question; evaluating on the golden samples instead", stacklevel=2)
            rows = []
    if not rows:
        rows = golden_questions(cfg, list(chunks.values()), docs)
    _place(rows, chunks)
    rows.sort(key=lambda r: r["qid"])
    return [r for r in rows if answerable is None or r["answerable"] == answerable]


def golden_questions(cfg: Config, chunks: list, docs=None) -> list[dict]:
    """The golden samples as evaluation rows: answerable ones with their passage located verbatim
    in its document (span) and in a chunk; unanswerable ones as written."""
    from ..lib.retrieval.span_gold import locate_passage
    from ..lib.synth.golden import load_golden, locate_samples

    samples = load_golden(golden_path(cfg))
    found, _ = locate_samples(samples, chunks, golden_path(cfg))
    docs = {d.doc_id: d for d in (docs if docs is not None else load_documents(cfg))}
    by_id = {c.chunk_id: c for c in chunks}
    rows = []
    for s in samples:
        if s.answerable and s.id not in found:
            continue
        row = {
            "qid": s.id,
            "task": s.task,
            "question": s.question,
            "answerable": s.answerable,
            "unanswerable_kind": None if s.answerable else "golden",
            "source_chunk_id": found.get(s.id),
            "origin": "golden",
            "answer": s.answer,
            "verdict": s.verdict,
            "label": None,
            "doc_id": None,
            "span_start": None,
            "span_end": None,
        }
        if s.answerable:
            c = by_id[found[s.id]]
            doc = docs.get(c.doc_id)
            hit = locate_passage(s.passage, doc.text) if doc and s.passage else None
            # a passage not found verbatim keeps its chunk as the evidence
            row.update(
                doc_id=c.doc_id, span_start=hit[0] if hit else c.char_start, span_end=hit[1] if hit else c.char_end
            )
        rows.append(row)
    return rows


def _place(rows: list[dict], chunks: dict) -> None:
    """Fill doc, pages and span from the source chunk, or map a span from another chunking onto
    the chunk sharing most of it."""
    from ..lib.retrieval.span_gold import ChunkSpan, Span, best_chunk

    spans_of = None
    for r in rows:
        c = chunks.get(r["source_chunk_id"])
        if c is None and r.get("span_start") is not None and r.get("doc_id"):
            if spans_of is None:
                spans_of = [ChunkSpan(x.chunk_id, x.doc_id, x.char_start, x.char_end) for x in chunks.values()]
            cid = best_chunk(Span(r["doc_id"], r["span_start"], r["span_end"]), spans_of)
            if r["answerable"]:
                r["source_chunk_id"] = cid
            c = chunks.get(cid)
        if c is not None and r.get("span_start") is None:
            r.update(span_start=c.char_start, span_end=c.char_end)
        r.update(
            doc_id=c.doc_id if c else r.get("doc_id"),
            page_start=c.page_start if c else None,
            page_end=c.page_end if c else None,
        )


def question_spans(questions: list[dict]) -> dict:
    """{qid: Span} of the questions with located evidence."""
    from ..lib.retrieval.span_gold import Span

    return {
        q["qid"]: Span(q["doc_id"], q["span_start"], q["span_end"])
        for q in questions
        if q.get("doc_id") and q.get("span_start") is not None
    }


def golden_rankings_path(cfg: Config) -> Path:
    return cfg.run_dir / names.GOLDEN_RANKINGS


def golden_set(cfg: Config, chunks: list, run_questions: list[dict], docs=None) -> list[dict]:
    """Table 1's second question set: the golden samples' answerable questions found in the
    corpus, placed on these chunks; [] unless `grading.question_sets` holds "golden", and [] when
    the run already evaluates on them (no synthetic question kept)."""
    if "golden" not in cfg.grading.question_sets:
        return []
    gold = [q for q in golden_questions(cfg, chunks, docs) if q["answerable"]]
    if {q["qid"] for q in gold} <= {q["qid"] for q in run_questions}:
        return []
    _place(gold, {c.chunk_id: c for c in chunks})
    return sorted(gold, key=lambda q: q["qid"])


def load_rankings(cfg: Config, path: Path | None = None) -> dict:
    """{system: {qid: [chunk_id, ...]}} from the retrieval stage (`path`: its golden rankings)."""
    out: dict = {}
    for r in read_jsonl(path or rankings_path(cfg)):
        out.setdefault(r["system"], {})[r["qid"]] = [d for d, _ in r["ranking"]]
    return out
