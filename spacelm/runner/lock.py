"""One run at a time per folder. A run holds an advisory lock (``fcntl.flock``) on a file in
each folder it writes; the file names the holder. The kernel drops the lock when its process
dies, so a lock left by a killed run is simply taken over."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..lib.machine_paths import no_machine_path
from ..lib.redact import redact_text

LOCK_NAME = ".spacelm.lock"


class RunLocked(RuntimeError):
    """Another live process holds the folder."""


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text())
        return f"pid {info.get('pid')} (`{info.get('command')}`, started {info.get('started')})"
    except (OSError, json.JSONDecodeError):
        return "another process"


@contextmanager
def folder_lock(folder: Path, wait: bool = False, poll_s: float = 1.0) -> Iterator[Path]:
    import fcntl

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait:
                    raise RunLocked(
                        f"{folder} is in use by {_holder(path)}; wait for it to finish, "
                        f"or pass --wait to queue behind it"
                    ) from None
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.write(
            fd,
            json.dumps(
                {
                    "pid": os.getpid(),
                    "command": no_machine_path(redact_text(" ".join(["spacelm", *sys.argv[1:]])))[:200],
                    "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                }
            ).encode(),
        )
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def folder_locks(folders: Iterable[Path], wait: bool = False) -> Iterator[None]:
    """Locks on several folders, taken in a fixed order (no deadlock between two runs)."""
    with ExitStack() as stack:
        for f in sorted({Path(f).resolve() for f in folders}):
            stack.enter_context(folder_lock(f, wait))
        yield
