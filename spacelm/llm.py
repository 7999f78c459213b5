"""One interface to language models, three backends, and a persistent call cache.

- ``llamacpp`` (embedded default): in-process llama-cpp-python on the CPU. The chat template
  comes from the GGUF file; consecutive prompts that share a beginning reuse the KV cache of
  that prefix; a judge's closed set of answers is decided from the next-token distribution
  (one forward pass, the probability of every option recorded) or, for multi-token options,
  by grammar-constrained decoding.
- ``vllm``: offline ``vllm.LLM`` with batched ``generate``, guided choice and prefix caching;
  tensor/pipeline parallel settings come from the config. Imported lazily.
- ``openai``: any OpenAI-compatible server (vLLM serve, llama.cpp server, Ollama, TGI), with
  bounded concurrency, timeouts and retries with backoff. The API key is read from the
  environment variable named in the config and is never stored.

Every call returns a :class:`Completion` (text, token counts, latency, option probabilities
where available). :class:`LLM` wraps a backend with the cache, so a warm re-run makes no model
call at all.
"""
from __future__ import annotations

import math
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from .cache import CallCache, request_key
from .config import LLMConfig


class BackendUnavailable(RuntimeError):
    """A backend's library is not installed or its server cannot be reached."""


@dataclass
class Request:
    """One chat call. Unset sampling fields fall back to the model's config."""

    messages: list
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    seed: Optional[int] = None
    choices: Optional[list] = None  # constrain the answer to exactly one of these strings
    stop: Optional[list] = None

    def resolved(self, cfg: LLMConfig) -> "Request":
        return Request(
            messages=self.messages,
            max_tokens=self.max_tokens if self.max_tokens is not None else cfg.max_tokens,
            temperature=self.temperature if self.temperature is not None else cfg.temperature,
            top_p=self.top_p if self.top_p is not None else cfg.top_p,
            seed=self.seed if self.seed is not None else cfg.seed,
            choices=list(self.choices) if self.choices else None,
            stop=list(self.stop) if self.stop else None,
        )


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    choice_probs: Optional[dict] = None  # option → probability (renormalised over the options)
    finish_reason: Optional[str] = None
    cached: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("cached")
        return d


# --------------------------------------------------------------------------- llama.cpp
def _require(module: str, extra: str):
    """Import a backend's library or raise BackendUnavailable saying how to install it."""
    from .deps import MissingDependency, require

    hint = 'pip install -e ".[' + extra + ']"' + (" (scripts/setup.sh builds it CPU-safe)" if extra == "llamacpp" else "")
    try:
        return require(module, f"the '{extra}' backend", hint)
    except MissingDependency as e:
        raise BackendUnavailable(str(e)) from None


