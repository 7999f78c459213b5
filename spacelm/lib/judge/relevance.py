"""Relevance grading 0–3 of retrieved passages, before and after reranking (the paper's
Table 1): planning the pairs, grading them, the table with bootstrap confidence intervals, a
paired test, graded-qrels metrics, and a check that the judge can be trusted at all.

Each distinct (question, chunk) pair is graded once, in question order so consecutive prompts
share the question prefix. The judge's answer is constrained to the four digits; with the
llama.cpp backend the probability of each grade is also kept (expected grade). An answer that
cannot be parsed is recorded as missing with its raw text, never as 0.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from ..names import reranked

GRADES = (0, 1, 2, 3)


@dataclass(frozen=True)
class TableDesign:
    """Table 1's layout: its first-stage retrievers (each with its reranked list), the top-k
    cut-offs, and the seed of the validity pairs' random chunks."""

    retrievers: tuple[str, ...]
    top_k: tuple[int, ...]
    seed: int
    # questions whose lists are graded to the largest top-k; the others to the smallest only (None: all).
    # A nested design: every question reads the smallest cut-off, a seeded subset every cut-off
    deep_questions: int | None = None


def deep_qids(design: TableDesign, questions: list[dict]) -> set:
    """The questions graded to the largest top-k (:attr:`TableDesign.deep_questions` of them, drawn
    with the design's seed; all of them when it is None or not smaller). Questions marked `deep`
    (a draw made over a longer list, stages/grade.py `screened`) keep their mark."""
    if questions and all("deep" in q for q in questions):
        return {q["qid"] for q in questions if q["deep"]}
    return {q["qid"] for q in select_questions(questions, design.deep_questions, design.seed + 1)}


def depth(design: TableDesign, qid: str, deep: set) -> int:
    """How far a question's lists are graded: the largest top-k when it is deep, else the smallest."""
    return max(design.top_k) if qid in deep else min(design.top_k)


# --------------------------------------------------------------------------- clustering
CLUSTER_UNITS = ("document", "source_chunk", "question")


@dataclass(frozen=True)
class Clustering:
    """How Table 1's questions are clustered: `unit` (one of `CLUSTER_UNITS`) and, per question id,
    its source chunk and document. Questions nest in chunks, which nest in documents; the unit is
    what the cluster-robust t and the first stage of the cluster bootstrap resample."""

    unit: str
    chunk_of: dict
    doc_of: dict

    def label(self, qid: str):
        """The cluster of question `qid` (the question itself when its unit is not known)."""
        of = {"document": self.doc_of, "source_chunk": self.chunk_of}.get(self.unit, {})
        return of.get(qid) or qid

    def labels(self, qids) -> list:
        return [self.label(q) for q in qids]

    def counts(self, qids) -> dict:
        """The columns a clustered row carries: the unit, its clusters, source chunks, documents."""
        qids = list(qids)
        docs = {self.doc_of.get(q) for q in qids}
        return {
            "cluster": self.unit,
            "n_clusters": len(set(self.labels(qids))),
            "n_source_chunks": len({self.chunk_of.get(q) or q for q in qids}),
            "n_documents": None if None in docs else len(docs),
        }


def doc_of_chunk(chunk_id: str) -> str:
    """The document of a chunk id (`<doc_id>:<n>`, as spacelm/lib/ingest/chunking.py names chunks)."""
    return str(chunk_id).rsplit(":", 1)[0]


def clustering(questions: list[dict], unit: str = "document") -> Clustering:
    """The :class:`Clustering` of `questions` (dicts with qid, source_chunk_id and doc_id; a missing
    doc_id is read from the chunk id)."""
    if unit not in CLUSTER_UNITS:
        raise ValueError(f"cluster unit {unit!r}: use one of {list(CLUSTER_UNITS)}")
    chunk_of = {q["qid"]: q.get("source_chunk_id") for q in questions if q.get("source_chunk_id")}
    doc_of = {q["qid"]: q.get("doc_id") or doc_of_chunk(chunk_of[q["qid"]]) for q in questions if q["qid"] in chunk_of}
    return Clustering(unit, chunk_of, doc_of)


