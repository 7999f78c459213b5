"""Stage 3b, chunk-sizes (when `chunk_study.sizes` is set): the same documents chunked at each
size, every retrieval system run on the same questions, scored against chunk-independent gold
(each question's evidence span; `lib/retrieval/span_gold.py`), and optionally Table 1 at each size.

Writes `results/<run>/chunk_sizes/<size>/retrieval/summary.csv` and `per_query.jsonl` per size
and question set, `chunk_sizes/<size>/table1_relevance.csv` and `paired_tests.csv` when grading
(the findings read the latter at the paper's sizes), and the comparison
`chunk_sizes/summary.csv` (one row per size, question set and system, with 95% CIs on nDCG and
recall), the paired differences of each size from the smallest (`chunk_sizes/differences.csv`),
the paired tests between systems at each size (`<size>/<set>/retrieval/significance.csv`), and
the cost of each size (`chunk_sizes/costs.csv`: chunks, tokens, encoding seconds per 1,000
tokens, seconds per graded pair). The report's "Chunk sizes" section reads these."""

from __future__ import annotations

import copy
import time
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.io import InputError, write_dataframe, write_jsonl
from ..runner.base import ModelTurns, Stage, execute
from ..runner.data import (
    documents_path,
    golden_path,
    golden_questions,
    load_chunks,
    load_documents,
    load_questions,
    questions_path,
)
from . import chunk_budget


def study_dir(cfg: Config):
    return cfg.run_dir / names.CHUNK_SIZES


def outputs(cfg: Config):
    d = study_dir(cfg)
    r = cfg.run_dir
    out = [r / names.CHUNK_SIZES_SUMMARY, r / names.CHUNK_SIZES_SUMMARY_MD, r / names.CHUNK_SIZES_COSTS]
    if len(cfg.chunk_study.sizes) > 1:
        out.append(r / names.CHUNK_SIZES_DIFFERENCES)
    for size in cfg.chunk_study.sizes:
        out += [d / str(size)]
    return out + chunk_budget.outputs(cfg)


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
    from ..runner.data import _place

    moved = [dict(q, source_chunk_id=None) for q in questions]
    _place(moved, {c.chunk_id: c for c in chunks})
    return [q for q in moved if q["source_chunk_id"]]


class SizeRetrieval(NamedTuple):
    """One chunk size and question set: the questions placed on that chunking, its chunks, the
    retrieval evaluation (`retrieve.RetrievalEval`) and the paired tests between its systems."""

    size: int
    question_set: str
    questions: list[dict]
    chunks: list
    evaluation: object
    significance: object = None  # pandas DataFrame, lib.retrieval.metrics.compare (None with one system)
    reading: dict = None  # {system: {qid: [chunk_id, ...]}} deep enough for the largest reader budget


def main_metrics(k_values) -> list[str]:
    """The metrics the study tests and gives CIs for: nDCG and recall at 10 (or the largest k)."""
    k = 10 if 10 in k_values else max(k_values)
    return [f"ndcg@{k}", f"recall@{k}"]


def base_clusters(questions: list[dict]) -> dict:
    """{qid: the question's source chunk in the run's own chunking}: the cluster of the paired
    tests at every size, so that a question keeps its cluster whatever the chunk size (questions
    written from one chunk are not independent)."""
    return {q["qid"]: q.get("source_chunk_id") or q["qid"] for q in questions}


def metric_cis(per_query: list[dict], system: str, metrics: list[str], clusters: dict) -> dict:
    """{metric_ci_low, metric_ci_high}: the 95% cluster-robust t interval of each metric's mean
    over the questions `system` ranked, kept within the metric's range [0, 1]."""
    from ..lib.stats import cluster_t

    rows = [r for r in per_query if r["system"] == system]
    out = {}
    for m in metrics:
        c = cluster_t([r[m] for r in rows], [clusters.get(r["qid"], r["qid"]) for r in rows])
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = max(c["ci_low"], 0.0), min(c["ci_high"], 1.0)
    return out


