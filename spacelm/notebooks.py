"""Notebooks against a run: the run's resolved config, executing the notebooks top to bottom
(nbclient) into the run folder, and what a notebook says about each stage.

`spacelm run` writes `results/<run>/config.resolved.yaml` (overrides applied) and executes
every notebook with ``$SPACELM_CONFIG`` pointing at it and ``$SPACELM_REUSE_ONLY`` set, so a
notebook shows exactly that run's results and never recomputes a stage with other settings.
The committed notebooks stay without outputs."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from .config import Config
from .lib import names

log = logging.getLogger("spacelm")
RESOLVED_NAME = "config.resolved.yaml"


PROJECT_NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_dir(cfg: Config) -> Path:
    """The notebooks to execute: `notebooks/` beside the config's project, else the ones that
    come with this checkout of spacelm (a config kept elsewhere still runs them)."""
    for d in (cfg.path("notebooks"), PROJECT_NOTEBOOKS):
        if any(d.glob("[0-9][0-9]_*.ipynb")):
            return d
    return PROJECT_NOTEBOOKS


def write_resolved_config(cfg: Config) -> Path:
    """`results/<run>/config.resolved.yaml`: the run's config with every override applied;
    paths stay as written (relative ones resolve against `project_root`)."""
    import yaml

    from .lib.io import write_text

    path = cfg.run_dir / RESOLVED_NAME
    data = cfg.to_dict()
    if cfg.root:
        data = {"project_root": os.path.relpath(cfg.root, path.parent), **data}
    header = (
        f"# The resolved config of run '{cfg.run_name}' (from {cfg.source}, overrides applied).\n"
        "# `spacelm run --config` this file reproduces the run; its notebooks were executed against it.\n"
    )
    write_text(path, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def execute_notebook(
    src: Path, dest: Path, config_file: Path, cwd: Path, timeout: int = 1800, reuse_only: bool = True
) -> Path:
    """Run one notebook against `config_file` (by default in reuse-only mode: a stage that is
    not up to date is an error, never recomputed); write it to `dest`."""
    import nbformat
    from nbclient import NotebookClient

    from .lib.io import atomic_open
    from .stages.base import REUSE_ONLY_ENV

    nb = nbformat.read(src, as_version=4)
    saved = {k: os.environ.get(k) for k in ("SPACELM_CONFIG", REUSE_ONLY_ENV)}
    os.environ["SPACELM_CONFIG"] = str(Path(config_file).resolve())
    if reuse_only:
        os.environ[REUSE_ONLY_ENV] = "1"
    else:
        os.environ.pop(REUSE_ONLY_ENV, None)
    try:
        # the kernel's own log at ERROR: it otherwise warns on every start that its local TCP
        # socket (127.0.0.1, one kernel per notebook) is not encrypted
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(cwd)}},
            extra_arguments=["--log-level=ERROR"],
        ).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    with atomic_open(dest) as f:
        nbformat.write(nb, f)
    return dest


def execute_notebooks(cfg: Config, config_file: Path) -> list[str]:
    out_dir = cfg.run_dir / "notebooks"
    done = []
    found = sorted(notebook_dir(cfg).glob("[0-9][0-9]_*.ipynb"))
    if not found:
        log.warning("no notebooks found in %s or %s: none executed", cfg.path("notebooks"), PROJECT_NOTEBOOKS)
    for src in found:
        dest = out_dir / src.name
        log.info("executing %s", src.name)
        execute_notebook(src, dest, config_file, cwd=src.parent)
        done.append(str(dest))
    return done


def notebook_config(default: str = "configs/quick.yaml") -> Config:
    """The config a notebook runs with: $SPACELM_CONFIG (set by `spacelm run`), else `default`
    found from the current folder or its parents (so the notebook also runs by hand)."""
    from .config import load_config

    env = os.environ.get("SPACELM_CONFIG")
    if env:
        return load_config(env)
    here = Path.cwd().resolve()
    for d in [here, *here.parents]:
        if (d / default).is_file():
            return load_config(d / default)
    raise FileNotFoundError(f"no {default} found above {here}; set SPACELM_CONFIG to a config file")


def describe_stage(cfg: Config, name: str, summary: dict | None = None) -> str:
    """One line for a notebook: did this run compute the stage, or reuse earlier results?
    Read from the run's manifest (what `spacelm run` did), else from `summary`."""
    rec = None
    try:
        rec = json.loads((cfg.run_dir / names.MANIFEST).read_text())["stages"].get(name)
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    rec = rec or summary or {}
    llm = [v for k, v in rec.items() if k.startswith("llm") and isinstance(v, dict)]
    calls = sum(x.get("calls", 0) for x in llm)
    hits = sum(x.get("cache_hits", 0) for x in llm)
    if rec.get("skipped"):
        return (
            f"{name}: reused — its outputs were up to date, computed earlier in "
            f"{rec.get('computed_seconds') or 0:.0f} s; this run made no model call for it"
        )
    model = f"; {calls} model calls, {hits} answered from the cache" if llm else ""
    return f"{name}: computed in this run ({rec.get('seconds', 0):.0f} s{model})"
