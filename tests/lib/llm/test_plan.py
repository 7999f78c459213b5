"""Counting calls and tokens without a model: placeholders, piecewise token counts, the
stand-in front end counting as the real one does, stand-in rankings and claim answers."""

from __future__ import annotations

import json

import pytest

from spacelm.config import LLMConfig
from spacelm.lib.llm import LLM, Completion, Request
from spacelm.lib.llm.cache import CallCache
from spacelm.lib.llm.dry_run import (
    PhaseCount,
    PlanLLM,
    TokenCounter,
    claim_answer,
    placeholder,
    safe_pieces,
    spread,
    stand_in_ranking,
    strip_placeholders,
    typical_order,
    weakest,
)


def _words_counter() -> TokenCounter:
    """A toy tokenizer: one token per word, one per newline run; messages joined."""
    import re

    encode = lambda t: len(re.findall(r"\S+|\n+", t))
    return TokenCounter(encode, lambda ms: ("\n\n".join(m["content"] for m in ms), 1))


def test_placeholders_carry_their_budget_and_pass_as_questions():
    from spacelm.lib.synth.questions import parse_question

    text = f"Passage one.\n\nQuestion: {placeholder(7, 96)}\nAnswer: {placeholder(8, 160)}"
    clean, budget = strip_placeholders(text)
    assert budget == 256 and "⟦" not in clean and clean.startswith("Passage one.")
    q, why = parse_question(placeholder(3, 96), min_words=8)
    assert why is None and strip_placeholders(q) == ("", 96)
    assert strip_placeholders("no placeholder here") == ("no placeholder here", 0)


def test_weakest_basis():
    assert weakest("exact", "upper bound") == "upper bound"
    assert weakest("exact", "estimate", "upper bound") == "estimate"
    assert weakest() == "exact"


def test_safe_pieces_cut_only_at_breaks_a_bpe_cannot_merge_across():
    text = "Alpha beta\n\nGamma.\n\nDelta 12\n\n\nEpsilon\n\n  zeta"
    pieces = safe_pieces(text)
    assert "".join(pieces) == text
    # after "beta" and "12" (letter/digit, then a non-space): cut; after "Gamma." and before "  zeta": not
    assert pieces == ["Alpha beta", "\n\n", "Gamma.\n\nDelta 12", "\n\n\n", "Epsilon\n\n  zeta"]


def _gguf():
    pytest.importorskip("llama_cpp")
    from spacelm.lib.llm.models import ModelNotFound, model_path

    try:
        return model_path("qwen2.5-coder-0.5b", assemble=False)
    except ModelNotFound:
        pytest.skip("the embedded 0.5B GGUF is not assembled here (`spacelm models verify`)")


def test_piecewise_counts_equal_whole_prompt_counts_with_a_real_bpe(monkeypatch):
    """Counting piece by piece (with the memo) gives exactly the tokenizer's count of the whole
    text, on texts that mix paragraphs, numbers, citations and placeholders; and the vocabulary
    is read without the weights."""
    import llama_cpp

    from spacelm.lib.llm.dry_run import gguf_counter

    path = _gguf()
    made = []
    real_init = llama_cpp.Llama.__init__

    def spy(self, *a, **kw):
        made.append(kw.get("vocab_only"))
        real_init(self, *a, **kw)

    monkeypatch.setattr(llama_cpp.Llama, "__init__", spy)
    c = gguf_counter(path)
    assert made == [True]
    vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    whole = lambda t: len(vocab.tokenize(t.encode(), add_bos=False, special=True))
    texts = [
        "Debris removal in 2019\n\nThe ADR mission [1] docked.\n\n\n[2]\nIt failed:\n\n  retried 3 times\n\nEnd",
        "Ünïcode résumé\n\nnaïve 12,345.67\n\n— dash\n\nok",
        "x\n\ny\n\n\n\nz",
        "trailing\n\n",
        "\n\nleading",
    ]
    for t in texts * 2:  # the second time from the memo
        assert c.text(t) == whole(t), t
    msgs = [{"role": "system", "content": "You judge."}, {"role": "user", "content": texts[0]}]
    n, from_outputs = c.messages(msgs)
    assert from_outputs == 0 and n > whole(texts[0])  # the chat template adds its own tokens
    with_out = [msgs[0], {"role": "user", "content": texts[0] + "\nAnswer: " + placeholder(1, 50)}]
    n2, b = c.messages(with_out)
    assert b == 50 and n2 == c.messages([msgs[0], {"role": "user", "content": texts[0] + "\nAnswer: "}])[0] + 50


