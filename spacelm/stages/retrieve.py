"""Stage 3, retrieve: every configured system on the evaluation questions; per-query rows, the
metric summary, paired significance tests, and the rankings (top-`pool`) for grading."""

from __future__ import annotations

import time
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe, write_jsonl
from ..lib.retrieval.metrics import compare, evaluate, mean_rows, metric_names, source_diagnostics
from ..lib.retrieval.systems import build_systems, identical_lists, pool_size
from ..lib.sample import per_task_means, sample_size
from ..runner.base import Stage, execute
from ..runner.data import (
    chunks_path,
    documents_path,
    golden_path,
    golden_rankings_path,
    golden_set,
    load_chunks,
    load_documents,
    load_questions,
    question_spans,
    questions_path,
    rankings_path,
)
from .preflight import check_corpus_size


def outputs(cfg: Config):
    d = cfg.run_dir
    return [
        d / names.RETRIEVAL_SUMMARY,
        d / names.RETRIEVAL_SUMMARY_MD,
        d / names.RETRIEVAL_PER_QUERY,
        d / names.RETRIEVAL_SIGNIFICANCE,
        rankings_path(cfg),
        d / names.PLOT_RECALL,
        d / names.RETRIEVAL_PER_TASK,
        *trec_outputs(cfg),
    ] + golden_outputs(cfg)


def golden_outputs(cfg: Config) -> list:
    """The golden questions' per-query rows and rankings, when Table 1 grades them."""
    if "golden" not in cfg.grading.question_sets:
        return []
    return [cfg.run_dir / names.GOLDEN_PER_QUERY, golden_rankings_path(cfg)]


def trec_outputs(cfg: Config) -> list:
    """One TREC run file per system and the qrels of the gold the metrics use."""
    d = cfg.run_dir
    return [d / names.TREC_RUN.format(system=s) for s in cfg.retrieval.systems] + [d / names.TREC_QRELS]


def write_trec(cfg: Config, rankings: dict, qrels: dict, out=lambda p: p) -> list:
    """`retrieval/run.<system>.trec` (answerable questions, each system's ranked list to the depth
    it was ranked) and `retrieval/qrels.trec` (the gold the metrics use: chunks overlapping the
    question's evidence span, else its source chunk; relevance 1). trec_eval, ranx, ir_measures and
    pytrec_eval read them as they are. `rankings`: {system: {qid: [(chunk_id, score), ...]}}."""
    from ..lib.io import write_text
    from ..lib.retrieval.trec import qrels_text, run_text

    runs, qrels_path = trec_outputs(cfg)[:-1], trec_outputs(cfg)[-1]
    for system, path in zip(cfg.retrieval.systems, runs):
        write_text(out(path), run_text({q: r for q, r in rankings.get(system, {}).items() if q in qrels}, system))
    write_text(out(qrels_path), qrels_text(qrels))
    return [*runs, qrels_path]


def export_trec(cfg: Config) -> list:
    """The TREC files of a run that has ranked, from its rankings.jsonl, the questions and the
    chunks (no model: used to add them to a run made before retrieve wrote them)."""
    from ..lib.io import read_jsonl

    chunks = load_chunks(cfg)
    answerable = [q for q in load_questions(cfg, chunks, answerable=None) if q["answerable"]]
    rankings: dict = {}
    for row in read_jsonl(rankings_path(cfg)):
        if row.get("answerable", True):
            rankings.setdefault(row["system"], {})[row["qid"]] = [(d, s) for d, s in row["ranking"]]
    return write_trec(cfg, rankings, gold_qrels(answerable, chunks))


class RetrievalEval(NamedTuple):
    """Every system's rankings on the questions and their metrics (one chunking)."""

    summary: object  # pandas DataFrame, one row per system
    per_query: list[dict]
    rankings_rows: list[dict]
    rankings: dict  # {system: {qid: [(chunk_id, score), ...]}}
    qrels: dict  # {qid: {chunk_id: 1}} under the span overlap rule
    timings: dict


def gold_qrels(questions: list[dict], chunks: list) -> dict:
    """Chunk-independent gold: each question's evidence span mapped onto these chunks by the
    overlap rule (`lib/retrieval/span_gold.py`); its source chunk where no span is known."""
    from ..lib.retrieval.span_gold import ChunkSpan, span_qrels

    qrels = span_qrels(
        question_spans(questions), [ChunkSpan(c.chunk_id, c.doc_id, c.char_start, c.char_end) for c in chunks]
    )
    for q in questions:
        if q["qid"] not in qrels and q.get("source_chunk_id"):
            qrels[q["qid"]] = {q["source_chunk_id"]: 1}
    return qrels


