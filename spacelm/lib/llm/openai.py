"""Any OpenAI-compatible server (vLLM serve, llama.cpp server, Ollama, TGI): chat completions
over HTTP with bounded concurrency, timeouts and retries with backoff. The API key is read
from the environment variable named in the config and is never stored.

`timeout_s` bounds each request as a whole, not each read: the reply is read as a stream and
abandoned (as a timeout, so it is retried like one) once `timeout_s` has passed, so a server
that sends its headers and then a byte a second cannot hang a run. A reply that is not JSON,
or JSON without `choices`, is an error naming the server and the first 200 characters."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from ..redact import redact_url, remember_secret, remember_url, trim_body
from .settings import LLMConfig
from .types import (
    BackendError,
    BackendUnavailable,
    Completion,
    Request,
    _choice_grammar,
    _choice_probs_from_logprobs,
    _require,
)

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
REPLY_SHOWN = 200  # characters of a malformed reply quoted in its error
# seconds past a request's deadline its worker thread is waited for (the body's own check fires first)
HEADER_GRACE_S = 0.5


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without user:password, the user, the password): credentials go to the server as an
    Authorization header, never in the URL that messages and logs name."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None:
        return url, None, None
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, unquote(parts.username), None if parts.password is None else unquote(parts.password)


class OpenAIBackend:
    """Chat completions over HTTP against any OpenAI-compatible server."""

    name = "openai"
    holds_weights = False  # the model lives in the server's process: nothing to collect here

    def __init__(self, cfg: LLMConfig, transport: Any = None):
        httpx = _require("httpx", "openai")
        if not cfg.base_url:
            raise BackendUnavailable("the openai backend needs base_url in its config (e.g. http://127.0.0.1:8000/v1)")
        self.cfg = cfg
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        url, user, password = split_userinfo(cfg.base_url.rstrip("/"))
        remember_url(cfg.base_url)
        remember_secret(key)
        if key and user is not None:
            raise BackendUnavailable(
                f"{redact_url(cfg.base_url)}: the base_url carries user:password and ${cfg.api_key_env} holds an api "
                "key; the server would get only one of them: keep the one it expects (unset the variable, or take "
                "user:password out of base_url)"
            )
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        auth = httpx.BasicAuth(user, password or "") if user is not None else None
        self._new_client = lambda: httpx.Client(
            base_url=url, headers=headers, auth=auth, timeout=cfg.timeout_s, transport=transport
        )
        self.client = self._new_client()
        self._httpx = httpx
        self.retries_done = 0
        self.breaker = CircuitBreaker(cfg.breaker_failures)
        self.where = redact_url(cfg.base_url)  # the server as named in messages: no user:password, no key

    def build_body(self, req: Request) -> dict:
        body = {
            "model": self.cfg.model,
            "messages": req.messages,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
            "seed": req.seed,
        }
        if req.stop:
            body["stop"] = req.stop
        if req.choices:
            # vLLM reads guided_choice, llama.cpp's server reads grammar; others ignore both and we parse.
            body["guided_choice"] = list(req.choices)
            body["grammar"] = _choice_grammar(req.choices)
            body["logprobs"] = True
            body["top_logprobs"] = min(20, max(5, len(req.choices)))
            body["max_tokens"] = max(req.max_tokens or 0, max(len(c) for c in req.choices) + 2)
        return body

    def decode_reply(self, raw: bytes) -> dict:
        """The JSON object of a 200 reply, checked to hold a first choice; otherwise a
        BackendError naming the server and what is wrong, with the reply's start."""
        text = raw.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            raise BackendError(
                f"{self.where}: the reply is not JSON: {trim_body(text, REPLY_SHOWN) or '(empty)'}"
            ) from None
        if not isinstance(data, dict) or "choices" not in data:
            raise BackendError(f"{self.where}: the reply has no 'choices': {trim_body(text, REPLY_SHOWN)}")
        choices = data["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise BackendError(
                f"{self.where}: the reply's 'choices' is not a list of choices: {trim_body(text, REPLY_SHOWN)}"
            )
        return data

    def _post_within(self, body: dict, deadline: float):
        """(status, headers, body bytes) of one POST, read as a stream so that the whole request,
        not each read, is bounded: past `deadline` (time.monotonic) it raises httpx.ReadTimeout."""
        httpx = self._httpx
        with self.client.stream("POST", "/chat/completions", json=body) as r:
            parts = []
            for chunk in r.iter_bytes():
                parts.append(chunk)
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(
                        f"no complete reply within timeout_s={self.cfg.timeout_s:g} s "
                        f"({sum(map(len, parts))} bytes received)",
                        request=r.request,
                    )
            return r.status_code, r.headers, b"".join(parts)

    def _post_bounded(self, body: dict, deadline: float):
        """:meth:`_post_within` on a worker thread, waited for until `deadline`: the body's reads
        are bounded by their own check, but a server that trickles its status line or headers a
        byte at a time keeps httpx inside one call; past the deadline that call is left to its
        thread (daemon), its connection pool is replaced, and httpx.ReadTimeout is raised."""
        box: dict = {}

        def work():
            try:
                box["reply"] = self._post_within(body, deadline)
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        worker = threading.Thread(target=work, daemon=True, name="spacelm-openai-request")
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()) + HEADER_GRACE_S)
        if worker.is_alive():
            stuck, self.client = self.client, self._new_client()
            threading.Thread(target=stuck.close, daemon=True).start()
            raise self._httpx.ReadTimeout(f"no complete reply within timeout_s={self.cfg.timeout_s:g} s (headers)")
        if "error" in box:
            raise box["error"]
        return box["reply"]

    @staticmethod
    def parse_response(data: dict, req: Request, latency: float) -> Completion:
        ch = data["choices"][0]
        text = (ch.get("message") or {}).get("content") or ch.get("text") or ""
        usage = data.get("usage") or {}
        probs = None
        if req.choices:
            probs = _choice_probs_from_logprobs(ch.get("logprobs"), req.choices)
        return Completion(
            text=text,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            latency_s=latency,
            choice_probs=probs,
            finish_reason=ch.get("finish_reason"),
        )

    def complete(self, req: Request) -> Completion:
        body = self.build_body(req)
        delay = 0.5
        for attempt in range(self.cfg.max_retries + 1):
            if self.breaker.is_open:
                raise BackendUnavailable(f"{self.where} is unreachable ({self.breaker.describe()})")
            t0 = time.perf_counter()
            try:
                status, headers, raw = self._post_bounded(body, time.monotonic() + self.cfg.timeout_s)
            except self._httpx.TransportError as e:
                err: Exception = e
                self.breaker.failed(e)
                if self.breaker.is_open:
                    raise BackendUnavailable(f"{self.where} is unreachable ({self.breaker.describe()})") from e
            else:
                self.breaker.reached()
                if status == 200:
                    return self.parse_response(self.decode_reply(raw), req, time.perf_counter() - t0)
                err = BackendError(f"{self.where}: HTTP {status}: {trim_body(raw.decode('utf-8', 'replace'))}")
                if status not in RETRY_STATUS:
                    raise err
                ra = headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    delay = max(delay, float(ra))
            if attempt == self.cfg.max_retries:
                raise BackendUnavailable(f"{self.where}: gave up after {attempt + 1} attempts: {err}")
            self.retries_done += 1
            time.sleep(min(30.0, delay * (1 + 0.25 * random.random())))
            delay *= 2
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.client.close()

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        """Send with bounded concurrency; hand back each completion as soon as it arrives (so
        the caller caches it whatever happens to the others). On the first fatal error the
        queued requests are cancelled, the ones in flight are still kept, and the error says
        how many calls finished."""
        pool = ThreadPoolExecutor(max_workers=max(1, self.cfg.max_concurrency))
        futures = {pool.submit(self.complete, r): i for i, r in enumerate(reqs)}
        fatal: BaseException | None = None
        kept = 0
        try:
            for fut in as_completed(futures):
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    if fatal is None:
                        fatal = exc
                        for f in futures:
                            f.cancel()
                    continue
                on_done(futures[fut], fut.result())
                kept += 1
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        if fatal is not None:
            where = f"{kept} of {len(reqs)} calls finished and are kept in the cache; the same command resumes"
            cls = BackendUnavailable if isinstance(fatal, BackendUnavailable) else BackendError
            raise cls(f"{fatal}; {where}") from fatal


class CircuitBreaker:
    """Counts consecutive failures to reach a server across all threads; after `limit` of
    them every further attempt fails at once instead of retrying for minutes."""

    def __init__(self, limit: int):
        self.limit = limit
        self.consecutive = 0
        self.last_error: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self.consecutive >= self.limit

    def failed(self, error: BaseException) -> None:
        with self._lock:
            self.consecutive += 1
            self.last_error = error

    def reached(self) -> None:
        with self._lock:
            self.consecutive = 0

    def describe(self) -> str:
        return (
            f"{self.consecutive} connection failures in a row, the last: "
            f"{type(self.last_error).__name__}: {trim_body(str(self.last_error))}"
        )
