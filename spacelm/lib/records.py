"""Typed records for what crosses a stage boundary: the rows of the run files, by name.

A document and a chunk are dataclasses of their own modules (re-exported here); the rows the
stages write as JSON lines are :class:`Record` subclasses: a question (`questions.jsonl`), a
(question, passage) pair to grade, a relevance grade (`grades.jsonl`), a scored answer
(`answers.jsonl`), a judged claim (`claims.jsonl`), a ranking (`rankings.jsonl`), and a stage's
summary (the stamp's and manifest's `summary`).

A record's fields are its JSON keys. Keys a row does not hold stay :data:`ABSENT` (not None:
None is a value the files hold), keys no field names (such as `recall@3`) are kept in `extra`,
and the order the keys were read in is remembered, so that ``from_dict(row).to_dict() == row``
key for key and in the same order: a file read and written again through its records is
byte-identical.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .ingest.chunking import Chunk
from .ingest.documents import Document

__all__ = [
    "ABSENT",
    "Answer",
    "Chunk",
    "Claim",
    "Document",
    "Grade",
    "Pair",
    "Question",
    "Ranking",
    "Record",
    "StageSummary",
    "read_records",
]


class _Absent:
    """The value of a field whose key the row does not hold."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()
_OWN = ("extra", "key_order")


@dataclass
class Record:
    """Base of the typed rows: `from_dict` / `to_dict` round-trip a row exactly (see the module
    docstring); `get` reads a field as a dict's `get` would."""

    extra: dict = field(default_factory=dict, repr=False, compare=False)
    key_order: tuple = field(default=(), repr=False, compare=False)
    required: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def keys_named(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in _OWN]

    @classmethod
    def from_dict(cls, row: dict):
        named = set(cls.keys_named())
        missing = [k for k in cls.required if k not in row]
        if missing:
            raise ValueError(f"{cls.__name__}: row without {missing}: {sorted(row)[:8]}")
        return cls(
            **{k: v for k, v in row.items() if k in named},
            extra={k: v for k, v in row.items() if k not in named},
            key_order=tuple(row),
        )

    def to_dict(self) -> dict:
        values = {k: getattr(self, k) for k in self.keys_named() if getattr(self, k) is not ABSENT}
        values.update(self.extra)
        order = [k for k in self.key_order if k in values] + [k for k in values if k not in self.key_order]
        return {k: values[k] for k in order}

    def get(self, key: str, default=None):
        value = getattr(self, key, ABSENT) if key not in _OWN else ABSENT
        if value is ABSENT:
            return self.extra.get(key, default)
        return value


@dataclass
class Question(Record):
    """A question row of `questions.jsonl`: written by synth from a source chunk (answerable), or
    an unanswerable candidate derived from one, or a golden sample. `kept` and `drop_reason` say
    whether the retrieval filter or the unanswerable check kept it."""

    qid: str = ABSENT
    task: str = ABSENT
    question: str = ABSENT
    answerable: bool = ABSENT
    unanswerable_kind: str | None = ABSENT
    derived_from: str | None = ABSENT
    subject: str | None = ABSENT
    source_chunk_id: str | None = ABSENT
    doc_id: str | None = ABSENT
    page_start: int | None = ABSENT
    page_end: int | None = ABSENT
    span_start: int | None = ABSENT
    span_end: int | None = ABSENT
    fewshot_ids: list = ABSENT
    fewshot_sampling: str | None = ABSENT
    model: str | None = ABSENT
    model_sha256: str | None = ABSENT
    prompt_hash: str | None = ABSENT
    seed: int = ABSENT
    raw_output: str = ABSENT
    kept: bool = ABSENT
    drop_reason: str | None = ABSENT
    origin: str = ABSENT
    round: int = ABSENT
    rank_bm25: int | None = ABSENT
    rank_dense: int | None = ABSENT
    answer: str | None = ABSENT
    check_grades: dict = ABSENT
    check_expected_grades: dict = ABSENT
    check_passed: bool | None = ABSENT
    label: str | None = ABSENT  # a fact-check claim's label: supported, refuted or unverifiable
    checks: dict = ABSENT  # per check (boilerplate, copy, premise, label): "passed", the reason, or "skipped: why"
    check_scores: dict = ABSENT  # the judge's P where it settled a check
    alteration: list = ABSENT  # a refuted claim's names, numbers or negation its chunk lacks
    required: ClassVar[tuple[str, ...]] = ("qid", "task", "question")


