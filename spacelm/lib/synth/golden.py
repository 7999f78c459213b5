"""Golden samples: human-written question–passage pairs of five task types.

File format (JSONL, one object per line)::

    {"id": "gs-direct-01", "task": "direct_qa", "question": "...", "passage": "...",
     "doc_id": "mega-constellations", "answer": "...", "verdict": null}

- ``id`` unique; ``task`` one of TASKS; ``question`` non-empty (for fact checking, the
  statement to be judged); ``passage`` the supporting text (or ``chunk_id`` instead);
- optional ``doc_id`` (helps locate the passage), ``answer`` (reference answer) and, for
  ``fact_checking``, ``verdict``: ``supported``, ``refuted`` or ``not_enough_info``;
- ``id`` a string or an integer; ``question`` at most ``MAX_QUESTION_CHARS`` (2,000) characters;
- optional ``answerable`` (default true): ``false`` marks a question the corpus cannot answer.
  It needs no passage, is never a few-shot example, and joins the unanswerable questions of the
  refusal evaluation as written; ``unanswerable_reason`` (optional) says why the corpus cannot
  answer it, for the reviewer.
Validation errors name the file, the line and the fix. docs/team-corpus.md is the schema's reference
for users (fields, which are required, minimum counts per task).
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from ..io import InputError
from ..names import TASKS, VERDICTS

FIELDS = (
    "id",
    "task",
    "question",
    "passage",
    "doc_id",
    "chunk_id",
    "answer",
    "verdict",
    "answerable",
    "unanswerable_reason",
)
# the longest question (or fact-checking statement) a golden sample may hold: the real ones are
# under 300 characters; a longer one is a mistake that would fail only once a prompt holding it
# reaches a model, minutes into a run
MAX_QUESTION_CHARS = 2000


@dataclass
class GoldenSample:
    id: str
    task: str
    question: str
    passage: str = ""
    doc_id: str | None = None
    chunk_id: str | None = None
    answer: str | None = None
    verdict: str | None = None
    answerable: bool = True
    unanswerable_reason: str | None = None
    line: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def load_golden(path: Path, min_per_task: int = 0, tasks: tuple = TASKS) -> list[GoldenSample]:
    """Read and validate a golden-samples file. `min_per_task` is the few-shot count: every task
    in `tasks` needs at least that many samples. The first problem is raised (InputError)."""
    samples, problems = read_golden(path, min_per_task, tasks)
    if problems:
        raise InputError(problems[0])
    return samples


def read_golden(path: Path, min_per_task: int = 0, tasks: tuple = TASKS) -> tuple[list[GoldenSample], list[str]]:
    """(the valid samples, one message per problem): every bad line is named with its file, line
    and fix, and left out; then the per-task count (`spacelm check` shows them all at once)."""
    path = Path(path)
    if not path.is_file():
        return [], [f"{path}: golden samples file not found (set corpus.golden_samples in the config)"]
    samples: list[GoldenSample] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark, as some editors write, is fine
        raw = raw[3:]
    for lineno, line_bytes in enumerate(raw.split(b"\n"), 1):
        try:
            sample = _parse_line(f"{path}:{lineno}", lineno, line_bytes, seen)
        except InputError as e:
            problems.append(str(e))
            continue
        if sample is not None:
            samples.append(sample)
    counts = Counter(s.task for s in samples if s.answerable)
    short = [f"{t} has {counts.get(t, 0)}" for t in tasks if counts.get(t, 0) < min_per_task]
    if short:  # counted over the valid lines, shown beside the line errors so that one check shows all
        among = f" among its {len(samples)} valid lines" if problems else ""
        problems.append(
            f"{path}: fewer golden samples than the few-shot count ({min_per_task}){among}: {'; '.join(short)}. "
            "Add samples for those tasks or lower synth.n_fewshot"
        )
    return samples, problems


def _parse_line(where: str, lineno: int, line_bytes: bytes, seen: dict[str, int]) -> GoldenSample | None:
    """One line of a golden file as a sample (None for a blank line); InputError naming `where` and the fix."""
    try:
        line = line_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{where}: not UTF-8 text (byte 0x{line_bytes[e.start]:02x} at column {e.start + 1}); "
            "save the file as UTF-8"
        ) from None
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where}: not valid JSON ({e.msg}, column {e.colno}); write one JSON object per line"
        ) from None
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object with id, task, question, passage")
    unknown = set(obj) - set(FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {', '.join(FIELDS)}")
    for name in ("task", "question", "passage", "doc_id", "chunk_id", "answer", "verdict", "unanswerable_reason"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            raise InputError(
                f"{where}: field '{name}' must be a string, got {type(obj[name]).__name__} "
                f"({json.dumps(obj[name])[:40]}); write it in quotes"
            )
    answerable = obj.get("answerable", True)
    if not isinstance(answerable, bool):
        raise InputError(f"{where}: 'answerable' must be true or false, got {answerable!r}")
    raw_id = obj.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
        raise InputError(
            f"{where}: field 'id' must be a string or an integer, got {type(raw_id).__name__} "
            f'({json.dumps(raw_id)[:40]}); give every sample a unique id such as "gs-direct-01"'
        )
    sid = str(raw_id if raw_id is not None else "").strip()
    if not sid:
        raise InputError(f"{where}: missing 'id'; give every sample a unique id")
    if sid in seen:
        raise InputError(f"{where}: duplicate id {sid!r} (first used on line {seen[sid]}); ids must be unique")
    seen[sid] = lineno
    task = obj.get("task")
    if task not in TASKS:
        raise InputError(f"{where}: unknown task {task!r}; use one of {', '.join(TASKS)}")
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: empty 'question'; write the question (or, for fact_checking, the statement)")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(
            f"{where}: 'question' is {len(question):,} characters long, above the limit of "
            f"{MAX_QUESTION_CHARS:,} (a question, or a statement to check, fits in a few sentences); "
            "shorten it or put the long text in 'passage'"
        )
    passage = obj.get("passage") or ""
    if answerable and not passage.strip() and not obj.get("chunk_id"):
        raise InputError(f"{where}: needs a 'passage' (the supporting text) or a 'chunk_id'")
    verdict = obj.get("verdict")
    if task == "fact_checking" and answerable:
        if verdict not in VERDICTS:
            raise InputError(f"{where}: fact_checking needs 'verdict' = one of {', '.join(VERDICTS)}, got {verdict!r}")
    elif task != "fact_checking" and verdict not in (None, ""):
        raise InputError(f"{where}: 'verdict' is only for fact_checking samples (task is {task})")
    return GoldenSample(
        id=sid,
        task=task,
        question=question.strip(),
        passage=passage.strip(),
        doc_id=obj.get("doc_id"),
        chunk_id=obj.get("chunk_id"),
        answer=obj.get("answer"),
        verdict=verdict or None,
        answerable=answerable,
        unanswerable_reason=obj.get("unanswerable_reason"),
        line=lineno,
    )


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def locate_chunk(sample: GoldenSample, chunks_by_doc: dict) -> str | None:
    """The chunk holding most of a golden passage (by word overlap), searching `doc_id`'s
    chunks when given, else all. None if no chunk holds at least half of its words."""
    if sample.chunk_id:
        return sample.chunk_id
    words = set(_norm(sample.passage).split())
    if not words:
        return None
    pools = [chunks_by_doc.get(sample.doc_id, [])] if sample.doc_id in chunks_by_doc else list(chunks_by_doc.values())
    best, best_score = None, 0.0
    for pool in pools:
        for c in pool:
            overlap = len(words & set(_norm(c.text).split())) / len(words)
            if overlap > best_score:
                best, best_score = c.chunk_id, overlap
    return best if best_score >= 0.5 else None


def locate_samples(samples: list[GoldenSample], chunks, path: Path) -> tuple[dict[str, str], list[GoldenSample]]:
    """({sample id: chunk id}, samples found nowhere). Each sample whose passage is in no chunk
    of the corpus is warned about with its file and line, so it is never dropped in silence."""
    by_doc: dict = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    known = {c.chunk_id for c in chunks}
    found, missing = {}, []
    for s in samples:
        if not s.answerable:
            continue  # no passage to find
        cid = locate_chunk(s, by_doc)
        if cid in known:
            found[s.id] = cid
        else:
            missing.append(s)
            warnings.warn(not_found_message(s, path), stacklevel=2)
    return found, missing


def not_found_message(sample: GoldenSample, path: Path) -> str:
    """The one line naming a golden sample whose passage (or chunk id) is in no chunk of the corpus."""
    what = f"chunk_id {sample.chunk_id!r}" if sample.chunk_id else "passage"
    return (
        f"{path}:{sample.line}: golden sample {sample.id!r}: its {what} was not found in any chunk of the "
        "corpus; fix the passage (or doc_id), or add the document it comes from"
    )
