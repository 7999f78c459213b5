"""Measuring a judge before trusting it: functions of data, no run folder.

- *Relevance against people*: a stratified sample from a folder of human relevance labels
  (BEIR format; binary or graded 0-3): per query a relevant passage, a hard negative (the top
  BM25 passage people did not mark relevant) and a random negative; on graded labels one
  passage per grade. The judge grades them with the Table 1 prompt; we report the AUC of its
  expected grade, Cohen's kappa at grade >= 2, quadratic-weighted kappa (graded labels),
  accuracy and the confusion matrix, each with a bootstrap CI over queries.
- *In domain*: a golden sample's passage against another chunk of its document and the top
  BM25 chunk of another document (labelled by construction: the negatives are assumed, not
  judged, to be non-relevant).
- *Known-answer controls* for every answer rubric and binary judge: per question a good and a
  bad answer whose order is known; a rubric passes a control when it scores the good one higher.
- *Position bias*: the same pairs graded passage-first; agreement, mean shift, and what the
  mean of both orders does to the figures.
- *Verdicts*: valid / weak / fails / too few pairs to tell, from thresholds in the config.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..answer.facts import entities
from ..answer.gate import REFUSAL_TEXT
from ..stats import auc, bootstrap_cis, wilson_ci

VERDICTS = ("valid", "weak", "fails", "too few pairs to tell")
ANSWER_RUBRICS = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")
BINARY_JUDGES = ("correct", "answer_relevant", "grounded")
# the claim-support judge (yes/no with its probability; scored by P(yes))
CLAIM_JUDGE = "claim_support"
# the yes/no refusal judge (does the answer decline?), scored by its yes/no
REFUSAL_JUDGE = "refusal"


# --------------------------------------------------------------------------- sampling
def is_graded(qrels: dict) -> bool:
    return max((g for rel in qrels.values() for g in rel.values()), default=0) > 1


def relevant_from(graded: bool) -> int:
    """The human label from which a passage counts as relevant: 1 on binary labels, 2 ("highly
    relevant") on the 0-3 scale, matching the judge's grade >= 2."""
    return 2 if graded else 1


def sample_check_pairs(
    data, n_queries: int, seed: int, source: str, hard_depth: int = 30, exclude_queries: set | None = None
) -> list[dict]:
    """Pairs to grade from a :class:`~.beir.BeirData`, question-major. Each pair: qid, question,
    chunk_id (the passage id), label (the human grade), kind, source. `exclude_queries` (those a
    calibrated judge was fitted on) are never drawn, so the check stays held out."""
    from ..retrieval.bm25 import BM25Config, BM25Retriever

    graded = is_graded(data.qrels)
    rel_from = relevant_from(graded)
    ids, texts = data.passages()
    known = set(ids)
    rng = random.Random(f"{seed}|{source}")
    eligible = sorted(
        q
        for q, rel in data.qrels.items()
        if q in data.queries
        and q not in (exclude_queries or ())
        and any(g >= rel_from and d in known for d, g in rel.items())
    )
    chosen = sorted(rng.sample(eligible, min(n_queries, len(eligible))))
    hard = {}
    if not graded and chosen:
        bm25 = BM25Retriever(BM25Config()).index(ids, texts)
        for q, ranking in zip(chosen, bm25.search([data.queries[q] for q in chosen], hard_depth)):
            hard[q] = next((d for d, _ in ranking if data.qrels[q].get(d, 0) < rel_from), None)
    pairs = []
    for q in chosen:
        rel = data.qrels[q]
        picks: list[tuple[str, int, str]] = []
        if graded:  # one passage per grade people gave for this query (the judged 0s are hard negatives)
            for g in (3, 2, 1, 0):
                cands = sorted(d for d, v in rel.items() if v == g and d in known)
                if cands:
                    picks.append((rng.choice(cands), g, f"grade_{g}"))
        else:
            pos = sorted(d for d, v in rel.items() if v >= rel_from and d in known)
            picks.append((rng.choice(pos), rel[pos[0]] if len(pos) == 1 else 1, "positive"))
            if hard.get(q):
                picks.append((hard[q], rel.get(hard[q], 0), "hard_negative"))
        taken = {doc for doc, _, _ in picks}
        unjudged = [d for d in (rng.choice(ids) for _ in range(50)) if d not in rel and d not in taken]
        if unjudged:
            picks.append((unjudged[0], 0, "random_negative"))
        for doc, label, kind in picks:
            pairs.append(
                {
                    "source": source,
                    "qid": q,
                    "question": data.queries[q],
                    "chunk_id": doc,
                    "label": int(label),
                    "kind": kind,
                    "purpose": [kind],
                }
            )
    return pairs


def golden_check_pairs(samples: Sequence, found: dict, chunks: Sequence, n: int, seed: int) -> list[dict]:
    """In-domain pairs from golden samples located in the chunks: the sample's chunk (label 1),
    another chunk of its document and the top BM25 chunk of another document (label 0)."""
    from ..retrieval.bm25 import BM25Config, BM25Retriever

    rng = random.Random(f"{seed}|golden")
    usable = sorted((s for s in samples if s.id in found), key=lambda s: s.id)
    chosen = sorted(rng.sample(usable, min(n, len(usable))), key=lambda s: s.id)
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    by_doc: dict = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c.chunk_id)
    bm25 = BM25Retriever(BM25Config()).index(list(doc_of), [c.text for c in chunks]) if chosen else None
    rankings = bm25.search([s.question for s in chosen], 50) if chosen else []
    pairs = []
    for s, ranking in zip(chosen, rankings):
        pos = found[s.id]
        picks = [(pos, 1, "positive")]
        same = sorted(c for c in by_doc[doc_of[pos]] if c != pos)
        if same:
            picks.append((rng.choice(same), 0, "same_document"))
        other = next((d for d, _ in ranking if doc_of[d] != doc_of[pos]), None)
        if other:
            picks.append((other, 0, "hard_negative"))
        for cid, label, kind in picks:
            pairs.append(
                {
                    "source": "golden (in-domain)",
                    "qid": s.id,
                    "question": s.question,
                    "chunk_id": cid,
                    "label": label,
                    "kind": kind,
                    "purpose": [kind],
                }
            )
    return pairs


# --------------------------------------------------------------------------- agreement
def _score(r: dict) -> float | None:
    """The continuous score a grade row is ranked by: a calibrated judge's score, else the
    expected grade from the option probabilities, else the grade."""
    for key in ("score", "expected_grade"):
        if r.get(key) is not None:
            return r[key]
    return r.get("grade")


def _kappa(a: list, b: list, weights: str | None = None, labels=None) -> float:
    from sklearn.metrics import cohen_kappa_score

    if len(a) < 2:
        return float("nan")
    if len(set(a)) == 1 and len(set(b)) == 1:
        return 1.0 if a[0] == b[0] else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(cohen_kappa_score(a, b, weights=weights, labels=labels))


def _metrics(rows: list[dict], graded: bool) -> dict:
    rel_from = relevant_from(graded)
    y = [int(r["label"] >= rel_from) for r in rows]
    judged = [int(r["grade"] >= 2) for r in rows]
    out = {
        "auc": auc(y, [_score(r) for r in rows]),
        "kappa_binary": _kappa(y, judged),
        "accuracy": float(np.mean([a == b for a, b in zip(y, judged)])) if rows else float("nan"),
    }
    if graded:
        out["kappa_weighted"] = _kappa(
            [r["label"] for r in rows], [r["grade"] for r in rows], "quadratic", [0, 1, 2, 3]
        )
        out["exact_accuracy"] = float(np.mean([r["label"] == r["grade"] for r in rows])) if rows else float("nan")
    return out