def as_clustering(cluster_of) -> Clustering:
    """A Clustering from what Table 1's functions accept: a Clustering; a {qid: source chunk} dict
    (clusters by source chunk, documents unknown); None (each question its own cluster)."""
    if isinstance(cluster_of, Clustering):
        return cluster_of
    if cluster_of is None:
        return Clustering("question", {}, {})
    return Clustering("source_chunk", dict(cluster_of), {})


# --------------------------------------------------------------------------- planning
def table_systems(design: TableDesign) -> list[tuple[str, str, str]]:
    """(retriever, stage, system name) for every Table 1 row group."""
    return [
        (r, stage, r if stage == "retrieved" else reranked(r))
        for r in design.retrievers
        for stage in ("retrieved", "reranked")
    ]


def select_questions(questions: list[dict], max_questions: int | None, seed: int) -> list[dict]:
    if not max_questions or max_questions >= len(questions):
        return questions
    keep = set(q["qid"] for q in random.Random(seed).sample(questions, max_questions))
    return [q for q in questions if q["qid"] in keep]


def plan_pairs(design: TableDesign, questions: list[dict], rankings: dict, chunks_by_id: dict) -> list[dict]:
    """Distinct (question, chunk) pairs: every chunk in any graded top-k list, plus for judge
    validity the source chunk and one random chunk of another document."""
    deep = deep_qids(design, questions)
    rng = random.Random(design.seed)
    all_ids = sorted(chunks_by_id)
    pairs = []
    for q in questions:
        chunks: dict[str, set] = {}
        for _retriever, _stage, system in table_systems(design):
            for cid in rankings[system][q["qid"]][: depth(design, q["qid"], deep)]:
                chunks.setdefault(cid, set()).add("table")
        chunks.setdefault(q["source_chunk_id"], set()).add("validity_source")
        others = [c for c in all_ids if chunks_by_id[c].doc_id != q["doc_id"]]
        if others:
            chunks.setdefault(rng.choice(others), set()).add("validity_random")
        for cid in sorted(chunks):
            pairs.append({"qid": q["qid"], "question": q["question"], "chunk_id": cid, "purpose": sorted(chunks[cid])})
    return pairs


# --------------------------------------------------------------------------- judging
@dataclass(frozen=True)
class RelevanceJudging:
    """How a judge turns a (question, passage) pair into a 0-3 grade: `prompt` reads the
    model's digit from a template; `calibrated` combines several of its signals with a fitted
    calibration (see `relevance_calibrated`)."""

    method: str = "prompt"
    prompt: str = "relevance"
    calibration: str | None = None  # a calibration name or JSON path (method "calibrated")
    # prompt features measured beside the grade, never part of it (for the decomposition of Table 1)
    diagnostic: tuple = ()

    def describe(self) -> str:
        if self.method == "calibrated":
            from .calibrated import load_calibration

            cal = load_calibration(self.calibration)
            return (
                f"calibrated score ({cal.name}, features {', '.join(cal.features)}): judge signals combined by a "
                "logistic model fitted on labelled pairs and cut into 0-3, not the model's own grade"
            )
        return f"the judge's own 0-3 digit (prompt {self.prompt})"


def grade_pairs(
    llm, pairs: list[dict], passages: dict, template: str = "relevance", judging: RelevanceJudging | None = None
) -> list[dict]:
    """Grade every pair (`passages` maps each pair's chunk_id to its text); one row per pair
    with grade (or None), raw output, probabilities. With `judging`, its method decides
    (a calibrated judge's rows also carry `score` and `features`)."""
    if judging is not None and judging.method == "calibrated":
        from .calibrated import grade_pairs_calibrated, load_calibration

        return grade_pairs_calibrated(
            llm, pairs, passages, load_calibration(judging.calibration), extra=tuple(judging.diagnostic)
        )
    if judging is not None:
        template = judging.prompt
    from ..llm.prompting import render
    from ..llm.scores import judgement_from, score_choices
    from ..llm.types import Request

    reqs = [
        Request(
            messages=render(template, question=p["question"], passage=passages[p["chunk_id"]]),
            choices=score_choices(0, 3),
            max_tokens=2,
        )
        for p in pairs
    ]
    comps = llm.chat_many(reqs, progress=f"grading ({template})")
    rows = []
    for p, c in zip(pairs, comps):
        j = judgement_from(c, 0, 3)
        rows.append(
            {
                "qid": p["qid"],
                "chunk_id": p["chunk_id"],
                "purpose": p["purpose"],
                "prompt": template,
                "grade": j.value,
                "expected_grade": None if j.expected is None else round(j.expected, 4),
                "probs": None if j.probs is None else {str(k): round(v, 4) for k, v in j.probs.items()},
                "raw": j.raw,
                "prompt_tokens": c.prompt_tokens,
                "cached": c.cached,
            }
        )
    return rows


