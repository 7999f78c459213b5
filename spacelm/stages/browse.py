"""A run's drill-down: per question, its passages, their grades and its answers, gathered from the
files the run committed (no model is called). `results/<run>/browse.html` shows it in a browser
(lib/report/browse.py renders it), `spacelm show` in the terminal.

What is read: `retrieval/rankings.jsonl` (each system's top-k), `grades.jsonl` (the judge's grades
Table 1 used), `answers.jsonl` (each setting's answer with its scores and flags), the questions
(`questions.jsonl` of the synthetic folder and the golden samples) and, when it is on this
machine, the chunk text of the processed folder (`chunks.jsonl`). Chunk text is not committed with
a run; without it the drill-down shows ids, grades and scores, and says how to rebuild it with no
model (`spacelm chunk`, which runs ingest first). Whether passage text goes into the page is a
licence question (see `text_policy`)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import read_jsonl
from ..lib.report.browse import FILTERS, question_flags

# how many passages of each system's ranking the drill-down shows when not told (Table 1's deepest cut)
DEFAULT_K = 5
# passages of a licence in this set may be quoted in a committed page; any other licence, or a corpus
# list naming none, leaves passage text out of the committed page (it can still be built locally)
QUOTABLE_LICENCES = {"CC-BY-4.0", "CC0-1.0", "public-domain-US-gov"}


def _rows(path: Path) -> list[dict]:
    return read_jsonl(path) if path.is_file() else []


def _questions(cfg: Config) -> dict:
    """{qid: question row} from the synthetic folder's questions.jsonl and the golden samples,
    read without the chunks (answers.jsonl, read later, fills in what these lack)."""
    out: dict = {}
    golden = cfg.path(cfg.corpus.golden_samples) if cfg.corpus.golden_samples else None
    if golden is not None and golden.is_file():
        for r in _rows(golden):
            if r.get("id"):
                out[r["id"]] = {
                    "qid": r["id"],
                    "task": r.get("task"),
                    "question": r.get("question"),
                    "answerable": r.get("answerable", True),
                    "origin": "golden",
                    "reference_answer": r.get("answer"),
                }
    for r in _rows(cfg.synthetic_dir / names.QUESTIONS):
        out[r["qid"]] = {
            "qid": r["qid"],
            "task": r.get("task"),
            "question": r.get("question"),
            "answerable": r.get("answerable", True),
            "unanswerable_kind": r.get("unanswerable_kind"),
            "source_chunk_id": r.get("source_chunk_id"),
            "origin": r.get("origin", "synthetic"),
            "reference_answer": r.get("answer"),
        }
    return out


def _table_grades(rows: list[dict]) -> dict:
    """{(qid, chunk_id): grade} of the grades Table 1 read: rows marked for the table, of the
    prompt most of them used (a run grades with one; order-swap rows carry another)."""
    table = [r for r in rows if "table" in (r.get("purpose") or [])]
    if not table:
        return {}
    prompt = Counter(r.get("prompt") for r in table).most_common(1)[0][0]
    return {(r["qid"], r["chunk_id"]): r.get("grade") for r in table if r.get("prompt") == prompt}


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recorded_chunks_hash(run_dir: Path, chunks: Path, cfg: Config) -> str | None:
    """The (short) hash of chunks.jsonl a stage of the run recorded in its manifest, if any."""
    manifest = run_dir / names.MANIFEST
    if not manifest.is_file():
        return None
    try:
        rel = chunks.resolve().relative_to(Path(cfg.root or ".").resolve()).as_posix()
    except ValueError:
        rel = chunks.as_posix()
    key = f"file:{rel}"
    found: list = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == key and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    try:
        walk(json.loads(manifest.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return found[-1] if found else None


def rebuild_hint(cfg: Config, run_dir: Path) -> str:
    """The model-free command that rebuilds the run's chunk text."""
    resolved = run_dir / names.RESOLVED_CONFIG
    src = resolved if resolved.is_file() else Path(cfg.source or "configs/<your config>.yaml")
    try:
        shown = src.resolve().relative_to(Path(cfg.root or ".").resolve()).as_posix()
    except ValueError:
        shown = src.as_posix()
    return f"spacelm chunk --config {shown}"


def text_policy(cfg: Config) -> tuple[bool, str]:
    """(may passage text go into the committed page, why). A corpus without a corpus list is the
    project's or the team's own documents (the sample corpus of configs/quick.yaml is the
    project's, MIT): yes. A corpus with a list: only when every listed licence is one that allows
    quoting (QUOTABLE_LICENCES); otherwise the committed page shows ids, grades and scores, and a
    page with text is built locally (`spacelm browse --text yes`, written to browse.local.html,
    which git ignores)."""
    if not cfg.corpus.file_list:
        return True, "the corpus has no corpus list: its documents are the project's or the team's own"
    from ..lib.ingest.corpus_list import load_corpus_list

    try:
        lst = load_corpus_list(str(cfg.corpus.file_list))
    except Exception as e:  # noqa: BLE001 - a list that cannot be read is treated as restrictive
        return False, f"the corpus list {cfg.corpus.file_list} could not be read ({e})"
    other = sorted({str(getattr(e, "licence", "") or "unknown") for e in lst.entries} - QUOTABLE_LICENCES)
    if other:
        return False, (
            f"the corpus list '{lst.name}' holds documents under licences that do not clearly allow "
            f"redistributing their text ({', '.join(other)})"
        )
    return True, f"every document of the corpus list '{lst.name}' is under a licence that allows quoting"