def _r(x: float, nd: int = 4) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), nd)


def agreement(rows: list[dict], n_boot: int, seed: int, graded: bool | None = None) -> dict:
    """The judge's agreement with the human labels on graded check pairs, each figure with a
    95% bootstrap CI over queries (pairs of one query move together)."""
    ok = [r for r in rows if r.get("grade") is not None]
    graded = is_graded({0: {i: r["label"] for i, r in enumerate(ok)}}) if graded is None else graded
    by_q: dict = {}
    for r in ok:
        by_q.setdefault(r["qid"], []).append(r)
    groups = [by_q[q] for q in sorted(by_q)]
    point = _metrics(ok, graded)
    out: dict = {
        "n_pairs": len(ok),
        "n_queries": len(groups),
        "missing": len(rows) - len(ok),
        "labels": "graded 0-3" if graded else "binary",
        "relevant_from_label": relevant_from(graded),
    }
    cis = bootstrap_cis(groups, lambda gs: _metrics([r for g in gs for r in g], graded), n_boot, seed)
    for name, value in point.items():
        out[name] = _r(value)
        out[f"{name}_ci"] = [_r(x) for x in _undegenerate(value, cis[name], len(groups))]
    if not graded:
        out["kappa_weighted"], out["kappa_weighted_ci"] = None, [None, None]
    out["confusion"] = {
        str(h): {str(g): sum(1 for r in ok if r["label"] == h and r["grade"] == g) for g in range(4)}
        for h in sorted({r["label"] for r in ok})
    }
    # which comparison is hard: relevant against each kind of negative
    rel_from = relevant_from(graded)
    pos = [r for r in ok if r["label"] >= rel_from]
    for kind in sorted({r["kind"] for r in ok if r["label"] < rel_from}):
        neg = [r for r in ok if r["kind"] == kind]
        out[f"auc_relevant_vs_{kind}"] = _r(auc([1] * len(pos) + [0] * len(neg), [_score(r) for r in pos + neg]))
    out.update(boundary_agreement(ok, n_boot, seed, graded, with_auc=False))
    out["mean_grade_by_label"] = {
        str(h): _r(np.mean([r["grade"] for r in ok if r["label"] == h]), 3) for h in sorted({r["label"] for r in ok})
    }
    return out


# --------------------------------------------------------------------------- boundaries
# The cuts of the 0-3 scale a Table 1 finding can read: "ge1" (grade >= 1: not unrelated), "ge2"
# (grade >= 2: relevant; the shares of grades 0-1 and 2-3 read it), "eq3" (grade 3: the share of
# grade 3 reads it). On binary labels (relevant or not) only "ge2" can be checked.
BOUNDARIES = {"ge1": "grade >= 1", "ge2": "grade >= 2", "eq3": "grade = 3"}


def at_boundary(value: int, boundary: str) -> bool:
    """Whether a 0-3 grade (or label) is on the upper side of `boundary`."""
    return value == 3 if boundary == "eq3" else value >= int(boundary[2])


def boundaries_for(graded: bool) -> tuple[str, ...]:
    return tuple(BOUNDARIES) if graded else ("ge2",)


def _boundary_metrics(rows: list[dict], graded: bool) -> dict:
    """Kappa, precision and recall of the judge at each boundary, and per judge grade the share
    of its pairs whose label is that grade (graded labels) or relevant (binary)."""
    out: dict = {}
    for b in boundaries_for(graded):
        y = [int(at_boundary(r["label"], b) if graded else r["label"] >= 1) for r in rows]
        j = [int(at_boundary(r["grade"], b)) for r in rows]
        tp = sum(a and c for a, c in zip(y, j))
        out[f"{b}.kappa"] = _kappa(y, j)
        out[f"{b}.precision"] = tp / sum(j) if sum(j) else float("nan")
        out[f"{b}.recall"] = tp / sum(y) if sum(y) else float("nan")
    for g in range(4):
        mine = [r for r in rows if r["grade"] == g]
        hit = [r["label"] == g if graded else r["label"] >= 1 for r in mine]
        out[f"grade{g}.precision"] = float(np.mean(hit)) if mine else float("nan")
    if graded:
        out["kappa_weighted_linear"] = _kappa(
            [r["label"] for r in rows], [r["grade"] for r in rows], "linear", [0, 1, 2, 3]
        )
    return out


def boundary_agreement(rows: list[dict], n_boot: int, seed: int, graded: bool, with_auc: bool = True) -> dict:
    """The judge's agreement with the labels at each boundary the findings read (`BOUNDARIES`):
    {"boundaries": {b: {kappa, precision, recall, n_label, n_judge, each figure's _ci}},
    "per_grade": {g: {n, precision, precision_ci}}, "kappa_weighted_linear" (+ _ci)} and, with
    `with_auc`, the AUC of the score and its CI; 95% bootstrap CIs over queries, the same units as
    :func:`agreement`. A boundary no pair reaches on one side has NaN figures (None)."""
    ok = [r for r in rows if r.get("grade") is not None]
    by_q: dict = {}
    for r in ok:
        by_q.setdefault(r["qid"], []).append(r)
    groups = [by_q[q] for q in sorted(by_q)]

    def stats(gs):
        flat = [r for g in gs for r in g]
        m = _boundary_metrics(flat, graded)
        if with_auc:
            rel_from = relevant_from(graded)
            m["auc"] = auc([int(r["label"] >= rel_from) for r in flat], [_score(r) for r in flat])
        return m

    point = stats(groups)
    cis = bootstrap_cis(groups, stats, n_boot, seed) if groups else {}
    out: dict = {"boundaries": {}, "per_grade": {}}
    for b in boundaries_for(graded):
        y = [at_boundary(r["label"], b) if graded else r["label"] >= 1 for r in ok]
        item = {"cut": BOUNDARIES[b], "n_label": int(sum(y)), "n_judge": sum(at_boundary(r["grade"], b) for r in ok)}
        for k in ("kappa", "precision", "recall"):
            item[k] = _r(point[f"{b}.{k}"])
            item[f"{k}_ci"] = [_r(x) for x in cis.get(f"{b}.{k}", (None, None))]
        out["boundaries"][b] = item
    for g in range(4):
        n = sum(1 for r in ok if r["grade"] == g)
        out["per_grade"][str(g)] = {
            "n": n,
            "precision": _r(point[f"grade{g}.precision"]),
            "precision_ci": [_r(x) for x in cis.get(f"grade{g}.precision", (None, None))],
            "means": f"label = {g}" if graded else "label relevant",
        }
    if graded:
        out["kappa_weighted_linear"] = _r(point["kappa_weighted_linear"])
        out["kappa_weighted_linear_ci"] = [_r(x) for x in cis.get("kappa_weighted_linear", (None, None))]
    if with_auc:
        out["auc"] = _r(point["auc"])
        out["auc_ci"] = [_r(x) for x in cis.get("auc", (None, None))]
        out["n_pairs"] = len(ok)
    return out