def _system_tests(res, k_values, clusters: dict):
    """The paired tests between the systems at one size (None with one system)."""
    from ..lib.retrieval.metrics import compare

    if len(res.rankings) < 2:
        return None
    return compare(res.qrels, res.rankings, main_metrics(k_values), stat_test="student", clusters=clusters)


def size_differences(retrieval: list[SizeRetrieval], sets: dict, metrics: list[str]):
    """Each chunk size against the smallest, per question set, system and metric: the mean
    difference (larger − smallest) over the questions placed at both sizes, its 95%
    cluster-robust t interval and p-value (clusters: each question's source chunk in the run's
    own chunking), Holm-adjusted within each question set and metric, and the smallest
    difference detectable at α = 0.05 with 80% power. The gold is the same evidence span at
    every size, so the difference is the chunking's; a larger chunk holds more of any span,
    which recall at equal k rewards by construction."""
    import pandas as pd

    from ..lib.stats import holm, paired_difference

    if not retrieval:
        return pd.DataFrame()
    smallest = min(r.size for r in retrieval)
    base = {r.question_set: r for r in retrieval if r.size == smallest}
    rows = []
    for r in (r for r in retrieval if r.size != smallest):
        a_run, clusters = base[r.question_set], base_clusters(sets[r.question_set])
        for system in r.evaluation.rankings:
            a = {q["qid"]: q for q in a_run.evaluation.per_query if q["system"] == system}
            b = {q["qid"]: q for q in r.evaluation.per_query if q["system"] == system}
            qids = sorted(set(a) & set(b))
            for m in metrics:
                d = paired_difference([a[q][m] for q in qids], [b[q][m] for q in qids], [clusters[q] for q in qids])
                rows.append(
                    {
                        "questions": r.question_set,
                        "system": system,
                        "metric": m,
                        "size_a": smallest,
                        "size_b": r.size,
                        "n_questions": d["n"],
                        "n_source_chunks": d["n_clusters"],
                        "mean_a": sum(a[q][m] for q in qids) / max(len(qids), 1),
                        "mean_b": sum(b[q][m] for q in qids) / max(len(qids), 1),
                        **{k: d[k] for k in ("diff", "ci_low", "ci_high", "p_value", "se", "df", "mde")},
                    }
                )
    out = pd.DataFrame(rows)
    if not out.empty:
        out["p_holm"] = float("nan")
        for _, idx in out.groupby(["questions", "metric"]).groups.items():
            out.loc[idx, "p_holm"] = [float("nan") if p is None else p for p in holm(list(out.loc[idx, "p_value"]))]
    return out


class SizeGrades(NamedTuple):
    """Table 1 at one chunk size: the graded rows, the table, its paired tests (reranked −
    retrieved, dense − BM25; clustered over the questions' source chunks at that size) and what
    the grading cost."""

    size: int
    rows: list[dict]
    table: object  # pandas DataFrame, Table 1 in long form with the size in front
    tests: object  # pandas DataFrame, lib.judge.relevance.paired_tests at this size
    stats: dict


class ChunkStudy(NamedTuple):
    """What the chunk-size study computes: per size and question set the retrieval evaluation,
    the comparison rows, the paired differences between sizes, the cost of each size, and Table
    1 per size when grading."""

    sets: dict  # {question set: questions}
    retrieval: list[SizeRetrieval]
    rows: list[dict]
    costs: list[dict]
    grades: list[SizeGrades]
    differences: object = None  # pandas DataFrame, size_differences
    budget: tuple = None  # (equal-budget table, its differences): chunk_budget.compute
    gate: dict = None  # {size: {graded, reason}}: whether Table 1 was graded there (chunk_gate.table1_gate)