def _choice_grammar(choices: Sequence[str]) -> str:
    alts = " | ".join('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in choices)
    return f"root ::= {alts}"


class LlamaCppBackend:
    """In-process llama.cpp. Not thread-safe: calls are serialised by a lock."""

    name = "llamacpp"

    def __init__(self, cfg: LLMConfig):
        llama_cpp = _require("llama_cpp", "llamacpp")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from .models import resolve_model_path

        self.cfg = cfg
        spec = cfg.model
        path = resolve_model_path(spec)
        kwargs = dict(n_ctx=cfg.n_ctx, n_threads=cfg.n_threads or os.cpu_count(), seed=cfg.seed, verbose=False,
                      n_batch=512)
        if Path(path).is_file():
            self.llm = llama_cpp.Llama(model_path=str(path), **kwargs)
        else:  # hub repo, optionally "repo_id:filename-glob"
            repo, _, pattern = path.partition(":")
            self.llm = llama_cpp.Llama.from_pretrained(repo_id=repo, filename=pattern or "*q4_k_m.gguf", **kwargs)
        self._lock = threading.Lock()
        self._llama_cpp = llama_cpp
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise BackendUnavailable(f"{spec}: the GGUF file carries no chat template (tokenizer.chat_template)")
        tok = lambda i: self.llm.detokenize([i], special=True).decode("utf-8", "ignore") if i >= 0 else ""
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=tok(self.llm.token_eos()),
                                             bos_token=tok(self.llm.token_bos()))
        self.prefix_reused_tokens = 0
        self.prompt_tokens_evaluated = 0

    def prompt_tokens(self, messages: list) -> tuple[list[int], list[str]]:
        res = self.formatter(messages=messages)
        toks = self.llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special, special=True)
        stop = res.stop if isinstance(res.stop, list) else ([res.stop] if res.stop else [])
        return toks, stop

    def _single_token_ids(self, choices: Sequence[str]) -> Optional[list[int]]:
        ids = []
        for c in choices:
            t = self.llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)
            if len(t) != 1:
                return None
            ids.append(t[0])
        return ids if len(set(ids)) == len(ids) else None

    def _eval_with_prefix_reuse(self, tokens: list[int]) -> None:
        """Evaluate `tokens`, keeping the KV cache of the longest prefix shared with the last call."""
        llm = self.llm
        prefix = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens):
            if a != b:
                break
            prefix += 1
        prefix = min(prefix, len(tokens) - 1)  # at least one token must be evaluated to get fresh logits
        llm.n_tokens = prefix  # eval() drops the KV cache from here on
        llm.eval(tokens[prefix:])
        self.prefix_reused_tokens += prefix
        self.prompt_tokens_evaluated += len(tokens) - prefix

    def _choose(self, req: Request, tokens: list[int], ids: list[int]) -> Completion:
        import numpy as np

        t0 = time.perf_counter()
        self._eval_with_prefix_reuse(tokens)
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).astype(np.float64)
        sel = logits[ids]
        probs = np.exp(sel - sel.max())
        probs /= probs.sum()
        best = int(np.argmax(sel))
        return Completion(text=req.choices[best], prompt_tokens=len(tokens), completion_tokens=1,
                          latency_s=time.perf_counter() - t0,
                          choice_probs={c: float(p) for c, p in zip(req.choices, probs)}, finish_reason="choice")

    def complete(self, req: Request) -> Completion:
        with self._lock:
            tokens, stop = self.prompt_tokens(req.messages)
            if len(tokens) + (req.max_tokens or 0) > self.cfg.n_ctx:
                raise ValueError(f"prompt of {len(tokens)} tokens + {req.max_tokens} to generate exceeds "
                                 f"n_ctx={self.cfg.n_ctx} of {self.cfg.model}; raise n_ctx or shorten the context")
            if req.choices:
                ids = self._single_token_ids(req.choices)
                if ids is not None and (req.temperature or 0) == 0:
                    return self._choose(req, tokens, ids)
            grammar = self._llama_cpp.LlamaGrammar.from_string(_choice_grammar(req.choices), verbose=False) \
                if req.choices else None
            t0 = time.perf_counter()
            out = self.llm.create_completion(
                prompt=tokens, max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p,
                seed=req.seed, stop=(req.stop or []) + stop, grammar=grammar,
            )
            ch = out["choices"][0]
            usage = out.get("usage", {})
            return Completion(text=ch["text"], prompt_tokens=usage.get("prompt_tokens", len(tokens)),
                              completion_tokens=usage.get("completion_tokens", 0),
                              latency_s=time.perf_counter() - t0, finish_reason=ch.get("finish_reason"))

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        for i, r in enumerate(reqs):
            on_done(i, self.complete(r))


