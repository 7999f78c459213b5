"""How many independent things a table rests on: questions, the source chunks they were written
from and the documents those come from, and the questions per task type.

Questions written from the same chunk are not independent evidence (they share their passage),
so every table states its n at all three levels and by task."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple


class SampleSize(NamedTuple):
    questions: int
    source_chunks: int
    documents: int
    per_task: dict  # task -> questions

    def text(self) -> str:
        tasks = ", ".join(f"{t} {n}" for t, n in sorted(self.per_task.items()))
        return f"{self.questions} questions from {self.source_chunks} source chunks in {self.documents} documents" + (
            f" ({tasks})" if tasks else ""
        )

    def to_dict(self) -> dict:
        return {
            "questions": self.questions,
            "source_chunks": self.source_chunks,
            "documents": self.documents,
            "per_task": dict(sorted(self.per_task.items())),
        }


def sample_size(questions: Iterable[dict]) -> SampleSize:
    """From question rows with `source_chunk_id`, `doc_id` and `task` (missing ones not counted)."""
    qs = list(questions)
    return SampleSize(
        len(qs),
        len({q.get("source_chunk_id") for q in qs if q.get("source_chunk_id")}),
        len({q.get("doc_id") for q in qs if q.get("doc_id")}),
        dict(Counter(q.get("task") for q in qs if q.get("task"))),
    )


def per_task_means(rows: list[dict], by: list[str], values: list[str]):
    """Mean of `values` per task and the `by` columns, with n (rows) per cell: a per-task
    breakdown of any per-question table."""
    import pandas as pd

    df = pd.DataFrame(rows)
    if df.empty or "task" not in df:
        return pd.DataFrame()
    keys = by + ["task"]
    cols = [v for v in values if v in df]
    out = df.groupby(keys)[cols].mean().round(4)
    out.insert(0, "n", df.groupby(keys).size())
    return out.reset_index()
