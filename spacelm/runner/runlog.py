"""A run's log file: `results/<run>/logs/spacelm.log`, appended by every command that runs stages.

The lines spacelm prints on stderr while it runs (its own at INFO, libraries' from WARNING) are
also written here with a timestamp, so a run's history can be read after the terminal is gone.
The folder is git-ignored. Its lines name no folder of this machine: paths are written in their
public form (relative to the project, `~/…`, `<tmp>/…`; see :mod:`spacelm.lib.machine_paths`),
credentials are hidden, and a message's terminal controls are written as escapes, as on stderr
(`RedactingFilter`); a byte no UTF-8 text can hold (a file name's) is written as an escape too."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from ..lib import names
from ..lib.machine_paths import PublicFormatter
from ..lib.redact import RedactingFilter
from .provenance import remember_machine

LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"


def log_path(cfg) -> Path:
    return cfg.run_dir / names.LOGS_DIR / names.RUN_LOG


@contextlib.contextmanager
def run_log(cfg, command: str):
    """While the block runs, the `spacelm` logger (and warnings) also go to the run's log file.
    Nested use (run → run_stages) keeps the one handler the outer block attached."""
    path = log_path(cfg).resolve()
    root = logging.getLogger()
    if any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path for h in root.handlers):
        yield path
        return
    remember_machine(cfg)  # a model server started in the block scrubs its log of the same places
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8", errors="backslashreplace")
    handler.setFormatter(PublicFormatter(LOG_FORMAT))
    handler.addFilter(_spacelm_or_warning)
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    spacelm_logger = logging.getLogger("spacelm")
    if spacelm_logger.getEffectiveLevel() > logging.INFO:
        spacelm_logger.setLevel(logging.INFO)
    argv = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    spacelm_logger.info("%s: run '%s' (%s) — %s", command, cfg.run_name, cfg.source or "<config>", argv)
    try:
        yield path
    except BaseException as e:
        spacelm_logger.error("%s stopped: %s: %s", command, type(e).__name__, e)
        raise
    finally:
        root.removeHandler(handler)
        handler.close()


def _spacelm_or_warning(record: logging.LogRecord) -> bool:
    return record.name.startswith("spacelm") or record.levelno >= logging.WARNING