# --------------------------------------------------------------------------- OpenAI-compatible
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend:
    """Chat completions over HTTP against any OpenAI-compatible server."""

    name = "openai"

    def __init__(self, cfg: LLMConfig, transport: Any = None):
        httpx = _require("httpx", "openai")
        if not cfg.base_url:
            raise BackendUnavailable("the openai backend needs base_url in its config (e.g. http://127.0.0.1:8000/v1)")
        self.cfg = cfg
        key = os.environ.get(cfg.api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=cfg.base_url.rstrip("/"), headers=headers, timeout=cfg.timeout_s,
                                   transport=transport)
        self._httpx = httpx
        self.retries_done = 0

    def build_body(self, req: Request) -> dict:
        body = {"model": self.cfg.model, "messages": req.messages, "max_tokens": req.max_tokens,
                "temperature": req.temperature, "top_p": req.top_p, "seed": req.seed}
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

    @staticmethod
    def parse_response(data: dict, req: Request, latency: float) -> Completion:
        ch = data["choices"][0]
        text = (ch.get("message") or {}).get("content") or ch.get("text") or ""
        usage = data.get("usage") or {}
        probs = None
        if req.choices:
            probs = _choice_probs_from_logprobs(ch.get("logprobs"), req.choices)
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens", 0),
                          completion_tokens=usage.get("completion_tokens", 0), latency_s=latency,
                          choice_probs=probs, finish_reason=ch.get("finish_reason"))

    def complete(self, req: Request) -> Completion:
        body = self.build_body(req)
        delay = 0.5
        for attempt in range(self.cfg.max_retries + 1):
            t0 = time.perf_counter()
            try:
                r = self.client.post("/chat/completions", json=body)
            except (self._httpx.TransportError,) as e:
                err: Exception = e
                status = None
            else:
                if r.status_code == 200:
                    return self.parse_response(r.json(), req, time.perf_counter() - t0)
                status = r.status_code
                err = RuntimeError(f"{self.cfg.base_url}: HTTP {status}: {r.text[:300]}")
                if status not in RETRY_STATUS:
                    raise err
                ra = r.headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    delay = max(delay, float(ra))
            if attempt == self.cfg.max_retries:
                raise BackendUnavailable(f"{self.cfg.base_url}: gave up after {attempt + 1} attempts: {err}")
            self.retries_done += 1
            time.sleep(min(30.0, delay * (1 + 0.25 * random.random())))
            delay *= 2
        raise AssertionError("unreachable")

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        with ThreadPoolExecutor(max_workers=max(1, self.cfg.max_concurrency)) as pool:
            futures = {pool.submit(self.complete, r): i for i, r in enumerate(reqs)}
            for fut, i in futures.items():
                on_done(i, fut.result())


def _choice_probs_from_logprobs(logprobs: Optional[dict], choices: Sequence[str]) -> Optional[dict]:
    """Option probabilities from the first generated token's top logprobs (OpenAI format)."""
    if not logprobs or not logprobs.get("content"):
        return None
    first = logprobs["content"][0]
    cands = {first.get("token", ""): first.get("logprob")}
    for t in first.get("top_logprobs") or []:
        cands.setdefault(t.get("token", ""), t.get("logprob"))
    mass = {}
    for c in choices:
        lp = [v for tok, v in cands.items() if v is not None and tok.strip() and c.startswith(tok.strip())]
        if lp:
            mass[c] = math.exp(max(lp))
    if not mass:
        return None
    total = sum(mass.values())
    return {c: mass.get(c, 0.0) / total for c in choices}


