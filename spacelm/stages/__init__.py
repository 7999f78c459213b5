"""Stage modules: each reads and writes the run folder through one :class:`~.base.Stage`
declaration, above the library (`spacelm.lib`) and below the command line and notebooks.

Pipeline order: ingest → chunk → synth → retrieve → judge-check → grade → answer; the report
is built last from the files they wrote (`report.py`)."""

from . import answer, chunk, chunk_sizes, grade, ingest, judge_check, retrieve, synth
from .base import Stage

STAGES: list[Stage] = [
    ingest.STAGE,
    chunk.STAGE,
    synth.STAGE,
    retrieve.STAGE,
    judge_check.STAGE,
    grade.STAGE,
    answer.STAGE,
]
# stages a config switches on: chunk-sizes runs after retrieve when chunk_study.sizes is set
OPTIONAL: list[Stage] = [chunk_sizes.STAGE]
BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES + OPTIONAL}


def stages_for(cfg) -> list[Stage]:
    """The stages a run of `cfg` runs, in order."""
    out = list(STAGES)
    if cfg.chunk_study.sizes:
        out.insert(out.index(retrieve.STAGE) + 1, chunk_sizes.STAGE)
    return out


__all__ = [
    "STAGES",
    "OPTIONAL",
    "BY_NAME",
    "Stage",
    "stages_for",
    "answer",
    "chunk",
    "chunk_sizes",
    "grade",
    "ingest",
    "judge_check",
    "retrieve",
    "synth",
]