# --------------------------------------------------------------------------- Table 1
def cell_ids(design: TableDesign, questions: list[dict], rankings: dict) -> dict:
    """{(retriever, stage, k): {qid: [chunk_id, ...]}} for every Table 1 cell; a cell past the
    smallest top-k holds only the questions graded that deep (:func:`deep_qids`)."""
    deep = deep_qids(design, questions)
    out = {}
    for retriever, stage, system in table_systems(design):
        for k in design.top_k:
            out[(retriever, stage, k)] = {
                q["qid"]: list(rankings[system][q["qid"]][:k]) for q in questions if k <= depth(design, q["qid"], deep)
            }
    return out


def grade_lists(design: TableDesign, questions: list[dict], rankings: dict, grades: dict) -> dict:
    """{(retriever, stage, k): {qid: [grade or None, ...]}}: the grades of :func:`cell_ids`."""
    return {
        cell: {q: [grades.get((q, c)) for c in ids] for q, ids in per_q.items()}
        for cell, per_q in cell_ids(design, questions, rankings).items()
    }


def _percent(lists: list[list], grade: int) -> tuple[float, int]:
    flat = [g for lst in lists for g in lst if g is not None]
    return (100.0 * sum(g == grade for g in flat) / len(flat) if flat else float("nan")), len(flat)


def table1(cells: dict, n_boot: int, seed: int, cluster_of: dict | None = None):
    """Long-form Table 1: retriever, stage, top_k, grade, percent, n, ci_low, ci_high, missing.
    CIs: two-stage cluster bootstrap (the clusters of `cluster_of`, a :class:`Clustering` or a
    {qid: source chunk} dict, then questions within them), pooling each drawn question's passages;
    questions are their own cluster without `cluster_of`. Each row names the unit (`cluster`) and
    counts its clusters, source chunks and documents."""
    import pandas as pd

    from ..stats import cluster_bootstrap_cis

    rows = []
    for (retriever, stage, k), per_q in cells.items():
        qids = sorted(per_q)
        lists = [per_q[q] for q in qids]
        clusters = as_clustering(cluster_of).labels(qids)
        missing = sum(g is None for lst in lists for g in lst)
        cis = cluster_bootstrap_cis(lists, clusters, lambda ls: {g: _percent(ls, g)[0] for g in GRADES}, n_boot, seed)
        for grade in GRADES:
            pct, n = _percent(lists, grade)
            lo, hi = cis[grade]
            rows.append(
                {
                    "retriever": retriever,
                    "stage": stage,
                    "top_k": k,
                    "grade": grade,
                    "percent": round(pct, 2),
                    "n": n,
                    "n_questions": len(qids),
                    **as_clustering(cluster_of).counts(qids),
                    "ci_low": round(lo, 2),
                    "ci_high": round(hi, 2),
                    "missing": missing,
                }
            )
    return pd.DataFrame(rows)


