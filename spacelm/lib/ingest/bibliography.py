"""Bibliographies found by their content, block by block, wherever they stand.

A reference list is dense with author initials, years, "et al.", journal volumes and pages,
DOIs and URLs, and numbered markers, and poor in the function words of prose. Each text block
is split into entries (at numbered markers, else at lines); an entry is *citation-like* when
it holds a year and at least one other citation signal while under `max_stopword_share` of its
words are function words. A block's score is the share of its characters in citation-like
entries. Consecutive blocks at or above `min_score` form a run; a run is a bibliography when it
holds at least `min_entries` citation-like entries or follows a References heading (alone, or
merged into the first entry's block). Text after a list is kept: a newsletter's lists between
its articles go, its articles stay. Bibliographies in the corpus match many queries lexically
and answer none, which is why they are taken out of the chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\d+(?:\.\d+)*\.?\s+|[IVX]+\.\s+)?(?:\*\*)?"
    r"(references|bibliography|works cited|literature cited|reference list|literature)"
    r"(?:\*\*)?\s*:?",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![\d.])(?:1[89]\d\d|20\d\d)[a-z]?(?![\d])")
_SIGNALS = {
    "author_initials": re.compile(r"\b[A-Z][a-zA-Z'\-]+,\s*(?:[A-Z]\.\s*-?){1,3}|(?:\b[A-Z]\.\s*){1,3}[A-Z][a-z]+"),
    "et_al": re.compile(r"\bet\s+al\b", re.I),
    "volume_pages": re.compile(r"\b(?:vol|no|pp|p)\.\s*\d|\b\d+\s*\(\d+\)|\b\d+\s*[-–]\s*\d+\b|\bIn:\s", re.I),
    "doi_url": re.compile(r"\bdoi\b|10\.\d{4,}/|https?://|www\.", re.I),
    "numbered": re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+[A-Z])"),
    "year_in_brackets": re.compile(r"\((?:1[89]|20)\d\d[a-z]?\)\s*[.,:]"),
    "emphasised_title": re.compile(r"(?<!\*)\*[^*\n]{6,}\*(?!\*)|_[^_\n]{6,}_"),
    "venue": re.compile(
        r"\b(?:Proc\.|Proceedings|Journal|J\.|Conf\.|Conference|Trans\.|Rev\.|Acta|Adv\.|Res\.|"
        r"Press|Publishing|Univ\.|University|Report|Tech\.|arXiv|ISBN|Springer|Elsevier)\b"
    ),
}
_STOP = set(
    "a an the of to in on at by for with from as is are was were be been it its this that these those and or "
    "but not no can could may might will would should must has have had do does did than then there their "
    "they we our you he she his her which who what when where how all any each more most other some such "
    "only also into over under between after before during about up out so if".split()
)
_ENTRY_SPLIT = re.compile(r"(?:^|\n|\s)(?=\[\d{1,3}\]\s)|\n(?=\s*\d{1,3}\.\s+[A-Z])")


@dataclass(frozen=True)
class BibliographyRules:
    min_score: float = 0.6  # share of a block's characters in citation-like entries
    min_entries: int = 3  # citation-like entries a run needs when no heading announces it
    max_stopword_share: float = 0.35  # prose is 40-50% function words, a reference entry far fewer


def entries(text: str) -> list[str]:
    """A block split into entries at numbered markers ("[3] ", "3. Name"); without markers the
    block is one entry (a wrapped reference spans several lines)."""
    return [p.strip() for p in _ENTRY_SPLIT.split(text) if p.strip()]


def signals(entry: str) -> set[str]:
    found = {name for name, pat in _SIGNALS.items() if pat.search(entry)}
    if _YEAR.search(entry):
        found.add("year")
    return found


def stopword_share(text: str) -> float:
    """Share of function words among words of two letters or more (initials are not words)."""
    words = re.findall(r"[a-z]{2,}", text.lower())
    return sum(w in _STOP for w in words) / len(words) if words else 0.0


STRONG = {"author_initials", "et_al", "doi_url", "numbered", "year_in_brackets"}


def is_citation(entry: str, rules: BibliographyRules = BibliographyRules()) -> bool:
    """A year, and one strong signal (author initials, et al., DOI/URL, a numbered marker, a
    year in brackets) or two weak ones (volume/pages, a venue word, an emphasised title), in
    text poor in function words. A Markdown table row is never a citation."""
    lines = [ln for ln in entry.split("\n") if ln.strip()]
    if lines and sum(ln.lstrip().startswith("|") for ln in lines) * 2 >= len(lines):
        return False
    s = signals(entry)
    strong_enough = bool(s & STRONG) or len(s - STRONG - {"year"}) >= 2
    return "year" in s and strong_enough and stopword_share(entry) <= rules.max_stopword_share


def strip_heading(text: str) -> tuple[str, str]:
    """(heading, rest) when `text` starts with a References-like heading, else ("", text).
    A heading counts when it stands alone or runs straight into the first entry."""
    m = HEADING.match(text)
    if not m:
        return "", text
    rest = text[m.end() :].lstrip()
    if rest and not (rest[0] in "[(" or rest[0].isdigit() or rest[0].isupper()):
        return "", text  # "References to the manual are given below" is prose
    return text[: m.end()].strip(), rest


def block_score(text: str, rules: BibliographyRules = BibliographyRules()) -> tuple[float, int]:
    """(share of characters in citation-like entries, how many references they hold: an
    unnumbered list kept in one block counts one per citation-like line)."""
    es = entries(text)
    total = sum(len(e) for e in es)
    cited = [e for e in es if is_citation(e, rules)]
    n = sum(max(1, sum(is_citation(ln, rules) for ln in e.split("\n"))) if len(es) == 1 else 1 for e in cited)
    return (sum(len(e) for e in cited) / total if total else 0.0), n


_MARKER = re.compile(r"(?:^|\n)\s*(?:\[(\d{1,3})\]|(\d{1,3})\.\s+[A-Z])")


def markers(text: str) -> list[int]:
    """The entry numbers a block holds, in order ("[3] ..." or "3. Name ...")."""
    return [int(a or b) for a, b in _MARKER.findall(text)]


def _bridges(text: str) -> bool:
    """A short block inside a reference list (an entry that scored low, a wrapped remainder)."""
    return len(text) < 400 and stopword_share(text) < 0.4


def find_bibliography(blocks: Sequence[str], rules: BibliographyRules = BibliographyRules()) -> list[int]:
    """Indices of the blocks that belong to a bibliography (a heading standing alone included)."""
    info = []  # (starts with a heading, heading alone, citation-like, citation-like entries)
    for t in blocks:
        heading, rest = strip_heading(t)
        score, n = block_score(rest, rules) if rest else (0.0, 0)
        info.append((bool(heading), bool(heading) and not rest, score >= rules.min_score, n))
    drop: list[int] = []
    i = 0
    while i < len(blocks):
        heading, alone, cited, _ = info[i]
        if not (cited or heading):
            i += 1
            continue
        # the run: this block and the citation-like blocks after it, up to the next heading; a short
        # block between two citation-like ones, and the next number of a numbered list, belong to it too
        last = (markers(blocks[i]) or [None])[-1]
        j = i + 1
        while j < len(blocks) and not info[j][0]:
            nums = markers(blocks[j])
            follows = last is not None and nums[:1] == [last + 1]
            bridge = j + 1 < len(blocks) and info[j + 1][2] and not info[j + 1][0] and _bridges(blocks[j])
            if not (info[j][2] or follows or bridge):
                break
            last = nums[-1] if nums else last
            j += 1
        n_entries = sum(info[k][3] for k in range(i, j) if info[k][2])
        if (heading and n_entries >= 1) or n_entries >= rules.min_entries:
            drop.extend(k for k in range(i, j) if k > i or info[k][2] or alone)
        i = j
    return drop
