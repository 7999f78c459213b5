"""Checks before a run's first stage: what the stages about to run need from the config and
from their input files, found before any model loads (so a bad config never costs a model
call). Each failure is a one-line :class:`ConfigError` naming the key and the fix."""

from __future__ import annotations

import math

from ..config import Config, ConfigError
from ..config.validate import blame_set, check_stage_needs
from ..runner.data import golden_path


def check_before_run(cfg: Config, stages: list[str]) -> None:
    """Everything the named stages need that the config alone cannot tell: retrieval systems
    for grading and answering, and the few-shot prompts of synth within the writer's context."""
    check_stage_needs(cfg, stages)
    if "synth" in stages:
        _fewshot_fits(cfg)


def _fewshot_fits(cfg: Config) -> None:
    """The golden samples must load (a bad line is named now, not after the writer loads), and
    the few-shot examples of each task, with the reply, must fit the question writer's
    context before any passage is added (counted at a low estimate of tokens per character,
    so a failure here is certain; the exact count is `spacelm plan`'s)."""
    from ..lib.synth.golden import load_golden
    from ..lib.synth.questions import CHARS_PER_TOKEN_LOW, fewshot_prefix_chars

    golden = load_golden(golden_path(cfg), min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    llm = cfg.models.question_writer
    limit, key = (llm.n_ctx, "n_ctx") if llm.backend == "llamacpp" else (llm.max_model_len, "max_model_len")
    if not limit or llm.backend == "openai":
        return
    for task, chars in fewshot_prefix_chars(cfg.question_writing(), golden).items():
        tokens = math.ceil(chars / CHARS_PER_TOKEN_LOW)
        if tokens + llm.max_tokens > limit:
            err = ConfigError(
                f"{cfg.source}: key 'synth.n_fewshot' gives {task} prompts of at least {tokens:,} tokens (estimated at "
                f"{CHARS_PER_TOKEN_LOW} characters per token, before the passage) + {llm.max_tokens} to write > "
                f"models.question_writer.{key} = {limit:,}; lower synth.n_fewshot (now {cfg.synth.n_fewshot}) or raise "
                f"models.question_writer.{key}"
            )
            raise blame_set(err, cfg.source, cfg.sets) from None


def check_corpus_size(cfg: Config, n_chunks: int) -> None:
    """No k above the number of chunks: every list would hold the whole corpus, so recall@k
    would read 1.0 as if it were a result."""
    for key, ks in (
        ("retrieval.k_values", cfg.retrieval.k_values),
        ("grading.top_k", cfg.grading.top_k),
        ("answer.retrieve_k", [cfg.answer.retrieve_k]),
    ):
        big = [k for k in ks if k > n_chunks]
        if big:
            err = ConfigError(
                f"{cfg.source}: key '{key}' holds {', '.join(map(str, big))}, above the corpus's "
                f"{n_chunks} chunks (every list would hold the whole corpus and recall would read 1.0); "
                f"use values up to {n_chunks}"
            )
            raise blame_set(err, cfg.source, cfg.sets) from None
