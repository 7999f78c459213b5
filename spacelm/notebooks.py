"""Execute the suite's notebooks top to bottom (nbclient) and keep executed copies in the run
folder; the committed notebooks stay without outputs."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

from .config import Config


def notebook_dir(cfg: Config) -> Path:
    return cfg.path("notebooks")


def execute_notebook(src: Path, dest: Path, config_file: Optional[str], cwd: Path, timeout: int = 1800) -> Path:
    """Run one notebook with SPACELM_CONFIG pointing at the run's config; write it to `dest`."""
    import nbformat
    from nbclient import NotebookClient

    from .io import atomic_open

    nb = nbformat.read(src, as_version=4)
    old = os.environ.get("SPACELM_CONFIG")
    if config_file:
        os.environ["SPACELM_CONFIG"] = str(Path(config_file).resolve())
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        if old is None:
            os.environ.pop("SPACELM_CONFIG", None)
        else:
            os.environ["SPACELM_CONFIG"] = old
    with atomic_open(dest) as f:
        nbformat.write(nb, f)
    return dest


def execute_notebooks(cfg: Config, log: Callable[[str], None] = print) -> list[str]:
    out_dir = cfg.run_dir / "notebooks"
    done = []
    for src in sorted(notebook_dir(cfg).glob("[0-9][0-9]_*.ipynb")):
        dest = out_dir / src.name
        log(f"[spacelm] executing {src.name}")
        execute_notebook(src, dest, cfg.source, cwd=src.parent)
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