def relevant_shares(cells: dict, n_boot: int, seed: int, cluster_of: dict | None = None):
    """Per Table 1 cell (retriever, stage, top-k): the share of graded passages the judge grades
    2 or 3, in %, with a 95% two-stage cluster-bootstrap CI (the clusters of `cluster_of`, then
    questions; the paper: above 90% in most cells)."""
    import pandas as pd

    from ..stats import cluster_bootstrap_ci

    rows = []
    for (retriever, stage, k), per_q in cells.items():
        qids = sorted(per_q)
        lists = [per_q[q] for q in qids]
        clusters = as_clustering(cluster_of).labels(qids)
        share = lambda ls: 100.0 - _percent(ls, 0)[0] - _percent(ls, 1)[0]
        lo, hi = cluster_bootstrap_ci(lists, clusters, share, n_boot, seed)
        rows.append(
            {
                "retriever": retriever,
                "stage": stage,
                "top_k": k,
                "n_questions": len(lists),
                **as_clustering(cluster_of).counts(qids),
                "percent_2_3": round(share(lists), 2),
                "ci_low": round(lo, 2),
                "ci_high": round(hi, 2),
            }
        )
    return pd.DataFrame(rows)


def _share_2_3(lists: list[list]) -> float:
    flat = [g for lst in lists for g in lst if g is not None]
    return 100.0 * sum(g >= 2 for g in flat) / len(flat) if flat else float("nan")


def _task_row(key: tuple, task, lists: list, clusters: list, n_boot: int, seed: int) -> dict:
    """One row of :func:`per_task_shares`: the task's shares in one cell with their CIs."""
    from ..stats import cluster_bootstrap_cis

    stats = lambda ls: {"pct_grade_2_3": _share_2_3(ls), "pct_grade_3": _percent(ls, 3)[0]}
    cis = cluster_bootstrap_cis(lists, clusters, stats, n_boot, seed)
    point = stats(lists)
    r2 = lambda x: None if x != x else round(float(x), 2)
    row = dict(zip(("retriever", "stage", "top_k"), key), task=task, questions=len(lists))
    row.update(n_source_chunks=len(set(clusters)), passages=sum(g is not None for lst in lists for g in lst))
    for name in ("pct_grade_2_3", "pct_grade_3"):
        row.update({name: r2(point[name]), f"{name}_ci_low": r2(cis[name][0]), f"{name}_ci_high": r2(cis[name][1])})
    return row


def per_task_shares(cells: dict, task_of: dict, n_boot: int, seed: int, cluster_of: dict | None = None):
    """Per Table 1 cell and question task: questions, source chunks, graded passages, % graded 2-3
    and % graded 3, each with its 95% CI from the two-stage cluster bootstrap Table 1 uses (the
    clusters of `cluster_of`, then questions; the unit named in `cluster`); no interval below two
    clusters."""
    import pandas as pd

    rows = []
    for key, per_q in cells.items():
        by_task: dict = {}
        for qid in sorted(per_q):
            by_task.setdefault(task_of.get(qid), []).append(qid)
        for task, qids in sorted(by_task.items(), key=lambda kv: str(kv[0])):
            lists = [per_q[q] for q in qids]
            cl = as_clustering(cluster_of)
            rows.append({**_task_row(key, task, lists, cl.labels(qids), n_boot, seed), **cl.counts(qids)})
    return pd.DataFrame(rows)


MEASURES = {  # per question, over its top-k passages with a grade
    "mean_grade": lambda gs: float(np.mean(gs)),
    "share_0_1": lambda gs: 100.0 * float(np.mean([g <= 1 for g in gs])),
    "share_2": lambda gs: 100.0 * float(np.mean([g == 2 for g in gs])),
    "share_3": lambda gs: 100.0 * float(np.mean([g == 3 for g in gs])),
}


def _per_question(per_q: dict, qids: list, measure: str) -> list[float]:
    return [MEASURES[measure]([g for g in per_q[q] if g is not None]) for q in qids]


def paired_plans(cells: dict, design: TableDesign) -> list[tuple]:
    """(comparison, retriever, top_k, measure, cell a, cell b) of every paired test of Table 1: per
    retriever, top-k and measure, reranked against retrieved; per top-k, dense against BM25 on the
    mean grade."""
    plans = [
        (
            "reranked - retrieved",
            retriever,
            k,
            measure,
            cells[(retriever, "retrieved", k)],
            cells[(retriever, "reranked", k)],
        )
        for retriever in design.retrievers
        for k in design.top_k
        for measure in MEASURES
    ]
    if {"bm25", "dense"} <= set(design.retrievers):
        for k in design.top_k:
            a, b = cells[("bm25", "retrieved", k)], cells[("dense", "retrieved", k)]
            plans.append(("dense - bm25", "dense vs bm25", k, "mean_grade", a, b))
        for k in design.top_k:  # the paper: the judge prefers the dense retriever after reranking too
            a, b = cells[("bm25", "reranked", k)], cells[("dense", "reranked", k)]
            plans.append(("dense+rerank - bm25+rerank", "dense vs bm25", k, "mean_grade", a, b))
    return plans


