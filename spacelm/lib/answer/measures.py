"""Deterministic answer measures that move when an answer gets worse (issue 41), beside the paper's
1–5 rubrics: what an answer took from an injected passage (`leakage`), whether each cited passage
holds what its sentence says (`citation_support`), and the phrase check for a refusal
(`refused_phrase`). Pure functions of the answer and the passages' texts; each returns None where it
does not apply (no injected passage, no cited sentence), never a number that means nothing."""

from __future__ import annotations

from collections.abc import Sequence

from ..synth.checks import content_words, words
from .citations import MARKER, cited_markers, strip_markers
from .gate import split_sentences

NGRAM = 3  # word trigrams: long enough to be a borrowed phrase, short enough to survive paraphrase
SUPPORT_COVERAGE = 0.6  # share of a sentence's content words its cited passages must hold


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    """The word n-grams of `text`, citation markers removed (lower-case word tokens)."""
    ws = words(MARKER.sub(" ", text or ""))
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def leakage(answer: str, source: str | None, injected: Sequence[str], n: int = NGRAM) -> dict | None:
    """Share of the answer's word n-grams found in an injected (wrong) passage and not in the source
    passage: content the answer took from the noise. None without injected passages or n-grams."""
    grams = ngrams(answer, n)
    if not injected or not grams:
        return None
    src = ngrams(source or "", n)
    noise = set().union(*(ngrams(t, n) for t in injected))
    leaked = {g for g in grams if g in noise and g not in src}
    return {"n_ngrams": len(grams), "leaked": len(leaked), "share": round(len(leaked) / len(grams), 4)}


def _coverage(sentence: str, passage: str) -> float:
    c = set(content_words(strip_markers(sentence)))
    return len(c & set(content_words(passage))) / len(c) if c else 0.0


def citation_support(
    answer: str, context_ids: Sequence[str], text_of: dict, source_id: str | None = None
) -> dict | None:
    """Per sentence with a valid citation: whether its cited passages hold at least SUPPORT_COVERAGE of
    its content words (`supported`), and whether the sentence cites only passages other than the source
    while the source holds it (`misattributed`: a citation by habit, content from the source). Returns
    {n_cited_sentences, supported, misattributed, share_supported, sentences: [...]}, or None when no
    sentence cites a passage of the context. Valid markers alone are not support."""
    rows = []
    for s in split_sentences(answer):
        cited = [c for c in cited_markers(s, list(context_ids)) if not c.startswith("invalid:")]
        if not cited:
            continue
        cov = max(_coverage(s, text_of[c]) for c in dict.fromkeys(cited))
        src_cov = _coverage(s, text_of[source_id]) if source_id and source_id in text_of else None
        wrong_only = source_id is not None and source_id not in cited
        rows.append(
            {
                "cited": list(dict.fromkeys(cited)),
                "coverage": round(cov, 3),
                "supported": cov >= SUPPORT_COVERAGE,
                "misattributed": bool(wrong_only and src_cov is not None and src_cov >= SUPPORT_COVERAGE > cov),
            }
        )
    if not rows:
        return None
    ok = sum(r["supported"] for r in rows)
    return {
        "n_cited_sentences": len(rows),
        "supported": ok,
        "misattributed": sum(r["misattributed"] for r in rows),
        "share_supported": round(ok / len(rows), 4),
        "sentences": rows,
    }


def claim_support(item: dict) -> dict | None:
    """The share of an answer's claims the claim judge reads as supported (asked both ways), from
    `item["claims"]`: {n_claims, supported, share}; None when no claim was judged."""
    read = [c["supported"] for c in item.get("claims") or [] if c.get("supported") is not None]
    if not read:
        return None
    return {"n_claims": len(read), "supported": sum(read), "share": round(sum(read) / len(read), 4)}


def answer_measures(item: dict, text_of: dict, is_refusal) -> None:
    """Set the deterministic measures on an answer item: `refused_phrase` (`is_refusal`, the phrase
    check), `leakage` (against its injected wrong passages and its source chunk) and `citation_support`."""
    src = item.get("source_chunk_id")
    item["refused_phrase"] = is_refusal(item.get("answer"))
    item["leakage"] = leakage(item.get("answer"), text_of.get(src), [text_of[w] for w in item.get("wrong_ids") or []])
    shown = src if src in (item.get("passage_ids") or []) else None
    item["citation_support"] = citation_support(item.get("answer"), item.get("passage_ids") or [], text_of, shown)


MEASURE_COLUMNS = [
    "setting",
    "pipeline",
    "n",
    "refused_phrase",
    "refused_phrase_ci_low",
    "refused_phrase_ci_high",
    "n_with_noise",
    "leakage_answers",
    "leakage_ci_low",
    "leakage_ci_high",
    "leakage_mean_share",
    "cited_sentences",
    "citation_supported",
    "citation_supported_ci_low",
    "citation_supported_ci_high",
    "misattributed",
    "claims",
    "claim_supported",
    "claim_supported_ci_low",
    "claim_supported_ci_high",
]


def measure_table(items: list[dict]) -> list[dict]:
    """Per setting and pipeline: the refusal phrase rate; the share of answers that took any trigram from
    an injected passage (and the mean share of their trigrams that did); the share of cited sentences
    their cited passages hold and how many cite only a wrong passage while the source holds them; the
    share of claims the claim judge reads as supported. Shares with a 95% Wilson interval at the
    effective n (source chunks as clusters; sentences and claims clustered by their answer's chunk)."""
    from ..stats import share_ci

    rows = []
    for key in sorted({(it["setting"], it["pipeline"]) for it in items}):
        group = [it for it in items if (it["setting"], it["pipeline"]) == key]
        chunk = [it.get("source_chunk_id") or it["qid"] for it in group]
        row = {"setting": key[0], "pipeline": key[1], "n": len(group)}
        row.update(_share("refused_phrase", [it.get("refused_phrase") for it in group], chunk, share_ci))
        leak = [(it["leakage"], c) for it, c in zip(group, chunk) if it.get("leakage")]
        row["n_with_noise"] = len(leak)
        took = [lk["leaked"] > 0 for lk, _ in leak]
        row.update(_share("leakage_answers", took, [c for _, c in leak], share_ci, "leakage"))
        row["leakage_mean_share"] = round(sum(lk["share"] for lk, _ in leak) / len(leak), 4) if leak else None
        sents = [(s, c) for it, c in zip(group, chunk) for s in _cited(it)]
        row["cited_sentences"] = len(sents)
        row.update(_share("citation_supported", [s["supported"] for s, _ in sents], [c for _, c in sents], share_ci))
        row["misattributed"] = sum(s["misattributed"] for s, _ in sents)
        claims = [(cl["supported"], c) for it, c in zip(group, chunk) for cl in it.get("claims") or []]
        claims = [(v, c) for v, c in claims if v is not None]
        row["claims"] = len(claims)
        row.update(_share("claim_supported", [v for v, _ in claims], [c for _, c in claims], share_ci))
        rows.append(row)
    return rows


def _share(name: str, values: list, clusters: list, share_ci, prefix: str | None = None) -> dict:
    s = share_ci(values, clusters)
    r = lambda v: None if v is None or v != v else round(v, 4)
    p = prefix or name
    return {name: r(s["share"]), f"{p}_ci_low": r(s["ci_low"]), f"{p}_ci_high": r(s["ci_high"])}


def _cited(item: dict) -> list[dict]:
    return (item.get("citation_support") or {}).get("sentences", [])
