"""A generator's own failures, found without a judge (issue 41): deterministic flags on an answer
item that the judge-check stage turns into known-answer controls, so the judges are tested on the
bad answers this generator really writes, not only on edits we make.

Each flag is a pure function of the answer, its question, its passages' texts and (where the
question has one) its reference answer. `flag_answer` returns the flags an answer raises, in the
order of `FAILURE_KINDS`; an answer that raises none is not thereby good.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..synth.checks import content_words
from .citations import strip_markers
from .facts import entities, fact_check, quantities
from .measures import citation_support, leakage

# what each flag means, in the words the controls table and docs/judges.md use
FAILURE_KINDS = {
    "non_answer": "says nothing: under 4 words outside its citation markers, or a sentence that ends on its "
    'citation ("The equation used is [2].")',
    "restated": "restates the question: the question's content words are 75% or more of the answer's",
    "false_refusal": "declines (refusal phrase) a question whose source passage it was shown",
    "injected_content": "takes 30% or more of its word trigrams from an injected passage and not from the source",
    "wrong_completion": "lacks the reference answer's numbers or names and asserts a number or name its source "
    "passage does not hold",
    "misattributed": "cites only an injected passage for a sentence the source holds (a citation by habit)",
    "fabricated": "answers, with no refusal phrase, where no passage shown holds the answer",
}
MIN_WORDS = 4
RESTATED_SHARE = 0.75
LEAKED_SHARE = 0.3
_EMPTY_CITATION = re.compile(
    r"\b(?:is|are|was|were|include|includes|as follows)\s*[:,]?\s*(?:\[[^\]]+\]\s*)+\.?\s*$", re.I
)


def non_answer(answer: str, question: str) -> str | None:
    """Why an answer says nothing ("short", "empty_citation", "restated"), or None."""
    text = strip_markers(answer or "")
    if len(text.split()) < MIN_WORDS:
        return "short"
    if any(_EMPTY_CITATION.search(s) for s in re.split(r"(?<=[.!?])\s+", answer or "")):
        return "empty_citation"
    a, q = set(content_words(text)), set(content_words(question))
    if a and len(a & q) / len(a) >= RESTATED_SHARE:
        return "restated"
    return None


def asserts_beyond(answer: str, source: str, question: str) -> list[str]:
    """The numbers and named entities of `answer` that neither its source passage nor its question
    holds: what it asserts from elsewhere (memory or another passage)."""
    held = f"{source} {question}".lower()
    vals = {v for v, _ in quantities(f"{source} {question}")}
    out = [f"{v:g}" for v, _ in quantities(answer) if not any(abs(v - w) <= 0.005 * max(abs(v), 1) for w in vals)]
    return out + [e for e in entities(strip_markers(answer)) if e.lower() not in held]


def flag_answer(item: dict, text_of: dict, is_refusal: Callable[[str], bool]) -> list[str]:
    """The failure kinds (keys of FAILURE_KINDS) an answer item raises. The item is an answer
    stage item: answer, question, passage_ids, wrong_ids, source_chunk_id, reference_answer."""
    answer, question = item.get("answer") or "", item["question"]
    src = item.get("source_chunk_id")
    shown = src in (item.get("passage_ids") or [])
    if is_refusal(answer):
        return ["false_refusal"] if shown and item.get("answerable", True) else []
    if not shown:  # no passage holds the answer: any answer at all is made up
        return ["fabricated"] if non_answer(answer, question) is None else []
    why = non_answer(answer, question)
    if why:
        return ["restated" if why == "restated" else "non_answer"]
    flags = []
    injected = [text_of[w] for w in item.get("wrong_ids") or [] if w in text_of]
    lk = leakage(answer, text_of.get(src), injected)
    if lk and lk["share"] >= LEAKED_SHARE:
        flags.append("injected_content")
    ref = item.get("reference_answer")
    if ref and fact_check(answer, ref)["verdict"] is False and asserts_beyond(answer, text_of.get(src, ""), question):
        flags.append("wrong_completion")
    cs = citation_support(answer, item.get("passage_ids") or [], text_of, src)
    if cs and cs["misattributed"]:
        flags.append("misattributed")
    return flags