@dataclass
class Pair(Record):
    """A (question, passage) pair to grade, and why (`purpose`: table cells, validity, check)."""

    qid: str = ABSENT
    question: str = ABSENT
    chunk_id: str = ABSENT
    purpose: list = ABSENT
    required: ClassVar[tuple[str, ...]] = ("qid", "chunk_id")


@dataclass
class Grade(Record):
    """A relevance grade row of `grades.jsonl` (and of the judge-check pairs): the grade 0-3 or
    None when unreadable, the prompt or calibration that gave it, and its evidence."""

    qid: str = ABSENT
    chunk_id: str = ABSENT
    purpose: list = ABSENT
    prompt: str = ABSENT
    grade: int | None = ABSENT
    expected_grade: float | None = ABSENT
    score: float | None = ABSENT
    p_relevant: float | None = ABSENT
    features: dict = ABSENT
    probs: dict | None = ABSENT
    raw: str | None = ABSENT
    prompt_tokens: int = ABSENT
    cached: bool = ABSENT
    source: str = ABSENT
    label: int = ABSENT
    kind: str = ABSENT
    required: ClassVar[tuple[str, ...]] = ("qid", "chunk_id", "grade")


@dataclass
class Answer(Record):
    """A scored answer row of `answers.jsonl`: one question answered in one setting or pipeline,
    with the passages it was given, the judge's scores and the checks made on it."""

    qid: str = ABSENT
    task: str | None = ABSENT
    question: str = ABSENT
    answerable: bool = ABSENT
    unanswerable_kind: str | None = ABSENT
    reference_answer: str | None = ABSENT
    setting: str = ABSENT
    pipeline: str = ABSENT
    source_chunk_id: str | None = ABSENT
    passage_ids: list = ABSENT
    wrong_ids: list = ABSENT
    rubrics: list = ABSENT
    scores: dict = ABSENT
    expected_scores: dict = ABSENT
    raw_judge: dict = ABSENT
    binary: dict = ABSENT
    gate: dict = ABSENT
    answer: str = ABSENT
    latency_s: float = ABSENT
    tokens: int = ABSENT
    draft_answer: str = ABSENT
    citation: dict = ABSENT
    refusal: bool = ABSENT
    gated_answer: str = ABSENT
    gated_refusal: bool = ABSENT
    gated_scores: dict = ABSENT
    fact_check: dict = ABSENT
    claims: list = ABSENT
    label: str | None = ABSENT  # a fact-check question's label
    verdict: str | None = ABSENT  # the verdict the answer begins with
    expected_verdict: str | None = ABSENT
    verdict_correct: bool | None = ABSENT
    refused_phrase: bool = ABSENT  # the refusal phrase check
    leakage: dict | None = ABSENT  # trigrams taken from an injected passage and not in the source
    citation_support: dict | None = ABSENT  # per cited sentence: do its cited passages hold it
    claim_support: dict | None = ABSENT  # the claims the claim judge reads as supported, asked both ways
    required: ClassVar[tuple[str, ...]] = ("qid", "setting", "pipeline")


@dataclass
class Claim(Record):
    """A judged claim row of `claims.jsonl`: a claim of an answer, the passages it cites and the
    judge's support verdict per passage."""

    qid: str = ABSENT
    setting: str = ABSENT
    pipeline: str = ABSENT
    answerable: bool = ABSENT
    claim: str = ABSENT
    cited: list = ABSENT
    support: dict = ABSENT
    p_supported: float | None = ABSENT
    supported: bool | None = ABSENT
    required: ClassVar[tuple[str, ...]] = ("qid", "claim")


@dataclass
class Ranking(Record):
    """A row of `rankings.jsonl`: one system's ranked chunk ids for one question."""

    qid: str = ABSENT
    system: str = ABSENT
    answerable: bool = ABSENT
    ranking: list = ABSENT
    required: ClassVar[tuple[str, ...]] = ("qid", "system", "ranking")


@dataclass
class StageSummary(Record):
    """What a stage's build returns and its stamp and the manifest keep: stage-specific figures
    (in `extra`), the model calls per role and the models' identities, and the timing `execute`
    adds."""

    llm: dict | None = ABSENT
    model_identity: dict | None = ABSENT
    skipped: bool = ABSENT
    seconds: float = ABSENT
    computed_seconds: float | None = ABSENT
    inputs: dict = ABSENT


def read_records(path, cls: type[Record]) -> list:
    """The rows of a JSON-lines file as records of `cls`."""
    from .io import read_jsonl

    return [cls.from_dict(row) for row in read_jsonl(path)]