def collect(cfg: Config, run_dir: Path | None = None, k: int | None = None, text: bool | None = None) -> dict:
    """Everything the drill-down shows, as plain data (JSON-ready).

    `k`: passages per system (default: the deepest Table 1 cut, else 5). `text`: put passage text
    in (True), leave it out (False) or follow `text_policy` (None). Chunk text missing on this
    machine leaves it out whatever `text` says, and the result says how to rebuild it."""
    from .data import chunks_path

    run_dir = Path(run_dir or cfg.run_dir)
    k = k or max(cfg.grading.top_k or [DEFAULT_K])
    rankings: dict = {}
    for r in _rows(run_dir / names.RANKINGS):
        rankings.setdefault(r["system"], {})[r["qid"]] = [d for d, _ in r["ranking"]]
    grades = _table_grades(_rows(run_dir / names.GRADES))
    answers = _rows(run_dir / names.ANSWERS)
    known = _questions(cfg)

    allowed, why = text_policy(cfg) if text is None else (text, "asked for" if text else "left out as asked")
    chunks_file = chunks_path(cfg)
    texts: dict = {}
    note = ""
    matches = None
    if not chunks_file.is_file():
        note = (
            f"Passage text is not available: {names.CHUNKS} of this run is not on this machine "
            f"({cfg.paths.processed_dir}). Rebuild it without any model with `{rebuild_hint(cfg, run_dir)}` "
            "(ingest and chunk only), then build this page again."
        )
    elif text is False:
        note = "Passage text was left out when this page was built (--text no)."
    elif not allowed:
        note = f"Passage text is left out of this page: {why}. Build a page with text on your machine with " + (
            f"`spacelm browse --run {_shown(run_dir, cfg)} --text yes` (written to browse.local.html, not committed)."
        )
    else:
        recorded = _recorded_chunks_hash(run_dir, chunks_file, cfg)
        if recorded is not None:
            matches = _file_sha(chunks_file).startswith(recorded)
            if not matches:
                note = (
                    f"The chunk text on this machine ({cfg.paths.processed_dir}/{names.CHUNKS}) is not the one this "
                    "run recorded in its manifest: passages may not be the ones it ranked."
                )
        for c in read_jsonl(chunks_file):
            texts[c["chunk_id"]] = c.get("text", "")

    qids = sorted({q for by in rankings.values() for q in by} | {a["qid"] for a in answers} | {q for q, _ in grades})
    by_qid: dict = {}
    for a in answers:
        by_qid.setdefault(a["qid"], []).append(a)
    systems = list(rankings)
    used: set = set()
    questions = []
    for qid in qids:
        q = dict(known.get(qid, {"qid": qid}))
        for a in by_qid.get(qid, []):  # answers.jsonl carries what the answer stage read
            for key in ("task", "question", "answerable", "unanswerable_kind", "source_chunk_id", "reference_answer"):
                if a.get(key) is not None and q.get(key) is None:
                    q[key] = a[key]
        q.setdefault("answerable", True)
        src = q.get("source_chunk_id")
        lists = {}
        for s in systems:
            ids = rankings[s].get(qid, [])[:k]
            lists[s] = [
                {"rank": i + 1, "chunk_id": c, "grade": grades.get((qid, c)), "is_source": c == src}
                for i, c in enumerate(ids)
            ]
            used.update(ids)
        if src:
            used.add(src)
        row = {
            "qid": qid,
            "task": q.get("task"),
            "question": q.get("question"),
            "answerable": bool(q.get("answerable")),
            "unanswerable_kind": q.get("unanswerable_kind"),
            "origin": q.get("origin"),
            "reference_answer": q.get("reference_answer"),
            "source_chunk_id": src,
            "source_grade": grades.get((qid, src)) if src else None,
            "systems": lists,
            "answers": [_answer(a) for a in by_qid.get(qid, [])],
        }
        row["flags"] = question_flags(row)
        questions.append(row)
    # the page opens on something to see: answerable questions with graded passages first
    questions.sort(key=lambda r: (not r["answerable"], not any_graded(r), r["qid"]))
    return {
        "run": cfg.run_name,
        "k": k,
        "systems": systems,
        "filters": FILTERS,
        "text_available": bool(texts),
        "text_note": note,
        "text_policy": why,
        "chunks_match_manifest": matches,
        "rebuild": rebuild_hint(cfg, run_dir),
        "questions": questions,
        "passages": {c: texts[c] for c in sorted(used) if c in texts},
    }


def any_graded(row: dict) -> bool:
    """Whether a question's page row holds a graded passage in any system's list."""
    return any(p["grade"] is not None for ranked in row["systems"].values() for p in ranked)


def _shown(run_dir: Path, cfg: Config) -> str:
    try:
        return Path(run_dir).resolve().relative_to(Path(cfg.root or ".").resolve()).as_posix()
    except ValueError:
        return Path(run_dir).as_posix()


ANSWER_FIELDS = (
    "setting",
    "pipeline",
    "answer",
    "scores",
    "expected_scores",
    "refusal",
    "refused_phrase",
    "leakage",
    "citation_support",
    "claim_support",
    "passage_ids",
    "wrong_ids",
)


def _answer(a: dict) -> dict:
    return {f: a.get(f) for f in ANSWER_FIELDS}


def write_browse(cfg: Config, path: Path, run_dir: Path | None = None, **kw) -> dict:
    """Write the drill-down page to `path` (one self-contained file); returns the data it shows."""
    from ..lib.io import write_text
    from ..lib.report.browse import render_page

    data = collect(cfg, run_dir, **kw)
    write_text(path, render_page(data))
    return data