def boundary_verdicts(m: dict, th) -> dict:
    """{boundary: (verdict, reason)} from a source's `boundaries`: "valid" when the kappa's 95%
    CI lower bound reaches `th.boundary_kappa_low` and its point estimate `th.boundary_kappa`;
    "fails" when the upper bound is under `th.boundary_kappa_low`; "too few pairs to tell" when
    fewer than `th.min_pairs` pairs were graded or either side of the cut holds fewer than
    `th.min_boundary_pairs` labels; else "weak"."""
    out = {}
    n = m.get("n_pairs") or 0
    for b, f in (m.get("boundaries") or {}).items():
        k, (lo, hi) = f.get("kappa"), (f.get("kappa_ci") or [None, None])
        sides = min(f.get("n_label") or 0, n - (f.get("n_label") or 0))
        fig = (
            "kappa n/a" if k is None else f"kappa {k:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None else f"kappa {k:.2f}"
        )
        if n < th.min_pairs or sides < th.min_boundary_pairs or k is None or lo is None:
            out[b] = ("too few pairs to tell", f"{fig}; {n} pairs, {sides} on the smaller side of {f['cut']}")
        elif lo >= th.boundary_kappa_low and k >= th.boundary_kappa:
            out[b] = ("valid", f"{fig} reaches {th.boundary_kappa} with its lower bound >= {th.boundary_kappa_low}")
        elif hi < th.boundary_kappa_low:
            out[b] = ("fails", f"{fig}: the upper bound is under {th.boundary_kappa_low}")
        else:
            out[b] = ("weak", f"{fig}: short of {th.boundary_kappa} (point) and {th.boundary_kappa_low} (lower bound)")
    return out


# --------------------------------------------------------------------------- system bias
def residuals(r: dict, graded: bool) -> dict:
    """The judge's departure from the label on one pair, per measure: "grade" (grade - label on
    0-3 labels; (grade >= 2) - label on binary ones) and, per boundary the labels can check, the
    judge's side of the cut minus the label's (-1, 0 or 1; its mean is a share, as Table 1's)."""
    if not graded:
        d = float(int(r["grade"] >= 2) - int(r["label"] >= 1))
        return {"grade": d, "ge2": d}
    out = {"grade": float(r["grade"] - r["label"])}
    for b in BOUNDARIES:
        out[b] = float(int(at_boundary(r["grade"], b)) - int(at_boundary(r["label"], b)))
    return out


def system_bias(rows: list[dict], retrieved_by: dict, n_boot: int, seed: int, graded: bool) -> dict:
    """For passages of equal label, does the judge grade one system's passages higher? `rows`:
    graded labelled pairs (qid, chunk_id, label, grade); `retrieved_by`: {system: set of (qid,
    chunk_id) in its top-k}. Per system: n_pairs, mean judge - label residual (`mean_residual`,
    on the grade scale) with its 95% bootstrap CI over queries (`ci_low`, `ci_high`), the same at
    each boundary (`by_boundary`: a share, as Table 1's cells), mean grade and mean label; per
    pair of systems the difference of their biases with its paired CI (`differences`: {"a - b":
    {measure: {diff, ci_low, ci_high}}}); and Kendall's tau between the systems' ranking by mean
    judge grade and by mean label (`kendall_tau`; None with fewer than 3 systems). A judge that
    adds to one system's passages shows a residual above the others' and a difference whose CI
    excludes 0."""
    from scipy.stats import kendalltau

    ok = {(str(r["qid"]), str(r["chunk_id"])): r for r in rows if r.get("grade") is not None}
    systems = sorted(retrieved_by)
    by_q: dict = {s: {} for s in systems}
    for s in systems:
        for k in sorted({(str(q), str(d)) for q, d in retrieved_by[s]} & set(ok)):
            by_q[s].setdefault(k[0], []).append(k)
    qids = sorted({q for s in systems for q in by_q[s]})
    res = {k: residuals(r, graded) for k, r in ok.items()}
    measures = ("grade", *boundaries_for(graded))

    def stats(qs):
        out = {}
        for s in systems:
            keys = [k for q in qs for k in by_q[s].get(q, [])]
            for m in measures:
                out[f"{s}|{m}"] = float(np.mean([res[k][m] for k in keys])) if keys else float("nan")
        for a, b in _pairs(systems):
            for m in measures:
                out[f"{a}-{b}|{m}"] = out[f"{a}|{m}"] - out[f"{b}|{m}"]
        return out

    point = stats(qids)
    cis = bootstrap_cis(qids, stats, n_boot, seed) if qids else {}

    def fig(key: str, name: str) -> dict:
        lo, hi = cis.get(key, (None, None))
        return {name: _r(point.get(key)), "ci_low": _r(lo), "ci_high": _r(hi)}

    per = {}
    for s in systems:
        keys = [k for q in by_q[s] for k in by_q[s][q]]
        per[s] = {
            "n_pairs": len(keys),
            "n_queries": len(by_q[s]),
            **fig(f"{s}|grade", "mean_residual"),
            "by_boundary": {m: fig(f"{s}|{m}", "mean_residual") for m in measures[1:]},
            "mean_grade": _r(np.mean([ok[k]["grade"] for k in keys])) if keys else None,
            "mean_label": _r(np.mean([ok[k]["label"] for k in keys])) if keys else None,
        }
    diffs = {f"{a} - {b}": {m: fig(f"{a}-{b}|{m}", "diff") for m in measures} for a, b in _pairs(systems)}
    usable = [s for s in systems if per[s]["mean_grade"] is not None]
    tau = None
    if len(usable) >= 3:
        tau = _r(kendalltau([per[s]["mean_grade"] for s in usable], [per[s]["mean_label"] for s in usable]).statistic)
    return {
        "systems": per,
        "differences": diffs,
        "kendall_tau": tau,
        "n_queries": len(qids),
        "residual": "grade - label" if graded else "(grade >= 2) - label",
    }


def _pairs(systems: Sequence[str]) -> list[tuple[str, str]]:
    return [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]


def bias_between(bias: dict | None, a: str, b: str, measure: str = "grade") -> dict | None:
    """The judge's bias difference between systems `a` and `b` (a - b: diff, ci_low, ci_high) on
    `measure` ("grade" or a boundary) from a :func:`system_bias` result, whichever order it
    stored them in; None when not measured."""
    d = (bias or {}).get("differences") or {}
    if f"{a} - {b}" in d:
        return d[f"{a} - {b}"].get(measure)
    if f"{b} - {a}" in d and measure in d[f"{b} - {a}"]:
        x = d[f"{b} - {a}"][measure]

        def neg(v):
            return None if v is None else -v

        return {"diff": neg(x["diff"]), "ci_low": neg(x["ci_high"]), "ci_high": neg(x["ci_low"])}
    return None


# --------------------------------------------------------------------------- reference judges
def read_reference_judges(folder) -> dict:
    """{name: {(query id, passage id): label}} from every `<name>.qrels.txt` in `folder` (TREC
    qrels lines "query-id Q0 passage-id label"); {} when the folder does not exist. A line that
    is not four fields with an integer label is an error naming the file and line."""
    from pathlib import Path

    out: dict = {}
    d = Path(folder) if folder else None
    if d is None or not d.is_dir():
        return out
    for f in sorted(d.glob("*.qrels.txt")):
        labels = {}
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                raise ValueError(f"{f}:{i}: expected 'query-id Q0 passage-id label', got {line!r}")
            labels[(parts[0], parts[2])] = int(parts[3])
        out[f.name[: -len(".qrels.txt")]] = labels
    return out


