"""Offline batched inference with vLLM: batched ``generate``, guided choice and prefix
caching; tensor/pipeline parallel settings come from the config. Imported lazily."""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from ...config import LLMConfig
from .types import Completion, Request, _choice_probs_from_logprobs, _require


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

    def close(self) -> None:
        """Shut the engine down so its memory returns (vLLM keeps it until the engine is gone)."""
        engine, self.engine = self.engine, None
        shutdown = getattr(getattr(engine, "llm_engine", None), "shutdown", None) or getattr(engine, "shutdown", None)
        if callable(shutdown):
            shutdown()
        del engine

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
            batch = reqs[start:start + step]
            prompts = [tok.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True) for r in batch]
            t0 = time.perf_counter()
            outs = self.engine.generate(prompts, [self._sampling_params(r) for r in batch], use_tqdm=False)
            per = (time.perf_counter() - t0) / max(1, len(batch))
            for i, (o, r) in enumerate(zip(outs, batch)):
                on_done(start + i, self.parse_output(o, r, per))


