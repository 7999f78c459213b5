"""The embedded default backend: llama-cpp-python in process, on the CPU. The chat template
comes from the GGUF file; consecutive prompts that share a beginning reuse the KV cache of
that prefix; a judge's closed set of answers is decided from the next-token distribution
(one forward pass, the probability of every option recorded) or, for multi-token options,
by grammar-constrained decoding."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .settings import LLMConfig
from .types import BackendUnavailable, Completion, Request, _choice_grammar, _require


def shared_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens `a` and `b` share from their start: what a single-slot KV cache holding `a`
    spares when `b` is evaluated next."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


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
        kwargs = dict(
            n_ctx=cfg.n_ctx, n_threads=cfg.n_threads or os.cpu_count(), seed=cfg.seed, verbose=False, n_batch=512
        )
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
        self.formatter = Jinja2ChatFormatter(
            template=template, eos_token=tok(self.llm.token_eos()), bos_token=tok(self.llm.token_bos())
        )
        self.prefix_reused_tokens = 0
        self.prompt_tokens_evaluated = 0

    def prompt_tokens(self, messages: list) -> tuple[list[int], list[str]]:
        res = self.formatter(messages=messages)
        toks = self.llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special, special=True)
        stop = res.stop if isinstance(res.stop, list) else ([res.stop] if res.stop else [])
        return toks, stop

    def _single_token_ids(self, choices: Sequence[str]) -> list[int] | None:
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
        shared = shared_prefix_length(llm.input_ids[: llm.n_tokens], tokens)
        prefix = min(shared, len(tokens) - 1)  # at least one token must be evaluated to get fresh logits
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
        return Completion(
            text=req.choices[best],
            prompt_tokens=len(tokens),
            completion_tokens=1,
            latency_s=time.perf_counter() - t0,
            choice_probs={c: float(p) for c, p in zip(req.choices, probs)},
            finish_reason="choice",
        )

    def complete(self, req: Request) -> Completion:
        with self._lock:
            tokens, stop = self.prompt_tokens(req.messages)
            if len(tokens) + (req.max_tokens or 0) > self.cfg.n_ctx:
                raise ValueError(
                    f"prompt of {len(tokens)} tokens + {req.max_tokens} to generate exceeds "
                    f"n_ctx={self.cfg.n_ctx} of {self.cfg.model}; raise n_ctx or shorten the context"
                )
            if req.choices:
                ids = self._single_token_ids(req.choices)
                if ids is not None and (req.temperature or 0) == 0:
                    return self._choose(req, tokens, ids)
            grammar = (
                self._llama_cpp.LlamaGrammar.from_string(_choice_grammar(req.choices), verbose=False)
                if req.choices
                else None
            )
            t0 = time.perf_counter()
            out = self.llm.create_completion(
                prompt=tokens,
                max_tokens=req.max_tokens,
                temperature=req.temperature,
                top_p=req.top_p,
                seed=req.seed,
                stop=(req.stop or []) + stop,
                grammar=grammar,
            )
            ch = out["choices"][0]
            usage = out.get("usage", {})
            return Completion(
                text=ch["text"],
                prompt_tokens=usage.get("prompt_tokens", len(tokens)),
                completion_tokens=usage.get("completion_tokens", 0),
                latency_s=time.perf_counter() - t0,
                finish_reason=ch.get("finish_reason"),
            )

    def close(self) -> None:
        with self._lock:
            self.llm.close()

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        for i, r in enumerate(reqs):
            on_done(i, self.complete(r))
