"""Screening written questions (issue 40): the checks of `checks.py` applied to question records, the
judge's turn where the rules cannot decide, the per-task rejection table and the audit figures of a
set of questions beside the golden samples'.

A record's `checks` holds, per check, "passed", the reason it failed, or "skipped: why"; its
`drop_reason` names the first check it failed ("copy", "premise", "label"). The judge is asked each
of its questions both ways (`verify_premise` / `verify_premise_mirrored`, `judge_claim_support` /
`judge_claim_support_mirrored`) and the mean of P(yes) and P(no) of the mirror decides, so a judge that leans
to "yes" whatever it reads cannot pass or fail everything."""

from __future__ import annotations

import re

from .checks import (
    PASSED,
    PENDING,
    PremiseContext,
    QuestionChecks,
    alteration,
    boilerplate_reason,
    content_coverage,
    deterministic_checks,
    first_failure,
    longest_verbatim_run,
    summarise,
    unsupported_premises,
)

CHECKS = ("boilerplate", "copy", "premise", "label")
MALFORMED = ("empty", "too_short", "refers_to_passage")
REPEATED = ("duplicate", "copied_example")


def screen(records: list[dict], contexts: dict[str, PremiseContext], checks: QuestionChecks) -> dict[str, list]:
    """Run the rule-decided checks on every written answerable record (setting `checks`, and
    `drop_reason` on the first failure); returns {qid: premise terms the judge must decide}. A record
    already dropped (unparsed, a duplicate) gets each check as "not run"."""
    pending = {}
    for r in records:
        if not r.get("answerable", True):
            continue
        if r["drop_reason"] is not None:
            r["checks"] = {c: f"not run: {r['drop_reason']}" for c in CHECKS if c != "label" or r.get("label")}
            continue
        if _stand_in(r["question"]):  # `spacelm plan`: every check goes to the judge (an upper bound) and passes
            r["checks"] = {"boilerplate": PASSED, "copy": PASSED, "premise": PENDING}
            r["checks"].update({"label": PENDING} if r.get("label") else {})
            pending[r["qid"]] = ["(a stand-in question)"]
            continue
        r["checks"], terms = deterministic_checks(r, contexts[r["source_chunk_id"]], checks)
        if r.get("label") == "refuted":  # what a reader can check against the chunk (empty: a swap within it)
            r["alteration"] = alteration(r["question"], contexts[r["source_chunk_id"]].chunk)
        r["drop_reason"] = first_failure(r["checks"])
        if r["drop_reason"] is not None:  # the judge is not asked about a rejected question
            r["checks"] = {c: f"not run: {r['drop_reason']}" if v == PENDING else v for c, v in r["checks"].items()}
        elif terms:
            pending[r["qid"]] = terms
    return pending


def _stand_in(question: str) -> bool:
    """Whether a question is `spacelm plan`'s stand-in for a model's reply (it passes every check)."""
    from ..llm.dry_run import PLACEHOLDER

    return bool(PLACEHOLDER.search(question or ""))


def mentions(document: str, terms: list[str], limit: int = 3, width: int = 300) -> str:
    """Up to `limit` sentences of `document` naming one of `terms`, each cut to `width` characters."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", document):
        low = sentence.lower()
        if any(t.lower() in low for t in terms):
            out.append("- " + sentence.strip()[:width])
            if len(out) == limit:
                break
    return "\n".join(out) or "- (none)"


def judge_requests(records: list[dict], contexts: dict[str, PremiseContext], pending: dict) -> list[tuple]:
    """(record, check, Request asked, Request mirrored) for every check left to the judge: a premise
    the rules could not place, a fact-check's label."""
    from ..llm.prompting import render
    from ..llm.types import Request

    def ask(name, **kw):
        return Request(messages=render(name, **kw), choices=["yes", "no"], max_tokens=1)

    out = []
    for r in records:
        checks = r.get("checks") or {}
        if r.get("drop_reason") is not None:
            continue
        ctx = contexts.get(r["source_chunk_id"])
        if checks.get("premise") == PENDING:
            terms = pending[r["qid"]]
            kw = dict(
                doc_id=r.get("doc_id") or "",
                passage=ctx.chunk,
                mentions=mentions(ctx.document, terms),
                question=r["question"],
                terms=", ".join(f'"{t}"' for t in terms),
            )
            out.append((r, "premise", ask("verify_premise", **kw), ask("verify_premise_mirrored", **kw)))
        if checks.get("label") == PENDING:
            kw = dict(context=f"[1] {ctx.chunk}", claim=r["question"])
            out.append((r, "label", ask("judge_claim_support", **kw), ask("judge_claim_support_mirrored", **kw)))
    return out


