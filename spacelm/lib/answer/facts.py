"""Facts a reference answer states that can be checked without a judge: its numbers (with the
unit written after each) and its named entities. Used by the deterministic correctness check
(an answer must hold them) and by the known-answer controls (which alter them)."""

from __future__ import annotations

import re
from functools import lru_cache

_ENTITY = re.compile(r"(?<![\w-])(?:[A-Z][a-z]+(?:[- ][A-Z][a-z]+)*|[A-Z]{2,}[A-Za-z0-9-]*)(?![\w-])")


# capitalised function words: a sentence's first word where the PDF text lost the full stop before it
_NOT_NAMES = frozenset(
    "The A An This That These Those It Its In On Of For And Or But If When While As At By To From With Each "
    "All Any Such Where Which What Who How Why There Their They We Our Under Over After Before".split()
)


def entities(text: str) -> list[str]:
    """Named entities as written: capitalised words or runs of them, and acronyms, except a
    capitalised word that only opens a sentence. In order, without repeats."""
    return list(_entities(text))


@lru_cache(maxsize=512)
def _entities(text: str) -> tuple[str, ...]:
    """:func:`entities`, memoised: the known-answer controls read the same document for each of
    its sentences."""
    out: dict[str, None] = {}
    for m in _ENTITY.finditer(text):
        i = m.start() - 1
        while i >= 0 and text[i].isspace():  # the last character before the match, spaces skipped
            i -= 1
        if (i < 0 or text[i] in ".!?:") and " " not in m.group(0) and not m.group(0).isupper():
            continue  # "The", "Operators" at the start of a sentence
        if m.group(0) in _NOT_NAMES:
            continue  # a sentence opening after a heading with no full stop ("... campaign The calibration")
        out.setdefault(m.group(0))
    return tuple(out)


_QUANTITY = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:[.,]\d+)?)(?:\s?(km|m|kg|g|mm|cm|ms|s|seconds?|minutes?|hours?|days?|weeks?|"
    r"months?|years?|kW|MW|W|GHz|MHz|kHz|Hz|K|°C|%|percent|bar|mbar|kbps|Mbps|dBW|dB|kN|N|t|AU)"
    r"(?![A-Za-z]))?"
)
_UNIT_NAMES = {
    "second": "s",
    "seconds": "s",
    "minute": "minutes",
    "hour": "hours",
    "day": "days",
    "week": "weeks",
    "month": "months",
    "year": "years",
    "percent": "%",
}


def quantities(text: str) -> list[tuple[float, str | None]]:
    """The numbers of a text with the unit written right after each (None when none), e.g.
    "about 100 km in 2 hours" -> [(100.0, "km"), (2.0, "hours")]."""
    out = []
    for m in _QUANTITY.finditer(text or ""):
        unit = m.group(2)
        num = m.group(1)
        num = num.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", num) else num.replace(",", ".")
        out.append((float(num), _UNIT_NAMES.get(unit, unit)))
    return out


def fact_check(answer: str, reference: str) -> dict:
    """Does the answer hold the reference's numbers (with their units) and named entities? A
    deterministic check run before any judge: a judge that accepts "about 100 km" against a
    reference of "261 km" is caught here. A reference quantity counts as present when the answer
    has the same value (relative difference under 0.5%) with the same unit (or either side
    without one); it is *contradicted* when the answer gives another value in that unit. An
    entity counts when it appears in the answer, case ignored. verdict: False when something is
    missing or contradicted, True when everything is present, None when the reference holds no
    number or entity to check."""
    ref_q, ans_q = quantities(reference), quantities(answer)
    same = lambda a, b: abs(a - b) <= 0.005 * max(abs(a), abs(b), 1e-9)
    missing, contradicted = [], []
    for v, u in ref_q:
        if any(same(v, w) and (u is None or x is None or u == x) for w, x in ans_q):
            continue
        missing.append(f"{v:g}{' ' + u if u else ''}")
        if u is not None and any(x == u for _, x in ans_q):
            contradicted.append(f"{v:g} {u}")
    ents = entities(reference)
    low = (answer or "").lower()
    missing_e = [e for e in ents if e.lower() not in low]
    checkable = bool(ref_q or ents)
    return {
        "numbers": len(ref_q),
        "entities": len(ents),
        "missing_numbers": missing,
        "contradicted": contradicted,
        "missing_entities": missing_e,
        "verdict": None if not checkable else not (missing or missing_e),
    }
