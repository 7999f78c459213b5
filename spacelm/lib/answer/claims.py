"""Claim-level support: an answer split into claims (its sentences), each judged against the
passages it cites (or, when it cites none, the whole context).

The judge answers yes/no, constrained to those two options, asked both ways (supported? anything
unsupported?) so that a judge leaning to "yes" cancels out; the support kept is the mean of P(yes) to
the first and P(no) to the second. Two calls per (claim, cited passage), so that each citation is
judged on its own:

- claim faithfulness = supported claims / claims;
- citation precision = citations that support the sentence they are attached to / citations;
- citation recall = claims with at least one supporting citation / claims.

Pooled over the answers of a setting or pipeline, with a cluster-bootstrap CI (source chunks, then answers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..llm.scores import mirrored_p_yes, p_yes
from ..stats import cluster_bootstrap_cis
from .citations import MARKER, cited_markers, format_context, strip_markers
from .gate import split_sentences

MIN_CLAIM_WORDS = 3
# each check is asked both ways: "is the statement supported?" and its mirror "does it say anything
# unsupported?"; the mean of P(yes) and the mirror's P(no) is the claim's support
CLAIM_PROMPTS = ("judge_claim_support", "judge_claim_support_mirrored")
# a sentence that only declines to answer makes no claim
_DECLINE = re.compile(
    r"cannot be (?:found|answered|determined)|not (?:contain|include|mention|provide)|"
    r"no (?:relevant )?information|insufficient information|do(?:es)? not know|not (?:stated|specified)",
    re.I,
)


def split_claims(answer: str, context_ids: Sequence[str]) -> list[dict]:
    """[{claim, cited}]: the answer's sentences with their citation markers removed, each with the
    chunk ids it cites. A marker between two sentences belongs to the sentence before ("... in
    2019. [2] The next ..."), unless the answer opens with a marker: small models often write
    "[1] First claim. [2] Second claim.", and then a marker belongs to the sentence after it.
    Sentences of fewer than three words and sentences that only decline are left out."""
    sents = split_sentences(answer)
    lead_re = re.compile(r"^(?:\s*(?:" + MARKER.pattern + r"))+", re.I)
    prefix_style = bool(sents) and bool(lead_re.match(sents[0]))
    merged: list[str] = []
    for s in sents:
        lead = lead_re.match(s)
        if lead and merged and not prefix_style:
            merged[-1] += " " + lead.group(0).strip()
            s = s[lead.end() :].strip()
        if s:
            merged.append(s)
    out = []
    for s in merged:
        claim = strip_markers(s)
        if len(claim.split()) < MIN_CLAIM_WORDS or _DECLINE.search(claim):
            continue
        cited = list(dict.fromkeys(c for c in cited_markers(s, list(context_ids)) if not c.startswith("invalid:")))
        out.append({"claim": claim, "cited": cited})
    return out


def plan_claim_checks(items: Sequence[dict]) -> list[dict]:
    """One check per (claim, cited passage), or per claim against the whole context when it cites
    none. Items without passages (closed book) have nothing to be checked against."""
    checks = []
    for it in items:
        if not it.get("passage_ids"):
            continue
        for i, c in enumerate(split_claims(it["answer"], it["passage_ids"])):
            targets = [[cid] for cid in c["cited"]] or [list(it["passage_ids"])]
            for ids in targets:
                checks.append({"item": it, "claim_index": i, "claim": c["claim"], "cited": c["cited"], "ids": ids})
    return checks


def judge_claims(judge, items: Sequence[dict], text_of: dict, style: str = "numbered") -> list[dict]:
    """Judge every claim of every item; returns one row per claim (qid, setting, pipeline, claim,
    cited, supported, p_supported, support: {chunk id: p}) and sets `item["claims"]`."""
    from ..llm.prompting import render
    from ..llm.types import Request

    checks = plan_claim_checks(items)
    reqs = [
        Request(
            messages=render(name, context=format_context(c["ids"], text_of, style), claim=c["claim"]),
            choices=["yes", "no"],
            max_tokens=1,
        )
        for c in checks
        for name in CLAIM_PROMPTS
    ]
    comps = judge.chat_many(reqs, progress="judging claims") if reqs else []
    per_claim: dict = {}
    for i, c in enumerate(checks):
        # asked both ways ("supported?", "anything unsupported?"): a judge's lean to "yes" cancels
        p = mirrored_p_yes(p_yes(comps[2 * i]), p_yes(comps[2 * i + 1]))
        key = (id(c["item"]), c["claim_index"])
        row = per_claim.setdefault(key, {"item": c["item"], "claim": c["claim"], "cited": c["cited"], "support": {}})
        row["support"]["context" if not c["cited"] else c["ids"][0]] = None if p is None else round(p, 4)
    rows = []
    for it in items:
        it["claims"] = []
    for row in per_claim.values():
        it = row.pop("item")
        ps = [p for p in row["support"].values() if p is not None]
        row["p_supported"] = round(max(ps), 4) if ps else None
        row["supported"] = None if not ps else max(ps) >= 0.5
        it["claims"].append(row)
        rows.append(
            {
                "qid": it["qid"],
                "setting": it["setting"],
                "pipeline": it["pipeline"],
                "answerable": it.get("answerable", True),
                **row,
            }
        )
    return rows


def answer_counts(item: dict) -> dict:
    """Counts for one answer: claims, supported claims, citations, supporting citations, claims
    with a supporting citation (claims the judge could not read are left out)."""
    cl = [c for c in item.get("claims", []) if c["supported"] is not None]
    cites = [(c, cid) for c in cl for cid in c["cited"] if c["support"].get(cid) is not None]
    return {
        "claims": len(cl),
        "supported": sum(c["supported"] for c in cl),
        "citations": len(cites),
        "supporting_citations": sum(c["support"][cid] >= 0.5 for c, cid in cites),
        "claims_with_support": sum(any((c["support"].get(cid) or 0) >= 0.5 for cid in c["cited"]) for c in cl),
    }


def claim_metrics(counts: Sequence[dict]) -> dict:
    """Pooled ratios over answers' counts; NaN where the denominator is 0."""
    tot = {
        k: sum(c[k] for c in counts)
        for k in ("claims", "supported", "citations", "supporting_citations", "claims_with_support")
    }
    div = lambda a, b: a / b if b else float("nan")
    return {
        "claim_faithfulness": div(tot["supported"], tot["claims"]),
        "citation_precision": div(tot["supporting_citations"], tot["citations"]),
        "citation_recall": div(tot["claims_with_support"], tot["claims"]),
    }


def claim_summary(items: Sequence[dict], n_boot: int, seed: int) -> dict:
    """The three metrics over the answers that were split into claims, each with its 95% CI from a
    two-stage cluster bootstrap (source chunks, then answers; None where undefined), and the
    numbers of claims and citations."""
    with_claims = [it for it in items if "claims" in it]
    counts = [answer_counts(it) for it in with_claims]
    m = claim_metrics(counts)
    ci = cluster_bootstrap_cis(counts, [it.get("source_chunk_id") for it in with_claims], claim_metrics, n_boot, seed)
    r = lambda x: None if np.isnan(x) else round(x, 3)
    row = {"n_claims": sum(c["claims"] for c in counts), "n_citations": sum(c["citations"] for c in counts)}
    for k, v in m.items():
        row[k] = r(v)
        row[f"{k}_ci_low"], row[f"{k}_ci_high"] = (r(x) for x in ci[k])
    return row


def claim_table(items: Sequence[dict], group: str, n_boot: int, seed: int) -> list[dict]:
    """Per value of `group` ("setting" or "pipeline"): the three metrics with bootstrap CIs over
    answers, the number of answers and claims."""
    out = []
    for g in sorted({it[group] for it in items if "claims" in it}):
        its = [it for it in items if it[group] == g and "claims" in it]
        out.append({group: g, "n_answers": len(its), **claim_summary(its, n_boot, seed)})
    return out