def _recorder(cfg: LLMConfig, answered: dict) -> PlanLLM:
    llm = PlanLLM(cfg, "judge", _words_counter(), answered, [0])
    llm.current = PhaseCount("s", "p", "judge", cfg.model, cfg.backend)
    return llm


def test_the_stand_in_counts_calls_as_the_front_end_with_its_cache_does(tmp_path):
    """The same batches through the real front end (with its call cache and a recording
    backend) and through the stand-in: stand-in calls = backend calls, repeats = cache hits."""

    class Echo:
        def __init__(self):
            self.calls = 0

        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                self.calls += 1
                on_done(i, Completion(text="echo " + r.messages[-1]["content"]))

    cfg = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9", max_tokens=20)
    msg = lambda s: [{"role": "user", "content": s}]
    batches = [
        [Request(msg("a")), Request(msg("b")), Request(msg("a"))],  # a repeat within the batch
        [Request(msg("b")), Request(msg("c")), Request(msg("c"), max_tokens=5)],  # b again; c twice, differently
        [Request(msg("a"), choices=["yes", "no"], max_tokens=1), Request(msg("a"))],
    ]
    echo = Echo()
    real = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=echo)
    stand_in = _recorder(cfg, {})
    for b in batches:
        got = real.chat_many(b)
        planned = stand_in.chat_many(b)
        assert len(got) == len(planned) == len(b)
    ph = stand_in.current
    assert ph.calls == echo.calls == real.stats.calls == 5
    assert ph.repeats == real.stats.cache_hits == 2
    # completion budget: 20 + 20 + 20 + 5 for free text, 1 for the yes/no (its longest option: 1 token)
    assert ph.completion_tokens_max == 66 and ph.max_completion_tokens == 20


def test_the_stand_in_answers_constrained_requests_with_an_option_and_others_with_a_placeholder():
    cfg = LLMConfig(model="m", max_tokens=30)
    llm = _recorder(cfg, {})
    a, b = llm.chat_many(
        [
            Request([{"role": "user", "content": "grade"}], choices=["0", "1", "2", "3"], max_tokens=2),
            Request([{"role": "user", "content": "write"}]),
        ]
    )
    assert a.text == "0" and strip_placeholders(b.text) == ("", 30)
    # a later prompt holding that output is counted with the output's budget
    llm.chat_many([Request([{"role": "user", "content": "judge: " + b.text}])])
    assert llm.current.placeholder_tokens == 30 and llm.current.tokens_basis == "upper bound"
    with pytest.raises(RuntimeError, match="outside a phase"):
        llm.current = None
        llm.chat_many([Request([{"role": "user", "content": "x"}])])


class _C:
    def __init__(self, cid, n):
        self.chunk_id, self.n_tokens = cid, n


def test_stand_in_rankings_start_with_average_chunks_and_overlap_as_little_as_possible():
    chunks = [_C("a", 10), _C("b", 100), _C("c", 50), _C("d", 55), _C("e", 45)]  # mean 52
    order = typical_order(chunks)
    assert order[:3] == ["c", "d", "e"] and order[-1] == "b"
    r0, r1 = stand_in_ranking(order, 0, 2), stand_in_ranking(order, 1, 2)
    assert set(r0[:2]).isdisjoint(r1[:2]) and sorted(r1) == sorted(order)
    assert stand_in_ranking([], 3, 2) == []


def test_claim_answers_give_one_check_per_sentence_each_on_one_passage():
    from spacelm.lib.answer.claims import plan_claim_checks

    for style in ("numbered", "ids"):
        ids = ["doc:1", "doc:2", "other:0"]
        answer = claim_answer(4, ids, style, [0])
        checks = plan_claim_checks([{"answer": answer, "passage_ids": ids}])
        assert [c["ids"] for c in checks] == [["doc:1"], ["doc:2"], ["other:0"], ["doc:1"]]
        assert all(strip_placeholders(c["claim"])[1] == 40 for c in checks)
    assert sum(spread(2.7, 10)) == 27 and min(spread(0.2, 5)) == 1


