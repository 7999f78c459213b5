"""Counting a run's model calls and tokens before it starts, without loading a model.

The stages' own request-building functions run against :class:`PlanLLM`, a stand-in for the
LLM front end that records every request and answers at once. Where a later prompt holds an
earlier model output (a question, an answer), the stand-in's reply is a *placeholder* that
carries its token budget (the request's ``max_tokens``): a prompt holding placeholders is
counted as its known text plus those budgets, an upper bound.

Prompt tokens are counted as a backend sees them: the messages rendered with the model's chat
template, then its tokenizer (a GGUF file's vocabulary read with ``vocab_only``, so no weights
are loaded; or a ``tokenizer.json``). Passages recur across thousands of prompts, so a prompt
is counted piece by piece, split only where byte-level BPE cannot merge across the split, and
each piece's count is remembered.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .types import Completion, Request

BASES = ("exact", "upper bound", "estimate")
PLACEHOLDER = re.compile(r"Out\d+ ⟦(\d+)⟧(?: x)*")
_FILLER = " x" * 12  # enough words that a placeholder passes as a well-formed question


def placeholder(n: int, budget: int) -> str:
    """Stand-in text for model output number `n` of at most `budget` tokens; it parses as a
    question (so the stages' filters keep it: the upper bound) and is unique per `n`."""
    return f"Out{n} ⟦{budget}⟧{_FILLER}"


def strip_placeholders(text: str) -> tuple[str, int]:
    """(text without placeholders, the sum of their token budgets)."""
    budget = sum(int(m.group(1)) for m in PLACEHOLDER.finditer(text))
    return (PLACEHOLDER.sub("", text), budget) if budget else (text, 0)


def weakest(*bases: str) -> str:
    """The least certain of several bases (exact < upper bound < estimate)."""
    return max(bases, key=BASES.index) if bases else "exact"


# --------------------------------------------------------------------------- tokens
# Byte-level BPE pre-tokenisers (Llama 3, Qwen2, GPT-2 style) never merge a letter or digit with
# the newlines after it, nor a run of newlines with the non-space character after it: a text
# split at such a paragraph break counts the same, piece by piece.
_BREAK = re.compile(r"(\n\n+)")
_CALIBRATION = "Alpha beta 12\n\nGamma delta.\n\nEpsilon [1]\nZeta:\n\n  eta 2019\n\n\ntheta"


def safe_pieces(text: str) -> list[str]:
    """`text` cut at the paragraph breaks where a byte-level BPE tokeniser cannot merge across
    the cut (a letter or digit before the break, a non-space after it); the break is a piece."""
    parts = _BREAK.split(text)
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        brk, nxt = parts[i], parts[i + 1]
        if out[-1] and out[-1][-1].isalnum() and nxt and not nxt[0].isspace():
            out += [brk, nxt]
        else:
            out[-1] += brk + nxt
    return out


class TokenCounter:
    """Prompt tokens of chat messages for one tokenizer: `encode(text) -> n` without special
    tokens added, `render(messages) -> (prompt, extra)` applying the chat template (`extra`:
    tokens the backend adds, such as a BOS). `note` says what is approximate, if anything."""

    def __init__(self, encode: Callable[[str], int], render: Callable[[list], tuple[str, int]], note: str = ""):
        self._encode, self._render, self.note = encode, render, note
        self._memo: dict[str, int] = {}
        pieces = sum(encode(p) for p in safe_pieces(_CALIBRATION) if p)
        self._split = pieces == encode(_CALIBRATION)  # else count whole prompts (slower, still exact)

    def text(self, text: str) -> int:
        """Tokens of a plain text (memoised by piece)."""
        pieces = safe_pieces(text) if self._split else [text]
        n = 0
        for p in pieces:
            if p:
                got = self._memo.get(p)
                if got is None:
                    got = self._memo[p] = self._encode(p)
                n += got
        return n

    def shared_prefix(self, a: list, b: list) -> int:
        """Tokens at the start of request `b` that a single-slot prefix cache keeps from request
        `a` evaluated just before (llama.cpp): the rendered prompts' common beginning, counted up
        to its last paragraph break so no token straddles the cut. A placeholder (a model output
        not known yet, the same output in both) inside the shared part counts at its budget."""
        return self.shared_prefix_of(self.raw_prompt(a), self.raw_prompt(b))

    def raw_prompt(self, messages: list) -> str:
        """The rendered prompt of a request with its placeholders left in."""
        return self._render([dict(m, content=m.get("content") or "") for m in messages])[0]

    def shared_prefix_of(self, pa: str, pb: str) -> int:
        """:meth:`shared_prefix` of two prompts already rendered by :meth:`raw_prompt`."""
        common = pa[: common_prefix_length(pa, pb)]
        cut = common.rfind("\n\n")
        if cut <= 0:
            return 0
        clean, budget = strip_placeholders(common[: cut + 2])
        return self.text(clean) + budget

    def messages(self, messages: list) -> tuple[int, int]:
        """(prompt tokens, how many of them are placeholder budgets) of a chat request."""
        budget, clean = 0, []
        for m in messages:
            content, b = strip_placeholders(m.get("content") or "")
            budget += b
            clean.append(dict(m, content=content))
        prompt, extra = self._render(clean)
        return self.text(prompt) + extra + budget, budget


def _jinja_render(template: str, bos: str, eos: str) -> Callable[[list], str]:
    """A chat template applied the way llama-cpp-python and transformers apply it."""
    import datetime

    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(msg):
        raise ValueError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tpl = env.from_string(template)
    now = lambda fmt: datetime.datetime.now().strftime(fmt)

    return lambda messages: tpl.render(
        messages=messages,
        bos_token=bos,
        eos_token=eos,
        add_generation_prompt=True,
        raise_exception=raise_exception,
        strftime_now=now,
    )


def common_prefix_length(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share (os.path.commonprefix's length, found by halving:
    slice comparisons run in C, where commonprefix walks the characters in Python)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # invariant: a[:lo] == b[:lo]; the answer lies in [lo, hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def gguf_counter(path: Path) -> TokenCounter:
    """A counter from a GGUF file's vocabulary and chat template (llama.cpp `vocab_only`: the
    weights are not read), applying them as the llama.cpp backend does."""
    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    with suppress_stdout_stderr(disable=False):
        vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    encode = lambda t: len(vocab.tokenize(t.encode("utf-8"), add_bos=False, special=True))
    bos_extra = len(vocab.tokenize(b"", add_bos=True, special=True))
    template = vocab.metadata.get("tokenizer.chat_template")
    if not template:
        return TokenCounter(
            encode,
            lambda ms: ("\n".join(m["content"] for m in ms), bos_extra + 4 * len(ms)),
            "no chat template: about 4 tokens per message assumed",
        )
    tok = lambda i: vocab.detokenize([i], special=True).decode("utf-8", "ignore") if i >= 0 else ""
    fmt = Jinja2ChatFormatter(template=template, eos_token=tok(vocab.token_eos()), bos_token=tok(vocab.token_bos()))

    def render(messages: list) -> tuple[str, int]:
        res = fmt(messages=messages)
        return res.prompt, 0 if res.added_special else bos_extra

    return TokenCounter(encode, render)


def hf_counter(tokenizer_json: Path) -> TokenCounter:
    """A counter from a `tokenizer.json`, with the chat template of the `tokenizer_config.json`
    (or `chat_template.jinja`) beside it when there is one."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    tok.no_truncation()
    tok.no_padding()
    encode = lambda t: len(tok.encode(t, add_special_tokens=False).ids)
    folder = Path(tokenizer_json).parent
    conf: dict = {}
    if (folder / "tokenizer_config.json").is_file():
        conf = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = conf.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        template = next((t["template"] for t in template if t.get("name") == "default"), None)
    if not template and (folder / "chat_template.jinja").is_file():
        template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    special = lambda v: v.get("content", "") if isinstance(v, dict) else (v or "")
    if not template:
        return TokenCounter(
            encode,
            lambda ms: ("\n".join(m["content"] for m in ms), 4 * len(ms)),
            "no chat template: about 4 tokens per message assumed",
        )
    render_text = _jinja_render(template, special(conf.get("bos_token")), special(conf.get("eos_token")))
    return TokenCounter(encode, lambda ms: (render_text(ms), 0))


def wordpiece_counter(spec) -> TokenCounter:
    """The last resort: the chunking tokenizer, messages joined, 4 tokens per message."""
    from .models import load_tokenizer

    tok = load_tokenizer(str(spec))
    encode = lambda t: len(tok.encode(t, add_special_tokens=False).ids)
    return TokenCounter(
        encode,
        lambda ms: ("\n".join(m["content"] for m in ms), 4 * len(ms)),
        "WordPiece, not the model's byte-level BPE; about 4 tokens per message assumed",
    )


# --------------------------------------------------------------------------- the stand-in front end
@dataclass
class PhaseCount:
    """One model phase of a stage: its distinct calls and their tokens."""

    stage: str
    phase: str
    role: str
    model: str
    backend: str
    calls_basis: str = "exact"
    pseudo_passages: bool = False  # passages not known yet: average-length chunks stand in
    estimate_note: str = ""
    calls: int = 0
    # calls whose prompt was tokenized (the rest: their characters at the counted calls' tokens per
    # character, see PlanLLM); equal to calls when every prompt was counted
    counted: int = 0
    counted_chars: int = 0
    counted_tokens: int = 0
    repeats: int = 0  # requests an earlier phase already made (served by the call cache)
    prompt_tokens: int = 0
    # prompt tokens left to evaluate when each batch is sent in prompt order and the engine keeps
    # the previous prompt's KV cache (llama.cpp; vLLM's prefix caching keeps more)
    prompt_tokens_evaluated: int = 0
    placeholder_tokens: int = 0  # budgets of earlier outputs counted in prompt_tokens
    completion_tokens_max: int = 0
    max_prompt_tokens: int = 0
    max_completion_tokens: int = 0

    @property
    def tokens_basis(self) -> str:
        if self.pseudo_passages or self.calls_basis == "estimate" or self.counted < self.calls:
            return "estimate"
        return "upper bound" if self.placeholder_tokens else "exact"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tokens_basis"] = self.tokens_basis
        return d


class PlanLLM:
    """Stands in for :class:`~spacelm.lib.llm.LLM` while planning: records each request the
    stage code builds and answers at once, without a model. It counts as the front end does: a
    request repeated within one batch is one call; one already made earlier (same model, same
    request: a call-cache hit in a real run) is a repeat, not a call. A constrained request is
    answered with its first option (or, while `unreadable` is set, with no option at all: a
    verdict the stage cannot read, so that it goes on checking); any other with a placeholder of
    its `max_tokens`. While `replay` is set (`replay(request) -> Completion | None`, a finished
    run's call cache), a request the run made is answered as the model answered it."""

    # past the first COUNT_FIRST new calls of a phase, one in COUNT_EVERY is tokenized and the others
    # are counted by their characters at the phase's tokens per character so far (exact: all)
    COUNT_FIRST, COUNT_EVERY = 100, 50

    def __init__(self, cfg, role: str, counter: TokenCounter, answered: dict, serial: list, exact: bool = False):
        self.cfg, self.role, self.counter, self.exact = cfg, role, counter, exact
        self.identity = {"name": cfg.model, "backend": cfg.backend, "sha256": None}
        self.stage: str | None = None
        self.current: PhaseCount | None = None
        self.unreadable = False
        self.replay: Callable | None = None
        self._answered = answered  # shared by every stand-in: {request key: Completion}
        self._serial = serial  # shared counter for unique placeholders

    def _key(self, req: Request) -> tuple:
        fields = (_frozen(getattr(req, f)) for f in _field_names(type(req)))
        return (self.cfg.backend, self.cfg.model, self.cfg.base_url, *fields)

    def _counts_exactly(self) -> bool:
        ph = self.current
        return self.exact or ph.counted < self.COUNT_FIRST or ph.calls % self.COUNT_EVERY == 0

    def _answer(self, req: Request) -> tuple[Completion, int, bool]:
        """The request's stand-in reply, its prompt tokens as counted here, and whether they were
        tokenized (else counted by characters)."""
        ph = self.current
        tokenized = self._counts_exactly()
        if tokenized:
            prompt, from_outputs = self.counter.messages(req.messages)
            ph.counted += 1
            ph.counted_chars += _chars(req.messages)[0]
            ph.counted_tokens += prompt - from_outputs
        else:
            chars, from_outputs = _chars(req.messages)
            prompt = round(chars * ph.counted_tokens / max(1, ph.counted_chars)) + from_outputs
        if req.choices:
            longest = max(self.counter.text(c) for c in req.choices)
            completion = min(req.max_tokens, longest) if req.max_tokens else longest
        else:
            completion = req.max_tokens or 0
        ph.calls += 1
        ph.prompt_tokens += prompt
        ph.placeholder_tokens += from_outputs
        ph.completion_tokens_max += completion
        ph.max_prompt_tokens = max(ph.max_prompt_tokens, prompt)
        ph.max_completion_tokens = max(ph.max_completion_tokens, completion)
        known = self.replay(req) if self.replay else None
        if known is not None:
            return known, prompt, tokenized
        if req.choices:
            text = "" if self.unreadable else req.choices[0]
            return Completion(text=text, prompt_tokens=prompt, completion_tokens=completion), prompt, tokenized
        self._serial[0] += 1
        text = placeholder(self._serial[0], completion)
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=completion), prompt, tokenized

    def chat_many(self, requests: Sequence[Request], progress: str | None = None) -> list[Completion]:
        if self.current is None:
            raise RuntimeError("PlanLLM: a request outside a phase (the planner must open one first)")
        out, batch, new = [], set(), []
        for r in requests:
            req = r.resolved(self.cfg)
            key = self._key(req)
            if key not in self._answered:
                self._answered[key], prompt, tokenized = self._answer(req)
                new.append((req, prompt, tokenized))
            elif key not in batch:
                self.current.repeats += 1
            batch.add(key)
            out.append(self._answered[key])
        self._count_prefix_reuse(new)
        return out

    def _count_prefix_reuse(self, sent: list[tuple[Request, int, bool]]) -> None:
        """The batch's new requests (each with its prompt tokens and whether they were tokenized)
        in the order the front end sends them (prompt order): each evaluates its prompt less the
        beginning it shares with the one before. A request counted by its characters has its shared
        beginning counted so too (its messages' text, up to the last paragraph break)."""
        from .frontend import prompt_order

        ph = self.current
        per_char = ph.counted_tokens / max(1, ph.counted_chars)
        prev = None  # (its messages' text joined, its messages, its rendered prompt when rendered)
        for req, full, tokenized in sorted(sent, key=lambda x: prompt_order(x[0])):
            cur, cur_raw = "\x00".join(m.get("content") or "" for m in req.messages), None
            if prev is None:
                shared = 0
            elif tokenized:
                prev_raw = prev[2] if prev[2] is not None else self.counter.raw_prompt(prev[1])
                cur_raw = self.counter.raw_prompt(req.messages)
                shared = self.counter.shared_prefix_of(prev_raw, cur_raw)
            else:
                common = cur[: common_prefix_length(prev[0], cur)]
                cut = common.rfind("\n\n")
                clean, budget = strip_placeholders(common[: cut + 2]) if cut > 0 else ("", 0)
                shared = round(len(clean) * per_char) + budget
            ph.prompt_tokens_evaluated += max(1, full - shared)
            prev = (cur, req.messages, cur_raw)

    def chat(self, messages: list, **kw) -> Completion:
        return self.chat_many([Request(messages=messages, **kw)])[0]

    def release(self) -> None:
        """Nothing to give back: no model was loaded."""


def _chars(messages: list) -> tuple[int, int]:
    """(characters of the messages' text without placeholders, the placeholders' token budgets)."""
    n = budget = 0
    for m in messages:
        clean, b = strip_placeholders(m.get("content") or "")
        n, budget = n + len(clean), budget + b
    return n, budget


def _frozen(v):
    """A request field as a hashable value (lists and dicts as tuples), for the call key."""
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


@functools.cache
def _field_names(cls) -> tuple:
    """The field names of a request's dataclass (looked up once per class)."""
    return tuple(f.name for f in dataclasses.fields(cls))


# --------------------------------------------------------------------------- stand-in retrieval
def typical_order(chunks: Sequence) -> list[str]:
    """Chunk ids ordered by how close each chunk's length is to the mean (ties by id): where a
    ranking is not known yet, its passages are taken from the front, so prompts are counted with
    passages of average length."""
    if not chunks:
        return []
    mean = sum(c.n_tokens for c in chunks) / len(chunks)
    return [c.chunk_id for c in sorted(chunks, key=lambda c: (abs(c.n_tokens - mean), c.chunk_id))]


def stand_in_ranking(order: Sequence[str], slot: int, width: int) -> list[str]:
    """System number `slot`'s ranking: `order` rotated by `slot * width`, so the top-`width`
    lists of different systems overlap as little as the corpus allows (the most distinct
    (question, passage) pairs: an upper bound)."""
    if not order:
        return []
    s = (slot * width) % len(order)
    return list(order[s:]) + list(order[:s])


def stand_in_rankings(order: Sequence[str], systems: Sequence[str], qids: Sequence[str], width: int) -> dict:
    """{system: {qid: ranking}} for rankings not computed yet (see :func:`stand_in_ranking`)."""
    out = {}
    for i, name in enumerate(systems):
        ranking = stand_in_ranking(order, i, width)
        out[name] = {q: ranking for q in qids}
    return out


class StandInRetriever:
    """A retriever for planning: every query gets the same stand-in ranking."""

    def __init__(self, ranking: Sequence[str]):
        self.ranking = list(ranking)

    def search(self, queries: Sequence[str], k: int) -> list:
        return [[(d, 0.0) for d in self.ranking[:k]] for _ in queries]


# --------------------------------------------------------------------------- claims
CLAIM_TOKENS = 40  # a claim sentence, and the generator tokens per claim when nothing better is known


def claim_answer(n_claims: int, passage_ids: Sequence[str], style: str, serial: list) -> str:
    """A stand-in answer of `n_claims` sentences, each citing one passage in turn (in the
    citation `style` the generator is asked for), each sentence a placeholder of
    :data:`CLAIM_TOKENS` tokens: what the claim-support judge is counted on."""
    out = []
    for j in range(n_claims):
        serial[0] += 1
        cid = passage_ids[j % len(passage_ids)]
        marker = f"[{j % len(passage_ids) + 1}]" if style == "numbered" else f"[{cid}]"
        out.append(f"Out{serial[0]} ⟦{CLAIM_TOKENS}⟧{_FILLER} {marker}.")
    return " ".join(out)


def spread(total_per_item: float, n: int) -> list[int]:
    """Whole numbers for `n` items adding up to about `total_per_item * n` (at least 1 each)."""
    return [max(1, int((i + 1) * total_per_item) - int(i * total_per_item)) for i in range(n)]