def judge_checks(llm, requests: list[tuple]) -> None:
    """Ask the judge every request (both ways) and settle each pending check. A premise passes when
    the judge, both ways, more likely says the document ties the names to the passage; a label when
    the support it reads agrees with the label (P ≥ 0.5 for supported, < 0.5 otherwise). No reading
    from the judge fails the check as unverified."""
    from ..llm.scores import mirrored_p_yes, p_yes

    if not requests:
        return
    flat = [q for _, _, a, m in requests for q in (a, m)]
    comps = llm.chat_many(flat, progress="checking questions")
    for i, (r, check, _, _) in enumerate(requests):
        p = mirrored_p_yes(p_yes(comps[2 * i]), p_yes(comps[2 * i + 1]))
        r.setdefault("check_scores", {})[check] = None if p is None else round(p, 4)
        r["checks"][check] = PASSED if _stand_in(r["question"]) else _settle(check, p, r.get("label"))
    for r, *_ in requests:
        if r["drop_reason"] is None:
            r["drop_reason"] = first_failure(r["checks"])


def _settle(check: str, p: float | None, label: str | None) -> str:
    if p is None:
        return "unverified: the judge gave no yes/no reading"
    if check == "premise":
        return PASSED if p >= 0.5 else f"judge: the document does not tie the names to the passage (p {p:.2f})"
    supported = p >= 0.5
    if supported == (label == "supported"):
        return PASSED
    return f"judge reads the claim as {'supported' if supported else 'not supported'} (p {p:.2f}), label {label}"


def label_agreement(golden: list[dict]) -> dict:
    """How often the label check passes the golden fact-checks a person labelled (its agreement with
    people, per label, with a 95% Wilson interval) and how well the judge's P separates supported claims
    from the rest (AUC, threshold-free): {n, agree, share, ci, auc, by_label}. Only the claims the
    judge read count (a claim rejected earlier, e.g. as a copy, is left out)."""
    from ..stats import auc, wilson_ci

    read = [g for g in golden if g.get("label") and (g.get("check_scores") or {}).get("label") is not None]
    agree = [g["checks"]["label"] == PASSED for g in read]
    by = {}
    for lab in sorted({g["label"] for g in read}):
        xs = [a for g, a in zip(read, agree) if g["label"] == lab]
        by[lab] = {"n": len(xs), "agree": sum(xs)}
    if not read:
        return {"n": 0, "agree": 0, "share": None, "ci": None, "auc": None, "by_label": by}
    lo, hi = wilson_ci(sum(agree), len(agree))
    kinds = {g["label"] == "supported" for g in read}
    return {
        "auc": round(auc([g["label"] == "supported" for g in read], [g["check_scores"]["label"] for g in read]), 3)
        if len(kinds) == 2
        else None,
        "n": len(read),
        "agree": sum(agree),
        "share": round(sum(agree) / len(read), 3),
        "ci": [round(lo, 3), round(hi, 3)],
        "by_label": by,
    }


# --------------------------------------------------------------------------- tables
def golden_records(golden: list, found: dict[str, str], chunks_by_id: dict) -> list[dict]:
    """The answerable golden samples located in a chunk, as records the checks can screen (what the
    thresholds would reject of questions people wrote)."""
    from .checks import claim_label

    out = []
    for g in golden:
        if g.answerable and g.id in found:
            r = {"qid": g.id, "task": g.task, "question": g.question, "answerable": True, "origin": "golden"}
            r.update(source_chunk_id=found[g.id], doc_id=chunks_by_id[found[g.id]].doc_id, drop_reason=None)
            r.update(kept=False, **({"label": claim_label(g.verdict)} if g.task == "fact_checking" else {}))
            out.append(r)
    return out


