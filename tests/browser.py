"""A headless Chromium the tests drive over the DevTools protocol, through a pipe (the browser's
`--remote-debugging-pipe`: commands in on fd 3, replies out on fd 4, each a JSON text ended by a
NUL byte), so no driver package and no debugging port are needed. Tests that use it are marked
`needs_chromium` and are skipped, saying why, where no Chromium is installed."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium); these tests need a browser",
)


def _high(fd: int) -> int:
    """`fd` moved to a number above 9 (the old number closed)."""
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    """One headless Chromium with one page; `with Browser() as b: b.open(url); b.js("...")`."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 30.0):
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="spacelm-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends above fd 9, so moving them to fds 3 and 4 never overwrites one with the other
        to_browser_r, from_browser_w = (_high(fd) for fd in (to_browser_r, from_browser_w))
        args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-extensions",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
        ]
        # a Python trampoline puts the pipe's ends on fds 3 and 4, where the browser expects them
        trampoline = (
            "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
            "os.execv(sys.argv[3], sys.argv[3:])"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", trampoline, str(to_browser_r), str(from_browser_w), CHROMIUM, *args],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.call("Page.enable")
            self.call("Runtime.enable")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ protocol
    def _send(self, method: str, params: dict | None, session: str | None) -> int:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        want = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def call(self, method: str, params: dict | None = None) -> dict:
        """A command to the page."""
        return self._call(method, params, self._session)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            self.events.append(msg)

    # ------------------------------------------------------------------ what tests use
    def open(self, url: str) -> None:
        """Load `url` and wait for its load event and the page's own `data-ready` mark."""
        for target in ("about:blank", url):  # by way of a blank page: a new fragment alone would not reload
            self.events.clear()
            self.call("Page.navigate", {"url": target})
            self.wait_event("Page.loadEventFired")
        self.wait_for("document.body && document.body.dataset.ready === '1'")

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true in the page: {expression}")
            time.sleep(0.05)

    def press(self, key: str) -> None:
        """A key press as the browser's input pipeline delivers it (keydown, char, keyup)."""
        code = f"Digit{key}" if key.isdigit() else key
        vk = ord(key) if len(key) == 1 else {"ArrowLeft": 37, "ArrowRight": 39}.get(key, 0)
        common = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", "text": key if len(key) == 1 else "", **common})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def screenshot(self, path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        self.timeout = 5.0
        try:
            self._call("Browser.close")
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
