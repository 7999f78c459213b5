"""Stage modules: each reads and writes the run folder through one :class:`~.base.Stage`
declaration, above the library (`spacelm.lib`) and below the command line and notebooks.

Pipeline order: ingest → chunk → synth → retrieve → judge-check → grade → answer → findings;
the report is built last from the files they wrote (`report.py`): `spacelm run` builds it after
the notebooks, so `run_stages` leaves it out (see `LAST`)."""

from ..runner.base import Stage
from . import answer, chunk, chunk_sizes, findings, grade, ingest, judge_check, report, retrieve, synth, train_reranker

STAGES: list[Stage] = [
    ingest.STAGE,
    chunk.STAGE,
    synth.STAGE,
    retrieve.STAGE,
    judge_check.STAGE,
    grade.STAGE,
    answer.STAGE,
    findings.STAGE,
    report.STAGE,
]
# built after the notebooks and the manifest's last update, never by `run_stages`
LAST = report.STAGE
# stages a config switches on: chunk-sizes runs after retrieve when chunk_study.sizes is set;
# train-reranker before retrieve when the reranker is a cross-encoder named trained:<name>
OPTIONAL: list[Stage] = [chunk_sizes.STAGE, train_reranker.STAGE]
BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES + OPTIONAL}


def stages_for(cfg) -> list[Stage]:
    """The stages a run of `cfg` runs, in order (without answer when `answer.enabled` is false, without
    grade when `grading.enabled` is false, without synth when `synth.enabled` is false: the run reads
    the questions already in paths.synthetic_dir)."""
    off = {
        answer.STAGE.name: not cfg.answer.enabled,
        grade.STAGE.name: not cfg.grading.enabled,
        synth.STAGE.name: not cfg.synth.enabled,
    }
    out = [s for s in STAGES if not off.get(s.name)]
    if cfg.chunk_study.sizes:
        out.insert(out.index(retrieve.STAGE) + 1, chunk_sizes.STAGE)
    if train_reranker.trains_reranker(cfg):
        out.insert(out.index(retrieve.STAGE), train_reranker.STAGE)
    return out


__all__ = [
    "STAGES",
    "LAST",
    "OPTIONAL",
    "BY_NAME",
    "Stage",
    "stages_for",
    "answer",
    "chunk",
    "chunk_sizes",
    "findings",
    "grade",
    "ingest",
    "judge_check",
    "report",
    "retrieve",
    "synth",
    "train_reranker",
]