def reference_agreement(rows: list[dict], references: dict, n_boot: int, seed: int, graded: bool) -> list[dict]:
    """Each reference judge's agreement with the human labels on exactly the pairs our judge
    graded (`rows` with a grade), by :func:`agreement` with the same bootstrap units (queries)
    and seed, so its figures compare with ours. A binary reference (labels 0/1, where 1 means
    relevant) is read as grade 2 or 0: it has no weighted kappa. Pairs the reference did not
    label are left out and `n_pairs` says how many remain."""
    ours = [r for r in rows if r.get("grade") is not None]
    out = []
    for name in sorted(references):
        labels = references[name]
        ref_graded = max(labels.values(), default=0) > 1
        theirs = []
        for r in ours:
            g = labels.get((str(r["qid"]), str(r["chunk_id"])))
            if g is not None:
                # its own label is its grade and its score: our score and expected grade must not
                # stay on the row, or its AUC would be ours (_score ranks by them first)
                grade = g if ref_graded else 2 * int(g >= 1)
                theirs.append(dict(r, grade=grade, score=None, expected_grade=None))
        a = agreement(theirs, n_boot, seed, graded) if theirs else {"n_pairs": 0}
        item = {"name": name, "n_pairs": a["n_pairs"], "labels": "graded 0-3" if ref_graded else "binary"}
        for k in ("kappa_binary", "kappa_binary_ci", "kappa_weighted", "auc", "auc_ci", "boundaries"):
            item[k] = a.get(k)
        if not ref_graded:  # a binary judge says relevant or not: only the grade >= 2 cut is its own
            item["kappa_weighted"] = None
            item["boundaries"] = {b: f for b, f in (item.get("boundaries") or {}).items() if b == "ge2"}
        out.append(item)
    return out


def _undegenerate(value: float, ci: tuple, n_units: int) -> tuple:
    """A bootstrap interval that collapsed onto a perfect figure (every resample gives 1.0, e.g.
    an AUC of 1 from 10 queries) says nothing about how far below 1 the truth may be; its lower
    bound becomes the 95% Wilson lower bound of n_units successes in n_units trials (each unit,
    a query, read as one success), 0.72 for 10 units, 0.89 for 30. Other intervals pass as they
    are."""

    lo, hi = ci
    if value is None or np.isnan(value) or np.isnan(lo) or not (lo == hi == value == 1.0):
        return lo, hi
    return min(lo, wilson_ci(n_units, n_units)[0]), hi


def verdict(m: dict, th, references: Sequence[dict] = ()) -> tuple[str, str]:
    """(verdict, the reason in plain words) for relevance agreement `m` from the bounds of its
    95% CIs, never from point estimates alone.

    Rule: fewer than `th.min_pairs` pairs, or no AUC CI -> "too few pairs to tell" (no verdict).
    With reference judges measured on the same pairs, the bar is theirs: against each reference
    we are "at least as good as" it when the lower bounds of our AUC and binary kappa reach its
    point estimates, "below" it when the upper bound of our AUC or kappa is under its point
    estimate, else "cannot tell against" it; the verdict is "valid" when at least as good as
    every reference, "fails" when below every reference, else "weak". Without references, the
    absolute bar of the config: "valid" when the AUC CI's lower bound >= `valid_auc` and the
    kappa CI's lower bound >= `valid_kappa`, "fails" when the AUC CI's upper bound < `fail_auc`,
    "too few pairs to tell" when the AUC CI is wider than `max_ci_width`, else "weak"."""
    n = m.get("n_pairs") or 0
    auc_v, (lo, hi) = m.get("auc"), (m.get("auc_ci") or [None, None])
    k_v, (klo, khi) = m.get("kappa_binary"), (m.get("kappa_binary_ci") or [None, None])
    if n < th.min_pairs:
        return "too few pairs to tell", f"only {n} pairs (at least {th.min_pairs} are needed for a verdict)"
    if auc_v is None or lo is None or hi is None:
        return "too few pairs to tell", "the AUC cannot be computed (one class only)"
    ours = f"AUC {auc_v:.2f} [{lo:.2f}, {hi:.2f}], kappa " + (
        "n/a" if k_v is None or klo is None else f"{k_v:.2f} [{klo:.2f}, {khi:.2f}]"
    )
    refs = [r for r in references if r.get("auc") is not None and r.get("kappa_binary") is not None]
    if refs:
        places = []
        for r in refs:
            if klo is not None and lo >= r["auc"] and klo >= r["kappa_binary"]:
                places.append(("above", f"at least as good as {r['name']}"))
            elif hi < r["auc"] or (khi is not None and khi < r["kappa_binary"]):
                places.append(("below", f"below {r['name']}"))
            else:
                places.append(("between", f"cannot tell against {r['name']}"))
        marks = {p for p, _ in places}
        v = "valid" if marks == {"above"} else "fails" if marks == {"below"} else "weak"
        theirs = "; ".join(f"{r['name']} AUC {r['auc']:.2f}, kappa {r['kappa_binary']:.2f}" for r in refs)
        return v, (f"{'; '.join(t for _, t in places)} on these pairs ({ours}; {theirs})")
    if hi - lo > th.max_ci_width:
        return "too few pairs to tell", f"the AUC's 95% CI [{lo:.2f}, {hi:.2f}] is wider than {th.max_ci_width}"
    if hi < th.fail_auc:
        return "fails", f"{ours}: the AUC's upper bound is under {th.fail_auc}, it barely tells relevant from not"
    if klo is not None and lo >= th.valid_auc and klo >= th.valid_kappa:
        return "valid", f"{ours}: lower bounds reach AUC {th.valid_auc} and kappa {th.valid_kappa}"
    return "weak", (
        f"{ours}: the lower bounds do not reach AUC {th.valid_auc} and kappa {th.valid_kappa} "
        "(no reference judge on these pairs)"
    )


# --------------------------------------------------------------------------- position bias
def position_bias(rows: list[dict], swapped: list[dict]) -> dict:
    """Agreement between the question-first and passage-first grades of the same pairs, and the
    mean shift of the (expected) grade when the passage comes first."""
    by = {(r["qid"], r["chunk_id"]): r for r in swapped if r.get("grade") is not None}
    both = [
        (r, by[(r["qid"], r["chunk_id"])])
        for r in rows
        if r.get("grade") is not None and (r["qid"], r["chunk_id"]) in by
    ]
    if not both:
        return {"n_pairs": 0, "agreement": None, "mean_shift": None}
    return {
        "n_pairs": len(both),
        "agreement": _r(np.mean([a["grade"] == b["grade"] for a, b in both])),
        "mean_shift": _r(np.mean([_score(b) - _score(a) for a, b in both])),
        "mean_abs_shift": _r(np.mean([abs(_score(b) - _score(a)) for a, b in both])),
    }


def mean_of_orders(rows: list[dict], swapped: list[dict]) -> list[dict]:
    """Rows whose expected grade is the mean of both orders' and whose grade is its rounding
    (the `both_orders` debiasing); a pair graded in one order only keeps that order's grade."""
    by = {(r["qid"], r["chunk_id"]): r for r in swapped if r.get("grade") is not None}
    out = []
    for r in rows:
        s = by.get((r["qid"], r["chunk_id"]))
        if r.get("grade") is None or s is None:
            out.append(dict(r))
            continue
        e = (_score(r) + _score(s)) / 2
        out.append(dict(r, expected_grade=round(e, 4), grade=int(np.floor(e + 0.5)), debiased="both_orders"))
    return out


# --------------------------------------------------------------------------- controls
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = set(
    "a an the of and or to in on for with by from at as is are was were be been it its this that these those "
    "what which who whom how why when where do does did can could should would will may might not no "
    "into than then there their they them about over under between".split()
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(" ".join(text.split())) if len(s.split()) >= 5]


# a sentence that ends on a word (or a closing bracket), perhaps with a footnote number, then . ! ?
_ENDS_SENTENCE = re.compile(r"[A-Za-z)\]'\"’”]\d{0,3}[.!?]['\"’”)\]]*$")


