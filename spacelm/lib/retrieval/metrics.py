"""IR metrics from qrels, computed by ranx (checked against pytrec_eval in the tests).

- Recall@k = |relevant ∩ top-k| / |relevant|
- MRR@k    = 1 / rank of the first relevant document within the top k (0 if none)
- nDCG@k   = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} rel_i / log2(i + 1) (graded gains as in trec_eval)
- Hit rate@k = 1 if any relevant document is in the top k
Also: source-chunk diagnostics (strict / same document / near page) and paired significance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..names import Ranking

Qrels = Mapping[str, Mapping[str, int]]


def metric_names(k_values: Sequence[int], recall_extra: Sequence[int] = ()) -> list[str]:
    names = []
    for k in sorted(set(k_values)):
        names += [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"hit_rate@{k}"]
    names += [f"recall@{k}" for k in recall_extra if k not in k_values]
    return names


def to_run(rankings: Mapping[str, Ranking]) -> dict:
    """{qid: [(doc, score), ...]} → ranx/trec dict {qid: {doc: score}} with ranks made explicit.

    The score is replaced by a strictly decreasing value so that every library sees exactly our
    order (ties broken by id), not its own tie-breaking."""
    out = {}
    for qid, ranking in rankings.items():
        n = len(ranking)
        out[qid] = {doc: float(n - i) for i, (doc, _) in enumerate(ranking)}
    return out


def _ranx(qrels: Qrels, rankings: Mapping[str, Ranking], name: str = "run"):
    from ranx import Qrels as RQ
    from ranx import Run as RR

    q = {qid: {d: int(g) for d, g in docs.items()} for qid, docs in qrels.items() if any(g > 0 for g in docs.values())}
    run = to_run({qid: rankings.get(qid, []) for qid in q})
    # ranx cannot hold a query with no retrieved document: give it a dummy miss
    run = {qid: docs or {"__none__": 0.0} for qid, docs in run.items()}
    return RQ(q), RR(run, name=name)


def evaluate(qrels: Qrels, rankings: Mapping[str, Ranking], metrics: Sequence[str], per_query: bool = False) -> dict:
    """Mean of each metric over the queries that have at least one relevant document; with
    `per_query`, also {metric: {qid: value}}."""
    import ranx

    rq, rr = _ranx(qrels, rankings)
    means = ranx.evaluate(rq, rr, list(metrics), make_comparable=False)
    if isinstance(means, float):
        means = {metrics[0]: means}
    out = {"mean": {m: float(v) for m, v in means.items()}}
    if per_query:
        out["per_query"] = {m: dict(rr.scores[m]) for m in metrics}
    return out


def compare(
    qrels: Qrels,
    systems: Mapping[str, Mapping[str, Ranking]],
    metrics: Sequence[str],
    stat_test: str = "student",
    seed: int = 42,
    clusters: Mapping[str, str] | None = None,
):
    """Paired significance tests between every two systems on the same queries (ranx.compare;
    `stat_test` "student" = paired t-test, "fisher" = randomization test). With `clusters`
    (query id -> its source chunk), the p-value and the detectable difference come instead from
    the cluster-robust paired t test (`stats.paired_difference`), since questions written from
    one chunk are not independent.

    Returns a DataFrame with one row per (system_a, system_b, metric): both means, the p-value,
    the Holm-adjusted p-value over the whole table (its family of tests), the smallest
    difference the number of queries could detect (80% power, α = 0.05, from the SD of the
    per-query differences) and the wins/ties/losses of a over b per query."""
    import pandas as pd
    import ranx

    from ..stats import holm, min_detectable_difference, paired_difference

    runs, rq = [], None
    for name, rankings in systems.items():
        rq, rr = _ranx(qrels, rankings, name)
        runs.append(rr)
    d = ranx.compare(rq, runs, list(metrics), stat_test=stat_test, random_seed=seed, make_comparable=True).to_dict()
    per_query = {r.name: r.scores for r in runs}
    names = list(systems)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for m in metrics:
                wtl = d[a]["win_tie_loss"][b][m]
                qs = sorted(set(per_query[a][m]) & set(per_query[b][m]))
                diffs = np.array([per_query[b][m][q] - per_query[a][m][q] for q in qs], dtype=float)
                sd = float(np.std(diffs, ddof=1)) if len(diffs) > 1 else float("nan")
                row = {
                    "system_a": a,
                    "system_b": b,
                    "metric": m,
                    "mean_a": d[a]["scores"][m],
                    "mean_b": d[b]["scores"][m],
                    "p_value": d[a]["comparisons"][b][m],
                    "mde": min_detectable_difference(sd / np.sqrt(max(1, len(diffs))), len(diffs) - 1),
                    "wins_a": wtl["W"],
                    "ties": wtl["T"],
                    "wins_b": wtl["L"],
                    "test": stat_test,
                }
                if clusters is not None:
                    pd_ = paired_difference(
                        [per_query[a][m][q] for q in qs],
                        [per_query[b][m][q] for q in qs],
                        [clusters.get(q, q) for q in qs],
                    )
                    row.update(
                        p_value=pd_["p_value"],
                        mde=pd_["mde"],
                        test=f"cluster-robust paired t ({pd_['n_clusters']} source chunks)",
                    )
                rows.append(row)
    for row, adj in zip(rows, holm([r["p_value"] for r in rows])):
        row["p_holm"] = adj
    cols = [
        "system_a",
        "system_b",
        "metric",
        "mean_a",
        "mean_b",
        "p_value",
        "p_holm",
        "mde",
        "wins_a",
        "ties",
        "wins_b",
        "test",
    ]
    return pd.DataFrame(rows, columns=cols)


def source_diagnostics(
    rankings: Mapping[str, Ranking],
    source: Mapping[str, dict],
    chunk_meta: Mapping[str, dict],
    k_values: Sequence[int],
    page_window: int = 1,
) -> dict:
    """Hit rates at k when the gold is the question's source chunk, with three strictnesses:
    `strict` (that chunk), `doc` (any chunk of the same document) and `near_page` (same
    document, pages overlapping the source's ±page_window). `source[qid]` holds doc_id,
    page_start, page_end, chunk_id."""
    out = {}
    for qid, src in source.items():
        ranking = rankings.get(qid, [])
        row = {}
        for k in k_values:
            top = ranking[:k]
            strict = any(d == src["chunk_id"] for d, _ in top)
            same_doc = [chunk_meta[d] for d, _ in top if chunk_meta[d]["doc_id"] == src["doc_id"]]
            near = any(
                m["page_start"] <= src["page_end"] + page_window and m["page_end"] >= src["page_start"] - page_window
                for m in same_doc
            )
            row.update({f"strict@{k}": float(strict), f"doc@{k}": float(bool(same_doc)), f"near_page@{k}": float(near)})
        out[qid] = row
    return out


def mean_rows(rows: Mapping[str, dict]) -> dict:
    if not rows:
        return {}
    keys = next(iter(rows.values())).keys()
    return {k: sum(r[k] for r in rows.values()) / len(rows) for k in keys}
