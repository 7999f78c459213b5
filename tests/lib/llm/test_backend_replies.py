"""Hostile or broken OpenAI-compatible servers (issue 43): a reply that is not JSON or has no
`choices` is an error naming the server and the problem; a server that trickles its reply a
byte at a time is abandoned once `timeout_s` has passed for the whole request."""

import socket
import threading
import time

import httpx
import pytest

from spacelm.config import LLMConfig
from spacelm.lib.llm import Request
from spacelm.lib.llm.openai import OpenAIBackend
from spacelm.lib.llm.types import BackendError, BackendUnavailable


def _ask(backend, cfg):
    return backend.complete(Request(messages=[{"role": "user", "content": "x"}]).resolved(cfg))


@pytest.mark.parametrize(
    "reply,needle",
    [
        (b"<html><body>502 Bad Gateway</body></html>", "the reply is not JSON: <html><body>502 Bad Gateway"),
        (b"", "the reply is not JSON: (empty)"),
        (b'{"error": {"message": "model not loaded"}}', "the reply has no 'choices': {\"error\""),
        (b'{"choices": []}', "'choices' is not a list of choices"),
    ],
)
def test_a_malformed_reply_names_the_server_and_the_problem(reply, needle):
    cfg = LLMConfig(backend="openai", model="m", base_url="http://u:pw@judge.example:8000/v1", max_retries=0)
    b = OpenAIBackend(cfg, transport=httpx.MockTransport(lambda r: httpx.Response(200, content=reply)))
    with pytest.raises(BackendError) as e:
        _ask(b, cfg)
    msg = str(e.value)
    assert msg.startswith("http://***@judge.example:8000/v1: ") and needle in msg
    assert "pw" not in msg and "Expecting value" not in msg


def test_a_long_malformed_reply_is_quoted_to_200_characters():
    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1", max_retries=0)
    b = OpenAIBackend(cfg, transport=httpx.MockTransport(lambda r: httpx.Response(200, content=b"x" * 5000)))
    with pytest.raises(BackendError) as e:
        _ask(b, cfg)
    assert "x" * 190 in str(e.value) and "x" * 201 not in str(e.value)


class _Trickler:
    """A server on 127.0.0.1 that answers with headers promising 1,000 bytes, then sends one byte
    every 0.2 s: every read succeeds well within a per-read timeout, the reply never ends."""

    def __init__(self, headers_slowly: bool = False):
        self.headers_slowly = headers_slowly
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    conn.recv(65536)
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
                    for i in range(len(head)) if self.headers_slowly else ():
                        if self.stop.is_set():
                            return
                        conn.sendall(head[i : i + 1])  # the status line and headers, a byte at a time
                        time.sleep(0.2)
                    conn.sendall(b"" if self.headers_slowly else head)
                    conn.sendall(b"\r\n")
                    while not self.stop.is_set():
                        conn.sendall(b" ")
                        time.sleep(0.2)
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("headers_slowly", [False, True], ids=["body", "headers"])
def test_timeout_bounds_the_whole_request_not_each_read(headers_slowly):
    server = _Trickler(headers_slowly)
    try:
        cfg = LLMConfig(
            backend="openai", model="m", base_url=server.url, timeout_s=1.5, max_retries=0, breaker_failures=1
        )
        b = OpenAIBackend(cfg)
        t0 = time.monotonic()
        with pytest.raises((BackendUnavailable, BackendError)) as e:
            _ask(b, cfg)
        took = time.monotonic() - t0
        b.close()
    finally:
        server.close()
    assert took < 4.0, f"the request ran {took:.1f} s against timeout_s=1.5"
    assert "timeout_s=1.5" in str(e.value) and server.url in str(e.value)
