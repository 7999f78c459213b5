"""Blind batches for an assessor, and reading its answers back.

An export folder holds:

- `batches/<name>.jsonl`: the items an assessor reads, one per line, shuffled across questions,
  systems, settings and ranks; a line holds an opaque `key` and only what the assessor must read
  (a question and a passage; a question, its passages and an answer), never a system, setting,
  rank or run;
- `brief.md`: the assessor's brief for the kind of item;
- `key.jsonl`: what each key stands for (kept apart from the batches; the assessor never opens it):
  its role (`item`, `calibration`, `repeat`), the item's identity and, for calibration items, what
  is known about it;
- `export.json`: what was exported, when, from which run, with the brief's sha256;
- `labels/<name>.labels.jsonl`: the assessor's answers, written back one line per key.

Calibration items (NIST-graded pairs, golden questions, known-answer controls) and repeats (about
10% of the items, each in a batch other than its first copy's) are mixed in before the shuffle, so
nothing in a batch tells them apart.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..io import InputError, decode_text
from .store import ANSWER_RUBRICS, ANSWERS, CORRECT, RELEVANCE, SCREENING, SCREENS

PREFIX = {RELEVANCE: "p", SCREENING: "q", ANSWERS: "a"}
# "negative": the negative setting's (question, passage) pairs of a Table 2 run, graded as Table 1's pairs
# are: whether its passages hold the answer they were drawn not to hold
WHAT = {"pairs": RELEVANCE, "negative": RELEVANCE, "questions": SCREENING, "answers": ANSWERS}
BRIEF = {RELEVANCE: "brief_pairs.md", SCREENING: "brief_questions.md", ANSWERS: "brief_answers.md"}
# what the assessor reads of an item, by kind (everything else stays in the key file)
SHOWN = {
    RELEVANCE: ("question", "passage"),
    SCREENING: ("question", "passage"),
    ANSWERS: ("question", "passages", "answer", "reference", "rubrics"),
}
BATCH_MIN, BATCH_MAX = 100, 150


@dataclass(frozen=True)
class Export:
    """The blind batches of one export: {batch name: [lines]} and the key rows."""

    kind: str
    batches: dict
    key: list


def blind_batches(
    kind: str,
    items: Sequence[dict],
    calibration: Sequence[dict],
    n_batches: int,
    seed: int,
    repeat_share: float = 0.10,
) -> Export:
    """Shuffle `items` (each: what `SHOWN[kind]` names, plus its identity fields) with the
    `calibration` items (the same, plus `truth`) into `n_batches` batches of near-equal size, with
    about `repeat_share` of all items repeated once in another batch. Keys are opaque and in
    shuffled order (`p00001`...), so neither key nor position tells an item's role."""
    if n_batches < 1:
        raise InputError("--batches: give at least 1 batch")
    rng = random.Random(f"{seed}|label-export|{kind}")
    pool = [dict(it, role="item") for it in items] + [dict(c, role="calibration") for c in calibration]
    if not pool:
        return Export(kind, {}, [])
    rng.shuffle(pool)
    names = [f"batch-{i + 1:02d}" for i in range(n_batches)]
    # (batch, item, its index in the pool): a repeat's `of` is the index of its first copy
    placed = [(names[i % n_batches], it, i) for i, it in enumerate(pool)]
    n_rep = round(repeat_share * len(pool)) if n_batches > 1 else 0
    for j in rng.sample(range(len(pool)), min(n_rep, len(pool))):
        first = placed[j][0]
        other = rng.choice([b for b in names if b != first])
        placed.append((other, dict(pool[j], role="repeat", of=j), j))
    rng.shuffle(placed)
    keys = rng.sample(range(1, 10 * len(placed) + 1), len(placed))
    width = len(str(10 * len(placed)))
    batches: dict = {b: [] for b in names}
    key_rows, key_of = [], {}
    for (batch, it, j), n in zip(placed, keys):
        key = f"{PREFIX[kind]}{n:0{width}d}"
        batches[batch].append({"key": key, **{f: it[f] for f in SHOWN[kind] if f in it and it[f] is not None}})
        row = {k: v for k, v in it.items() if k not in SHOWN[kind] or k == "question"}
        row.update(key=key, batch=batch, kind=kind)
        key_rows.append(row)
        if it["role"] != "repeat":
            key_of[j] = key
    for row in key_rows:  # a repeat names the key of its first copy
        if row["role"] == "repeat":
            row["of"] = key_of[row["of"]]
    for b in batches:
        batches[b].sort(key=lambda line: line["key"])
    return Export(kind, batches, key_rows)