def rejection_table(records: list[dict], skipped: dict[str, str], golden: list[dict] = ()):
    """Per task: questions written, dropped as malformed or repeated, rejected by each check, dropped
    by the retrieval filter, kept (set "written"); the same checks on the golden samples (set
    "golden": kept = passed every check); the boilerplate chunks left out before writing, by reason
    (set "sources skipped")."""
    import pandas as pd

    written = [r for r in records if r.get("answerable", True) and r.get("origin") != "golden"]
    for r in golden:
        r["kept"] = r["drop_reason"] is None
    df = pd.concat([_rejections("written", written), _rejections("golden", list(golden))], ignore_index=True)
    note = {"set": "sources skipped", "task": "all", "written": len(skipped)}
    note.update({f"boilerplate_{k}": list(skipped.values()).count(k) for k in sorted(set(skipped.values()))})
    out = pd.concat([df, pd.DataFrame([note])], ignore_index=True).fillna(0)
    counts = [c for c in out.columns if c not in ("set", "task")]
    return out.astype({c: int for c in counts})


def _rejections(name: str, records: list[dict]):
    import pandas as pd

    rows = []
    for task in sorted({r["task"] for r in records}):
        rs = [r for r in records if r["task"] == task]
        reasons = [r["drop_reason"] for r in rs]
        rows.append(
            {
                "set": name,
                "task": task,
                "written": len(rs),
                "malformed": sum(d in MALFORMED for d in reasons),
                "repeated": sum(d in REPEATED for d in reasons),
                **{f"rejected_{c}": reasons.count(c) for c in ("copy", "premise", "label")},
                "not_retrieved": reasons.count("not_retrieved"),
                "kept": sum(bool(r["kept"]) for r in rs),
            }
        )
    df = pd.DataFrame(rows, columns=_REJECTION_COLUMNS)
    if len(df):
        total = df.drop(columns=["set", "task"]).sum().to_dict()
        df = pd.concat([df, pd.DataFrame([{"set": name, "task": "all", **total}])], ignore_index=True)
    return df


_REJECTION_COLUMNS = [
    "set",
    "task",
    "written",
    "malformed",
    "repeated",
    "rejected_copy",
    "rejected_premise",
    "rejected_label",
    "not_retrieved",
    "kept",
]


def audit_row(r: dict, ctx: PremiseContext, checks: QuestionChecks) -> dict:
    """The audit figures of one question against its source chunk."""
    q = r["question"]
    cov, run = content_coverage(q, ctx.chunk), longest_verbatim_run(q, ctx.chunk)
    return {
        "qid": r["qid"],
        "task": r["task"],
        "coverage": cov,
        "verbatim": run,
        "copy": run > checks.max_verbatim_run or cov > checks.max_coverage,
        "outside_document": bool(unsupported_premises(q, ctx.chunk, ctx.document)),
        "outside_context": bool(unsupported_premises(q, ctx.chunk, ctx.near)),
        "boilerplate": boilerplate_reason(ctx.chunk) is not None,
    }


def audit_table(sets: dict[str, list[dict]], contexts: dict[str, PremiseContext], checks: QuestionChecks):
    """Per set (e.g. written, kept, golden) and task, then over all tasks: n, content-word coverage
    (mean), verbatim run (median, p90), and the shares failing the copy thresholds, naming a term
    outside the chunk's context or outside the whole document, and coming from a boilerplate chunk.
    A question whose source chunk is unknown is left out."""
    import pandas as pd

    rows = []
    for name, recs in sets.items():
        known = [r for r in recs if r.get("source_chunk_id") in contexts]
        audited = [audit_row(r, contexts[r["source_chunk_id"]], checks) for r in known]
        for task in sorted({a["task"] for a in audited}) + ["all"]:
            a = [x for x in audited if task in ("all", x["task"])]
            if not a:
                continue
            cov, run = summarise(x["coverage"] for x in a), summarise(x["verbatim"] for x in a)
            rows.append(
                {
                    "set": name,
                    "task": task,
                    "n": len(a),
                    "coverage_mean": cov["mean"],
                    "verbatim_median": run["median"],
                    "verbatim_p90": run["p90"],
                    **{f"share_{k}": round(sum(x[k] for x in a) / len(a), 3) for k in _SHARES},
                }
            )
    return pd.DataFrame(rows)


_SHARES = ("copy", "outside_context", "outside_document", "boilerplate")