# --------------------------------------------------------------------------- vLLM
class VLLMBackend:
    """Offline batched inference with vLLM (GPU). Request building and result parsing are
    plain functions so they are tested without a GPU."""

    name = "vllm"

    def __init__(self, cfg: LLMConfig, engine: Any = None):
        self.cfg = cfg
        if engine is None:
            vllm = _require("vllm", "vllm")
            engine = vllm.LLM(**self.engine_kwargs(cfg))
        self.engine = engine

    @staticmethod
    def engine_kwargs(cfg: LLMConfig) -> dict:
        kw = dict(model=cfg.model, tensor_parallel_size=cfg.tensor_parallel_size,
                  pipeline_parallel_size=cfg.pipeline_parallel_size, gpu_memory_utilization=cfg.gpu_memory_utilization,
                  enable_prefix_caching=cfg.enable_prefix_caching, seed=cfg.seed)
        if cfg.max_model_len:
            kw["max_model_len"] = cfg.max_model_len
        if cfg.quantization:
            kw["quantization"] = cfg.quantization
        if cfg.distributed_executor_backend:
            kw["distributed_executor_backend"] = cfg.distributed_executor_backend
        return kw

    @staticmethod
    def sampling_kwargs(req: Request) -> dict:
        kw = dict(max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p, seed=req.seed)
        if req.stop:
            kw["stop"] = req.stop
        if req.choices:
            kw["logprobs"] = 20
            kw["max_tokens"] = max(req.max_tokens or 0, max(len(c) for c in req.choices) + 2)
        return kw

    def _sampling_params(self, req: Request):
        import vllm

        kw = self.sampling_kwargs(req)
        if req.choices:
            try:  # vLLM >= 0.10
                from vllm.sampling_params import StructuredOutputsParams

                kw["structured_outputs"] = StructuredOutputsParams(choice=list(req.choices))
            except ImportError:
                from vllm.sampling_params import GuidedDecodingParams

                kw["guided_decoding"] = GuidedDecodingParams(choice=list(req.choices))
        return vllm.SamplingParams(**kw)

    @staticmethod
    def parse_output(out: Any, req: Request, latency: float) -> Completion:
        """A vLLM RequestOutput → Completion (option probabilities from first-token logprobs)."""
        gen = out.outputs[0]
        probs = None
        if req.choices and getattr(gen, "logprobs", None):
            first = gen.logprobs[0]
            content = [{"token": lp.decoded_token, "logprob": lp.logprob,
                        "top_logprobs": [{"token": v.decoded_token, "logprob": v.logprob} for v in first.values()]}
                       for lp in list(first.values())[:1]]
            probs = _choice_probs_from_logprobs({"content": content}, req.choices)
        return Completion(text=gen.text, prompt_tokens=len(out.prompt_token_ids or []),
                          completion_tokens=len(gen.token_ids or []), latency_s=latency, choice_probs=probs,
                          finish_reason=getattr(gen, "finish_reason", None))

    def complete(self, req: Request) -> Completion:
        res: list = []
        self.complete_many([req], lambda i, c: res.append(c))
        return res[0]

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        tok = self.engine.get_tokenizer()
        prompts = [tok.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True) for r in reqs]
        t0 = time.perf_counter()
        outs = self.engine.generate(prompts, [self._sampling_params(r) for r in reqs], use_tqdm=False)
        per = (time.perf_counter() - t0) / max(1, len(reqs))
        for i, (o, r) in enumerate(zip(outs, reqs)):
            on_done(i, self.parse_output(o, r, per))


BACKENDS = {"llamacpp": LlamaCppBackend, "openai": OpenAIBackend, "vllm": VLLMBackend}


# --------------------------------------------------------------------------- cached front end
@dataclass
class CallStats:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class LLM:
    """A backend plus the persistent cache; what every stage uses.

    `stage` labels the calls so the manifest can report hits and misses per stage."""

    def __init__(self, cfg: LLMConfig, cache: Optional[CallCache] = None, backend: Any = None):
        self.cfg = cfg
        self.cache = cache
        self._backend = backend
        self._identity: Optional[dict] = None
        self.stats = CallStats()
        self.stage: Optional[str] = None
        self._lock = threading.Lock()

    @property
    def backend(self):
        if self._backend is None:
            self._backend = BACKENDS[self.cfg.backend](self.cfg)
        return self._backend

    @property
    def identity(self) -> dict:
        if self._identity is None:
            from .models import model_identity

            ident = model_identity(self.cfg.model) if self.cfg.backend != "openai" else {"name": self.cfg.model}
            self._identity = dict(ident, backend=self.cfg.backend,
                                  base_url=self.cfg.base_url if self.cfg.backend == "openai" else None)
        return self._identity

    def _key(self, req: Request) -> str:
        ident = self.identity
        return request_key({"backend": self.cfg.backend, "model": ident.get("name"), "sha256": ident.get("sha256"),
                            "base_url": ident.get("base_url"), "request": asdict(req)})

    def chat_many(self, requests: Iterable[Request], progress: Optional[str] = None) -> list[Completion]:
        """Answer many requests; cached ones are returned without a model call, the rest go
        to the backend in order (batched where it can) and are stored as each finishes."""
        reqs = [r.resolved(self.cfg) for r in requests]
        results: list[Optional[Completion]] = [None] * len(reqs)
        todo = []
        for i, r in enumerate(reqs):
            hit = self.cache.get(self._key(r)) if self.cache else None
            if hit is not None:
                results[i] = Completion(**hit, cached=True)
                self.stats.cache_hits += 1
            else:
                todo.append(i)
            if self.cache:
                self.cache.stats.count(self.stage, hit is not None)
        bar = None
        if todo and progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc=progress, leave=False)

        def done(j: int, comp: Completion) -> None:
            i = todo[j]
            with self._lock:
                results[i] = comp
                self.stats.calls += 1
                self.stats.prompt_tokens += comp.prompt_tokens
                self.stats.completion_tokens += comp.completion_tokens
                self.stats.model_seconds += comp.latency_s
                if self.cache:
                    self.cache.put(self._key(reqs[i]), comp.to_dict(), model=str(self.identity.get("name")))
                if bar:
                    bar.update(1)

        if todo:
            self.backend.complete_many([reqs[i] for i in todo], done)
        if bar:
            bar.close()
        return results  # type: ignore[return-value]

    def chat(self, messages: list, **kw) -> Completion:
        return self.chat_many([Request(messages=messages, **kw)])[0]


