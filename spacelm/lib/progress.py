"""Progress bars only where a person watches: on a terminal, or when asked for with
``--progress`` / ``$SPACELM_PROGRESS=1``. Elsewhere (CI, logs, notebooks run by `spacelm run`)
the stage logs one line with its counts and time instead of thousands of bar updates."""

from __future__ import annotations

import os
import sys


def show_progress() -> bool:
    flag = os.environ.get("SPACELM_PROGRESS")
    if flag is not None:
        return flag not in ("", "0", "false", "no")
    return sys.stderr.isatty()


def progress_bar(total: int, desc: str):
    """A tqdm bar, or None when progress is not shown."""
    if not show_progress():
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False)