def batch_size_note(export: Export) -> str | None:
    """A warning when a batch falls outside the protocol's 100-150 items (None when all fit)."""
    sizes = [len(v) for v in export.batches.values()]
    if sizes and (min(sizes) < BATCH_MIN or max(sizes) > BATCH_MAX):
        n = sum(sizes)
        best = max(1, round(n / 125))
        return (
            f"batches of {min(sizes)}-{max(sizes)} items; the protocol asks for 100-150 per batch "
            f"(--batches {best} gives about {n // best})"
        )
    return None


# --------------------------------------------------------------------------- reading answers back
def read_answers(path: Path, kind: str, keys: set) -> dict:
    """{key: answer} from one labels file: a grade 0-3 (relevance), a screen (screening), or
    {scores, correct} (answers). A line that is not JSON, a key not in the batch, a key given twice,
    a value out of range, or a key of the batch left out is an error naming the file and line (or
    the missing keys) and what the line needs."""
    text = decode_text(Path(path).read_bytes(), path)
    out: dict = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{i}: not a JSON object ({e.msg}); {_expected(kind)}") from None
        if not isinstance(row, dict) or "key" not in row:
            raise InputError(f"{path}:{i}: no 'key'; {_expected(kind)}")
        key = str(row["key"])
        if key not in keys:
            raise InputError(f"{path}:{i}: key {key!r} is not in this batch; answer only the keys of its batch file")
        if key in out:
            raise InputError(f"{path}:{i}: key {key!r} is answered twice; keep one line per key")
        out[key] = _value(path, i, kind, row)
    missing = sorted(keys - set(out))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise InputError(f"{path}: {len(missing)} key(s) of the batch have no answer ({shown}); answer every key")
    return out


def _expected(kind: str) -> str:
    return {
        RELEVANCE: 'each line needs {"key": ..., "grade": 0-3}',
        SCREENING: 'each line needs {"key": ..., "screen": "answerable|not_answerable|false_premise|not_a_question"}',
        ANSWERS: 'each line needs {"key": ..., "scores": {"faithfulness": 1-5, ...}, "correct": "yes|partly|no"}',
    }[kind]


def _value(path, i: int, kind: str, row: dict):
    key = row["key"]
    if kind == RELEVANCE:
        g = row.get("grade")
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= 3:
            raise InputError(f"{path}:{i}: grade {g!r} for {key} is not one of 0, 1, 2, 3")
        return g
    if kind == SCREENING:
        s = row.get("screen")
        if s not in SCREENS:
            raise InputError(f"{path}:{i}: screen {s!r} for {key} is not one of {', '.join(SCREENS)}")
        return s
    scores = row.get("scores")
    if not isinstance(scores, dict) or not scores:
        raise InputError(f"{path}:{i}: no 'scores' for {key}; {_expected(kind)}")
    for rubric, v in scores.items():
        if rubric not in ANSWER_RUBRICS:
            raise InputError(f"{path}:{i}: unknown rubric {rubric!r} for {key}; use {', '.join(ANSWER_RUBRICS)}")
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 5:
            raise InputError(f"{path}:{i}: {rubric} score {v!r} for {key} is not an integer 1-5")
    correct = row.get("correct")
    if correct is not None and correct not in CORRECT:
        raise InputError(f"{path}:{i}: correct {correct!r} for {key} is not one of yes, partly, no")
    return {"scores": dict(scores), "correct": correct}
