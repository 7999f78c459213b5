"""Stage 3b, chunk-sizes (when `chunk_study.sizes` is set): the same documents chunked at each
size, every retrieval system run on the same questions, scored against chunk-independent gold
(each question's evidence span; `lib/retrieval/span_gold.py`), and optionally Table 1 at each size.

Writes `results/<run>/chunk_sizes/<size>/retrieval/summary.csv` and `per_query.jsonl` per size
and question set, `chunk_sizes/<size>/table1_relevance.csv` when grading, and the comparison
`chunk_sizes/summary.csv` (one row per size, question set and system) with the cost of each
size (`chunk_sizes/costs.csv`: chunks, tokens, encoding seconds per 1,000 tokens, seconds per
graded pair). The report's "Chunk sizes" section reads these."""

from __future__ import annotations

import copy
import time

from ..config import Config
from ..lib import names
from ..lib.io import InputError, write_dataframe, write_jsonl
from .base import Stage, execute
from .data import (
    documents_path,
    golden_path,
    golden_questions,
    load_chunks,
    load_documents,
    load_questions,
    questions_path,
)


def study_dir(cfg: Config):
    return cfg.run_dir / names.CHUNK_SIZES


def outputs(cfg: Config):
    d = study_dir(cfg)
    r = cfg.run_dir
    out = [r / names.CHUNK_SIZES_SUMMARY, r / names.CHUNK_SIZES_SUMMARY_MD, r / names.CHUNK_SIZES_COSTS]
    for size in cfg.chunk_study.sizes:
        out += [d / str(size)]
    return out


def _tokenizer(cfg: Config) -> str:
    return cfg.chunk_study.tokenizer or cfg.chunking.tokenizer


def _retrieval_config(cfg: Config):
    rc = copy.deepcopy(cfg.retrieval)
    rc.systems = list(cfg.chunk_study.systems)
    if cfg.chunk_study.dense_model:
        rc.dense.model = cfg.chunk_study.dense_model
    return rc


def question_sets(cfg: Config, docs) -> dict[str, list[dict]]:
    """{set name: answerable questions with spans}, each placed on no chunking yet."""
    base_chunks = load_chunks(cfg)
    out = {}
    if "run" in cfg.chunk_study.question_sets:
        out["run"] = load_questions(cfg, base_chunks, docs=docs)
    if "golden" in cfg.chunk_study.question_sets:
        gold = [q for q in golden_questions(cfg, base_chunks, docs) if q["answerable"]]
        if gold and (not out.get("run") or {q["qid"] for q in gold} != {q["qid"] for q in out["run"]}):
            out["golden"] = gold
    return out


def on_chunks(questions: list[dict], chunks: list) -> list[dict]:
    """The questions placed on another chunking: source chunk = the chunk sharing most of the span."""
    from .data import _place

    moved = [dict(q, source_chunk_id=None) for q in questions]
    _place(moved, {c.chunk_id: c for c in chunks})
    return [q for q in moved if q["source_chunk_id"]]


