"""What a stage is about to cost, said in the log before it starts.

A config is sized for a corpus (`corpus.sized_for_chunks`); a team pointing it at a corpus ten
times larger should learn before the work starts which stages grow with the corpus and by how
much. Counts come from the config and the files earlier stages wrote (no model is loaded): the
passages each encoder must read (the embedding cache makes a second run free), the passages the
reranker rescores, and the model calls the caps allow. Seconds come from the encoders' own
first batch at run time (`lib/retrieval/dense.py` logs the projection); `spacelm plan` counts the
model calls and tokens exactly.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..config import Config

log = logging.getLogger("spacelm")

# how many times the corpus a config was sized for may grow before the preview becomes a warning
GROWTH_WARNING = 3.0


def _lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def _kept_questions(cfg: Config) -> int:
    """Questions the retrieval stage will rank (kept synthetic ones, answerable or not)."""
    import json

    from ..runner.data import questions_path

    p = questions_path(cfg)
    if not p.is_file():
        return 0
    with open(p, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip() and json.loads(line).get("kept"))


def corpus_chunks(cfg: Config) -> int:
    from ..runner.data import chunks_path

    return _lines(chunks_path(cfg))


def preview(stage_name: str, cfg: Config, n: int) -> list[str]:
    """One line per thing that will cost time in `stage_name`, from counts known before it runs
    (`n`: the corpus's chunks, 0 before chunking)."""
    from ..lib.retrieval.systems import pool_size

    rc = cfg.retrieval
    if stage_name == "ingest":
        from .ingest import sources

        files = [p for p in sources(cfg) if p.is_file()]
        mb = sum(p.stat().st_size for p in files) / 1e6
        return [f"ingest: {len(files)} files ({mb:.0f} MB) to read and clean (about 100 pages/s on 2 cores)"]
    if stage_name == "synth" and n:
        sc = cfg.synth
        questions = min(sc.max_chunks or n, n) * (len(sc.tasks) if sc.sampling == "every_task" else 1)
        return [
            f"synth: ≤{questions} question-writing calls from {n} chunks; the retrieval filter encodes all "
            f"{n} chunks with {rc.dense.model} (cached after the first run)"
        ]
    if stage_name == "retrieve" and n:
        pool = pool_size(rc.pool, n, rc.k_values, rc.pool_max)
        reranked = [s for s in rc.systems if s.endswith("+rerank")]
        out = [f"retrieve: the dense retriever encodes {n} chunks with {rc.dense.model} (cached after the first run)"]
        if reranked:
            q = _kept_questions(cfg) or "the"
            out.append(
                f"retrieve: the reranker ({rc.reranker.model}) rescores the top {pool} of each of {q} questions "
                f"for {len(reranked)} system(s): at most {pool * len(reranked) * (q if isinstance(q, int) else 1)} "
                f"passages{'' if isinstance(q, int) else ' per question'}, "
                + (
                    "each (question, passage) pair scored once"
                    if rc.reranker.kind == "cross-encoder"
                    else "each encoded once"
                )
                + (f" (pool capped at retrieval.pool_max={rc.pool_max})" if rc.pool_max and pool == rc.pool_max else "")
            )
        return out
    if stage_name == "grade":
        gc = cfg.grading
        deep = gc.deep_questions is not None and gc.deep_questions < (gc.max_questions or float("inf"))
        depth = (
            f"top-{min(gc.top_k)} distinct pairs, {gc.deep_questions} of the questions to top-{max(gc.top_k)}"
            if deep
            else f"top-{max(gc.top_k)} distinct pairs"
        )
        return [
            f"grade: ≤{(gc.max_questions or 'every')} questions × {len(gc.retrievers)} retrievers × 2 (with and "
            f"without reranking) × {depth}; `spacelm plan` counts the judge calls"
        ] + (
            [
                f"grade: the golden questions too (≤{gc.max_golden_questions or 'every answerable'}), "
                "their pairs in the same judge turn"
            ]
            if "golden" in gc.question_sets
            else []
        )
    return []


def announce(stage_name: str, cfg: Config) -> None:
    """Log the preview; a warning naming the growth when the corpus is far larger than the one the
    config was sized for."""
    n = corpus_chunks(cfg)
    lines = preview(stage_name, cfg, n)
    sized = cfg.corpus.sized_for_chunks
    grown = bool(sized and n and n >= GROWTH_WARNING * sized)
    for line in lines:
        log.info("cost: %s", line)
    if grown and stage_name in ("synth", "retrieve"):
        log.warning(
            "%s: the corpus has %d chunks, %.1f× the %d this config was sized for (corpus.sized_for_chunks): "
            "stages that read every chunk take about that much longer the first time",
            stage_name,
            n,
            n / sized,
            sized,
        )
