"""Typed records round-trip the committed run files: read through its records and written again,
every file is byte-identical, and every key the stages write has a field of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from spacelm.lib.io import read_jsonl, write_jsonl
from spacelm.lib.records import ABSENT, Answer, Claim, Grade, Question, Ranking, StageSummary

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    (f"results/{run}/{name}", cls)
    for run in ("quick", "standard")
    for name, cls in (
        ("answers.jsonl", Answer),
        ("claims.jsonl", Claim),
        ("grades.jsonl", Grade),
        ("retrieval/rankings.jsonl", Ranking),
    )
] + [("data/synthetic/questions.jsonl", Question), ("data/synthetic/standard/questions.jsonl", Question)]


@pytest.mark.parametrize("name,cls", FILES, ids=[f for f, _ in FILES])
def test_a_committed_file_read_as_records_and_written_again_is_byte_identical(name, cls, tmp_path):
    path = ROOT / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this checkout")
    if not path.read_bytes():
        pytest.skip(f"{name} is empty: that run wrote no such row (e.g. answer.claims: false)")
    records = [cls.from_dict(row) for row in read_jsonl(path)]
    assert records, name
    assert all(not r.extra for r in records), f"{name}: keys without a field: {records[0].extra}"
    out = tmp_path / "again.jsonl"
    write_jsonl(out, [r.to_dict() for r in records])
    assert out.read_bytes() == path.read_bytes()


def test_absent_keys_stay_absent_and_unknown_keys_keep_their_place():
    row = {"qid": "q1", "recall@3": 0.5, "task": "direct_qa", "question": "Why?", "origin": None}
    q = Question.from_dict(row)
    assert q.qid == "q1" and q.origin is None and q.kept is ABSENT and q.extra == {"recall@3": 0.5}
    assert list(q.to_dict()) == list(row) and q.to_dict() == row
    assert q.get("kept", "no") == "no" and q.get("recall@3") == 0.5
    made = Question(qid="q2", task="summarization", question="What?")
    assert list(made.to_dict()) == ["qid", "task", "question"]  # a new record: the declared order
    with pytest.raises(ValueError, match="qid"):
        Grade.from_dict({"chunk_id": "c", "grade": 2})


def test_a_stage_summary_names_the_common_keys():
    s = StageSummary.from_dict({"questions": 4, "llm": {"calls": 3}, "skipped": False, "seconds": 1.5})
    assert s.llm == {"calls": 3} and s.extra == {"questions": 4} and s.inputs is ABSENT
    assert list(s.to_dict()) == ["questions", "llm", "skipped", "seconds"]