def build(cfg: Config, out) -> dict:
    import pandas as pd

    from ..lib.ingest.chunking import chunk_documents
    from ..lib.retrieval.systems import build_systems, pool_size
    from .retrieve import evaluate_retrieval

    cs = cfg.chunk_study
    docs = load_documents(cfg)
    sets = question_sets(cfg, docs)
    rc = _retrieval_config(cfg)
    rows, costs, per_size, search = [], [], {}, {}
    d = study_dir(cfg)
    for size in cs.sizes:
        t0 = time.perf_counter()
        chunks = chunk_documents(docs, size, _tokenizer(cfg), cfg.chunking.overlap)
        t_chunk = time.perf_counter() - t0
        ids, texts = [c.chunk_id for c in chunks], [c.text for c in chunks]
        t0 = time.perf_counter()
        systems = build_systems(rc.setup(), ids, texts, cache_dir=cfg.cache_dir)
        t_index = time.perf_counter() - t0
        dense = getattr(systems.get("dense"), "encoder", None)
        pool = pool_size(rc.pool, len(ids), rc.k_values, rc.pool_max)
        depth = max(pool, max(rc.k_values))
        tokens = sum(c.n_tokens for c in chunks)
        size_dir = out(d / str(size))
        for name, questions in sets.items():
            placed = on_chunks(questions, chunks)
            res = evaluate_retrieval(rc, placed, [], chunks, systems, depth, pool)
            (size_dir / name / names.RETRIEVAL).mkdir(parents=True, exist_ok=True)
            write_dataframe(res.summary.round(4), size_dir / name / names.RETRIEVAL_SUMMARY)
            write_jsonl(size_dir / name / names.RETRIEVAL_PER_QUERY, res.per_query)
            per_size[(size, name)] = (placed, res, chunks)
            search[size] = search.get(size, 0.0) + sum(res.timings.values())
            mean_gold = sum(len(v) for v in res.qrels.values()) / max(len(res.qrels), 1)
            for r in res.summary.to_dict("records"):
                rows.append(
                    {
                        "chunk_size": size,
                        "questions": name,
                        "n_questions": len(placed),
                        "n_source_chunks": len({q["source_chunk_id"] for q in placed}),
                        "n_documents": len({q["doc_id"] for q in placed}),
                        "gold_chunks_per_question": round(mean_gold, 2),
                        **{k: v for k, v in r.items() if k not in ("n_queries", "n_unanswerable_left_out")},
                    }
                )
        costs.append(
            {
                "chunk_size": size,
                "chunks": len(chunks),
                "tokens": tokens,
                "tokens_mean": round(tokens / max(len(chunks), 1), 1),
                "tokens_max": max(c.n_tokens for c in chunks),
                "chunking_seconds": round(t_chunk, 2),
                "index_seconds": round(t_index, 2),
                "dense_model": rc.dense.model,
                "dense_passages_encoded": getattr(dense, "encoded", None),
                "rerank_pool": pool,
                "search_seconds": round(search.get(size, 0.0), 2),
                # the dense index's cost per 1,000 tokens when every chunk was encoded (not cached)
                "index_seconds_per_1k_tokens": round(1000 * t_index / tokens, 3)
                if tokens and getattr(dense, "encoded", 0) == len(chunks)
                else None,
            }
        )
    graded = grade_sizes(cfg, per_size, sets, out) if cs.grade_questions else {}
    for c in costs:
        c.update(graded.get(c["chunk_size"], {}))
    summary = pd.DataFrame(rows)
    write_dataframe(summary.round(4), out(cfg.run_dir / names.CHUNK_SIZES_SUMMARY))
    k = 10 if 10 in rc.k_values else max(rc.k_values)
    cols = [
        "chunk_size",
        "questions",
        "system",
        "n_questions",
        "n_source_chunks",
        f"ndcg@{k}",
        f"recall@{k}",
        f"coverage@{min(rc.k_values)}",
        f"coverage@{k}",
        f"mrr@{k}",
    ]
    write_dataframe(
        summary[[c for c in cols if c in summary]].round(3), out(cfg.run_dir / names.CHUNK_SIZES_SUMMARY_MD)
    )
    write_dataframe(pd.DataFrame(costs), out(cfg.run_dir / names.CHUNK_SIZES_COSTS))
    return {
        "sizes": list(cs.sizes),
        "question_sets": {n: len(q) for n, q in sets.items()},
        "dense_model": rc.dense.model,
        "systems": list(rc.systems),
        "costs": costs,
        "graded_questions": cs.grade_questions,
    }


