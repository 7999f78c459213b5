"""The whole suite in order: each stage is skipped when its outputs are fresh, every stage's
summary and wall time go into the run's manifest, and the notebooks are executed last so the
run folder holds their executed copies."""
from __future__ import annotations

import time
from typing import Callable, Optional

from . import answer, chunk, grading, ingest, retrieval, synth
from .config import Config
from .runs import Manifest

# (name, function(cfg, force) -> summary), in pipeline order; later stages append here.
STAGES: list[tuple[str, Callable[..., dict]]] = [
    ("ingest", ingest.run),
    ("chunk", chunk.run),
    ("synth", synth.run),
    ("retrieve", retrieval.run),
    ("grade", grading.run),
    ("answer", answer.run),
]


def run_stages(cfg: Config, upto: Optional[str] = None, force: bool = False,
               manifest: Optional[Manifest] = None, log: Callable[[str], None] = print) -> dict:
    """Run the stages in pipeline order, up to and including `upto` (default: all).

    Earlier stages run only if their outputs are stale; `force` recomputes the last stage run
    (or every stage when `upto` is None)."""
    manifest = manifest or Manifest(cfg)
    known = [n for n, _ in STAGES]
    if upto is not None and upto not in known:
        raise ValueError(f"unknown stage {upto!r}; stages are: {', '.join(known)}")
    results = {}
    for name, fn in STAGES:
        t0 = time.perf_counter()
        summary = fn(cfg, force=force and (upto is None or name == upto))
        summary["wall_seconds"] = round(time.perf_counter() - t0, 3)
        if summary.get("model_identity"):
            manifest.record_model(name, summary["model_identity"])
        manifest.record_stage(name, summary)
        results[name] = summary
        state = "up to date, skipped" if summary.get("skipped") else f"done in {summary['wall_seconds']:.1f}s"
        log(f"[spacelm] {name}: {state}")
        if name == upto:
            break
    return results


def run_all(cfg: Config, force: bool = False, notebooks: bool = True, log: Callable[[str], None] = print) -> dict:
    """`spacelm run`: every stage, then every notebook, into `results/<run_name>/`."""
    from .notebooks import execute_notebooks

    from .report import build_report

    manifest = Manifest(cfg)
    results = run_stages(cfg, force=force, manifest=manifest, log=log)
    manifest.finish()
    log(f"[spacelm] report: {build_report(cfg)}")
    if notebooks:
        t0 = time.perf_counter()
        executed = execute_notebooks(cfg, log=log)
        manifest.record_stage("notebooks", {"executed": executed, "seconds": round(time.perf_counter() - t0, 3)})
    manifest.finish()
    log(f"[spacelm] run '{cfg.run_name}' finished: {manifest.path}")
    return results
