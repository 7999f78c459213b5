"""What every backend speaks: a :class:`Request` in, a :class:`Completion` out, and the
small helpers they share (optional imports, choice grammars, option probabilities from
log-probabilities)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .settings import LLMConfig


class BackendError(RuntimeError):
    """A model backend failed on a request (for instance a server answering HTTP 400)."""


class BackendUnavailable(BackendError):
    """A backend's library is not installed or its server cannot be reached."""


@dataclass
class Request:
    """One chat call. Unset sampling fields fall back to the model's config."""

    messages: list
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    choices: list | None = None  # constrain the answer to exactly one of these strings
    stop: list | None = None

    def resolved(self, cfg: LLMConfig) -> Request:
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
    choice_probs: dict | None = None  # option → probability (renormalised over the options)
    finish_reason: str | None = None
    cached: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("cached")
        return d

    @classmethod
    def from_cached(cls, value: dict) -> Completion | None:
        """The completion a call-cache entry holds (marked cached), or None when the entry is not
        one (a damaged row: text missing or not a string, unknown fields, counts not numbers)."""
        known = {f for f in cls.__dataclass_fields__ if f != "cached"}
        if not isinstance(value, dict) or not isinstance(value.get("text"), str) or set(value) - known:
            return None
        numbers = ("prompt_tokens", "completion_tokens", "latency_s")
        if any(isinstance(value.get(k, 0), bool) or not isinstance(value.get(k, 0), (int, float)) for k in numbers):
            return None
        if value.get("choice_probs") is not None and not isinstance(value["choice_probs"], dict):
            return None
        return cls(**value, cached=True)


def _require(module: str, extra: str):
    """Import a backend's library or raise BackendUnavailable saying how to install it."""
    from ..deps import MissingDependency, require

    hint = (
        'pip install -e ".['
        + extra
        + ']"'
        + {
            "llamacpp": " (scripts/setup.sh builds it CPU-safe)",
            "vllm": " on a GPU machine; for vLLM's CPU build, `bash scripts/test_vllm.sh` sets up "
            "~/.cache/spacelm/vllm-venv",
        }.get(extra, "")
    )
    try:
        return require(module, f"the '{extra}' backend", hint)
    except MissingDependency as e:
        raise BackendUnavailable(str(e)) from None


def _choice_grammar(choices: Sequence[str]) -> str:
    alts = " | ".join('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in choices)
    return f"root ::= {alts}"


def _choice_probs_from_logprobs(logprobs: dict | None, choices: Sequence[str]) -> dict | None:
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