def reads_as_answer(sentence: str, max_words: int = 45) -> bool:
    """Whether `sentence` reads as a sentence someone could give as an answer, not PDF debris: 6
    to `max_words` words, ending a sentence on a word (a heading such as "Article 12 ... 1." or
    a run of text with no full stop does not), mostly letters, and not a title (half or more of
    its words capitalised)."""
    words = sentence.split()
    if not 6 <= len(words) <= max_words or not _ENDS_SENTENCE.search(sentence):
        return False
    chars = sentence.replace(" ", "")
    if sum(ch.isalpha() for ch in chars) < 0.7 * len(chars):
        return False
    return sum(w[:1].isupper() for w in words) / len(words) < 0.5


def supporting_sentence(question: str, text: str, min_shared: int = 2) -> str | None:
    """The sentence of `text` that reads as an answer (`reads_as_answer`) and shares most content
    words with `question`, at least `min_shared` (first on ties); None when no sentence does, as
    when the passage does not address the question or holds only headings and fragments."""
    q = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    best, best_n = None, min_shared - 1
    for s in sentences(text):
        if not reads_as_answer(s):
            continue
        n = len(q & set(_WORD.findall(s.lower())))
        if n > best_n:
            best, best_n = s, n
    return best


def change_numbers(sentence: str) -> str | None:
    """The sentence with every number changed (None when it holds none): a claim that no longer
    matches its passage."""
    if not _NUMBER.search(sentence):
        return None

    def bump(m: re.Match) -> str:
        s = m.group(0)
        if "." in s or "," in s:
            sep = "." if "." in s else ","
            a, b = s.split(sep, 1)
            return f"{int(a) * 3 + 7}{sep}{b}"
        return str(int(s) * 3 + 7)

    return _NUMBER.sub(bump, sentence)


# bad answers that a judge misleading the tables would accept: each a pure function of the good
# sentence (and, for some, another text), None where it does not apply
_UNITS = {
    "km": "m",
    "m": "km",
    "kg": "g",
    "g": "kg",
    "mm": "cm",
    "cm": "mm",
    "s": "ms",
    "ms": "s",
    "seconds": "minutes",
    "minutes": "hours",
    "hours": "days",
    "days": "weeks",
    "weeks": "months",
    "years": "months",
    "months": "years",
    "W": "kW",
    "kW": "W",
    "MW": "kW",
    "Hz": "kHz",
    "kHz": "MHz",
    "MHz": "GHz",
    "GHz": "MHz",
    "K": "°C",
    "%": " per mille",
    "percent": "per mille",
    "bar": "mbar",
    "kbps": "Mbps",
    "Mbps": "kbps",
    "dB": "dBW",
    "N": "kN",
    "kN": "N",
    "t": "kg",
    "AU": "km",
}
_UNIT = re.compile(
    r"(?<=\d)(\s?)(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + r")(?![A-Za-z])"
)
_NEGATE = [
    (r"\bis not\b", "is"),
    (r"\bare not\b", "are"),
    (r"\bcannot\b", "can"),
    (r"\bdoes not\b", "does"),
    (r"\bis\b", "is not"),
    (r"\bare\b", "are not"),
    (r"\bwas\b", "was not"),
    (r"\bwere\b", "were not"),
    (r"\bcan\b", "cannot"),
    (r"\bwill\b", "will not"),
    (r"\bmust\b", "must not"),
    (r"\bshould\b", "should not"),
    (r"\bhas\b", "has no"),
    (r"\bhave\b", "have no"),
]
HEDGED_REFUSALS = (
    REFUSAL_TEXT,
    "I could not find this in the documents I was given; they discuss related topics but do not say, so I "
    "cannot answer reliably.",
    "The passages do not contain the information needed to answer this question, and I would rather not guess.",
)


def nudge_numbers(sentence: str) -> str | None:
    """Every number changed by a small relative amount (about +20%, years by +3, at least one unit
    in the last digit), keeping its form: "261 km" -> "313 km", "2.5" -> "3.0", "2019" -> "2022".
    A plausible wrong value, not an absurd one. Numbers that name a part of a document ("Section
    5.2", "Article 12", "Figure 3", "[4]", "5.2.1") are left as they are: changing them changes no
    claim. None without a number that states a value."""
    spans = [m for m in _NUMBER.finditer(sentence) if not _is_reference(sentence, m)]
    if not spans:
        return None

    def bump(m: re.Match) -> str:
        s = m.group(0)
        if _is_reference(sentence, m):
            return s
        sep = "." if "." in s else "," if "," in s else None
        if sep is None:
            v = int(s)
            return str(v + 3) if 1900 <= v <= 2100 else str(max(v + 1, round(v * 1.2)))
        a, b = s.split(sep, 1)
        scale = 10 ** len(b)
        v = int(a) * scale + int(b)
        w = max(v + 1, round(v * 1.2))
        return f"{w // scale}{sep}{w % scale:0{len(b)}d}"

    return _NUMBER.sub(bump, sentence)


# a number that names a part of a document, not a value: after one of these words, inside brackets,
# or one part of a dotted section number
_REFERENCE_BEFORE = re.compile(
    r"(?:\b(?:sections?|sect\.|articles?|art\.|figures?|fig\.|tables?|eqs?\.|equations?|chapters?|annex(?:es)?|"
    r"appendix|paragraphs?|para\.|pages?|p\.|pp\.|items?|clauses?|steps?|no\.)|§|\[|\()\s*$",
    re.I,
)


def _is_reference(sentence: str, m: re.Match) -> bool:
    before, after = sentence[: m.start()], sentence[m.end() :]
    if _REFERENCE_BEFORE.search(before[-14:]) and not re.match(r"\s?%", after):
        return True
    return bool(re.match(r"\.\d", after)) or bool(re.search(r"\d\.$", before))


def swap_unit(sentence: str) -> str | None:
    """The first unit written after a number swapped for a neighbouring one ("261 km" -> "261 m",
    "5 hours" -> "5 days"); None when no number carries a unit we know."""
    m = _UNIT.search(sentence)
    if not m:
        return None
    return sentence[: m.start()] + m.group(1) + _UNITS[m.group(2)] + sentence[m.end() :]


def swap_entity(sentence: str, other_text: str) -> str | None:
    """The first named entity of `sentence` that `other_text` has one of the same type for (an
    acronym for an acronym, a name of several words for one such), replaced by the first such that
    the sentence does not hold ("Svalbard" -> "Kiruna", "ESOC" -> "JSpOC"); None when there is none.
    The controls take `other_text` from the source's own document, so the swap stays fluent."""
    mine = entities(sentence)
    theirs = [e for e in entities(other_text) if e not in mine and e.lower() not in sentence.lower()]
    for e in mine:
        same = [t for t in theirs if _entity_type(t) == _entity_type(e)]
        if same:
            return re.sub(rf"(?<![\w-]){re.escape(e)}(?![\w-])", same[0], sentence, count=1)
    return None


def _entity_type(e: str) -> str:
    """An acronym, a name of several words, or one capitalised word: a swap keeps the type."""
    if " " not in e and sum(c.isupper() for c in e) >= 2:
        return "acronym"
    return "several" if " " in e or "-" in e else "word"


def negate(sentence: str) -> str | None:
    """The claim turned into its negation at the first auxiliary verb ("is" -> "is not",
    "cannot" -> "can"); None when the sentence has none of those we know."""
    for pat, rep in _NEGATE:
        if re.search(pat, sentence):
            return re.sub(pat, rep, sentence, count=1)
    return None


