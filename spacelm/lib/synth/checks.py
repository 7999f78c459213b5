"""Checks a written question must pass before it is asked of a corpus (issue 40): deterministic,
pure functions of the question and its source text.

- **copy**: the longest run of words the question shares verbatim with its source chunk, and the share
  of its content words the chunk holds (a question that restates its chunk needs no retrieval);
- **premise**: the names, acronyms and numbers a question asserts that neither its chunk nor its
  document contains (a few-shot example's "the Council" put onto a NASA handbook);
- **boilerplate**: a chunk that is a licence, a reference list, a table of contents, a caption, a
  header block or code, which no question should come from.

Each returns what it found, so a caller can store the reason and a report can count it; thresholds
are the caller's (the config's), set from the golden questions' own distribution."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ..names import FACT_CHECK_LABELS

_WORD = re.compile(r"[a-z0-9]+(?:['’.-][a-z0-9]+)*")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    # question words and the verbs every question uses carry no content either
    extra = {"what", "which", "who", "whom", "how", "why", "when", "where", "does", "did", "do", "according"}
    return frozenset(STOPWORDS_EN_PLUS) | extra


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits; inner apostrophes, dots and hyphens kept)."""
    return _WORD.findall(str(text).lower())


def content_words(text: str) -> list[str]:
    """`words` without stop words and one-letter tokens."""
    stop = _stopwords()
    return [w for w in words(text) if w not in stop and len(w) > 1]


def longest_verbatim_run(question: str, source: str) -> int:
    """The length in words of the longest run of consecutive words the question shares with `source`."""
    q, s = words(question), words(source)
    best, prev = 0, [0] * (len(s) + 1)
    for a in q:
        cur = [0] * (len(s) + 1)
        for j, b in enumerate(s, 1):
            if a == b:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def _stem(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def content_coverage(question: str, source: str) -> float:
    """Share of the question's distinct content words found in `source`, a final plural "s" aside
    (0.0 for a question with none)."""
    q = {_stem(w) for w in content_words(question)}
    return len(q & {_stem(w) for w in content_words(source)}) / len(q) if q else 0.0


# --------------------------------------------------------------------------- premises
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9&]{1,}[a-z]?\b")  # ESA, CCSDS, NASA's -> NASA, IADC, LEOs
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:\s?%)?")
_NAME = re.compile(r"\b(?:[A-Z][a-z]+(?:[- ](?:of|for|and|on|the|de|du|von)?\s?[A-Z][a-z]+)*)")
_QUOTED = re.compile(r"[\"“‘']([^\"”’']{3,80})[\"”’']")
# capitalised words a question starts with or that name no entity
_NOT_NAMES = frozenset(
    "What Which Who Whom How Why When Where Does Did Do Is Are Was Were Can Could Should Would Will Summarise "
    "Summarize Describe Explain Compare List Identify According In On At For From To By With The A An This That "
    "These Those It Its If As Under Between Within Given Based True False Statement Claim".split()
)


def premise_terms(question: str) -> list[str]:
    """What the question asserts exists: acronyms, numbers, quoted phrases and capitalised names (runs
    of capitalised words, common capitalised function words dropped; a lone capitalised word opening a
    sentence is the sentence's start, not a name)."""
    text = str(question)
    out = [m.group(0)[:-1] if m.group(0)[-1].islower() else m.group(0) for m in _ACRONYM.finditer(text)]
    out += [m.group(0) for m in _NUMBER.finditer(text)]
    out += [m.group(1) for m in _QUOTED.finditer(text)]
    for m in _NAME.finditer(text):
        parts = [p for p in m.group(0).split() if p not in _NOT_NAMES]
        opens_sentence = not text[: m.start()].rstrip() or text[: m.start()].rstrip()[-1] in '.!?:;"“('
        if parts and not (opens_sentence and len(m.group(0).split()) == 1):
            out.append(" ".join(parts))
    return list(dict.fromkeys(t.strip() for t in out if t.strip()))


def _present(term: str, text_lower: str, text_words: set[str]) -> bool:
    t = term.lower()
    if t in text_lower:
        return True
    ws = words(t)
    if not ws:
        return True
    if all(w.isdigit() for w in ws):  # a number: its digits, ignoring thousands separators
        return re.sub(r"[,\s]", "", t) in re.sub(r"[,\s]", "", text_lower)
    # a name: each of its words present (word order and possessives may differ)
    return all(w in text_words or w.rstrip("s") in text_words for w in ws)