GAIN_CONTRAST = "rerank gain: top-3 - top-10"
GAIN_MEASURES = ("share_3",)  # the paper reads "reranking matters most at low k" on grade 3's gain


def gain_contrasts(cells: dict, design: TableDesign) -> list[tuple]:
    """(comparison, retriever, top_k, measure, qids, gain at top-10, gain at top-3): per retriever,
    each question's reranking gain (reranked − retrieved) at top-3 against its gain at top-10, on
    the questions graded in all four lists; the paired test of their difference reads whether
    reranking matters more at low k. Empty unless both 3 and 10 are graded."""
    if not {3, 10} <= set(design.top_k):
        return []
    out = []
    for r in design.retrievers:
        lists = [cells[(r, stage, k)] for k in (3, 10) for stage in ("retrieved", "reranked")]
        qids = [q for q in sorted(lists[0]) if all(any(g is not None for g in c.get(q, [])) for c in lists)]
        for measure in GAIN_MEASURES:
            v = [_per_question(c, qids, measure) for c in lists]
            gain3 = [b - a for a, b in zip(v[0], v[1])]
            gain10 = [b - a for a, b in zip(v[2], v[3])]
            out.append((GAIN_CONTRAST, r, 3, measure, qids, gain10, gain3))
    return out


def paired_values(a: dict, b: dict, measure: str) -> tuple[list, list, list]:
    """(question ids graded in both cells, their `measure` in cell a, in cell b)."""
    qids = [q for q in sorted(a) if any(g is not None for g in a[q]) and any(g is not None for g in b.get(q, []))]
    return qids, _per_question(a, qids, measure), _per_question(b, qids, measure)


def paired_row(va: list, vb: list, clusters: list) -> dict:
    """One paired comparison b − a: the cluster-robust t (difference, CI, p, se, df, sd, design
    effect, detectable difference), the cluster sign-flip permutation p, the signed-rank p on
    cluster means, and how many per-question differences are zero, up and down."""
    from ..stats import direction_counts, paired_difference, sign_flip_test, signrank_test

    d = [y - x for x, y in zip(va, vb)]
    r = paired_difference(va, vb, clusters)
    perm = sign_flip_test(d, clusters)
    return {
        "n_questions": r["n"],
        "value_a": float(np.mean(va)) if va else None,
        "value_b": float(np.mean(vb)) if vb else None,
        **{k: r[k] for k in ("diff", "ci_low", "ci_high", "p_value", "se", "df", "sd", "deff")},
        "mde_cell": r["mde"],
        "p_perm": perm["p"],
        "perm_method": f"{perm['method']}, {perm['n_patterns']} sign patterns" if perm["n_patterns"] else "none",
        "p_signrank": signrank_test(d, clusters)["p"],
        **direction_counts(d),
    }


PAIRED_COLUMNS = [
    "comparison",
    "family",
    "retriever",
    "top_k",
    "measure",
    "n_questions",
    "n_source_chunks",
    "value_a",
    "value_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "se",
    "df",
    "sd",
    "deff",
    "mde_cell",
    "cluster",
    "n_clusters",
    "n_documents",
    "p_perm",
    "p_perm_holm",
    "perm_method",
    "p_signrank",
    "n_zero",
    "n_up",
    "n_down",
    "ties_dominate",
]


