"""Refusals measured on answerable and unanswerable questions: does the system answer what the
corpus holds and decline what it does not?

A refusal of an unanswerable question is a true positive. Per condition (gate off / on):

- answer_rate = answered / all questions;
- refusal_precision = refused unanswerable / refused;
- refusal_recall = refused unanswerable / unanswerable;
- refusal_f1 = their harmonic mean;
- false_refusal_rate = refused answerable / answerable.

Intervals: the four rates are proportions of questions: Wilson intervals at the effective n of
the source-chunk clusters (the same method as the sweep plot's); F1 is not a proportion: a
two-stage cluster bootstrap. The threshold sweep applies one threshold t to every
question's gate score: refused = the generator refused, or score < t.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COLUMNS = [
    "gate",
    "n_answerable",
    "n_unanswerable",
    "answer_rate",
    "refusal_precision",
    "refusal_recall",
    "refusal_f1",
    "false_refusal_rate",
]
METRICS = COLUMNS[3:]


def refusal_metrics(rows: Sequence[dict]) -> dict:
    """`rows`: {answerable: bool, refused: bool} per question. NaN where a denominator is 0."""
    div = lambda a, b: a / b if b else float("nan")
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    tp = sum(r["refused"] for r in una)
    refused = sum(r["refused"] for r in rows)
    p, rec = div(tp, refused), div(tp, len(una))
    f1 = float("nan") if np.isnan(p) or np.isnan(rec) else (0.0 if p + rec == 0 else 2 * p * rec / (p + rec))
    return {
        "answer_rate": div(len(rows) - refused, len(rows)),
        "refusal_precision": p,
        "refusal_recall": rec,
        "refusal_f1": f1,
        "false_refusal_rate": div(sum(r["refused"] for r in ans), len(ans)),
    }


PROPORTIONS = {  # metric: (which questions form its denominator, which of them count)
    "answer_rate": (lambda r: True, lambda r: not r["refused"]),
    "refusal_precision": (lambda r: r["refused"], lambda r: not r["answerable"]),
    "refusal_recall": (lambda r: not r["answerable"], lambda r: r["refused"]),
    "false_refusal_rate": (lambda r: r["answerable"], lambda r: r["refused"]),
}


def answerability_row(name: str, rows: Sequence[dict], n_boot: int, seed: int) -> dict:
    """One line of answerability.csv: counts, the metrics and their 95% CIs (Wilson at the
    effective n for the rates, cluster bootstrap for F1; `source_chunk_id` of each row, when
    given, is its cluster)."""
    from ..stats import cluster_bootstrap_ci, share_ci

    rows = list(rows)
    m = refusal_metrics(rows)
    out = {
        "gate": name,
        "n_answerable": sum(r["answerable"] for r in rows),
        "n_unanswerable": sum(not r["answerable"] for r in rows),
    }
    r3 = lambda x: None if x is None or np.isnan(x) else round(float(x), 3)
    for k in METRICS:
        out[k] = r3(m[k])
    for k in METRICS:
        if k in PROPORTIONS:
            within, counts = PROPORTIONS[k]
            sub = [r for r in rows if within(r)]
            ci = share_ci([bool(counts(r)) for r in sub], [r.get("source_chunk_id") for r in sub])
            lo, hi = ci["ci_low"], ci["ci_high"]
        else:
            lo, hi = cluster_bootstrap_ci(
                rows, [r.get("source_chunk_id") for r in rows], lambda rs, k=k: refusal_metrics(rs)[k], n_boot, seed
            )
        out[f"{k}_ci_low"], out[f"{k}_ci_high"] = r3(lo), r3(hi)
    return out


def threshold_sweep(rows: Sequence[dict], thresholds: Sequence[float]) -> list[dict]:
    """Refusal recall and false-refusal rate at each threshold. `rows`: {answerable,
    generator_refused, score}."""
    out = []
    for t in thresholds:
        m = refusal_metrics(
            [{"answerable": r["answerable"], "refused": r["generator_refused"] or r["score"] < t} for r in rows]
        )
        out.append({"threshold": round(float(t), 4), **{k: None if np.isnan(v) else round(v, 4) for k, v in m.items()}})
    return out


def agreement(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Share of paired decisions that agree, with n and Cohen's kappa (None when undefined)."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs:
        return {"n": 0, "agreement": None, "kappa": None}
    po = float(np.mean([x == y for x, y in pairs]))
    pa, pb = np.mean([x for x, _ in pairs]), np.mean([y for _, y in pairs])
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = None if pe >= 1 else round(float((po - pe) / (1 - pe)), 3)
    return {"n": len(pairs), "agreement": round(po, 3), "kappa": kappa}