def unsupported_premises(question: str, *sources: str) -> list[str]:
    """The question's premise terms that none of `sources` (its chunk, then its document) contains."""
    lowered = [unicodedata.normalize("NFKC", str(s)).lower() for s in sources]  # IRIS² reads as IRIS2
    word_sets = [set(words(s)) for s in lowered]
    return [t for t in premise_terms(question) if not any(_present(t, lo, ws) for lo, ws in zip(lowered, word_sets))]


# --------------------------------------------------------------------------- boilerplate
_LICENCE = re.compile(
    r"creative commons|cc[- ]by\b|licen[cs]ed under|all rights reserved|©|\bcopyright\b|open access article|"
    r"permits unrestricted use|terms and conditions of",
    re.I,
)
_TOC_LINE = re.compile(r"(\.{4,}|…{2,}|\s{3,})\s*\d{1,4}\s*$")
_CAPTION = re.compile(r"^\s*(?i:figure|fig\.|table|annex|appendix)\s+(?:\d+(?:\.\d+)*|[A-Z]|[IVX]+)[.:]?\s")
# braces, a call ending a statement, or a keyword opening a line: not the semicolons of a legal enumeration
_CODE = re.compile(
    r"[{}]|\w\([^()]*\)\s*;\s*$|^\s*(def|class|import|return|#include|public|private|function|const|var)\b", re.M
)


def is_reference_list(text: str) -> bool:
    """A chunk that ingest's bibliography detector would call a reference list on its own: most of its
    characters in citation-like entries, and at least `min_entries` of them."""
    from ..ingest.bibliography import BibliographyRules, block_score

    rules = BibliographyRules()
    score, n = block_score(text, rules)
    return score >= rules.min_score and n >= rules.min_entries


def boilerplate_reason(text: str, min_words: int = 25) -> str | None:
    """Why a chunk is boilerplate ("licence", "references", "table_of_contents", "caption", "code",
    "header"), or None for a chunk worth asking about. Rules, each on the chunk alone: a licence or
    copyright statement; a reference list as ingest's bibliography filter scores one; dot leaders or
    page numbers ending most lines; a short text opening with "Figure n"/"Table n"; code punctuation on
    most lines; or fewer than `min_words` words mostly on short lines."""
    t = str(text)
    ws = words(t)
    n = max(len(ws), 1)
    lines = [ln for ln in t.splitlines() if ln.strip()]
    licence = len(_LICENCE.findall(t))
    if licence >= 2 or licence * 80 >= n:
        return "licence"
    if _CAPTION.match(t) and n < 60:
        return "caption"
    if is_reference_list(t):
        return "references"
    if len(lines) >= 2 and sum(bool(_TOC_LINE.search(ln)) for ln in lines) >= 0.5 * len(lines):
        return "table_of_contents"
    if len(lines) >= 4 and sum(bool(_CODE.search(ln)) for ln in lines) >= 0.6 * len(lines):
        return "code"
    if n < min_words and lines and sum(len(words(ln)) <= 6 for ln in lines) >= 0.7 * len(lines):
        return "header"
    return None


