"""The label store: an assessor's labels as plain JSONL files a team can commit.

Three kinds, one file each in the store folder:

- `relevance.jsonl`: a question × a passage, graded 0-3;
- `screening.jsonl`: a written question × the passage it was written from, screened
  (answerable, not_answerable, false_premise, not_a_question);
- `answers.jsonl`: a question × a setting × an answer, each rubric 1-5 and `correct`.

A question is keyed by its text (`question_sha`), a passage by its document and character span
and the hash of its text, never by a chunk id: a label survives re-chunking, and a chunk of another
chunking inherits a label only when its document, span and text are the same; otherwise the pair
is a hole. An answer is keyed by the hash of its text. Every label carries its assessor, the
brief's sha256, its batch and its date. The store holds no passage text (a corpus the project does
not ship stays out of what is committed); questions are the project's own and are kept to read.

When one item carries several labels (an item repeated to measure the assessor against itself, or
two assessors), `grade_of` reads the first in (batch, key) order: a fixed rule, not a choice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..io import read_jsonl, write_jsonl

RELEVANCE, SCREENING, ANSWERS = "relevance", "screening", "answers"
KINDS = (RELEVANCE, SCREENING, ANSWERS)
FILES = {RELEVANCE: "relevance.jsonl", SCREENING: "screening.jsonl", ANSWERS: "answers.jsonl"}
QRELS = "qrels.trec"
STANDING = "standing.json"
CALIBRATION = "calibration.jsonl"  # every calibration and repeat answer, for standing over all imports
SCREENS = ("answerable", "not_answerable", "false_premise", "not_a_question")
ANSWER_RUBRICS = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")
CORRECT = ("yes", "partly", "no")


def text_sha(text: str) -> str:
    """The first 16 hex digits of the sha256 of `text` with its whitespace runs made single spaces
    (a passage re-extracted with other line breaks keeps its hash)."""
    return hashlib.sha256(" ".join(str(text or "").split()).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Span:
    """Where a passage lies: its document, its characters [start, end) in the document's text, and
    the hash of its text."""

    doc_id: str
    char_start: int
    char_end: int
    text_sha: str

    @classmethod
    def of_chunk(cls, chunk) -> Span:
        return cls(str(chunk.doc_id), int(chunk.char_start), int(chunk.char_end), text_sha(chunk.text))

    @classmethod
    def of(cls, row: dict) -> Span:
        return cls(str(row["doc_id"]), int(row["char_start"]), int(row["char_end"]), str(row["text_sha"]))

    def fields(self) -> dict:
        return {
            "doc_id": self.doc_id,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "text_sha": self.text_sha,
        }


def relevance_key(question: str, span: Span) -> tuple:
    return (text_sha(question), span.doc_id, span.char_start, span.char_end, span.text_sha)


def answer_key(question: str, setting: str, answer: str) -> tuple:
    return (text_sha(question), str(setting), text_sha(answer))


def key_of(kind: str, row: dict) -> tuple:
    """The identity of a stored label row (what a later chunking or run must match)."""
    if kind == ANSWERS:
        return (row["question_sha"], str(row["setting"]), row["answer_sha"])
    return (row["question_sha"], str(row["doc_id"]), int(row["char_start"]), int(row["char_end"]), row["text_sha"])


class LabelStore:
    """The labels in one folder (`labels.store` of the config; the run's `labels/` by default)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.rows = {k: self._read(k) for k in KINDS}

    def _read(self, kind: str) -> list[dict]:
        p = self.folder / FILES[kind]
        return read_jsonl(p) if p.is_file() else []

    def path(self, kind: str) -> Path:
        return self.folder / FILES[kind]

    def __len__(self) -> int:
        return sum(len(v) for v in self.rows.values())

    def labels(self, kind: str) -> dict:
        """{item identity: its first label row} (first in (batch, key) order)."""
        out: dict = {}
        for r in sorted(self.rows[kind], key=lambda r: (str(r.get("batch")), str(r.get("key")))):
            out.setdefault(key_of(kind, r), r)
        return out

    def relevance_grades(self, pairs: Iterable[tuple], question_of: dict, span_of: dict) -> dict:
        """{(qid, chunk_id): grade or None} for `pairs`: a pair's label when its question text and
        its chunk's span (`span_of`: {chunk_id: Span}) match a stored label exactly, else None (a hole)."""
        got = self.labels(RELEVANCE)
        out = {}
        for qid, cid in pairs:
            span = span_of.get(cid)
            row = got.get(relevance_key(question_of.get(qid, ""), span)) if span is not None else None
            out[(qid, cid)] = None if row is None else int(row["grade"])
        return out

    def screens(self) -> dict:
        """{(question_sha, doc_id, start, end, text_sha): screen} of the screened questions."""
        return {k: r["screen"] for k, r in self.labels(SCREENING).items()}

    def answer_labels(self) -> dict:
        """{(question_sha, setting, answer_sha): {scores, correct}}."""
        return {k: {"scores": r["scores"], "correct": r.get("correct")} for k, r in self.labels(ANSWERS).items()}

    def add(self, kind: str, rows: list[dict]) -> int:
        """Append label rows, leaving out any already stored from the same assessor and batch
        for the same item and key; returns how many were new. Written atomically."""
        have = {(key_of(kind, r), r.get("assessor"), r.get("batch"), r.get("key")) for r in self.rows[kind]}
        new = [r for r in rows if (key_of(kind, r), r.get("assessor"), r.get("batch"), r.get("key")) not in have]
        if new:
            self.rows[kind] = self.rows[kind] + new
            self.folder.mkdir(parents=True, exist_ok=True)
            write_jsonl(self.path(kind), self.rows[kind])
        return len(new)

    def write_qrels(self, qid_of: dict) -> Path | None:
        """`qrels.trec`: the relevance labels as TREC qrels (`qid 0 doc_id:start-end grade`), the
        question id from `qid_of` ({question_sha: qid}, else the question's hash); None when empty."""
        from ..retrieval.trec import qrels_text

        got = self.labels(RELEVANCE)
        if not got:
            return None
        qrels: dict = {}
        for (qsha, doc, start, end, _), r in got.items():
            qrels.setdefault(qid_of.get(qsha) or r.get("qid") or qsha, {})[f"{doc}:{start}-{end}"] = int(r["grade"])
        p = self.folder / QRELS
        from ..io import write_text

        write_text(p, qrels_text(qrels))
        return p

    def sha256(self) -> str | None:
        """The sha256 of the store's label files together (None when empty): what a manifest records."""
        h = hashlib.sha256()
        found = False
        for k in KINDS:
            p = self.path(k)
            if p.is_file():
                found = True
                h.update(FILES[k].encode() + b"\0" + p.read_bytes())
        return h.hexdigest() if found else None