def closed_book(sentence: str) -> str:
    """What a model answering from memory often writes: the claim with each number replaced by a
    rounded guess well off the mark ("about 100 km" for "261 km"), or, without numbers, a vague
    answer that names none of the specifics."""
    if not _NUMBER.search(sentence):
        return (
            "It depends on the mission and the spacecraft; typical values and practices vary widely between operators."
        )

    def guess(m: re.Match) -> str:
        v = float(m.group(0).replace(",", "."))
        g = v * 0.4 if v else 1.0
        p = 10 ** int(np.floor(np.log10(abs(g)))) if g else 1
        r = round(g / p) * p
        return str(int(r)) if r >= 1 else f"{r:g}"

    # "about" once before each guess, whether or not the sentence already hedged the number
    return re.sub(
        r"(?:\b(?:about|approximately|around|roughly|some)\s+)?" + _NUMBER.pattern,
        lambda m: "about " + guess(_NUMBER.search(m.group(0))),
        sentence,
    )


def off_question_sentence(question: str, text: str, avoid: str) -> str | None:
    """A sentence of `text` (not `avoid`) sharing the fewest content words with the question: on
    the same topic, but it does not answer. None when the text has no other sentence."""
    q = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    cands = [x for x in sentences(text) if x != avoid]
    return min(cands, key=lambda x: len(q & set(_WORD.findall(x.lower())))) if cands else None


_NON_ANSWERS = (
    "The answer to this question is given in the passage.",
    "This is described in the documents provided.",
    "The relevant information can be found in the section of the document cited.",
)


def non_answer_edit(question: str) -> str:
    """A non-answer of the kind a small generator writes: a pointer to the passages with no content
    (one of a few wordings, picked by the question so that it varies between controls)."""
    return _NON_ANSWERS[sum(map(ord, question)) % len(_NON_ANSWERS)]


def restate(question: str) -> str:
    """The question turned into a statement that answers nothing ("What limits X?" -> "This concerns
    what limits X, which the documents discuss.")."""
    q = " ".join(question.split()).rstrip("?.! ")
    return f"This concerns {q[:1].lower()}{q[1:]}, which the documents discuss."


def _bad_answers(q: dict, sup: str, other_answer: str, wrong_sentence: str, wrong_text: str, source_text: str) -> dict:
    """{kind: (bad answer, what makes it bad)} for one question; kinds that do not apply are left out."""
    kinds = {
        "number_nudged": (nudge_numbers(sup), "a plausible wrong number (about +20%)"),
        "unit_swapped": (swap_unit(sup), "the unit swapped"),
        "entity_swapped": (swap_entity(sup, wrong_text), "a named entity swapped for another"),
        "negated": (negate(sup), "the claim negated"),
        "partial": (
            f"{sup} {wrong_sentence}" if wrong_sentence and wrong_sentence != sup else None,
            "the right claim plus an unsupported one",
        ),
        "unrelated_claim": (wrong_sentence if wrong_sentence != sup else None, "a claim from an unrelated passage"),
        "other_question": (other_answer, "the answer to another question"),
        "ignores_question": (
            off_question_sentence(q["question"], source_text, sup),
            "a sentence of the same passage that does not answer the question",
        ),
        "closed_book": (closed_book(sup), "a closed-book answer: rounded guesses instead of the passage's values"),
        # the two ways a small generator says nothing, written as edits too, so a judge's set has them
        # whether or not this generator happened to fail that way on the sampled questions
        "non_answer": (non_answer_edit(q["question"]), "a non-answer: points at the passages, says nothing"),
        "restated": (restate(q["question"]), "the question restated as a statement, with no answer"),
    }
    return {k: v for k, v in kinds.items() if v[0] and v[0] != sup}


def _noise_answers(q: dict, sup: str, noise_texts: list[str]) -> dict:
    """{kind: (bad answer, what makes it bad)} for the noise-robustness judge: answers misled by the
    injected passages (`noise_texts`), which sit in the context beside the source, so that what
    makes each bad is visible to the reader and is the noise, not an error of the answer's own."""
    noise = supporting_sentence(q["question"], noise_texts[0], min_shared=0)
    kinds = {
        "unrelated_claim": (noise, "a claim taken from an injected passage"),
        "partial": (f"{sup} {noise}" if noise else None, "the right claim plus one taken from an injected passage"),
        "noise_entity": (
            swap_entity(sup, " ".join(noise_texts)),
            "a named entity swapped for one from an injected passage",
        ),
    }
    return {k: v for k, v in kinds.items() if v[0] and v[0] != sup and noise != sup}


# which kinds of bad answer test which judge, in the order a judge's set takes them: the
# generator's own flagged answers (lib/answer/failures.py) between the edits we make
# the failures a content judge must see (what an answer says against its passage)
_CONTENT_KINDS = (
    "injected_content",
    "number_nudged",
    "wrong_completion",
    "entity_swapped",
    "negated",
    "unit_swapped",
    "partial",
    "unrelated_claim",
)
_RELEVANCE_KINDS = ("non_answer", "other_question", "restated", "ignores_question", "false_refusal")
_REFUSAL_KINDS = ("fabricated", "confident", "confident_nudged", "hedged_guess")
CONTROL_KINDS = {
    "faithfulness": _CONTENT_KINDS,
    "grounded": _CONTENT_KINDS,
    CLAIM_JUDGE: tuple(k for k in _CONTENT_KINDS if k != "partial"),
    # only failures that come from the injected passages: a content error of the answer's own making
    # (a negation, a nudged number) is a faithfulness failure, and a reader scoring noise robustness
    # rightly passes it
    "noise_robustness": ("injected_content", "unrelated_claim", "noise_entity", "partial"),
    "relevance": _RELEVANCE_KINDS,
    "answer_relevant": _RELEVANCE_KINDS,
    "correct": (
        "wrong_completion",
        "number_nudged",
        "non_answer",
        "closed_book",
        "entity_swapped",
        "false_refusal",
        "negated",
        "unit_swapped",
        "other_question",
        "injected_content",
    ),
    "negative_rejection": _REFUSAL_KINDS,
    REFUSAL_JUDGE: _REFUSAL_KINDS,
}
_REFUSAL_JUDGES = ("negative_rejection", REFUSAL_JUDGE)