def evaluate_retrieval(
    rc, questions: list[dict], unanswerable: list[dict], chunks: list, systems: dict, depth: int, pool: int
) -> RetrievalEval:
    """Rank every question with every system to `depth` and score the rankings: IR metrics from
    the span qrels, span coverage@k, and where the source passage was found (pages, document)."""
    import pandas as pd

    from ..lib.retrieval.span_gold import ChunkSpan, coverage

    meta = {c.chunk_id: {"doc_id": c.doc_id, "page_start": c.page_start, "page_end": c.page_end} for c in chunks}
    spans_by_id = {c.chunk_id: ChunkSpan(c.chunk_id, c.doc_id, c.char_start, c.char_end) for c in chunks}
    spans = question_spans(questions)
    qids = [q["qid"] for q in questions]
    texts = [q["question"] for q in questions]
    qrels = gold_qrels(questions, chunks)
    src = {
        q["qid"]: {
            "chunk_id": q["source_chunk_id"],
            "doc_id": q["doc_id"],
            "page_start": q["page_start"],
            "page_end": q["page_end"],
        }
        for q in questions
    }
    metrics = metric_names(rc.k_values)
    summary_rows, per_query, rankings_rows, all_rankings, timings = [], [], [], {}, {}
    for name, system in systems.items():
        t0 = time.perf_counter()
        rankings = dict(zip(qids, system.search(texts, depth)))
        timings[name] = round(time.perf_counter() - t0, 3)
        all_rankings[name] = rankings
        ev = evaluate(qrels, rankings, metrics, per_query=True)
        diag = source_diagnostics(rankings, src, meta, rc.k_values, rc.near_page_window)
        cov = {
            q: {f"coverage@{k}": coverage(spans[q], [d for d, _ in rankings[q]], spans_by_id, k) for k in rc.k_values}
            for q in qids
            if q in spans
        }
        summary_rows.append(
            {
                "system": name,
                "n_queries": len(qids),
                "n_unanswerable_left_out": len(unanswerable),
                "rerank_pool": pool if name.endswith("+rerank") else None,
                **ev["mean"],
                **mean_rows(cov),
                **mean_rows(diag),
                "search_seconds": timings[name],
            }
        )
        for q in questions:
            r = rankings[q["qid"]]
            gold = qrels.get(q["qid"], {})
            rank = next((i for i, (d, _) in enumerate(r, 1) if d in gold), None)
            per_query.append(
                {
                    "qid": q["qid"],
                    "system": name,
                    "task": q["task"],
                    "source_chunk_id": q["source_chunk_id"],
                    "source_rank": rank,
                    "n_gold_chunks": len(gold),
                    **{m: ev["per_query"][m].get(q["qid"], 0.0) for m in metrics},
                    **cov.get(q["qid"], {}),
                    **diag[q["qid"]],
                    "top10": [d for d, _ in r[:10]],
                }
            )
            rankings_rows.append({"qid": q["qid"], "system": name, "ranking": [[d, round(s, 6)] for d, s in r]})
        if unanswerable:
            for q, r in zip(unanswerable, system.search([q["question"] for q in unanswerable], depth)):
                rankings_rows.append(
                    {"qid": q["qid"], "system": name, "answerable": False, "ranking": [[d, round(s, 6)] for d, s in r]}
                )
    return RetrievalEval(pd.DataFrame(summary_rows), per_query, rankings_rows, all_rankings, qrels, timings)


class Retrieval(NamedTuple):
    """What retrieve computes: the evaluation on the answerable questions, the significance
    tests between systems, and what the summary reports about them."""

    evaluation: RetrievalEval
    questions: list[dict]  # answerable: ranked and scored
    unanswerable: list[dict]  # ranked for the answer stage, left out of every metric
    significance: object  # pandas DataFrame (empty with one system)
    pool: int  # passages the reranker rescored per question
    corpus_chunks: int
    systems: list[str]
    k_main: int  # the cut-off of the significance tests and the "best system"
    golden: RetrievalEval | None = None  # the golden questions Table 1 grades as its second set


