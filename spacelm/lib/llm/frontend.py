"""The cached front end every stage uses: :class:`LLM` wraps a backend with the persistent
call cache, so a warm re-run makes no model call at all."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .cache import CallCache, request_key
from .settings import LLMConfig
from .types import Completion, Request


def _backend_class(name: str):
    if name == "llamacpp":
        from .llamacpp import LlamaCppBackend

        return LlamaCppBackend
    if name == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend
    if name == "vllm":
        from .vllm import VLLMBackend

        return VLLMBackend
    if name == "vllm-server":
        from .vllm_server import VLLMServerBackend

        return VLLMServerBackend
    raise ValueError(f"unknown backend {name!r}")


_LOG_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("spacelm_model_logs", default=None)


@contextlib.contextmanager
def model_logs(folder: Path | None) -> Iterator[None]:
    """Within the block, models opened by :func:`open_llm` keep their logs (a managed server's
    output) in `folder`; the pipeline points it at the run folder."""
    token = _LOG_DIR.set(Path(folder) if folder else None)
    try:
        yield
    finally:
        _LOG_DIR.reset(token)


@dataclass
class CallStats:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0  # time in model calls made by this run
    # model time of every result this run used, cached ones at the latency recorded when they
    # were computed: what these results cost cold
    recorded_seconds: float = 0.0
    # llama.cpp, calls answered from the option probabilities: prompt tokens whose KV cache was
    # kept from the previous prompt (its shared beginning) against tokens evaluated anew
    prefix_reused_tokens: int = 0
    prompt_tokens_evaluated: int = 0

    def to_dict(self) -> dict:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


def prompt_order(req: Request) -> tuple:
    """Sort key putting requests whose messages begin alike next to each other."""
    return tuple((m.get("role", ""), m.get("content", "")) for m in req.messages)


class LLM:
    """A backend plus the persistent cache; what every stage uses.

    `stage` labels the calls so the manifest can report hits and misses per stage."""

    def __init__(
        self, cfg: LLMConfig, cache: CallCache | None = None, backend: Any = None, log_dir: Path | None = None
    ):
        self.cfg = cfg
        self.cache = cache
        self._backend = backend
        self.log_dir = log_dir
        self._identity: dict | None = None
        self.stats = CallStats()
        self.stage: str | None = None
        self._lock = threading.Lock()

    @property
    def backend(self):
        if self._backend is None:
            cls = _backend_class(self.cfg.backend)
            if self.cfg.backend == "vllm-server":
                self._backend = cls(self.cfg, log_dir=self.log_dir, label=self.stage)
            else:
                self._backend = cls(self.cfg)
        return self._backend

    @property
    def identity(self) -> dict:
        if self._identity is None:
            from .models import model_identity

            ident = model_identity(self.cfg.model) if self.cfg.backend != "openai" else {"name": self.cfg.model}
            self._identity = dict(
                ident, backend=self.cfg.backend, base_url=self.cfg.base_url if self.cfg.backend == "openai" else None
            )
        return self._identity

    def _key(self, req: Request) -> str:
        ident = self.identity
        return request_key(
            {
                "backend": self.cfg.backend,
                "model": ident.get("name"),
                "sha256": ident.get("sha256"),
                "base_url": ident.get("base_url"),
                "request": asdict(req),
            }
        )

    def chat_many(self, requests: Iterable[Request], progress: str | None = None) -> list[Completion]:
        """Answer many requests; cached ones are returned without a model call, the rest go
        to the backend in order (batched where it can) and are stored as each finishes."""
        reqs = [r.resolved(self.cfg) for r in requests]
        keys = [self._key(r) for r in reqs]
        results: list[Completion | None] = [None] * len(reqs)
        todo, first = [], {}  # a request repeated in one batch is sent once and shared
        for i, _r in enumerate(reqs):
            if keys[i] in first:
                continue
            hit = self.cache.get(keys[i]) if self.cache else None
            comp = Completion.from_cached(hit) if hit is not None else None
            if hit is not None and comp is None:
                hit = self.cache.damaged_row(keys[i], "its value is not a completion")
            if hit is not None:
                results[i] = comp
                self.stats.cache_hits += 1
                self.stats.recorded_seconds += float(hit.get("latency_s") or 0.0)
            else:
                todo.append(i)
            first[keys[i]] = i
            if self.cache:
                self.cache.stats.count(self.stage, hit is not None)
        bar = None
        if todo and progress:
            from ..progress import progress_bar

            bar = progress_bar(len(todo), progress)

        def done(j: int, comp: Completion) -> None:
            i = todo[j]
            with self._lock:
                results[i] = comp
                self.stats.calls += 1
                self.stats.prompt_tokens += comp.prompt_tokens
                self.stats.completion_tokens += comp.completion_tokens
                self.stats.model_seconds += comp.latency_s
                self.stats.recorded_seconds += comp.latency_s
                if self.cache:
                    self.cache.put(keys[i], comp.to_dict(), model=str(self.identity.get("name")))
                if bar:
                    bar.update(1)

        if todo:
            # sent in prompt order: prompts that begin alike follow each other, so llama.cpp keeps
            # the KV cache of the shared beginning (fixed instructions, then the question) and a
            # batching engine finds its prefixes together; results keep the callers' order
            todo.sort(key=lambda i: prompt_order(reqs[i]))
            backend = self.backend
            before = (getattr(backend, "prefix_reused_tokens", 0), getattr(backend, "prompt_tokens_evaluated", 0))
            backend.complete_many([reqs[i] for i in todo], done)
            self.stats.prefix_reused_tokens += getattr(backend, "prefix_reused_tokens", 0) - before[0]
            self.stats.prompt_tokens_evaluated += getattr(backend, "prompt_tokens_evaluated", 0) - before[1]
        if bar:
            bar.close()
        for i, k in enumerate(keys):
            if results[i] is None and results[first[k]] is not None:
                results[i] = results[first[k]]
        return results  # type: ignore[return-value]

    def release(self) -> None:
        """Give the model's memory back (the next call loads it again): a vLLM engine is shut
        down, a managed server stopped. Stages call this at the end of each model phase, so one
        model is in memory at a time."""
        backend, self._backend = self._backend, None
        if backend is None:  # never loaded (every call answered from the cache): nothing to give back
            return
        if hasattr(backend, "close"):
            backend.close()
        weights = getattr(backend, "holds_weights", True)  # a client of a server holds none here
        del backend
        if weights:
            import gc

            gc.collect()

    def chat(self, messages: list, **kw) -> Completion:
        return self.chat_many([Request(messages=messages, **kw)])[0]


def open_llm(cfg: LLMConfig, cache_dir: Path | None = None) -> LLM:
    """An :class:`LLM` for a config, with the call cache in `cache_dir`. The model loads on the
    first call that misses the cache, and is given back by :meth:`LLM.release`."""
    cache = CallCache(Path(cache_dir) / "llm_calls.sqlite") if cache_dir else None
    return LLM(cfg, cache, log_dir=_LOG_DIR.get())