def build_controls(
    questions: Sequence[dict],
    text_of: dict,
    doc_of: dict,
    n: int,
    seed: int,
    judges: Sequence[str] | None = None,
    outputs: Sequence[dict] | None = None,
) -> list[dict]:
    """Up to `n` known-answer controls per judge (each of `judges` among the answer rubrics, the
    binary judges, the claim judge and the refusal judge; None: all of them), each a good and a
    bad answer with the context the judge reads. A question gives controls only when its source
    passage holds a sentence that reads as an answer to it (`supporting_sentence`): the good answer.

    The bad answers are of two origins. *Edits* of the good sentence that a judge misleading the
    tables would accept: plausible wrong numbers (values, not section numbers), swapped units,
    named entities swapped for one of the same type from the same document, negations, partly
    right answers, closed-book guesses, answers that ignore the question, and for the refusal
    judges confident or hedged fabrications. *The generator's own failures*: `outputs`, answer
    items carrying `flags` (lib/answer/failures.flag_answer): its answers that took an injected
    passage's content, missed the reference's facts, said nothing, restated the question,
    declined a question it could answer, or answered where nothing could be answered.

    A judge's set takes the kinds in turn (`CONTROL_KINDS` order), each turn the next control of
    that kind from a question the set has not used yet where there is one (`pick_balanced`), so
    no kind fills the set. Each control: rubric, kind, origin ("edit" or "output"), qid, question,
    context_ids, good, bad, how (and reference, noise_ids, setting where they apply)."""
    rng = random.Random(f"{seed}|controls")
    usable = []
    for q in sorted(questions, key=lambda q: q["qid"]):
        sup = supporting_sentence(q["question"], text_of.get(q["source_chunk_id"], ""))
        if sup:
            usable.append((q, sup))
    order = list(usable)
    rng.shuffle(order)
    all_ids = sorted(text_of)
    wanted = [r for r in CONTROL_KINDS if judges is None or r in judges]
    cands: dict = {r: {k: [] for k in CONTROL_KINDS[r]} for r in wanted}
    for i, (q, sup) in enumerate(order):
        src = q["source_chunk_id"]
        others = [(q2, s2) for q2, s2 in usable if doc_of.get(q2["source_chunk_id"]) != doc_of.get(src)]
        wrong_pool = [c for c in all_ids if doc_of.get(c) != doc_of.get(src)]
        if not others or len(wrong_pool) < 2:
            continue
        q2, other_answer = others[i % len(others)]
        wrong = rng.sample(wrong_pool, 2)
        same_doc = " ".join(text_of[c] for c in all_ids if doc_of.get(c) == doc_of.get(src) and c != src)
        # the wrong passage's sentence closest to the question: plausible, and not supported
        wrong_sentence = supporting_sentence(q["question"], text_of[wrong[0]], min_shared=0) or other_answer
        bad = _bad_answers(q, sup, other_answer, wrong_sentence, same_doc or text_of[wrong[0]], text_of[src])
        noise_bad = _noise_answers(q, sup, [text_of[c] for c in wrong])
        nudged = bad.get("number_nudged", (None,))[0] or bad.get("entity_swapped", (None,))[0]
        refusal_bad = {
            "confident": (sup, "a confident answer the passages do not hold"),
            "confident_nudged": (nudged, "a confident answer with a made-up detail"),
            "hedged_guess": (
                f"I am not completely sure, but I believe {sup[0].lower()}{sup[1:]}",
                "a hedged answer that still asserts a claim",
            ),
        }
        refusal_bad = {k: v for k, v in refusal_bad.items() if v[0]}
        base = {"qid": q["qid"], "question": q["question"], "origin": "edit"}
        for j, rubric in enumerate(wanted):
            pool = refusal_bad if rubric in _REFUSAL_JUDGES else noise_bad if rubric == "noise_robustness" else bad
            for kind in CONTROL_KINDS[rubric]:
                if kind not in pool:
                    continue
                answer, how = pool[kind]
                c = dict(base, rubric=rubric, kind=kind, bad=answer, how=how, good=sup, context_ids=[src])
                if rubric == "noise_robustness":
                    c.update(context_ids=[src, *wrong], noise_ids=wrong)
                elif rubric in _REFUSAL_JUDGES:
                    c.update(context_ids=wrong, good=HEDGED_REFUSALS[(i + j) % len(HEDGED_REFUSALS)])
                elif rubric == "correct":
                    c["reference"] = q.get("answer") or sup
                if kind == "other_question":
                    c["how"] = f"the answer to another question ({q2['qid']})"
                cands[rubric][kind].append(c)
    sup_of = {q["qid"]: (q, sup) for q, sup in usable}
    for k, it in enumerate(outputs or []):
        for c in output_controls(it, sup_of.get(it["qid"]), wanted, k):
            cands[c["rubric"]][c["kind"]].append(c)
    out = []
    for rubric in wanted:
        out += pick_balanced(cands[rubric], n, random.Random(f"{seed}|controls|{rubric}"))
    return out


def output_controls(item: dict, usable: tuple | None, judges: Sequence[str], k: int = 0) -> list[dict]:
    """The controls one flagged generator answer gives (`item["flags"]`), for each judge whose kinds
    include a flag: the answer, citation markers removed, is the bad one. The good one is the
    source's supporting sentence (`usable`: (question, sentence); answers of questions without
    one give none), or for a fabrication a hedged refusal. The context is what the judge needs to
    see the failure: the source alone for content judges, the answer's own context for noise
    robustness and the refusal judges."""
    from ..answer.citations import strip_markers
    from ..answer.failures import FAILURE_KINDS

    bad = strip_markers(item.get("answer") or "").strip()
    out = []
    for flag in item.get("flags") or []:
        if flag == "fabricated":
            good, q = HEDGED_REFUSALS[k % len(HEDGED_REFUSALS)], {"answer": None}
        elif usable is None:
            continue
        else:
            q, good = usable
        if not bad or bad == good:
            continue
        for rubric in judges:
            if flag not in CONTROL_KINDS[rubric]:
                continue
            c = {
                "qid": item["qid"],
                "question": item["question"],
                "origin": "output",
                "setting": item.get("setting"),
                "rubric": rubric,
                "kind": flag,
                "bad": bad,
                "how": f"the generator's own answer ({item.get('setting')}): {FAILURE_KINDS[flag]}",
                "good": good,
                "context_ids": [item["source_chunk_id"]],
            }
            if rubric == "noise_robustness":
                c.update(context_ids=list(item["passage_ids"]), noise_ids=list(item.get("wrong_ids") or []))
            elif rubric in _REFUSAL_JUDGES:
                c["context_ids"] = list(item["passage_ids"])
            elif rubric == "correct":
                c["reference"] = q.get("answer") or good
            out.append(c)
    return out


def pick_balanced(by_kind: dict, n: int, rng: random.Random) -> list[dict]:
    """Up to `n` controls from `by_kind` ({kind: candidates}, kinds in the order to take them):
    the kinds in turn, each turn the next candidate of that kind (in a seeded order) whose
    question the set has not used, else the next one; then, with three kinds or more, the most
    frequent kinds trimmed until none is above a third of the set."""
    pools = {k: rng.sample(v, len(v)) for k, v in by_kind.items() if v}
    picked: list[dict] = []
    used: set = set()
    while len(picked) < n and any(pools.values()):
        for kind in list(pools):
            if len(picked) >= n or not pools[kind]:
                continue
            pool = pools[kind]
            j = next((i for i, c in enumerate(pool) if c["qid"] not in used), 0)
            c = pool.pop(j)
            picked.append(c)
            used.add(c["qid"])
    counts = Counter(c["kind"] for c in picked)
    while len(counts) >= 3 and max(counts.values()) * 3 > sum(counts.values()):
        top = max(counts, key=lambda k: (counts[k], k))
        drop = max(i for i, c in enumerate(picked) if c["kind"] == top)
        picked.pop(drop)
        counts[top] -= 1
    return picked


def scale_range(rubric: str) -> float:
    """The width of a judge's score scale: 4 for the 1-5 rubrics, 1 for yes/no verdicts and shares."""
    return 4.0 if rubric in ANSWER_RUBRICS else 1.0


def min_gap(rubric: str, th) -> float:
    """The good - bad gap a control must reach to pass, in the judge's own units
    (`th.min_control_gap` of its scale)."""
    return round(th.min_control_gap * scale_range(rubric), 4)


def control_passed(r: dict, th) -> bool:
    """A control passes when its good answer scores at least the judge's `min_gap` above the bad one
    (any positive gap when the minimum is 0)."""
    gap = r["good_score"] - r["bad_score"]
    need = min_gap(r["rubric"], th)
    return gap >= need - 1e-9 if need > 0 else gap > 0


CONTROL_COLUMNS = [
    "rubric",
    "n",
    "pass_rate",
    "pass_rate_ci_low",
    "pass_rate_ci_high",
    "mean_gap",
    "min_gap",
    "missing",
    "verdict",
    "n_kinds",
    "kinds",
    "max_kind_share",
    "from_outputs",
    "ci_low",
    "ci_high",
    "passed",
    "failed_kinds",
]


