"""Reading a judge's answer: a score constrained to a range of options, never a silent
default; the expected score from the option probabilities where the backend gives them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .types import Completion


@dataclass
class Judgement:
    """A parsed judge answer: `value` is None when the output could not be parsed (never a
    silent default); `raw` keeps what the model said."""

    value: int | None
    raw: str
    probs: dict | None = None
    expected: float | None = None
    explanation: str = ""
    extra: dict = field(default_factory=dict)


_RESULT_TAG = re.compile(r"<result>\s*\[?\s*(-?\d+)\s*\]?\s*</result>", re.I)
_SCORE_WORD = re.compile(r"(?:score|grade|rating|result)\s*(?:is|:|=)?\s*\**\s*(-?\d+)", re.I)
_DIGIT = re.compile(r"(?<![\d.])(-?\d+)(?!\d|\.\d)")


def parse_score(text: str, lo: int, hi: int) -> int | None:
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


def p_yes(comp) -> float | None:
    """P(yes) from the option probabilities, or 1/0 from the text when the backend gives none;
    None when the answer is neither."""
    if comp.choice_probs and "yes" in comp.choice_probs:
        return float(comp.choice_probs["yes"])
    t = (comp.text or "").strip().lower()
    return 1.0 if t.startswith("yes") else 0.0 if t.startswith("no") else None


def mirrored_p_yes(p_asked: float | None, p_mirror: float | None) -> float | None:
    """P(yes) to a yes/no question asked two ways, the second with its meaning reversed ("does
    the reply decline?" and "does the reply give an answer?"): the mean of P(yes) to the first
    and P(no) to the second. A judge that leans to "yes" whatever it reads moves the two terms in
    opposite directions, so the lean cancels and what is left is what the judge read. None when
    either answer is missing."""
    if p_asked is None or p_mirror is None:
        return None
    return (p_asked + 1.0 - p_mirror) / 2


def verdict_of(p: float | None) -> bool | None:
    """The yes/no verdict of a P(yes): above one half yes, below no; None at exactly one half (the
    two ways of asking disagree on a backend that gives no probabilities) or when missing."""
    if p is None or p == 0.5:
        return None
    return p > 0.5