def compute(cfg: Config, chunks: list, questions: list[dict], golden: list[dict] = ()) -> Retrieval:
    """Build every configured system over the chunks, rank `questions` (answerable and not) and
    score the answerable ones; paired tests between the systems, clustered by source chunk.
    `golden`: a second set of answerable questions, ranked and scored the same way (no tests)."""
    import pandas as pd

    # metrics need known evidence: unanswerable questions are ranked (the answer stage feeds
    # their top passages to the generator) but left out of every metric
    answerable = [q for q in questions if q["answerable"]]
    unanswerable = [q for q in questions if not q["answerable"]]
    if not answerable:
        raise ValueError("no evaluation questions: run `spacelm synth` or provide golden samples")
    rc = cfg.retrieval
    ids = [c.chunk_id for c in chunks]
    check_corpus_size(cfg, len(ids))  # before any encoder loads
    systems = build_systems(rc.setup(), ids, [c.text for c in chunks], cache_dir=cfg.cache_dir)
    pool = pool_size(rc.pool, len(ids), rc.k_values, rc.pool_max)
    depth = max(pool, max(rc.k_values), cfg.answer.retrieve_k)
    res = evaluate_retrieval(rc, answerable, unanswerable, chunks, systems, depth, pool)
    k_main = 10 if 10 in rc.k_values else max(rc.k_values)
    clusters = {q["qid"]: q.get("source_chunk_id") or q["qid"] for q in answerable}
    sig = (
        compare(res.qrels, res.rankings, [f"ndcg@{k_main}", f"recall@{k_main}"], stat_test="student", clusters=clusters)
        if len(res.rankings) > 1
        else pd.DataFrame()
    )
    gold = evaluate_retrieval(rc, list(golden), [], chunks, systems, depth, pool) if golden else None
    return Retrieval(res, answerable, unanswerable, sig, pool, len(ids), list(systems), k_main, gold)


def write(cfg: Config, result: Retrieval, out) -> dict:
    """The summary (csv, md), per-task means, per-query rows, rankings, significance tests and
    the recall plot; the stage summary."""
    import pandas as pd

    from ..lib.report.plots import recall_curve

    rc, res, questions, k_main = cfg.retrieval, result.evaluation, result.questions, result.k_main
    summary = res.summary
    summary_csv, summary_md, per_query_path, sig_path, rankings_file, plot, per_task = outputs(cfg)[:7]
    n = sample_size(questions)
    summary.insert(2, "n_source_chunks", n.source_chunks)
    summary.insert(3, "n_documents", n.documents)
    write_dataframe(summary.round(4), out(summary_csv))
    write_dataframe(per_task_means(res.per_query, ["system"], metric_names(rc.k_values)), out(per_task))
    write_dataframe(summary.round(3), out(summary_md))
    write_jsonl(out(per_query_path), res.per_query)
    write_jsonl(out(rankings_file), res.rankings_rows)
    write_dataframe(result.significance.round(4), out(sig_path))
    recall_curve(pd.DataFrame(res.per_query), rc.k_values, out(plot), seed=cfg.seed)
    write_trec(cfg, res.rankings, res.qrels, out)
    if golden_outputs(cfg):
        gold = result.golden
        write_jsonl(out(golden_outputs(cfg)[0]), gold.per_query if gold else [])
        write_jsonl(out(golden_outputs(cfg)[1]), gold.rankings_rows if gold else [])
    best = summary.sort_values(f"ndcg@{k_main}", ascending=False).iloc[0]
    qids = [q["qid"] for q in questions]
    return {
        "sample": n.to_dict(),
        "rerank_pool": result.pool,
        "device": rc.resolved_device(),
        "rerank_pool_share": round(result.pool / result.corpus_chunks, 4),
        "corpus_chunks": result.corpus_chunks,
        "reranked_lists_identical": identical_lists(res.rankings, qids, max(rc.k_values)),
        "questions": len(qids),
        "unanswerable_left_out": len(result.unanswerable),
        "question_origin": sorted({q["origin"] for q in questions}),
        "golden_questions_ranked": len({r["qid"] for r in result.golden.per_query}) if result.golden else 0,
        "gold": "span overlap (lib/retrieval/span_gold.py)",
        "systems": result.systems,
        f"best_ndcg@{k_main}": {"system": best["system"], "value": round(float(best[f"ndcg@{k_main}"]), 4)},
        "search_seconds": res.timings,
    }


def build(cfg: Config, out) -> dict:
    chunks = load_chunks(cfg)
    questions = load_questions(cfg, chunks, answerable=None)
    golden = golden_set(cfg, chunks, questions, load_documents(cfg)) if golden_outputs(cfg) else []
    return write(cfg, compute(cfg, chunks, questions, golden), out)


def _models(cfg: Config) -> dict:
    rc = cfg.retrieval
    m = {}
    if names.reads_dense(rc.systems):
        m["dense"] = rc.dense.model
    if any(s.endswith("+rerank") for s in rc.systems) and rc.reranker.kind in ("biencoder", "cross-encoder"):
        m["reranker"] = rc.reranker.model
    return m


STAGE = Stage(
    name="retrieve",
    doc="evaluate the retrieval systems on the questions",
    home=lambda cfg: cfg.run_dir / "retrieval",
    outputs=outputs,
    build=build,
    after=("synth", "train-reranker"),
    sections=lambda cfg: ["retrieval", "seed"] + (["grading.question_sets"] if golden_outputs(cfg) else []),
    reads=lambda cfg: [chunks_path(cfg), questions_path(cfg), golden_path(cfg), documents_path(cfg)],
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