def open_llm(cfg: LLMConfig, cache_dir: Optional[Path] = None, pool: Optional[dict] = None) -> LLM:
    """An :class:`LLM` for a config. Models already opened in `pool` (same backend, model and
    settings) are shared, so generator and judge on one model load it once."""
    cache = CallCache(Path(cache_dir) / "llm_calls.sqlite") if cache_dir else None
    key = (cfg.backend, cfg.model, cfg.n_ctx, cfg.base_url, cfg.tensor_parallel_size)
    if pool is not None and key in pool:
        return LLM(cfg, cache, backend=pool[key].backend)
    llm = LLM(cfg, cache)
    if pool is not None:
        pool[key] = llm
    return llm


# --------------------------------------------------------------------------- judge helpers
@dataclass
class Judgement:
    """A parsed judge answer: `value` is None when the output could not be parsed (never a
    silent default); `raw` keeps what the model said."""

    value: Optional[int]
    raw: str
    probs: Optional[dict] = None
    expected: Optional[float] = None
    explanation: str = ""
    extra: dict = field(default_factory=dict)


_RESULT_TAG = re.compile(r"<result>\s*\[?\s*(-?\d+)\s*\]?\s*</result>", re.I)
_SCORE_WORD = re.compile(r"(?:score|grade|rating|result)\s*(?:is|:|=)?\s*\**\s*(-?\d+)", re.I)
_DIGIT = re.compile(r"(?<![\d.])(-?\d+)(?!\d|\.\d)")


def parse_score(text: str, lo: int, hi: int) -> Optional[int]:
    """The score in a judge's answer, if one in [lo, hi] can be found: a `<result>N</result>`
    tag, then "score: N", then a lone number when it is the only one in range."""
    for pat in (_RESULT_TAG, _SCORE_WORD):
        m = pat.search(text or "")
        if m and lo <= int(m.group(1)) <= hi:
            return int(m.group(1))
    nums = [int(x) for x in _DIGIT.findall(text or "") if lo <= int(x) <= hi]
    return nums[0] if len(set(nums)) == 1 else None


def judgement_from(comp: Completion, lo: int, hi: int) -> Judgement:
    value = parse_score(comp.text, lo, hi)
    expected = None
    probs = None
    if comp.choice_probs:
        probs = {int(k): v for k, v in comp.choice_probs.items() if str(k).lstrip("-").isdigit()}
        if probs:
            expected = sum(k * v for k, v in probs.items()) / max(1e-12, sum(probs.values()))
    return Judgement(value=value, raw=comp.text, probs=probs, expected=expected)


def score_choices(lo: int, hi: int) -> list[str]:
    return [str(i) for i in range(lo, hi + 1)]
