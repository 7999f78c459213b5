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
from typing import Optional, Sequence

import numpy as np

from .gate import REFUSAL_TEXT
from .stats import bootstrap_ci, bootstrap_cis, wilson_ci

VERDICTS = ("valid", "weak", "fails", "too few pairs to tell")
ANSWER_RUBRICS = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")
BINARY_JUDGES = ("correct", "answer_relevant", "grounded")
# the claim-support judge (yes/no with its probability; scored by P(yes))
CLAIM_JUDGE = "claim_support"


# --------------------------------------------------------------------------- sampling
def is_graded(qrels: dict) -> bool:
    return max((g for rel in qrels.values() for g in rel.values()), default=0) > 1


def relevant_from(graded: bool) -> int:
    """The human label from which a passage counts as relevant: 1 on binary labels, 2 ("highly
    relevant") on the 0-3 scale, matching the judge's grade >= 2."""
    return 2 if graded else 1


def sample_check_pairs(data, n_queries: int, seed: int, source: str, hard_depth: int = 30) -> list[dict]:
    """Pairs to grade from a :class:`~.beir.BeirData`, question-major. Each pair: qid, question,
    chunk_id (the passage id), label (the human grade), kind, source."""
    from ..config import BM25Config
    from .retrieval import BM25Retriever

    graded = is_graded(data.qrels)
    rel_from = relevant_from(graded)
    ids, texts = data.passages()
    known = set(ids)
    rng = random.Random(f"{seed}|{source}")
    eligible = sorted(q for q, rel in data.qrels.items()
                      if q in data.queries and any(g >= rel_from and d in known for d, g in rel.items()))
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
            pairs.append({"source": source, "qid": q, "question": data.queries[q], "chunk_id": doc, "label": int(label),
                          "kind": kind, "purpose": [kind]})
    return pairs


def golden_check_pairs(samples: Sequence, found: dict, chunks: Sequence, n: int, seed: int) -> list[dict]:
    """In-domain pairs from golden samples located in the chunks: the sample's chunk (label 1),
    another chunk of its document and the top BM25 chunk of another document (label 0)."""
    from ..config import BM25Config
    from .retrieval import BM25Retriever

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
            pairs.append({"source": "golden (in-domain)", "qid": s.id, "question": s.question, "chunk_id": cid,
                          "label": label, "kind": kind, "purpose": [kind]})
    return pairs


# --------------------------------------------------------------------------- agreement
def _score(r: dict) -> Optional[float]:
    return r["expected_grade"] if r.get("expected_grade") is not None else r.get("grade")


def auc(y: list, s: list) -> float:
    """ROC AUC of scores `s` for binary labels `y`: 0.5 when every score is equal, NaN with one class."""
    from sklearn.metrics import roc_auc_score

    if len(set(y)) < 2:
        return float("nan")
    return float(roc_auc_score(y, s)) if len(set(s)) > 1 else 0.5


def _kappa(a: list, b: list, weights: Optional[str] = None, labels=None) -> float:
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
    out = {"auc": auc(y, [_score(r) for r in rows]), "kappa_binary": _kappa(y, judged),
           "accuracy": float(np.mean([a == b for a, b in zip(y, judged)])) if rows else float("nan")}
    if graded:
        out["kappa_weighted"] = _kappa([r["label"] for r in rows], [r["grade"] for r in rows], "quadratic", [0, 1, 2, 3])
        out["exact_accuracy"] = float(np.mean([r["label"] == r["grade"] for r in rows])) if rows else float("nan")
    return out


def _r(x: float, nd: int = 4) -> Optional[float]:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), nd)