def test_a_tokenizer_json_with_its_chat_template_counts_the_rendered_prompt(tmp_path):
    """A model folder holding tokenizer.json and a chat template (as an exported or downloaded
    model has) is counted on the template's rendering."""
    import shutil

    from tokenizers import Tokenizer

    from spacelm.lib.llm.dry_run import hf_counter
    from spacelm.lib.llm.models import ModelNotFound, model_path
    from spacelm.plan import tokenizer_source

    try:
        src = model_path("minilm") / "tokenizer.json"
    except ModelNotFound:
        pytest.skip("the embedded minilm package is not installed")
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(src, folder / "tokenizer.json")
    template = "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant]"
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template, "bos_token": "[CLS]"}))
    assert tokenizer_source(str(folder)) == ("hf", folder / "tokenizer.json")
    c = hf_counter(folder / "tokenizer.json")
    tok = Tokenizer.from_file(str(src))
    tok.no_padding()
    tok.no_truncation()
    msgs = [
        {"role": "system", "content": "Grade the passage."},
        {"role": "user", "content": "Question: why?\n\nPassage: x"},
    ]
    rendered = "[CLS][system] Grade the passage.\n[user] Question: why?\n\nPassage: x\n[assistant]"
    assert c.messages(msgs) == (len(tok.encode(rendered, add_special_tokens=False).ids), 0)
    assert c.note == ""


def test_prompt_tokens_left_after_prefix_reuse_count_what_a_single_slot_cache_keeps():
    """A batch is sent in prompt order; each prompt evaluates what it does not share with the
    one before, counted up to the last paragraph break they share. Toy tokenizer: one token per
    word and per newline run; the rendered prompt is the message contents, plus 1 (BOS)."""
    cfg = LLMConfig(model="m", max_tokens=1)
    llm = _recorder(cfg, {})
    shared = "Question: what is one?\n\nDocuments: alpha beta gamma delta\n\nAnswer: one\n\n"
    b1 = [{"role": "user", "content": shared + "Task: score it"}]
    b2 = [{"role": "user", "content": shared + "Task: is it grounded"}]
    other = [{"role": "user", "content": "Question: another one\n\nTask: score it"}]
    llm.chat_many(
        [Request(b2, choices=["yes", "no"]), Request(other, choices=["yes", "no"]), Request(b1, choices=["1"])]
    )
    full = lambda m: llm.counter.messages(m)[0]
    assert llm.current.prompt_tokens == full(b1) + full(b2) + full(other)
    # in prompt order b1 and b2 are neighbours and share 4 + 1 + 5 + 1 + 2 + 1 tokens; "other"
    # shares only "Question:" with its neighbour, no paragraph break: nothing kept
    assert llm.counter.text(shared) == 14
    assert llm.current.prompt_tokens_evaluated == full(b1) + full(b2) + full(other) - 14


def test_a_shared_placeholder_counts_as_shared_at_its_budget():
    """Two judge prompts on one not-yet-written answer share it: its budget counts as kept."""
    llm = _recorder(LLMConfig(model="m", max_tokens=1), {})
    head = "Question: " + placeholder(7, 40) + "\n\nDocuments: alpha beta\n\n"
    a = [{"role": "user", "content": head + "Task: one"}]
    b = [{"role": "user", "content": head + "Task: two"}]
    assert llm.counter.shared_prefix(a, b) == 1 + 40 + 1 + 3 + 1


def test_past_its_first_calls_a_phase_counts_a_sample_and_says_estimate():
    """Beyond COUNT_FIRST new calls a phase tokenizes one in COUNT_EVERY and counts the others by
    their characters at the counted calls' tokens per character: the total stays close, the basis
    becomes an estimate, and `exact` counts every call."""
    totals = {}
    for exact in (True, False):
        llm = _recorder(LLMConfig(backend="openai", model="m", base_url="http://x"), {})
        llm.exact, llm.COUNT_FIRST, llm.COUNT_EVERY = exact, 5, 4
        reqs = [Request(messages=[{"role": "user", "content": f"q{i} " + "word " * (10 + i % 7)}]) for i in range(40)]
        llm.chat_many(reqs)
        ph = llm.current
        totals[exact] = (ph.prompt_tokens, ph.counted, ph.tokens_basis, ph.prompt_tokens_evaluated)
    assert totals[True][1] == 40 and totals[True][2] == "exact"
    assert 5 < totals[False][1] < 40 and totals[False][2] == "estimate"
    assert abs(totals[False][0] - totals[True][0]) <= 0.05 * totals[True][0]
    assert abs(totals[False][3] - totals[True][3]) <= 0.1 * totals[True][3]