def retrieval_at_size(cfg: Config, docs: list, sets: dict, size: int) -> tuple[list[SizeRetrieval], list[dict], dict]:
    """Chunk `docs` at `size` tokens, index every system, evaluate every question set against
    span gold: (evaluations, comparison rows, the size's cost row)."""
    from ..lib.ingest.chunking import chunk_documents
    from ..lib.retrieval.systems import build_systems, pool_size
    from .chunk_budget import deep_rankings
    from .retrieve import evaluate_retrieval

    rc = _retrieval_config(cfg)
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
    evaluated, rows, search = [], [], 0.0
    for name, questions in sets.items():
        placed = on_chunks(questions, chunks)
        res = evaluate_retrieval(rc, placed, [], chunks, systems, depth, pool)
        clusters = base_clusters(questions)
        tests = _system_tests(res, rc.k_values, clusters)
        reading = deep_rankings(systems, placed, chunks, max(cfg.chunk_study.budgets), res.rankings)
        evaluated.append(SizeRetrieval(size, name, placed, chunks, res, tests, reading))
        search += sum(res.timings.values())
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
                    **metric_cis(res.per_query, r["system"], main_metrics(rc.k_values), clusters),
                }
            )
    cost = {
        "chunk_size": size,
        "chunks": len(chunks),
        "tokens": tokens,
        "tokens_mean": round(tokens / max(len(chunks), 1), 1),
        "tokens_max": max(c.n_tokens for c in chunks),
        "chunking_seconds": round(t_chunk, 2),
        "index_seconds": round(t_index, 2),
        "dense_model": rc.dense.model if dense is not None else None,
        "dense_passages_encoded": getattr(dense, "encoded", None),
        "rerank_pool": pool,
        "search_seconds": round(search, 2),
        # the dense index's cost per 1,000 tokens when every chunk was encoded (not cached)
        "index_seconds_per_1k_tokens": round(1000 * t_index / tokens, 3)
        if tokens and getattr(dense, "encoded", 0) == len(chunks)
        else None,
    }
    return evaluated, rows, cost


def compute(cfg: Config, docs: list, sets: dict, models: ModelTurns) -> ChunkStudy:
    """Retrieval at every size on every question set, then Table 1 at every size on the same
    `grade_questions` questions when asked (the judge through `models`)."""
    retrieval, rows, costs = [], [], []
    for size in cfg.chunk_study.sizes:
        evaluated, size_rows, cost = retrieval_at_size(cfg, docs, sets, size)
        retrieval += evaluated
        rows += size_rows
        costs.append(cost)
    gate = _table1_gate(cfg, retrieval, sets) if cfg.chunk_study.grade_questions else {}
    gradable = [r for r in retrieval if gate.get(r.size, {}).get("graded")]
    grades = grade_sizes(cfg, gradable, sets, models) if gradable else []
    by_size = {g.size: g.stats for g in grades}
    for c in costs:
        c.update(by_size.get(c["chunk_size"], {}))
    differences = size_differences(retrieval, sets, main_metrics(cfg.retrieval.k_values))
    budget = chunk_budget.compute(cfg, retrieval)
    return ChunkStudy(sets, retrieval, rows, costs, grades, differences, budget, gate)


def _table1_gate(cfg: Config, retrieval: list[SizeRetrieval], sets: dict) -> dict:
    """chunk_gate.table1_gate on the study's chunkings, before the judge loads."""
    from .chunk_gate import table1_gate

    name = "run" if "run" in sets else next(iter(sets), None)
    questions = [q["question"] for q in sets.get(name, [])]
    return table1_gate(cfg, {r.size: r.chunks for r in retrieval}, questions)


