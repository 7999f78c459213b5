"""Citations a small model can produce: the passages are numbered [1]..[n] in the prompt, the
numbers an answer cites are mapped back to chunk ids.

Accepted forms: ``[1]``, ``[1, 2]``, ``[1][2]``, ``[1-3]``, ``[1 and 2]``, ``[Passage 1]``,
``(Passage 2)``, ``[Source 1]``, ``[Doc 3]``, and the chunk id itself in brackets
(``[conjunction-assessment:4]``, the ``ids`` style). A number outside 1..n is an invalid citation,
kept as such (it counts against citation accuracy), never dropped in silence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

STYLES = ("numbered", "ids")
_LABEL = r"(?:passages?|sources?|docs?|documents?|context|ref)\s*"
_NUM_LIST = r"\d+(?:\s*(?:,|;|-|–|and|&)\s*\d+)*"
_NUMBERED = re.compile(
    r"\[\s*(?:" + _LABEL + r")?(" + _NUM_LIST + r")\s*\]|\(\s*" + _LABEL + r"(" + _NUM_LIST + r")\s*\)", re.I
)
_IDS = re.compile(r"\[([A-Za-z0-9_.\-]+:\d+)\]")
# every citation marker, of either style, for removing them from a sentence
MARKER = re.compile(_NUMBERED.pattern + r"|" + _IDS.pattern, re.I)


def format_context(ids: Sequence[str], text_of: dict, style: str = "numbered") -> str:
    """The passages as the prompt shows them: ``[1]`` .. ``[n]`` (numbered) or ``[chunk id]``."""
    if style == "numbered":
        return "\n\n".join(f"[{i}]\n{_as_passage(text_of[cid])}" for i, cid in enumerate(ids, 1))
    return "\n\n".join(f"[{cid}]\n{_as_passage(text_of[cid])}" for cid in ids)


# a line of a passage that reads like the marker opening the next passage
_FAKE_MARKER = re.compile(r"^[ \t]*\[([A-Za-z0-9_.\-]+:\d+|\d+)\][ \t]*$", re.M)


@lru_cache(maxsize=1 << 14)
def _as_passage(text: str) -> str:
    """A passage as the context shows it: a line of its own that looks like a passage marker
    (``[2]`` or ``[doc:4]`` alone on a line) is shown in parentheses, so a passage cannot start a
    fake next passage; every other text is unchanged."""
    return _FAKE_MARKER.sub(lambda m: f"({m.group(1)})", text)


def _numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:,|;|and|&)\s*", spec):
        m = re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part.strip())
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            out += list(range(a, b + 1)) if 0 < b - a < 20 else [a, b]
        elif part.strip().isdigit():
            out.append(int(part))
    return out


def cited_markers(text: str, context_ids: Sequence[str]) -> list[str]:
    """Every citation in `text`, in order, as a chunk id when it resolves to a passage of the
    context (a number 1..n, or an id), else as the marker itself prefixed with ``invalid:``."""
    out = []
    for m in MARKER.finditer(text or ""):
        if m.group(3):  # a chunk id
            out.append(m.group(3) if m.group(3) in context_ids else f"invalid:{m.group(3)}")
            continue
        for n in _numbers(m.group(1) or m.group(2)):
            out.append(context_ids[n - 1] if 1 <= n <= len(context_ids) else f"invalid:{n}")
    return out


def strip_markers(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s{2,}", " ", MARKER.sub("", text or ""))).strip()


def citation_check(text: str, context_ids: Sequence[str], known_ids: set) -> dict:
    """What an answer cites: `cited` (chunk ids of valid citations), `invalid` (markers that name
    no passage of the context), and `citation_accuracy` = valid / all markers (None without any)."""
    marks = cited_markers(text, list(context_ids))
    valid = [c for c in marks if not c.startswith("invalid:")]
    invalid = [c[len("invalid:") :] for c in marks if c.startswith("invalid:")]
    return {
        "cited": valid,
        "invalid": invalid,
        "n_cited": len(marks),
        "n_valid": len(valid),
        # a number outside 1..n names nothing; an id outside the context may still be a real chunk
        "citations_exist": all(not i.isdigit() and i in known_ids for i in invalid),
        "citations_in_context": not invalid,
        "citation_accuracy": (len(valid) / len(marks)) if marks else None,
    }
