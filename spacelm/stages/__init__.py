"""Stage modules: each reads and writes the run folder through one :class:`~.base.Stage`
declaration, above the library (`spacelm.lib`) and below the command line and notebooks.

Pipeline order: ingest → chunk → synth → retrieve → judge-check → grade → answer; the report
is built last from the files they wrote (`report.py`)."""
from . import answer, chunk, grade, ingest, judge_check, retrieve, synth
from .base import Stage

STAGES: list[Stage] = [ingest.STAGE, chunk.STAGE, synth.STAGE, retrieve.STAGE, judge_check.STAGE, grade.STAGE,
                       answer.STAGE]
BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}

__all__ = ["STAGES", "BY_NAME", "Stage", "answer", "chunk", "grade", "ingest", "judge_check", "retrieve", "synth"]