def paired_tests(cells: dict, design: TableDesign, cluster_of=None):
    """Table 1's paired tests over questions (:func:`paired_plans`): reranked minus retrieved on
    the mean grade and the shares (percentage points) of grades 0-1, 2 and 3; dense minus BM25 on
    the mean grade. Clusters: `cluster_of` (a :class:`Clustering`, or a {qid: source chunk} dict),
    named in `cluster`. Each row (:func:`paired_row`): both values, the difference with its 95%
    cluster-robust t interval and p-value, its standard error and degrees of freedom (what the
    findings' rules need to state the detectable difference at their own level), `mde_cell`
    (detectable at α = 0.05, 80% power, one cell alone); beside the t, `p_perm` (clusters' signs
    flipped) and `p_signrank` (Wilcoxon on cluster means), for cells where most differences are 0
    (`ties_dominate`). `p_holm` and `p_perm_holm` are Holm-adjusted within the row's `family`: one
    comparison on one measure across its cells. The four measures are not pooled into one family:
    the three shares sum to 100% and the mean grade is a linear function of them."""
    import pandas as pd

    from ..stats import holm

    cl = as_clustering(cluster_of)
    rows = []
    for comparison, retriever, k, measure, a, b in paired_plans(cells, design):
        qids, va, vb = paired_values(a, b, measure)
        head = {"comparison": comparison, "family": f"{comparison} / {measure}", "retriever": retriever}
        rows.append({**head, "top_k": k, "measure": measure, **paired_row(va, vb, cl.labels(qids)), **cl.counts(qids)})
    for comparison, retriever, k, measure, qids, va, vb in gain_contrasts(cells, design):
        head = {"comparison": comparison, "family": f"{comparison} / {measure}", "retriever": retriever}
        rows.append({**head, "top_k": k, "measure": measure, **paired_row(va, vb, cl.labels(qids)), **cl.counts(qids)})
    for fam in dict.fromkeys(r["family"] for r in rows):
        members = [r for r in rows if r["family"] == fam]
        for key in ("p_value", "p_perm"):
            for row, adj in zip(members, holm([r[key] for r in members])):
                row[key.replace("_value", "") + "_holm"] = adj
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS).round(4)