def summarise(values: Iterable[float]) -> dict:
    """{n, mean, median, p90} of a list of numbers (empty: n 0 and None elsewhere)."""
    v = sorted(values)
    if not v:
        return {"n": 0, "mean": None, "median": None, "p90": None}
    return {
        "n": len(v),
        "mean": round(sum(v) / len(v), 4),
        "median": v[len(v) // 2],
        "p90": v[min(len(v) - 1, int(0.9 * len(v)))],
    }


# --------------------------------------------------------------------------- a question's checks
LABELS = FACT_CHECK_LABELS
PASSED = "passed"
PENDING = "pending"  # the rule cannot decide: the judge does
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|without|cannot|none)\b|n['’]t\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def claim_label(verdict: str | None) -> str | None:
    """A fact-check verdict in the suite's labels: the golden file's "not_enough_info" is "unverifiable"."""
    if verdict in (None, ""):
        return None
    return "unverifiable" if verdict == "not_enough_info" else verdict


@dataclass(frozen=True)
class QuestionChecks:
    """Thresholds of the checks a written question must pass (the config's `synth.checks`)."""

    max_verbatim_run: int = 5
    max_coverage: float = 0.8
    premise: bool = True
    context_chunks: int = 2
    front_chars: int = 3000
    skip_boilerplate: bool = True
    label_check: bool = True


class PremiseContext(NamedTuple):
    """What a question about a chunk may name: the chunk; its neighbours, the document's front matter
    (title, issuer, date) and its name (the file's), as a reader of the document has them; and the whole
    document (with its name)."""

    chunk: str
    near: str
    document: str


def premise_contexts(chunks: list, around: int, front_chars: int) -> dict[str, PremiseContext]:
    """{chunk id: its PremiseContext}, the document rebuilt from its chunks in reading order."""
    by_doc: dict[str, list] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out = {}
    for cs in by_doc.values():
        cs = sorted(cs, key=lambda c: (c.char_start, c.chunk_id))
        document = "\n".join(c.text for c in cs)
        name = re.sub(r"[-_.]+", " ", cs[0].doc_id)  # the file's name: "eu-regulation-2023-588-iris2-..."
        front = document[:front_chars]
        for i, c in enumerate(cs):
            near = "\n".join(x.text for x in cs[max(0, i - around) : i + around + 1])
            out[c.chunk_id] = PremiseContext(c.text, "\n".join((near, front, name)), document + "\n" + name)
    return out


def copy_check(question: str, chunk: str, checks: QuestionChecks) -> str:
    """ "passed", or why the question restates its chunk (run and coverage beside their limits)."""
    run, cov = longest_verbatim_run(question, chunk), content_coverage(question, chunk)
    why = []
    if run > checks.max_verbatim_run:
        why.append(f"verbatim run of {run} words > {checks.max_verbatim_run}")
    if cov > checks.max_coverage:
        why.append(f"content-word coverage {cov:.2f} > {checks.max_coverage}")
    return "; ".join(why) or PASSED


def premise_check(question: str, ctx: PremiseContext) -> tuple[str, list[str]]:
    """("passed" | "pending" | the reason, the terms the judge must decide). A term the chunk's
    neighbourhood or the document's front matter holds is context the question may name; one the
    document never holds is a false premise; one found only elsewhere in the document is the judge's."""
    outside = unsupported_premises(question, ctx.chunk, ctx.near)
    if not outside:
        return PASSED, []
    absent = unsupported_premises(question, ctx.document)
    absent = [t for t in outside if t in absent]
    if absent:
        return f"not in its document: {', '.join(absent)}", []
    return PENDING, outside


def _best_sentence(claim: str, chunk: str) -> str:
    sents = [s for s in _SENTENCE.split(chunk) if s.strip()] or [chunk]
    c = {_stem(w) for w in content_words(claim)}
    return max(sents, key=lambda s: len(c & {_stem(w) for w in content_words(s)}))


def alteration(claim: str, chunk: str) -> list[str]:
    """How a refuted claim differs from its chunk in a way a reader can check: the names and numbers
    it holds that the chunk does not, and "negation" when it negates where the chunk's closest
    sentence does not (or the reverse). Empty: no checkable alteration."""
    found = unsupported_premises(claim, chunk)
    if bool(_NEGATION.search(claim)) != bool(_NEGATION.search(_best_sentence(claim, chunk))):
        found.append("negation")
    return found


def deterministic_checks(record: dict, ctx: PremiseContext, checks: QuestionChecks) -> tuple[dict, list[str]]:
    """The rule-decided checks of one written question: ({check: "passed" | reason | "pending" |
    "skipped: why"}, the premise terms left to the judge). A refuted or unverifiable claim names what
    its chunk does not hold on purpose: its premise check is skipped; its label is the judge's to check."""
    q, label = record["question"], record.get("label")
    out = {"boilerplate": PASSED, "copy": copy_check(q, ctx.chunk, checks)}
    pending: list[str] = []
    if not checks.premise:
        out["premise"] = "skipped: premise check off"
    elif label in ("refuted", "unverifiable"):
        out["premise"] = f"skipped: {label} claim"
    else:
        out["premise"], pending = premise_check(q, ctx)
    if label is not None:
        out["label"] = PENDING if checks.label_check else "skipped: label check off"
    return out, pending


def first_failure(checks: dict) -> str | None:
    """The first check a question failed ("copy", "premise", "label"), or None."""
    for name in ("boilerplate", "copy", "premise", "label"):
        v = checks.get(name)
        if v is not None and v != PASSED and v != PENDING and not v.startswith("skipped"):
            return name
    return None