def write(cfg: Config, result: ChunkStudy, out) -> dict:
    """Per size and question set the retrieval summary and per-query rows; per size Table 1 and
    its grades; the comparison (csv, md) and the costs. Returns the stage summary."""
    import pandas as pd

    d, rc = study_dir(cfg), _retrieval_config(cfg)
    for size in cfg.chunk_study.sizes:
        out(d / str(size)).mkdir(parents=True, exist_ok=True)
    for r in result.retrieval:
        folder = out(d / str(r.size)) / r.question_set
        (folder / names.RETRIEVAL).mkdir(parents=True, exist_ok=True)
        write_dataframe(r.evaluation.summary.round(4), folder / names.RETRIEVAL_SUMMARY)
        write_jsonl(folder / names.RETRIEVAL_PER_QUERY, r.evaluation.per_query)
        if r.significance is not None:
            write_dataframe(r.significance.round(4), folder / names.RETRIEVAL_SIGNIFICANCE)
    for g in result.grades:
        write_dataframe(g.table, out(d / str(g.size)) / names.TABLE1)
        write_jsonl(out(d / str(g.size)) / names.GRADES, g.rows)
        write_dataframe(g.tests, out(d / str(g.size)) / names.CHUNK_SIZE_TESTS)
    summary = pd.DataFrame(result.rows)
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
    write_dataframe(pd.DataFrame(result.costs), out(cfg.run_dir / names.CHUNK_SIZES_COSTS))
    if result.differences is not None and not result.differences.empty:
        write_dataframe(result.differences.round(4), out(cfg.run_dir / names.CHUNK_SIZES_DIFFERENCES))
    if result.budget is not None:
        chunk_budget.write(cfg, *result.budget, out)
    return {
        "sizes": list(cfg.chunk_study.sizes),
        "question_sets": {n: len(q) for n, q in result.sets.items()},
        "dense_model": rc.dense.model if names.reads_dense(rc.systems) else None,
        "systems": list(rc.systems),
        "costs": result.costs,
        "graded_questions": cfg.chunk_study.grade_questions,
        "table1_gate": result.gate or {},
    }


def build(cfg: Config, out) -> dict:
    docs = load_documents(cfg)
    models = ModelTurns(cfg, "chunk-sizes")
    summary = write(cfg, compute(cfg, docs, question_sets(cfg, docs), models), out)
    if models.stats.get("judge"):
        summary.update(llm=models.stats["judge"], model_identity=models.identity.get("judge", {}))
    return summary


def grade_sizes(cfg: Config, retrieval: list[SizeRetrieval], sets: dict, models: ModelTurns) -> list[SizeGrades]:
    """Table 1 at every size on the same `grade_questions` questions of the run's set, the judge
    reached through `models`; per size the graded rows, the table, the pairs graded and the
    judge's seconds per pair."""
    from ..lib.judge.relevance import grade_lists, grade_pairs, paired_tests, plan_pairs, select_questions, table1
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
    judging = cfg.grading.judging(cfg.root)
    out = []
    for r in (r for r in retrieval if r.question_set == name):
        questions = [q for q in r.questions if q["qid"] in chosen]
        rankings = {s: {q: [c for c, _ in rk] for q, rk in per_q.items()} for s, per_q in r.evaluation.rankings.items()}
        chunks = {c.chunk_id: c for c in r.chunks}
        pairs = plan_pairs(gcfg.table_design(), questions, rankings, chunks)
        text_of = {cid: c.text for cid, c in chunks.items()}
        calls_before = models.stats.get("judge", {}).get("calls", 0)
        t0 = time.perf_counter()
        rows = models.use(
            "judge",
            lambda llm, todo=pairs, texts=text_of: grade_pairs(llm, todo, texts, judging=judging),
            f"relevance grades at {r.size}",
        )
        seconds = time.perf_counter() - t0
        calls = models.stats.get("judge", {}).get("calls", 0) - calls_before
        grades = {(g["qid"], g["chunk_id"]): g["grade"] for g in rows}
        # questions whose evidence lies in one chunk of this size share that chunk's lists: one cluster
        cluster_of = {q["qid"]: q["source_chunk_id"] for q in questions}
        cells = grade_lists(gcfg.table_design(), questions, rankings, grades)
        long = table1(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of)
        long.insert(0, "chunk_size", r.size)
        tests = paired_tests(cells, gcfg.table_design(), cluster_of)
        tests.insert(0, "chunk_size", r.size)
        stats = {
            "graded_questions": len(questions),
            "pairs_graded": len(rows),
            "judge_calls": calls,
            "seconds_per_pair": round(seconds / calls, 2) if calls else None,
            "prompt_tokens_per_pair": round(sum(g["prompt_tokens"] or 0 for g in rows) / max(len(rows), 1)),
        }
        out.append(SizeGrades(r.size, rows, long, tests, stats))
    models.release()
    return out


def _models(cfg: Config) -> dict:
    m = {"tokenizer": _tokenizer(cfg)}
    if names.reads_dense(cfg.chunk_study.systems):
        m["dense"] = cfg.chunk_study.dense_model or cfg.retrieval.dense.model
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
