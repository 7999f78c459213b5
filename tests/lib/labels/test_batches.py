"""Blind batches: shuffled, opaque, repeats in another batch; answers read back strictly."""

from __future__ import annotations

import json

import pytest

from spacelm.lib.io import InputError
from spacelm.lib.labels.batches import blind_batches, read_answers


def test_batches_hide_everything_but_the_text_and_spread_repeats():
    items = [
        {"qid": f"q{i}", "chunk_id": f"c{i}", "system": "bm25", "rank": i, "question": f"Q{i}?", "passage": f"P{i}"}
        for i in range(40)
    ]
    cal = [{"qid": f"n{i}", "truth": i % 4, "question": f"N{i}?", "passage": f"D{i}"} for i in range(20)]
    ex = blind_batches("relevance", items, cal, 3, seed=1)
    lines = [line for b in ex.batches.values() for line in b]
    assert len(lines) == 66 and all(set(line) == {"key", "question", "passage"} for line in lines)
    assert all(line["key"][0] == "p" and line["key"][1:].isdigit() for line in lines)
    roles = [r["role"] for r in ex.key]
    assert roles.count("calibration") == 20 and roles.count("repeat") == 6
    by_key = {r["key"]: r for r in ex.key}
    for r in ex.key:
        if r["role"] == "repeat":
            first = by_key[r["of"]]
            assert first["batch"] != r["batch"] and first["question"] == r["question"]
    assert "system" in ex.key[0] and "rank" in ex.key[0]  # the key keeps what the batch hides
    again = blind_batches("relevance", items, cal, 3, seed=1)
    assert again.batches == ex.batches  # seeded


def test_read_answers_checks_every_line(tmp_path):
    f = tmp_path / "b.labels.jsonl"
    f.write_text('{"key": "p1", "grade": 3}\n{"key": "p2", "grade": 0}\n')
    assert read_answers(f, "relevance", {"p1", "p2"}) == {"p1": 3, "p2": 0}
    f.write_text('{"key": "p1", "grade": "3"}\n{"key": "p2", "grade": 0}\n')
    with pytest.raises(InputError, match=r"b.labels.jsonl:1: grade '3'"):
        read_answers(f, "relevance", {"p1", "p2"})
    f.write_text('{"key": "p9", "grade": 1}\n')
    with pytest.raises(InputError, match="not in this batch"):
        read_answers(f, "relevance", {"p1"})
    f.write_text(json.dumps({"key": "a1", "scores": {"faithfulness": 6}}) + "\n")
    with pytest.raises(InputError, match="faithfulness score 6"):
        read_answers(f, "answers", {"a1"})
    f.write_text(json.dumps({"key": "q1", "screen": "maybe"}) + "\n")
    with pytest.raises(InputError, match="screen 'maybe'"):
        read_answers(f, "screening", {"q1"})
