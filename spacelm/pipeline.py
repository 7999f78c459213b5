"""The whole suite in order, and what a run would do before it does it.

`run_stages` runs the declared stages (each skipped when its outputs are current), recording
each in the run's manifest; `run_all` adds the notebooks and then builds the report last;
`status` tells, per stage, whether it is up to date, stale (and which input changed) or never
run, without loading a model."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from .config import Config, ConfigError
from .lib.names import MANIFEST
from .lib.records import StageSummary
from .runner.base import execute, freshness, stage_inputs
from .runner.lock import folder_locks
from .runner.manifest import Manifest, output_hashes
from .runner.provenance import git_tracked, public_path
from .runner.runlog import run_log
from .stages import BY_NAME, LAST, STAGES, stages_for

log = logging.getLogger("spacelm")


def stage_names() -> list[str]:
    return [s.name for s in STAGES]


def write_folders(cfg: Config) -> list:
    """Every folder a run writes to (each is locked while the run holds it): the synthetic questions'
    only when the run writes them (synth.enabled), else it only reads them."""
    return [cfg.processed_dir, *([cfg.synthetic_dir] if cfg.synth.enabled else []), cfg.run_dir]


def run_stages(cfg: Config, upto: str | None = None, force: bool = False, manifest: Manifest | None = None) -> dict:
    """Run the stages in pipeline order, up to and including `upto` (default: all).

    Earlier stages run only if their outputs are stale; `force` recomputes the last stage run
    (or every stage when `upto` is None)."""
    if upto is not None and upto not in BY_NAME:
        raise ValueError(f"unknown stage {upto!r}; stages are: {', '.join(stage_names())}")
    from .stages.preflight import check_before_run

    names = [s.name for s in stages_for(cfg) if s is not LAST]
    if upto is not None and upto not in names and upto != LAST.name:
        from .config import ConfigError

        raise ConfigError(
            f"{cfg.source or '<config>'}: stage {upto!r} is not part of this config's run (it runs when the config "
            "switches it on: chunk-sizes with chunk_study.sizes, train-reranker with retrieval.reranker.kind "
            "cross-encoder and model trained:<name>)"
        )
    if upto is not None and upto in names:
        names = names[: names.index(upto) + 1]
    check_before_run(cfg, names)  # before the manifest is written and any model loads
    with run_log(cfg, upto or "run"):
        return _run_stages(cfg, upto, force, manifest)


def _run_stages(cfg: Config, upto: str | None, force: bool, manifest: Manifest | None) -> dict:
    from .stages.costs import announce
    from .stages.preflight import check_corpus_size

    # `spacelm run` starts the run's manifest; a one-stage command merges what it computes into it,
    # unless the manifest is committed: a one-stage command never rewrites a committed run
    manifest = manifest or Manifest(cfg, command=upto or "run")
    committed = bool(git_tracked(cfg.root, [manifest.path]))
    sealed = upto is not None and committed
    # a full run whose own manifest is not committed (another run name or results folder) is guarded as
    # a one-stage command is: it never rewrites the data a committed run read
    guarded = upto is not None or not committed
    results = {}
    for stage in (s for s in stages_for(cfg) if s is not LAST):  # the report: run_all, `spacelm report`
        t0 = time.perf_counter()
        log.info("%s: %s", stage.name, stage.doc)
        forced = force and (upto is None or stage.name == upto)
        if forced or freshness(stage, cfg, stage_inputs(stage, cfg))[0] != "up to date":
            if guarded:
                refuse_rewriting_committed(cfg, stage, upto or "run")
            announce(stage.name, cfg)
        summary = execute(stage, cfg, force=forced)
        summary["wall_seconds"] = round(time.perf_counter() - t0, 3)
        typed = StageSummary.from_dict(summary)  # the fields every stage's summary may hold, by name
        if sealed and not typed.skipped:
            log.info("%s: %s is committed: a one-stage command leaves it as it is", stage.name, manifest.path.name)
        if manifest.keeps(summary) and not sealed:  # a one-stage command records only the stages it computed
            if typed.model_identity:
                manifest.record_model(stage.name, typed.model_identity)
            if typed.get("corpus_list"):  # which listed corpus (name, list sha256) the run measured
                manifest.data["corpus_list"] = typed.get("corpus_list")
            manifest.record_stage(stage.name, summary, outputs=output_hashes(stage, cfg))
        results[stage.name] = summary
        if stage.name == "chunk" and isinstance(typed.get("chunks"), int):
            check_corpus_size(cfg, typed.get("chunks"))  # before synth's model calls
        if typed.skipped:
            log.info("%s: up to date, reused (computed in %.1fs earlier)", stage.name, typed.computed_seconds or 0)
        else:
            log.info("%s: done in %.1fs %s", stage.name, summary["wall_seconds"], _counts(summary))
        if stage.name == upto:
            break
    return results


class CommittedRun(ConfigError):
    """A one-stage command would rewrite files a committed run holds or read."""


def refuse_rewriting_committed(cfg: Config, stage, command: str) -> None:
    """CommittedRun when `stage` would write over files git tracks (a committed run's outputs, or the
    data it read): only `spacelm run` on that run's config remakes a committed run."""
    tracked = git_tracked(cfg.root, [str(p) for p in stage.outputs(cfg)])
    if tracked:
        shown = ", ".join(tracked[:3]) + (f" and {len(tracked) - 3} more" if len(tracked) > 3 else "")
        who = (
            f"a run into {public_path(cfg.run_dir, cfg)} (not the committed run's folder)"
            if command == "run"
            else "a one-stage command"
        )
        raise CommittedRun(
            f"`spacelm {command}` would recompute stage '{stage.name}' and rewrite {len(tracked)} committed file(s) "
            f"({shown}); {who} never rewrites a committed run or the data it read. Remake the committed "
            f"run with `spacelm run --config {cfg.source}` and its own run name and folders, or write beside it: "
            "--set paths.synthetic_dir=DIR2 --set paths.processed_dir=DIR3 (with your own run_name and "
            "paths.results_dir)"
        )


