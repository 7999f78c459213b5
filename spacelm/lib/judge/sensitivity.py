"""How far each of Table 1's paired tests rests on a few documents or on questions the checks doubt
(issue 44): for every row of `grading/paired_tests.csv`, the difference refitted with each document
left out, and the difference, CI and p-value on the questions that carry no flag.

A question is flagged by what its own record says (:func:`question_flags`); a record without checks
(written before the checks existed, or a question absent from the questions file) is counted as
unchecked, not as flagged."""

from __future__ import annotations

import numpy as np

from .relevance import Clustering, TableDesign, gain_contrasts, paired_plans, paired_values

# a check value that is no flag: the check passed, or it was skipped on purpose (a refuted or
# unverifiable claim names what its chunk does not hold, so its premise check does not run)
_CLEAR = ("passed", "skipped: refuted claim", "skipped: unverifiable claim")


def question_flags(record: dict) -> list[str]:
    """The flags a question's record carries, as short reasons (empty: none):

    - `drop:<reason>`: the question was not kept (`kept` false or a `drop_reason`): a check or the
      writing step rejected it, e.g. a run graded questions that a later synth with the checks drops;
    - `<check>:<value>`: a check in `checks` (boilerplate, copy, premise, label) that neither passed
      nor was skipped on purpose: a failure, "pending" (the judge never settled it), "unverified",
      "not run", or a check turned off;
    - `label:missing check`: a fact-checking question with a `label` whose record has no label check
      (its claim's verdict was never checked against its chunk).

    A refuted claim's `alteration` is not a flag: an empty list means the claim swaps words that
    its chunk holds, which the label check (not the alteration) judges."""
    flags = []
    if record.get("kept") is False or record.get("drop_reason"):
        flags.append(f"drop:{record.get('drop_reason') or 'not kept'}")
    checks = record.get("checks") or {}
    for name, value in sorted(checks.items()):
        if value is not None and str(value) not in _CLEAR:
            flags.append(f"{name}:{value}")
    if record.get("label") and checks and "label" not in checks:
        flags.append("label:missing check")
    return flags


def is_unchecked(record: dict) -> bool:
    """Whether a question's record holds no check results at all (nothing to flag it by)."""
    return not record.get("checks")


def leave_one_document_out(va: list, vb: list, qids: list, cl: Clustering) -> dict:
    """The paired difference b − a refitted with each document's questions left out, clustered as
    `cl`: the range of the differences, the largest cluster-robust t p-value, and the document whose
    removal moves the difference furthest from the full fit (with the difference without it). NaN
    and None when the documents are unknown or fewer than two."""
    from ..stats import paired_difference

    out = {"lodo_diff_min": np.nan, "lodo_diff_max": np.nan, "lodo_p_max": np.nan}
    out.update(lodo_doc_most=None, lodo_diff_without_most=np.nan)
    docs = [cl.doc_of.get(q) for q in qids]
    if None in docs or len(set(docs)) < 2:
        return out
    full = paired_difference(va, vb, cl.labels(qids))["diff"]
    fits = {}
    for doc in sorted(set(docs)):
        keep = [i for i, d in enumerate(docs) if d != doc]
        fits[doc] = paired_difference([va[i] for i in keep], [vb[i] for i in keep], cl.labels([qids[i] for i in keep]))
    diffs = [f["diff"] for f in fits.values()]
    ps = [f["p_value"] for f in fits.values() if not np.isnan(f["p_value"])]
    most = max(fits, key=lambda d: abs(fits[d]["diff"] - full))
    out.update(lodo_diff_min=min(diffs), lodo_diff_max=max(diffs), lodo_p_max=max(ps) if ps else np.nan)
    out.update(lodo_doc_most=most, lodo_diff_without_most=fits[most]["diff"])
    return out


def without_flagged(va: list, vb: list, qids: list, cl: Clustering, flagged: set) -> dict:
    """The paired difference, its 95% cluster-robust CI and p-value on the questions not in
    `flagged`, with the count of flagged questions left out."""
    from ..stats import paired_difference

    keep = [i for i, q in enumerate(qids) if q not in flagged]
    r = paired_difference([va[i] for i in keep], [vb[i] for i in keep], cl.labels([qids[i] for i in keep]))
    return {
        "n_flagged": len(qids) - len(keep),
        "unflagged_n": len(keep),
        "unflagged_diff": r["diff"],
        "unflagged_ci_low": r["ci_low"],
        "unflagged_ci_high": r["ci_high"],
        "unflagged_p_value": r["p_value"],
    }


SENSITIVITY_COLUMNS = [
    "comparison",
    "retriever",
    "top_k",
    "measure",
    "cluster",
    "n_questions",
    "n_documents",
    "diff",
    "p_value",
    "lodo_diff_min",
    "lodo_diff_max",
    "lodo_p_max",
    "lodo_doc_most",
    "lodo_diff_without_most",
    "n_flagged",
    "n_unchecked",
    "unflagged_n",
    "unflagged_diff",
    "unflagged_ci_low",
    "unflagged_ci_high",
    "unflagged_p_value",
]


def sensitivity(cells: dict, design: TableDesign, cl: Clustering, records: dict):
    """One row per paired test of Table 1 (the rows of :func:`~.relevance.paired_tests`): the full
    difference and p-value, :func:`leave_one_document_out` and :func:`without_flagged`, clustered as
    `cl`. `records` maps question ids to their question records (for the flags); a question without
    a record, or without checks in it, counts in `n_unchecked` and stays in the unflagged fit."""
    import pandas as pd

    from ..stats import paired_difference

    flagged = {q for q, r in records.items() if question_flags(r)}
    rows = []
    plans = [(c, r, k, m, *paired_values(a, b, m)) for c, r, k, m, a, b in paired_plans(cells, design)]
    for comparison, retriever, k, measure, qids, va, vb in plans + gain_contrasts(cells, design):
        full = paired_difference(va, vb, cl.labels(qids))
        rows.append(
            {
                "comparison": comparison,
                "retriever": retriever,
                "top_k": k,
                "measure": measure,
                "cluster": cl.unit,
                "n_questions": len(qids),
                "n_documents": cl.counts(qids)["n_documents"],
                "diff": full["diff"],
                "p_value": full["p_value"],
                **leave_one_document_out(va, vb, qids, cl),
                "n_unchecked": sum(is_unchecked(records.get(q, {})) for q in qids),
                **without_flagged(va, vb, qids, cl, flagged),
            }
        )
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS).round(4)
