"""The relevance judge against gold it can be checked on: per system and top-k, the judge's
nDCG@k (its 0-3 grades as graded qrels) beside the known gold's (each question's source chunk or
evidence span, as the retrieval stage scored it) and beside an in-domain reference judge's labels;
reference labels placed on the run's chunks by document and character span; and the sentence that
says where the instruments disagree about reranking and which of them has shown validity.

Unjudged chunks: a retrieved chunk the reference labels do not cover counts as gain 0 (trec_eval's
convention), so the reference nDCG is a lower bound; the labelled share of each top-k is reported
beside it. A question whose qrels hold no chunk above grade 0 has no nDCG and is left out (n says
how many remain)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..retrieval.span_gold import ChunkSpan, Span, is_relevant, overlap

INSTRUMENTS = ("known_gold", "judge", "reference")
INSTRUMENT_NAMES = {"judge": "the judge", "known_gold": "the source-chunk gold", "reference": "the reference labels"}
_LEADS = {
    "judge": "the judge says reranking",
    "known_gold": "against the source chunk, reranking",
    "reference": "the reference labels say reranking",
}


# --------------------------------------------------------------------------- reference labels
def read_reference_spans(folder) -> dict:
    """{chunk id: ChunkSpan} of a labelled folder's corpus.jsonl rows that carry `doc_id`,
    `char_start` and `char_end` (the space-corpus layout); rows without them are left out."""
    out = {}
    p = Path(folder) / "corpus.jsonl"
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}:{i}: not a JSON line ({e.msg}); fix or remove the line") from e
        if row.get("doc_id") and row.get("char_start") is not None and row.get("char_end") is not None:
            cid = str(row["_id"])
            out[cid] = ChunkSpan(cid, row["doc_id"], int(row["char_start"]), int(row["char_end"]))
    return out


def _targets(ref: ChunkSpan | None, ref_id: str, chunks: dict, by_doc: dict, min_share: float) -> list:
    """[(shared characters, run chunk id)] a labelled reference chunk lands on: its own id when that
    chunk still covers the same text (or no span is known), else every run chunk of its document
    meeting the overlap rule against its span."""
    same = chunks.get(ref_id)
    if same is not None and (ref is None or is_relevant(Span(ref.doc_id, ref.start, ref.end), same, min_share)):
        return [(same.end - same.start if ref is None else overlap(ref.start, ref.end, same.start, same.end), ref_id)]
    if ref is None:
        return []
    span = Span(ref.doc_id, ref.start, ref.end)
    return [
        (overlap(ref.start, ref.end, c.start, c.end), c.chunk_id)
        for c in by_doc.get(ref.doc_id, [])
        if is_relevant(span, c, min_share)
    ]


def match_reference_labels(labels: dict, ref_spans: dict, chunks, min_share: float = 0.5) -> dict:
    """{(qid, run chunk id): label} from reference labels {(qid, reference chunk id): label}: a
    reference chunk matches by id when the run's chunk of that id covers its span, else by
    document and span overlap (the shorter of the two shares `min_share` of its characters); a run
    chunk two labelled chunks land on takes the label of the one sharing most characters. Labels
    that land on no run chunk are dropped."""
    by_id = {c.chunk_id: c for c in chunks}
    by_doc: dict = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    best: dict = {}
    for (qid, ref_id), label in sorted(labels.items()):
        for shared, cid in _targets(ref_spans.get(ref_id), ref_id, by_id, by_doc, min_share):
            if shared > best.get((qid, cid), (-1, None))[0]:
                best[(qid, cid)] = (shared, int(label))
    return {key: label for key, (_, label) in best.items()}


def agreement_rows(graded: list[dict], matched: dict) -> list[dict]:
    """The judge's graded pairs that carry a reference label, as rows `validity.agreement` reads
    (the reference label as `label`, the judge's grade as `grade`)."""
    return [
        dict(r, label=matched[(r["qid"], r["chunk_id"])], kind="retrieved")
        for r in graded
        if r.get("grade") is not None and (r["qid"], r["chunk_id"]) in matched
    ]


# --------------------------------------------------------------------------- nDCG per instrument
def judge_qrels(rows: list[dict], qids) -> dict:
    """{qid: {chunk id: grade}} of the judge's graded pairs of `qids` (the first grade of a pair;
    a pair without a grade is left out); the qrels `retrieval/qrels.judge.trec` holds."""
    keep = set(qids)
    out: dict = {}
    for r in rows:
        if r["qid"] in keep and r.get("grade") is not None:
            out.setdefault(r["qid"], {}).setdefault(r["chunk_id"], int(r["grade"]))
    return out


def ndcg_per_question(qrels: dict, ranking: dict, k: int) -> dict:
    """{qid: nDCG@k} of one system's ranking ({qid: [chunk id, ...]}) against graded qrels, by
    ranx (linear gains, as trec_eval); unjudged chunks count as gain 0; a question whose qrels
    hold nothing above 0 is left out."""
    from ..retrieval.metrics import evaluate

    q = {qid: rel for qid, rel in qrels.items() if qid in ranking and any(g > 0 for g in rel.values())}
    if not q:
        return {}
    run = {qid: [(d, 0.0) for d in ranking[qid]] for qid in q}
    return evaluate(q, run, [f"ndcg@{k}"], per_query=True)["per_query"][f"ndcg@{k}"]


def labelled_share(qrels: dict, ranking: dict, qids, k: int) -> float:
    """Mean over `qids` of the share of the top-k that `qrels` labels (any grade, 0 included)."""
    shares = [np.mean([d in qrels.get(q, {}) for d in ranking[q][:k]]) for q in qids if ranking.get(q)]
    return float(np.mean(shares)) if shares else float("nan")


def mean_ci(values: dict, doc_of: dict, n_boot: int, seed: int) -> dict:
    """Mean of per-question values with its 95% bootstrap CI clustered by document (questions of
    one document move together): {mean, ci_low, ci_high, n_questions, n_documents}."""
    from ..stats import cluster_bootstrap_ci

    qids = sorted(values)
    xs = [values[q] for q in qids]
    docs = [doc_of.get(q, q) for q in qids]
    lo, hi = cluster_bootstrap_ci(xs, docs, lambda v: float(np.mean(v)), n_boot, seed) if xs else (np.nan, np.nan)
    return {
        "mean": float(np.mean(xs)) if xs else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
        "n_questions": len(xs),
        "n_documents": len(set(docs)),
    }


def change(after: dict, before: dict, doc_of: dict, n_boot: int, seed: int) -> dict:
    """Reranked − retrieved over the questions both values exist for, by :func:`mean_ci`."""
    both = sorted(set(after) & set(before))
    return mean_ci({q: after[q] - before[q] for q in both}, doc_of, n_boot, seed)


# --------------------------------------------------------------------------- the sentence
def direction(c: dict) -> str:
    """ "raises", "lowers" or "does not clearly move" from a change's 95% CI."""
    if c is None or c.get("ci_low") is None or np.isnan(c["ci_low"]) or np.isnan(c["ci_high"]):
        return "does not clearly move"
    if c["ci_low"] > 0:
        return "raises"
    if c["ci_high"] < 0:
        return "lowers"
    return "does not clearly move"


def fmt(mean: float, lo: float, hi: float, signed: bool = False) -> str:
    """ "0.802 [0.730, 0.870]" (signed: "+0.080 [+0.020, +0.140]")."""
    f = (lambda x: f"{x:+.3f}") if signed else (lambda x: f"{x:.3f}")
    lo_s = "n/a" if lo is None or np.isnan(lo) else f(lo)
    hi_s = "n/a" if hi is None or np.isnan(hi) else f(hi)
    return f"{f(mean)} [{lo_s}, {hi_s}]"


def _clause(instrument: str, c: dict) -> str:
    d = direction(c)
    by = "" if d == "does not clearly move" else f" by {abs(c['mean']):.3f}"
    return (
        f"{_LEADS[instrument]} {d} it{by} "
        f"({fmt(c['mean'], c['ci_low'], c['ci_high'], signed=True)}, n {c['n_questions']})"
    )


def disagreement_sentence(retriever: str, k: int, changes: dict, validity: dict) -> str:
    """One sentence per retriever for the report: the reranked − retrieved change of nDCG@k under
    each instrument present in `changes` ({instrument: change dict, see :func:`change`}), whether
    their directions disagree, and `validity` ({instrument: what it has shown}) for each of them."""
    present = [i for i in INSTRUMENTS if changes.get(i) and changes[i]["n_questions"]]
    if not present:
        return f"{retriever}, nDCG@{k}: no instrument has a reranked − retrieved change to compare."
    dirs = {i: direction(changes[i]) for i in present}
    clear = {d for d in dirs.values() if d != "does not clearly move"}
    if len(clear) > 1:
        verdict = "the instruments disagree in direction"
    elif clear and len(set(dirs.values())) > 1:
        moved = [INSTRUMENT_NAMES[i] for i in present if dirs[i] != "does not clearly move"]
        verdict = f"only {' and '.join(moved)} {'detect' if len(moved) > 1 else 'detects'} a change"
    elif clear:
        verdict = "the instruments agree in direction"
    else:
        verdict = "no instrument detects a change"
    body = "; ".join(_clause(i, changes[i]) for i in present)
    trust = "; ".join(f"{INSTRUMENT_NAMES[i]}: {validity[i]}" for i in present if validity.get(i))
    return f"{retriever}, nDCG@{k}: {body}. So {verdict}." + (f" Validity: {trust}." if trust else "")