def _counts(summary: dict) -> str:
    keys = ("documents", "chunks", "generated", "kept", "questions", "pairs_graded", "answers")
    parts = [f"{k}={summary[k]}" for k in keys if k in summary]
    llm = [v for k, v in summary.items() if k.startswith("llm") and isinstance(v, dict)]
    if llm:
        parts.append(
            f"model calls={sum(x.get('calls', 0) for x in llm)} cache hits={sum(x.get('cache_hits', 0) for x in llm)}"
        )
    return "(" + ", ".join(parts) + ")" if parts else ""


def run_all(cfg: Config, force: bool = False, notebooks: bool = True, wait: bool = False) -> dict:
    """`spacelm run`: every stage, the notebooks against this run's resolved config, then the
    report, all into `results/<run_name>/`."""
    from .check import refuse_on_problems
    from .notebooks import execute_notebooks, write_resolved_config
    from .stages.report import build_report

    refuse_on_problems(cfg, "spacelm run")  # before the locks, the resolved config and the manifest
    with folder_locks(write_folders(cfg), wait=wait), run_log(cfg, "run"):
        resolved = write_resolved_config(cfg)
        log.info("resolved config: %s", resolved)
        manifest = Manifest(cfg, command="run")
        manifest.record_start(stages_for(cfg))
        manifest.data["resolved_config"] = resolved.name
        results = run_stages(cfg, force=force, manifest=manifest)
        if notebooks:
            t0 = time.perf_counter()
            failed: dict = {}
            executed = execute_notebooks(cfg, resolved, failed)
            record = {"executed": executed, "wall_seconds": round(time.perf_counter() - t0, 3)}
            if failed:  # the report is still written; the manifest and the log name what failed
                record["failed"] = failed
            manifest.record_stage("notebooks", record)
        manifest.finish()
        # the report reads the finished manifest (time, sizes); its own record is added after
        done: list = []
        log.info("report: %s", build_report(cfg, force=force, done=done))
        manifest.record_computed(done, ("report",))
        log.info("run '%s' finished in %.1fs: %s", cfg.run_name, manifest.data["total_seconds"], manifest.path)
    return results


def status(cfg: Config) -> list[dict]:
    """One row per stage: state ("up to date", "stale", "never run"), the inputs that changed,
    and whether a run would recompute it (its own inputs changed, or a stage it reads from will
    be recomputed). Loads no model.

    A stage with no stamp (stamps are never committed, so a fresh clone has none) is read from
    the run's manifest: up to date when its recorded outputs are there with their recorded
    hashes and its config is unchanged (`from_manifest` is then true). `spacelm run` still
    recomputes such a stage, having no stamp for it (so the committed run can be re-made cold);
    notebooks reading the run folder reuse it."""
    from .runner.base import committed_state
    from .runner.provenance import read_manifest

    data = read_manifest(cfg.run_dir / MANIFEST)
    rows, recompute = [], set()
    for stage in stages_for(cfg):
        inputs = stage_inputs(stage, cfg)
        state, reasons = freshness(stage, cfg, inputs)
        from_manifest = False
        # a stamp in a store shared by every clone (a trained model in the user's cache) tells of
        # whichever clone wrote it last; the committed manifest tells of this run's, when the output
        # there is the one the run recorded
        shared = not Path(stage.stamp_path(cfg)).resolve().is_relative_to(Path(cfg.root or ".").resolve())
        if data is not None and (state == "never run" or (shared and state == "stale")):
            got, why, rec = committed_state(stage, cfg, inputs, data)
            if rec is not None and (state == "never run" or got == "up to date"):
                state, reasons, from_manifest = got, why, got == "up to date"
        upstream = [a for a in stage.after if a in recompute]
        if state == "up to date" and upstream and not from_manifest:
            state, reasons = "stale", [f"upstream: {a} will be recomputed" for a in upstream]
        if state != "up to date" or from_manifest:
            recompute.add(stage.name)
        rows.append(
            {
                "stage": stage.name,
                "state": state,
                "changed": reasons,
                "would_recompute": stage.name in recompute,
                "from_manifest": from_manifest,
            }
        )
    return rows