def grade_sizes(cfg: Config, per_size: dict, sets: dict, out) -> dict:
    """Table 1 at every size on the same `grade_questions` questions of the run's set; returns
    per size the pairs graded and the judge's seconds per pair."""
    from ..lib.judge.relevance import grade_lists, grade_pairs, plan_pairs, select_questions, table1
    from ..lib.llm import open_llm
    from ..lib.names import reranked

    cs = cfg.chunk_study
    gcfg = copy.deepcopy(cfg)
    gcfg.grading.top_k = list(cs.grade_top_k)
    # Table 1's row groups: each first-stage retriever with its reranked list, where the study runs both
    gcfg.grading.retrievers = [r for r in cfg.grading.retrievers if r in cs.systems and reranked(r) in cs.systems]
    if not gcfg.grading.retrievers:
        raise InputError(
            "chunk_study.grade_questions > 0 needs a first-stage retriever of grading.retrievers "
            f"and its reranked system in chunk_study.systems (have {cs.systems})"
        )
    name = "run" if "run" in sets else next(iter(sets))
    chosen = {q["qid"] for q in select_questions(sets[name], cs.grade_questions, cfg.seed)}
    llm = open_llm(cfg.models.judge, cfg.cache_dir)
    llm.stage = "chunk-sizes"
    out_stats = {}
    try:
        for size in cs.sizes:
            placed, res, chunk_list = per_size[(size, name)]
            questions = [q for q in placed if q["qid"] in chosen]
            rankings = {s: {q: [c for c, _ in r] for q, r in per_q.items()} for s, per_q in res.rankings.items()}
            chunks = {c.chunk_id: c for c in chunk_list}
            pairs = plan_pairs(gcfg.table_design(), questions, rankings, chunks)
            t0 = time.perf_counter()
            calls_before = llm.stats.to_dict().get("calls", 0)
            rows = grade_pairs(
                llm, pairs, {cid: c.text for cid, c in chunks.items()}, judging=cfg.grading.judging(cfg.root)
            )
            seconds = time.perf_counter() - t0
            calls = llm.stats.to_dict().get("calls", 0) - calls_before
            grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in rows}
            long = table1(
                grade_lists(gcfg.table_design(), questions, rankings, grades), cfg.grading.n_bootstrap, cfg.seed
            )
            long.insert(0, "chunk_size", size)
            write_dataframe(long, out(study_dir(cfg) / str(size)) / names.TABLE1)
            write_jsonl(out(study_dir(cfg) / str(size)) / names.GRADES, rows)
            out_stats[size] = {
                "graded_questions": len(questions),
                "pairs_graded": len(rows),
                "judge_calls": calls,
                "seconds_per_pair": round(seconds / calls, 2) if calls else None,
                "prompt_tokens_per_pair": round(sum(r["prompt_tokens"] or 0 for r in rows) / max(len(rows), 1)),
            }
    finally:
        llm.release()
    return out_stats


def _models(cfg: Config) -> dict:
    m = {"tokenizer": _tokenizer(cfg), "dense": cfg.chunk_study.dense_model or cfg.retrieval.dense.model}
    if any(s.endswith("+rerank") for s in cfg.chunk_study.systems):
        m["reranker"] = cfg.retrieval.reranker.model
    if cfg.chunk_study.grade_questions:
        m["judge"] = cfg.models.judge.model
    return m


STAGE = Stage(
    name="chunk-sizes",
    doc="retrieval (and Table 1) at each chunk size, scored against evidence spans",
    home=study_dir,
    outputs=outputs,
    build=build,
    after=("retrieve",),
    sections=lambda cfg: (
        ["chunk_study", "chunking", "retrieval", "seed", "corpus.golden_samples"]
        + (["grading.prompt", "grading.n_bootstrap", "models.judge"] if cfg.chunk_study.grade_questions else [])
    ),
    reads=lambda cfg: [documents_path(cfg), questions_path(cfg), golden_path(cfg)],
    prompts=lambda cfg: [cfg.grading.prompt] if cfg.chunk_study.grade_questions else [],
    models=_models,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
