"""One signal path: SIGTERM and SIGHUP (what `timeout`, schedulers, systemd and a closed terminal
send) end a command the way Ctrl-C does. Each raises :class:`Terminated`, a KeyboardInterrupt, in
the main thread, so the same `finally` blocks run — a managed vLLM server is stopped, a stage's
staged outputs are dropped, the call cache keeps what finished — and the CLI reports the
interruption with the exit code 128 + the signal's number."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CAUGHT = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal (not Ctrl-C)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum, frame) -> None:
    for s in CAUGHT:  # a second signal while cleaning up must not cut the cleanup short
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


@contextmanager
def terminations() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise Terminated (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in CAUGHT}
    for s in CAUGHT:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def exit_code(exc: KeyboardInterrupt, default: int) -> int:
    """128 + the signal's number for a Terminated, else `default` (Ctrl-C)."""
    return 128 + exc.signum if isinstance(exc, Terminated) else default