def agreement(rows: list[dict], n_boot: int, seed: int, graded: Optional[bool] = None) -> dict:
    """The judge's agreement with the human labels on graded check pairs, each figure with a
    95% bootstrap CI over queries (pairs of one query move together)."""
    ok = [r for r in rows if r.get("grade") is not None]
    graded = is_graded({0: {i: r["label"] for i, r in enumerate(ok)}}) if graded is None else graded
    by_q: dict = {}
    for r in ok:
        by_q.setdefault(r["qid"], []).append(r)
    groups = [by_q[q] for q in sorted(by_q)]
    point = _metrics(ok, graded)
    out: dict = {"n_pairs": len(ok), "n_queries": len(groups), "missing": len(rows) - len(ok),
                 "labels": "graded 0-3" if graded else "binary",
                 "relevant_from_label": relevant_from(graded)}
    cis = bootstrap_cis(groups, lambda gs: _metrics([r for g in gs for r in g], graded), n_boot, seed)
    for name, value in point.items():
        out[name] = _r(value)
        out[f"{name}_ci"] = [_r(cis[name][0]), _r(cis[name][1])]
    if not graded:
        out["kappa_weighted"], out["kappa_weighted_ci"] = None, [None, None]
    out["confusion"] = {str(h): {str(g): sum(1 for r in ok if r["label"] == h and r["grade"] == g) for g in range(4)}
                        for h in sorted({r["label"] for r in ok})}
    # which comparison is hard: relevant against each kind of negative
    rel_from = relevant_from(graded)
    pos = [r for r in ok if r["label"] >= rel_from]
    for kind in sorted({r["kind"] for r in ok if r["label"] < rel_from}):
        neg = [r for r in ok if r["kind"] == kind]
        out[f"auc_relevant_vs_{kind}"] = _r(auc([1] * len(pos) + [0] * len(neg), [_score(r) for r in pos + neg]))
    out["mean_grade_by_label"] = {str(h): _r(np.mean([r["grade"] for r in ok if r["label"] == h]), 3)
                                  for h in sorted({r["label"] for r in ok})}
    return out


def verdict(m: dict, th) -> tuple[str, str]:
    """(verdict, the reason in plain words) for relevance agreement `m` under thresholds `th`
    (a JudgeCheckConfig)."""
    n, auc, (lo, hi) = m.get("n_pairs", 0), m.get("auc"), m.get("auc_ci") or [None, None]
    if n < th.min_pairs:
        return "too few pairs to tell", f"only {n} pairs (at least {th.min_pairs} are needed for a verdict)"
    if auc is None or lo is None or hi is None:
        return "too few pairs to tell", "the AUC cannot be computed (one class only)"
    if hi - lo > th.max_ci_width:
        return "too few pairs to tell", f"the AUC's 95% CI [{lo:.2f}, {hi:.2f}] is wider than {th.max_ci_width}"
    kappa = m.get("kappa_binary")
    if auc < th.fail_auc:
        return "fails", f"AUC {auc:.2f} < {th.fail_auc}: it barely tells relevant passages from non-relevant ones"
    if auc >= th.valid_auc and kappa is not None and kappa >= th.valid_kappa:
        return "valid", f"AUC {auc:.2f} >= {th.valid_auc} and kappa {kappa:.2f} >= {th.valid_kappa}"
    return "weak", (f"AUC {auc:.2f} (valid from {th.valid_auc}), kappa {kappa if kappa is None else round(kappa, 2)} "
                    f"(valid from {th.valid_kappa}): it ranks passages better than chance, but its grades "
                    "often disagree with people")


# --------------------------------------------------------------------------- position bias
def position_bias(rows: list[dict], swapped: list[dict]) -> dict:
    """Agreement between the question-first and passage-first grades of the same pairs, and the
    mean shift of the (expected) grade when the passage comes first."""
    by = {(r["qid"], r["chunk_id"]): r for r in swapped if r.get("grade") is not None}
    both = [(r, by[(r["qid"], r["chunk_id"])]) for r in rows if r.get("grade") is not None and (r["qid"], r["chunk_id"]) in by]
    if not both:
        return {"n_pairs": 0, "agreement": None, "mean_shift": None}
    return {"n_pairs": len(both), "agreement": _r(np.mean([a["grade"] == b["grade"] for a, b in both])),
            "mean_shift": _r(np.mean([_score(b) - _score(a) for a, b in both])),
            "mean_abs_shift": _r(np.mean([abs(_score(b) - _score(a)) for a, b in both]))}


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
_STOP = set("a an the of and or to in on for with by from at as is are was were be been it its this that these those "
            "what which who whom how why when where do does did can could should would will may might not no "
            "into than then there their they them about over under between".split())
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(" ".join(text.split())) if len(s.split()) >= 5]