def controls_table(results: list[dict], th) -> pd.DataFrame:
    """Per judge: n (controls scored on both answers), pass rate (the good answer scored at least
    `min_gap` above the bad one, as the tables score them) with its 95% Wilson interval (ci_low,
    ci_high; also in pass_rate_ci_low/high), mean gap, the kinds of bad answer with their counts
    (`kinds`, "kind n; ..."), the largest kind's share of the set, how many bad answers are the
    generator's own (`from_outputs`), and a verdict read from the interval: fewer than
    `min_controls` -> "too few pairs to tell"; fewer than `min_control_kinds` kinds -> "too few
    kinds to tell"; ci_low >= `valid_pass_rate` -> "valid"; ci_high < `fail_pass_rate` ->
    "fails"; else "weak". `passed` is true only for "valid": a judge that has not passed gives no
    headline figure."""
    import pandas as pd

    rows = []
    order = [*ANSWER_RUBRICS, *BINARY_JUDGES, CLAIM_JUDGE, REFUSAL_JUDGE]
    for rubric in sorted({r["rubric"] for r in results}, key=lambda x: order.index(x) if x in order else 99):
        got = [
            r for r in results if r["rubric"] == rubric and r["good_score"] is not None and r["bad_score"] is not None
        ]
        passed = [control_passed(r, th) for r in got]
        gaps = [r["good_score"] - r["bad_score"] for r in got]
        lo, hi = wilson_ci(sum(passed), len(passed))  # a proportion: Wilson, as every proportion
        rate = float(np.mean(passed)) if passed else float("nan")
        kinds = Counter(str(r.get("kind")) for r in got)
        if len(got) < th.min_controls:
            v = "too few pairs to tell"
        elif len(kinds) < th.min_control_kinds:
            v = "too few kinds to tell"
        elif lo >= th.valid_pass_rate:
            v = "valid"
        elif hi < th.fail_pass_rate:
            v = "fails"
        else:
            v = "weak"
        rows.append(
            {
                "rubric": rubric,
                "n": len(got),
                "pass_rate": _r(rate, 3),
                "pass_rate_ci_low": _r(lo, 3),
                "pass_rate_ci_high": _r(hi, 3),
                "mean_gap": _r(np.mean(gaps), 3) if gaps else None,
                "min_gap": min_gap(rubric, th),
                "missing": sum(1 for r in results if r["rubric"] == rubric) - len(got),
                "verdict": v,
                "n_kinds": len(kinds),
                "kinds": "; ".join(f"{k} {c}" for k, c in sorted(kinds.items(), key=lambda x: (-x[1], x[0]))),
                "max_kind_share": _r(max(kinds.values()) / len(got), 3) if got else None,
                "from_outputs": sum(r.get("origin") == "output" for r in got),
                "ci_low": _r(lo, 3),
                "ci_high": _r(hi, 3),
                "passed": v == "valid",
                "failed_kinds": ", ".join(sorted({str(r.get("kind")) for r, ok in zip(got, passed) if not ok})),
            }
        )
    return pd.DataFrame(rows, columns=CONTROL_COLUMNS)


KIND_COLUMNS = ["rubric", "kind", "origin", "n", "pass_rate", "ci_low", "ci_high", "mean_gap", "gap_ci_low"]


def controls_by_kind(results: list[dict], th) -> pd.DataFrame:
    """Per judge and kind of bad answer: n, the pass rate at the judge's `min_gap` with its 95%
    Wilson interval, the mean good - bad gap and its lower 95% bound (cluster t by question, None
    below two questions): what docs/judges.md and the margins read."""
    import pandas as pd

    from ..stats import cluster_t

    rows = []
    got = [r for r in results if r["good_score"] is not None and r["bad_score"] is not None]
    for rubric, kind in sorted({(r["rubric"], str(r.get("kind"))) for r in got}):
        sub = [r for r in got if r["rubric"] == rubric and str(r.get("kind")) == kind]
        ok = [control_passed(r, th) for r in sub]
        lo, hi = wilson_ci(sum(ok), len(ok))
        gaps = [r["good_score"] - r["bad_score"] for r in sub]
        low = None
        if len({r["qid"] for r in sub}) >= 2:
            low = cluster_t(gaps, [r["qid"] for r in sub])["ci_low"]
        rows.append(
            {
                "rubric": rubric,
                "kind": kind,
                "origin": "/".join(sorted({str(r.get("origin") or "edit") for r in sub})),
                "n": len(sub),
                "pass_rate": _r(float(np.mean(ok)), 3),
                "ci_low": _r(lo, 3),
                "ci_high": _r(hi, 3),
                "mean_gap": _r(float(np.mean(gaps)), 3),
                "gap_ci_low": _r(low, 3),
            }
        )
    return pd.DataFrame(rows, columns=KIND_COLUMNS)


def score_controls(judge, controls: list[dict], text_of: dict, scoring: str = "digit") -> list[dict]:
    """Judge the good and the bad answer of every control with the same prompts as the tables
    and score them as the tables do: the 1-5 digit or expected score for the rubrics (`scoring`,
    as the answer stage's), 1/0 for a yes/no judge's
    verdict, the share of claims judged supported for the claim judge (None when unparseable).
    The expected score and P(yes) are kept beside (good_expected, bad_expected) for diagnosis."""
    from ..answer.answers import JUDGE_STYLE, judge_answers, judge_refusal
    from ..answer.claims import judge_claims

    items = []
    for c in controls:
        for which in ("good", "bad"):
            it = {
                "qid": c["qid"],
                "setting": "control",
                "pipeline": which,
                "question": c["question"],
                "answer": c[which],
                "scores": {},
                "expected_scores": {},
                "raw_judge": {},
                "binary": {},
                "passage_ids": c["context_ids"],
                "wrong_ids": c.get("noise_ids", c["context_ids"]),
                "rubrics": [c["rubric"]] if c["rubric"] in ANSWER_RUBRICS else [],
                "reference_answer": c.get("reference"),
                "_control": c,
                "_which": which,
            }
            items.append(it)
    binary = [it for it in items if it["_control"]["rubric"] in BINARY_JUDGES]
    judge_answers(
        judge,
        [it for it in items if it["rubrics"]],
        binary,
        text_of,
        checks=lambda it: (it["_control"]["rubric"],),
        scoring=scoring,
    )
    judge_refusal(judge, [it for it in items if it["_control"]["rubric"] == REFUSAL_JUDGE])
    judge_claims(judge, [it for it in items if it["_control"]["rubric"] == CLAIM_JUDGE], text_of, JUDGE_STYLE)
    out: dict = {}
    for it in items:
        c = it["_control"]
        rubric = c["rubric"]
        if rubric in ANSWER_RUBRICS:
            s, e = it["scores"].get(rubric), it["expected_scores"].get(rubric)
        elif rubric == CLAIM_JUDGE:  # Table 2's claim faithfulness: the share of claims judged supported
            sup = [cl["supported"] for cl in it.get("claims", []) if cl.get("supported") is not None]
            ps = [cl["p_supported"] for cl in it.get("claims", []) if cl.get("p_supported") is not None]
            s, e = (float(np.mean(sup)) if sup else None), (float(np.mean(ps)) if ps else None)
        else:
            b = it["binary"].get(rubric, {})
            s, e = (None if b.get("verdict") is None else float(b["verdict"])), b.get("p_yes")
        row = out.setdefault(id(c), {k: v for k, v in c.items()})
        row[f"{it['_which']}_score"] = s
        row[f"{it['_which']}_expected"] = e
    return list(out.values())
