"""The evidence gate: before the generator is called, a confidence that the retrieved passages
can answer the question; below a threshold the pipeline returns the canonical refusal.

The confidence has three parts, each in [0, 1]:

- ``similarity``: the mean cosine similarity (clipped at 0) of the question to the top-n
  passages, from the dense retriever's model;
- ``keywords``: the share of the question's content words (stemmed) found in those passages;
- ``confirmation``: the best single sentence of the passages, as the share of the claim's
  content words it holds. For a *strong-claim* query ("is it confirmed that ...", "definitive
  proof", "does the corpus contain ...") only sentences with confirmation language count, and
  the words that make the query strong are not part of the claim.

confidence = w_sim·similarity + w_kw·keywords + w_conf·confirmation, with separate weights and
a higher threshold for strong-claim queries (configured in ``answer.gate``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

# what the gated pipeline says instead of calling the generator (the refusal check recognises it)
REFUSAL_TEXT = "The answer cannot be found in the provided passages."

STRONG_CLAIM_PATTERNS = (
    r"\bconfirm(?:s|ed|ation)?\b",
    r"\bdefinitive(?:ly)?\b",
    r"\bproo?f\b",
    r"\bprove[sdn]?\b",
    r"\bconclusive(?:ly)?\b",
    r"\bverified\b",
    r"\bguarantee[sd]?\b",
    r"\bofficially\b",
    r"\bdo(?:es)? the (?:corpus|collection|documents?|sources?) (?:contain|include|hold|say|state|mention)\b",
)
CONFIRMATION_PATTERNS = (
    r"\bconfirm",
    r"\bdemonstrat",
    r"\bverif",
    r"\bprove[dn]?\b",
    r"\bproof\b",
    r"\bestablish",
    r"\bvalidat",
    r"\bshow(?:s|ed|n)\b",
    r"\bmeasured\b",
    r"\bobserved\b",
)
# words of a strong-claim query that are about the asking, not the claim
_ASKING = {
    "confirm",
    "confirmed",
    "confirms",
    "confirmation",
    "definitive",
    "definitively",
    "proof",
    "prove",
    "proves",
    "proved",
    "proven",
    "conclusive",
    "conclusively",
    "verified",
    "guarantee",
    "guaranteed",
    "officially",
    "corpus",
    "collection",
    "document",
    "documents",
    "source",
    "sources",
    "contain",
    "contains",
    "include",
    "hold",
    "say",
    "state",
    "mention",
    "evidence",
    "true",
    "really",
    "indeed",
    "exist",
    "exists",
}
_WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}")


@dataclass
class GateRules:
    """Weights, thresholds and patterns of the gate (see ``answer.gate`` in the config)."""

    weights: dict = field(default_factory=lambda: {"similarity": 0.5, "keywords": 0.3, "confirmation": 0.2})
    threshold: float = 0.45
    strong_weights: dict = field(default_factory=lambda: {"similarity": 0.2, "keywords": 0.3, "confirmation": 0.5})
    strong_threshold: float = 0.6
    strong_patterns: Sequence[str] = STRONG_CLAIM_PATTERNS
    confirmation_patterns: Sequence[str] = CONFIRMATION_PATTERNS
    top_n: int = 3


@lru_cache(maxsize=1)
def _stopwords() -> frozenset:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN) | {
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "may",
        "might",
        "must",
        "also",
    }


@lru_cache(maxsize=1)
def _stem():
    import Stemmer

    return Stemmer.Stemmer("english").stemWord


def keywords(text: str, drop: set = frozenset()) -> list[str]:
    """The distinct content words of `text`, stemmed, in order of first use (stopwords, words of
    one or two letters and the words in `drop` are left out; numbers are kept)."""
    stop, stem, out = _stopwords(), _stem(), []
    for w in _WORD.findall((text or "").lower()):
        if w in stop or w in drop or (len(w) < 3 and not w.isdigit()):
            continue
        s = stem(w)
        if s not in out:
            out.append(s)
    return out


def is_strong_claim(question: str, patterns: Sequence[str] = STRONG_CLAIM_PATTERNS) -> bool:
    return any(re.search(p, question or "", re.I) for p in patterns)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(" ".join((text or "").split())) if s.strip()]


def keyword_coverage(words: Sequence[str], text: str) -> float:
    """The share of `words` (stemmed) that occur in `text`; 0 when there are none to find."""
    if not words:
        return 0.0
    have = set(keywords(text))
    return sum(w in have for w in words) / len(words)


def confirmation_score(
    claim_words: Sequence[str],
    passages: Sequence[str],
    require_confirmation: bool,
    patterns: Sequence[str] = CONFIRMATION_PATTERNS,
) -> tuple[float, str]:
    """(score, sentence): the sentence of `passages` holding most of the claim's words, and that
    share. With `require_confirmation`, only sentences with confirmation language count."""
    best, best_s = 0.0, ""
    for p in passages:
        for s in split_sentences(p):
            if require_confirmation and not any(re.search(pat, s, re.I) for pat in patterns):
                continue
            c = keyword_coverage(claim_words, s)
            if c > best:
                best, best_s = c, s
    return best, best_s


def gate_score(question: str, passages: Sequence[str], similarities: Sequence[float], rules: GateRules) -> dict:
    """The gate's verdict on one question and its top passages (`similarities`: the cosine of the
    question to each passage, same order). {similarity, keywords, confirmation, strong_claim,
    score, threshold, passed, evidence}."""
    top = list(passages)[: rules.top_n]
    sims = [max(0.0, float(s)) for s in list(similarities)[: rules.top_n]]
    strong = is_strong_claim(question, rules.strong_patterns)
    words = keywords(question, _ASKING if strong else frozenset())
    parts = {
        "similarity": sum(sims) / len(sims) if sims else 0.0,
        "keywords": keyword_coverage(words, "\n".join(top)),
    }
    parts["confirmation"], evidence = confirmation_score(words, top, strong, rules.confirmation_patterns)
    w = rules.strong_weights if strong else rules.weights
    total_w = sum(w.values()) or 1.0
    score = sum(w.get(k, 0.0) * v for k, v in parts.items()) / total_w
    threshold = rules.strong_threshold if strong else rules.threshold
    return {
        **{k: round(v, 4) for k, v in parts.items()},
        "strong_claim": strong,
        "score": round(score, 4),
        "threshold": threshold,
        "passed": score >= threshold,
        "evidence": evidence[:300],
    }


def gated_answer(answer: str, gate: dict) -> str:
    """What the gated pipeline returns: the canonical refusal below the threshold, else the answer."""
    return answer if gate["passed"] else REFUSAL_TEXT


def score_items(items: Sequence[dict], text_of: dict, encoder, rules: GateRules) -> None:
    """Set `item["gate"]` for every item with passages: the gate on its context's `top_n`
    passages most similar to the question (cosine from `encoder`, a retrieval.Encoder)."""
    todo = [it for it in items if it.get("passage_ids")]
    if not todo:
        return
    qs = sorted({it["question"] for it in todo})
    qv = dict(zip(qs, encoder.encode_queries(qs)))
    ids = sorted({c for it in todo for c in it["passage_ids"]})
    pv = dict(zip(ids, encoder.encode_passages([text_of[c] for c in ids])))
    for it in todo:
        ranked = sorted(
            ((float(qv[it["question"]] @ pv[c]), c) for c in it["passage_ids"]), key=lambda x: (-x[0], x[1])
        )
        it["gate"] = {
            **gate_score(it["question"], [text_of[c] for _, c in ranked], [s for s, _ in ranked], rules),
            "passages": [c for _, c in ranked[: rules.top_n]],
        }