def supporting_sentence(question: str, text: str) -> Optional[str]:
    """The sentence of `text` sharing most content words with `question` (first on ties)."""
    q = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    best, best_n = None, -1
    for s in sentences(text):
        n = len(q & set(_WORD.findall(s.lower())))
        if n > best_n:
            best, best_n = s, n
    return best


def change_numbers(sentence: str) -> Optional[str]:
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


def build_controls(questions: Sequence[dict], text_of: dict, doc_of: dict, n: int, seed: int) -> list[dict]:
    """Per question (up to `n`), one control per answer rubric and binary judge: a good answer
    and a bad one, with the context each rubric reads. Each control: rubric, qid, question,
    context_ids, good, bad, how (what makes the bad one bad), reference (binary correctness)."""
    rng = random.Random(f"{seed}|controls")
    usable = []
    for q in sorted(questions, key=lambda q: q["qid"]):
        sup = supporting_sentence(q["question"], text_of.get(q["source_chunk_id"], ""))
        if sup:
            usable.append((q, sup))
    chosen = sorted(rng.sample(usable, min(n, len(usable))), key=lambda x: x[0]["qid"]) if usable else []
    all_ids = sorted(text_of)
    out = []
    for i, (q, sup) in enumerate(chosen):
        src = q["source_chunk_id"]
        others = [(q2, s2) for q2, s2 in usable if doc_of.get(q2["source_chunk_id"]) != doc_of.get(src)]
        if not others:
            continue
        q2, other_answer = others[i % len(others)]
        wrong = rng.sample([c for c in all_ids if doc_of.get(c) != doc_of.get(src)], 2)
        # the wrong passage's sentence closest to the question: plausible, and not supported
        wrong_sentence = supporting_sentence(q["question"], text_of[wrong[0]]) or other_answer
        changed = change_numbers(sup)
        unfaithful, how = (changed, "numbers changed") if changed else (wrong_sentence, "a claim from an unrelated passage")
        base = {"qid": q["qid"], "question": q["question"]}
        out += [
            dict(base, rubric="faithfulness", context_ids=[src], good=sup, bad=unfaithful, how=how),
            dict(base, rubric="relevance", context_ids=[src], good=sup, bad=other_answer,
                 how=f"the answer to another question ({q2['qid']})"),
            dict(base, rubric="noise_robustness", context_ids=[src, *wrong], noise_ids=wrong, good=sup,
                 bad=wrong_sentence, how="drawn from an injected wrong passage"),
            dict(base, rubric="negative_rejection", context_ids=wrong, good=REFUSAL_TEXT, bad=sup,
                 how="a confident answer that the passages do not hold"),
            dict(base, rubric="correct", context_ids=[src], good=sup, bad=other_answer,
                 reference=q.get("answer") or sup, how=f"the answer to another question ({q2['qid']})"),
            dict(base, rubric="answer_relevant", context_ids=[src], good=sup, bad=other_answer,
                 how=f"the answer to another question ({q2['qid']})"),
            dict(base, rubric="grounded", context_ids=[src], good=sup, bad=unfaithful, how=how),
            dict(base, rubric=CLAIM_JUDGE, context_ids=[src], good=sup, bad=unfaithful, how=how),
        ]
    return out