def feature_decomposition(
    design: TableDesign, questions: list[dict], rankings: dict, rows: list[dict], cluster_of=None
):
    """Table 1's comparisons read through each signal alone: for every feature a calibrated grade
    rows carry (and the grade and score themselves), the per-question mean over the top-k, compared
    as Table 1's paired tests compare (reranked - retrieved per retriever, dense - bm25), with the
    difference, its cluster-robust CI and p-value. What drives a difference in the grade shows here:
    a feature that moves while the others stay flat."""
    import pandas as pd

    from ..stats import paired_difference

    values: dict = {}
    for r in rows:
        v = dict(r.get("features") or {})
        v["grade"], v["score"] = r.get("grade"), r.get("score")
        values[(r["qid"], r["chunk_id"])] = v
    names = sorted({k for v in values.values() for k, x in v.items() if x is not None})
    plans = []
    for k in design.top_k:
        for retriever in design.retrievers:
            plans.append(("reranked - retrieved", retriever, k, retriever, reranked(retriever)))
        if {"bm25", "dense"} <= set(design.retrievers):
            plans.append(("dense - bm25", "dense vs bm25", k, "bm25", "dense"))
    out = []
    for feature in names:
        for comparison, retriever, k, sa, sb in plans:
            va, vb, qids = [], [], []
            for q in questions:
                qid = q["qid"]
                a = [values.get((qid, c), {}).get(feature) for c in rankings.get(sa, {}).get(qid, [])[:k]]
                b = [values.get((qid, c), {}).get(feature) for c in rankings.get(sb, {}).get(qid, [])[:k]]
                a, b = [x for x in a if x is not None], [x for x in b if x is not None]
                if a and b:
                    va.append(float(np.mean(a)))
                    vb.append(float(np.mean(b)))
                    qids.append(qid)
            if len(qids) < 2:
                continue
            r = paired_difference(va, vb, as_clustering(cluster_of).labels(qids))
            out.append(
                {
                    "feature": feature,
                    "comparison": comparison,
                    "retriever": retriever,
                    "top_k": k,
                    "n_questions": r["n"],
                    "value_a": float(np.mean(va)),
                    "value_b": float(np.mean(vb)),
                    "diff": r["diff"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                    "p_value": r["p_value"],
                    "t": r["diff"] / r["se"] if r.get("se") else None,
                    "cluster": as_clustering(cluster_of).unit,
                    "n_clusters": r["n_clusters"],
                }
            )
    cols = ["feature", "comparison", "retriever", "top_k", "n_questions", "value_a", "value_b", "diff"]
    return pd.DataFrame(out, columns=[*cols, "ci_low", "ci_high", "p_value", "t", "cluster", "n_clusters"]).round(4)


def clusters_from_grades(rows: list[dict]) -> dict:
    """{qid: source chunk id} from grades.jsonl rows: the pair graded for judge validity as the
    question's source (every graded question has one)."""
    return {r["qid"]: r["chunk_id"] for r in rows if "validity_source" in (r.get("purpose") or [])}


def table1_wide(long_df, fmt: str = "md") -> str:
    """The paper's layout: rows top-k × {Retriever, Reranked}, columns grades per retriever, in
    %; per top-k the best value is bold and the second underlined (lower is better for grades
    0 and 1, higher for 2 and 3). `fmt` is "md" or "tex"."""
    import pandas as pd

    from ..tables import render

    retrievers = list(dict.fromkeys(long_df["retriever"]))
    col = {(r, g): f"{r} {g}{'↓' if g < 2 else '↑'}" for r in retrievers for g in GRADES}
    rows, marks = [], {}
    for k in sorted(set(long_df["top_k"])):
        sub = long_df[long_df["top_k"] == k]
        start = len(rows)
        for stage, label in (("retrieved", "Retriever"), ("reranked", "Reranked")):
            row = {"Top-K": f"Top-{k}", "Method": label}
            for r in retrievers:
                for g in GRADES:
                    v = sub[(sub["retriever"] == r) & (sub["stage"] == stage) & (sub["grade"] == g)]["percent"]
                    row[col[(r, g)]] = f"{float(v.iloc[0]):.2f}" if len(v) and not np.isnan(v.iloc[0]) else "–"
            rows.append(row)
        for g in GRADES:  # best and second best per grade within this top-k; ties share a mark
            vals = {
                (i, col[(r, g)]): float(rows[i][col[(r, g)]])
                for i in (start, start + 1)
                for r in retrievers
                if rows[i][col[(r, g)]] != "–"
            }
            distinct = sorted(set(vals.values()), reverse=g >= 2)
            for rank, style in enumerate(("bold", "underline")):
                if rank < len(distinct):
                    marks.update({key: style for key, v in vals.items() if v == distinct[rank]})
    return render(pd.DataFrame(rows), fmt, marks)


# --------------------------------------------------------------------------- agreement, validity


def graded_metrics(design: TableDesign, questions: list[dict], rankings: dict, grades: dict):
    """Per system: nDCG@k and P@k (grade ≥ 2) from the judge's grades as graded qrels, beside
    nDCG@k from the source chunk; and the per-query rank correlation of the two nDCG@10."""
    import pandas as pd
    from scipy.stats import kendalltau

    from ..retrieval.metrics import evaluate

    qids = [q["qid"] for q in questions]
    judged_qrels: dict = {q: {} for q in qids}
    for (q, c), g in grades.items():
        if q in judged_qrels and g is not None and g > 0:
            judged_qrels[q][c] = g
    binary_qrels = {q: {c: 1 for c, g in d.items() if g >= 2} for q, d in judged_qrels.items()}
    source_qrels = {q["qid"]: {q["source_chunk_id"]: 1} for q in questions}
    rows = []
    ks = design.top_k
    for _, _, system in table_systems(design):
        run = {q: [(c, 0.0) for c in rankings[system][q][: max(ks)]] for q in qids}
        row = {"system": system}
        j = (
            evaluate(judged_qrels, run, [f"ndcg@{k}" for k in ks], per_query=True)
            if any(judged_qrels.values())
            else None
        )
        p = evaluate(binary_qrels, run, [f"precision@{k}" for k in ks]) if any(binary_qrels.values()) else None
        s = evaluate(source_qrels, run, [f"ndcg@{k}" for k in ks], per_query=True)
        for k in ks:
            row[f"judge_ndcg@{k}"] = round(j["mean"][f"ndcg@{k}"], 4) if j else None
            # ranx averages P@k only over queries with a relevant passage; count the others as 0
            n_rel = sum(1 for d in binary_qrels.values() if d)
            row[f"judge_p@{k}"] = round(p["mean"][f"precision@{k}"] * n_rel / len(qids), 4) if p else 0.0
            row[f"source_ndcg@{k}"] = round(s["mean"][f"ndcg@{k}"], 4)
        kk = max(ks)
        if j:
            a = [j["per_query"][f"ndcg@{kk}"].get(q, 0.0) for q in qids]
            b = [s["per_query"][f"ndcg@{kk}"].get(q, 0.0) for q in qids]
            tau = kendalltau(a, b).statistic if len(set(a)) > 1 and len(set(b)) > 1 else float("nan")
            row[f"kendall_tau_judge_vs_source_ndcg@{kk}"] = None if np.isnan(tau) else round(float(tau), 3)
        rows.append(row)
    return pd.DataFrame(rows)


def judge_validity(
    rows: list[dict], swapped: list[dict] | None, auc_warning: float, temperature: float, min_pairs: int = 30
) -> dict:
    """Can the judge tell a question's source chunk from a random chunk of another document?
    (An easy check: the judge checks against human labels are the hard one.) Below
    `min_pairs` pairs no positive verdict is given."""
    from ..stats import auc
    from .validity import _score as score

    src = [r for r in rows if "validity_source" in r["purpose"] and score(r) is not None]
    rnd = [r for r in rows if "validity_random" in r["purpose"] and score(r) is not None]
    dist = lambda rs: {str(g): sum(r["grade"] == g for r in rs) for g in GRADES}
    out = {
        "n_pairs": len(src) + len(rnd),
        "n_source": len(src),
        "n_random": len(rnd),
        "source_grades": dist(src),
        "random_grades": dist(rnd),
        "mean_grade_source": round(float(np.mean([r["grade"] for r in src if r["grade"] is not None])), 3)
        if src
        else None,
        "mean_grade_random": round(float(np.mean([r["grade"] for r in rnd if r["grade"] is not None])), 3)
        if rnd
        else None,
        "missing": sum(r["grade"] is None for r in rows),
    }
    y = [1] * len(src) + [0] * len(rnd)
    s = [score(r) for r in src + rnd]
    a = auc(y, s)
    out["auc"] = None if np.isnan(a) else round(a, 4)
    out["auc_uses"] = (
        "calibrated score"
        if any(r.get("score") is not None for r in src)
        else "expected grade (option probabilities)"
        if any(r["expected_grade"] is not None for r in src)
        else "grade"
    )
    if swapped:
        by = {(r["qid"], r["chunk_id"]): r["grade"] for r in swapped}
        same = [by[(r["qid"], r["chunk_id"])] == r["grade"] for r in src + rnd if (r["qid"], r["chunk_id"]) in by]
        out["order_swap_agreement"] = round(sum(same) / len(same), 4) if same else None
        out["order_swap_pairs"] = len(same)
    out["self_consistency"] = (
        "not applicable: greedy decoding (temperature 0) gives the same grade on a repeated prompt"
        if temperature == 0
        else "not measured"
    )
    auc = out["auc"]
    if auc is None:
        out["verdict"] = "Not enough validity pairs to judge the judge."
    elif auc < auc_warning:
        out["verdict"] = (
            f"WARNING: the judge cannot reliably tell a question's source passage from a random passage "
            f"of another document (AUC {auc:.2f} < {auc_warning}, {out['n_pairs']} pairs); treat its "
            "relevance grades with caution."
        )
    elif out["n_pairs"] < min_pairs:
        out["verdict"] = (
            f"Too few pairs to tell: AUC {auc:.2f} on only {out['n_pairs']} source/random pairs (at least "
            f"{min_pairs} are needed). Source vs random is the easy case in any event; see the judge "
            "checks against labelled pairs."
        )
    else:
        out["verdict"] = (
            f"The judge separates source passages from random ones (AUC {auc:.2f}, {out['n_pairs']} "
            "pairs); this is the easy case: see the judge checks against labelled pairs for the hard one."
        )
    return out