def controls_table(results: list[dict], th) -> "pd.DataFrame":
    """Per rubric: n (controls scored on both answers), pass rate (good scored above bad), mean
    gap (good minus bad), its CI, and a verdict. `results` rows: rubric, good_score, bad_score."""
    import pandas as pd

    rows = []
    order = [*ANSWER_RUBRICS, *BINARY_JUDGES, CLAIM_JUDGE]
    for rubric in sorted({r["rubric"] for r in results}, key=lambda x: order.index(x) if x in order else 99):
        got = [r for r in results if r["rubric"] == rubric and r["good_score"] is not None and r["bad_score"] is not None]
        passed = [float(r["good_score"] > r["bad_score"]) for r in got]
        gaps = [r["good_score"] - r["bad_score"] for r in got]
        lo, hi = wilson_ci(sum(passed), len(passed))  # a proportion: Wilson, as every proportion
        rate = float(np.mean(passed)) if passed else float("nan")
        if len(got) < th.min_controls:
            v = "too few pairs to tell"
        elif rate >= th.valid_pass_rate:
            v = "valid"
        elif rate < th.fail_pass_rate:
            v = "fails"
        else:
            v = "weak"
        rows.append({"rubric": rubric, "n": len(got), "pass_rate": _r(rate, 3), "pass_rate_ci_low": _r(lo, 3),
                     "pass_rate_ci_high": _r(hi, 3), "mean_gap": _r(np.mean(gaps), 3) if gaps else None,
                     "missing": sum(1 for r in results if r["rubric"] == rubric) - len(got), "verdict": v})
    return pd.DataFrame(rows, columns=["rubric", "n", "pass_rate", "pass_rate_ci_low", "pass_rate_ci_high", "mean_gap",
                                       "missing", "verdict"])


def score_controls(judge, controls: list[dict], text_of: dict) -> list[dict]:
    """Judge the good and the bad answer of every control with the same prompts as Table 2, the
    binary judges and the claim-support judge; rows: the control plus good_score, bad_score
    (1-5 expected score, P(yes) for yes/no judges, P(supported) for claims; None when unparseable)."""
    from .answers import JUDGE_STYLE, judge_binary, judge_rubrics
    from .claims import judge_claims

    items = []
    for c in controls:
        for which in ("good", "bad"):
            it = {"qid": c["qid"], "setting": "control", "pipeline": which, "question": c["question"],
                  "answer": c[which], "scores": {}, "expected_scores": {}, "raw_judge": {},
                  "binary": {}, "passage_ids": c["context_ids"], "wrong_ids": c.get("noise_ids", c["context_ids"]),
                  "rubrics": [c["rubric"]] if c["rubric"] in ANSWER_RUBRICS else [],
                  "reference_answer": c.get("reference"), "_control": c, "_which": which}
            items.append(it)
    judge_rubrics(judge, [it for it in items if it["rubrics"]], text_of)
    binary = [it for it in items if it["_control"]["rubric"] in BINARY_JUDGES]
    judge_binary(judge, binary, text_of, checks=lambda it: (it["_control"]["rubric"],))
    judge_claims(judge, [it for it in items if it["_control"]["rubric"] == CLAIM_JUDGE], text_of, JUDGE_STYLE)
    out: dict = {}
    for it in items:
        c = it["_control"]
        rubric = c["rubric"]
        if rubric in ANSWER_RUBRICS:
            s = it["expected_scores"].get(rubric, it["scores"].get(rubric))
        elif rubric == CLAIM_JUDGE:  # the good answer is one claim; the bad one too
            ps = [c["p_supported"] for c in it.get("claims", []) if c["p_supported"] is not None]
            s = float(np.mean(ps)) if ps else None
        else:
            b = it["binary"].get(rubric, {})  # P(yes) when the backend gives it, else the verdict
            s = b.get("p_yes") if b.get("p_yes") is not None else None if b.get("verdict") is None else float(b["verdict"])
        row = out.setdefault(id(c), {k: v for k, v in c.items()})
        row[f"{it['_which']}_score"] = s
    return list(out.values())
