"""Anchor check: our retrieval layer on a public BEIR dataset, beside published figures.

    python bench/beir_anchor.py --beir-dir ../shared/beir/scifact --out results/bench/beir_anchor.json
    python bench/beir_anchor.py --beir-dir ../shared/beir/scifact --systems bm25,bm25+rerank \\
        --rerank-kind cross-encoder --rerank-model trained:NAME   # -> results/bench/beir_anchor_cross.json

Runs bm25, dense (embedded all-MiniLM-L6-v2), bm25+rerank and dense+rerank and hybrid (RRF) on the
queries of --split (and X+rescore: X's pool rescored by --rescore-model, bi-encoder rescoring, beside
a cross-encoder's X+rerank), and prints nDCG@10 and Recall@100, each with its 95% t interval (clustered by
document when the corpus rows carry a `doc_id`), the paired difference of every system from BM25
(and of X+rerank from X), and throughput. The second stage rescores each query's first-stage top
--pool (100): `--rerank-kind biencoder` is bi-encoder rescoring (embedded all-mpnet-base-v2 cosine);
`cross-encoder` a cross-encoder reading query and passage together, NAME as `spacelm models list`
gives it (a model the suite trained is `trained:<name>`; its training data is written beside the
figures, and a model trained on any of the evaluated queries is refused). Any BEIR-format folder
works, `qrels.tsv` beside the corpus too. Embeddings are cached in --cache-dir.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import BM25Config, DenseConfig, HybridConfig, RerankerConfig, RetrievalConfig  # noqa: E402
from spacelm.lib.retrieval.beir import load_beir  # noqa: E402
from spacelm.lib.retrieval.bm25 import BM25Retriever  # noqa: E402
from spacelm.lib.retrieval.dense import DenseRetriever  # noqa: E402
from spacelm.lib.retrieval.metrics import evaluate  # noqa: E402
from spacelm.lib.retrieval.rerankers import make_reranker  # noqa: E402
from spacelm.lib.retrieval.rerankers.settings import second_stage_name  # noqa: E402
from spacelm.lib.retrieval.systems import HybridRetriever, RerankedRetriever  # noqa: E402

METRICS = ("ndcg@10", "recall@100")

# Published SciFact (test) figures, for the printout (see README "Retrieval anchor").
PUBLISHED = {
    "bm25": {
        "ndcg@10": 0.6789,
        "source": "Anserini BM25 flat (title+text), k1=0.9 b=0.4; BEIR paper 0.665; bm25s 0.687",
    },
    "dense": {"ndcg@10": 0.645, "source": "all-MiniLM-L6-v2 on MTEB SciFact"},
    "bm25+rerank": {
        "ndcg@10": 0.682,
        "source": "BEIR: BM25 top-100 + ms-marco-MiniLM-L-6-v2 cross-encoder; ours is bi-encoder "
        "rescoring with all-mpnet-base-v2 (no cross-encoder ships on PyPI)",
    },
    "dense+rerank": {"ndcg@10": 0.656, "source": "nearest published: all-mpnet-base-v2 alone (MTEB) 0.656"},
    "hybrid": {"ndcg@10": None, "source": "no published figure"},
    "bm25+rescore": {"ndcg@10": None, "source": "no published figure (bi-encoder rescoring)"},
    "dense+rescore": {"ndcg@10": None, "source": "no published figure (bi-encoder rescoring)"},
}
# ... and with a cross-encoder as the second stage (the figures issue 39 names)
PUBLISHED_CROSS_ENCODER = {
    "bm25+rerank": {
        "ndcg@10": 0.688,
        "source": "BEIR (Thakur et al. 2021): BM25 top-100 reranked by the MS MARCO MiniLM-L6 cross-encoder; "
        "InPars-v2 (3B reranker, synthetic queries) 0.774",
    },
    "dense+rerank": {"ndcg@10": None, "source": "no published figure"},
}


def model_spec(name: str) -> str:
    """A model as `spacelm models list` names it (`minilm`, `trained:ce-x`, `ce-x`) as a config spec
    (`embedded:minilm`, `trained:ce-x`); a path or hub name is returned as it is."""
    from spacelm.lib.llm.models import EMBEDDED, TRAINED_PREFIX, trained_names

    if name.startswith(("embedded:", TRAINED_PREFIX)):
        return name
    if name in EMBEDDED:
        return f"embedded:{name}"
    if name in trained_names():
        return TRAINED_PREFIX + name
    return name


def trained_record(spec: str) -> dict | None:
    """The trained model's record (base model, training data, seconds), or None for other models."""
    from spacelm.lib.llm.models import is_trained, read_trained, trained_name

    return read_trained(trained_name(spec)) if is_trained(spec) else None


def leaked_queries(record: dict | None, beir_dir: Path, qids: list[str]) -> list[tuple[str, int]]:
    """(labelled set, how many of `qids`) for each labelled set the model was trained on that holds
    evaluated queries of this same corpus: evaluating on them would measure memory, not ranking."""
    if not record:
        return []
    from spacelm.lib.io import sha256_file

    corpus_sha = sha256_file(Path(beir_dir) / "corpus.jsonl")
    out = []
    for src in record.get("training", {}).get("sources", []):
        if src.get("corpus_sha256") == corpus_sha and src.get("query_ids"):
            n = len(set(qids) & set(src["query_ids"]))
            if n:
                out.append((f"{src['name']} ({src.get('split')})", n))
    return out


def doc_clusters(beir_dir: Path, qrels: dict) -> dict[str, str] | None:
    """{query: document of its best-graded passage} when the corpus rows carry `doc_id` (passages
    cut from longer documents, as the space-corpus reference labels are), else None (one query, one unit)."""
    docs = {}
    with open(Path(beir_dir) / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("doc_id"):
                docs[str(row["_id"])] = str(row["doc_id"])
    if not docs:
        return None
    return {q: docs.get(max(rel, key=lambda d: (rel[d], d)), q) for q, rel in qrels.items() if rel}


def corpus_from_chunks(path: Path) -> tuple[list[str], list[str], dict[str, str]]:
    """(ids, texts, {chunk id: document}) of a `chunks.jsonl` the chunk stage wrote: a labelled folder's
    queries are then ranked over the whole chunked corpus, not only over its judged pool."""
    from spacelm.lib.io import read_jsonl

    rows = read_jsonl(path)
    return [r["chunk_id"] for r in rows], [r["text"] for r in rows], {r["chunk_id"]: r["doc_id"] for r in rows}


def judged_share(rankings: list, qrels: dict, qids: list[str], k: int = 10) -> float:
    """Share of the top-k passages that carry a judgement (a pool's coverage: unjudged ones count as 0)."""
    seen = [d in qrels[q] for q, r in zip(qids, rankings) for d, _ in r[:k]]
    return round(sum(seen) / max(len(seen), 1), 4)


def interval(values: list[float], clusters: list | None) -> list[float]:
    from spacelm.lib.stats import cluster_t

    c = cluster_t(values, clusters)
    return [round(c["ci_low"], 4), round(c["ci_high"], 4)]


def paired(per_query: dict, a: str, b: str, qids: list[str], clusters: dict | None) -> dict:
    """b − a per metric over the queries: mean difference, its cluster-robust 95% CI and p-value."""
    from spacelm.lib.stats import paired_difference

    out = {}
    for m in METRICS:
        d = paired_difference(
            [per_query[a][m].get(q, 0.0) for q in qids],
            [per_query[b][m].get(q, 0.0) for q in qids],
            [clusters.get(q, q) for q in qids] if clusters else None,
        )
        out[m] = {
            "diff": round(d["diff"], 4),
            "ci": [round(d["ci_low"], 4), round(d["ci_high"], 4)],
            "p_value": round(d["p_value"], 6) if d["p_value"] == d["p_value"] else None,
            "n_clusters": d["n_clusters"],
        }
    return out


class TimedReranker:
    """A reranker whose rescoring time and pair count are recorded (the first stage's time is not)."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0
        self.pairs = 0

    def rescore(self, queries, pools):
        t = time.perf_counter()
        out = self.inner.rescore(queries, pools)
        self.seconds += time.perf_counter() - t
        self.pairs += sum(len(p) for p in pools)
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir-dir", default=str(ROOT.parent / "shared" / "beir" / "scifact"))
    ap.add_argument(
        "--out",
        default=None,
        help="default results/bench/beir_anchor.json; results/bench/beir_anchor_cross.json for a cross-encoder",
    )
    ap.add_argument("--split", default="test")
    ap.add_argument("--systems", default="bm25,dense,bm25+rerank,dense+rerank,hybrid")
    ap.add_argument("--max-queries", type=int, default=None, help="evaluate on the first N queries only")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "spacelm"))
    ap.add_argument("--dense-model", default="embedded:minilm")
    ap.add_argument("--rerank-kind", default="biencoder", choices=["biencoder", "cross-encoder"])
    ap.add_argument(
        "--rerank-model", default=None, help="default embedded:mpnet (biencoder); a cross-encoder needs one"
    )
    ap.add_argument("--rerank-precision", default="fp32", choices=["fp32", "int8"])
    ap.add_argument("--rerank-batch-size", type=int, default=16)
    ap.add_argument("--rescore-model", default="embedded:mpnet", help="the bi-encoder of the X+rescore systems")
    ap.add_argument("--pool", type=int, default=100, help="first-stage passages the second stage rescores")
    ap.add_argument(
        "--chunks",
        default=None,
        help="rank over this chunks.jsonl (e.g. data/processed/space_corpus-256/chunks.jsonl) instead of the "
        "folder's corpus.jsonl; its chunk ids must be the qrels' passage ids",
    )
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    args = ap.parse_args(argv)
    cross = args.rerank_kind == "cross-encoder"
    names = args.systems.split(",")
    if cross and not args.rerank_model and any("+rerank" in n for n in names):
        ap.error("--rerank-kind cross-encoder needs --rerank-model NAME (see `spacelm models list`)")
    rerank_model = model_spec(args.rerank_model or "embedded:mpnet")
    default_out = ROOT / "results" / "bench" / ("beir_anchor_cross.json" if cross else "beir_anchor.json")
    out_path = Path(args.out or default_out)

    data = load_beir(Path(args.beir_dir), args.split)
    qids = sorted(data.queries)[: args.max_queries] if args.max_queries else sorted(data.queries)
    queries = [data.queries[q] for q in qids]
    qrels = {q: data.qrels[q] for q in qids}
    ids, texts = data.passages()
    doc_of = None
    if args.chunks:
        ids, texts, doc_of = corpus_from_chunks(Path(args.chunks))
        judged = {d for q in qids for d in qrels[q]}
        missing = judged - set(doc_of)
        if missing:
            print(
                f"beir_anchor: {len(missing)} of {len(judged)} judged passages are not in {args.chunks}",
                file=sys.stderr,
            )
    record = trained_record(rerank_model) if any("+rerank" in n for n in names) else None
    leaks = leaked_queries(record, Path(args.beir_dir), qids)
    if leaks:
        print(
            f"beir_anchor: {rerank_model} was trained on evaluated queries of this corpus "
            f"({', '.join(f'{n} of them from {s}' for s, n in leaks)}); evaluate on another split",
            file=sys.stderr,
        )
        return 2
    clusters = doc_clusters(Path(args.beir_dir), qrels)
    if doc_of and not clusters:
        clusters = {q: doc_of.get(max(rel, key=lambda d: (rel[d], d)), q) for q, rel in qrels.items() if rel}
    cfg = RetrievalConfig(
        bm25=BM25Config(k1=args.k1, b=args.b),
        dense=DenseConfig(model=args.dense_model),
        hybrid=HybridConfig(),
        reranker=RerankerConfig(
            kind=args.rerank_kind,
            model=rerank_model,
            batch_size=args.rerank_batch_size,
            precision=args.rerank_precision,
        ),
    )
    cache = Path(args.cache_dir)
    print(f"{Path(args.beir_dir).name}: {len(ids)} passages, {len(qids)} queries", flush=True)

    out: dict = {
        "models": {
            "bm25": f"bm25s lucene k1={args.k1} b={args.b}, English stemmer + stopwords",
            "dense": args.dense_model,
            "reranker": f"{args.rerank_kind}:{rerank_model}",
            "second_stage": second_stage_name(args.rerank_kind),
            "precision": args.rerank_precision if cross else None,
            "pool": args.pool,
        },
        "dataset": {
            "dir": str(args.beir_dir),
            "split": args.split,
            "passages": len(ids),
            "queries": len(qids),
            "ranked_over": args.chunks or "corpus.jsonl",
        },
        "intervals": "95% cluster-robust t intervals, clustered by "
        + ("the document of each query's best-graded passage" if clusters else "query (Student's t)"),
        "throughput": {},
    }
    if record:
        from spacelm.lib.llm.models import trained_identity, trained_name

        out["reranker_model"] = trained_identity(trained_name(rerank_model))
        out["training"] = {
            "sources": [{k: v for k, v in s.items() if k != "query_ids"} for s in record["training"]["sources"]],
            "pairs": record["training"]["pairs"],
            "held_out": record["training"].get("held_out"),
            "seconds": record.get("result", {}).get("seconds"),
            "pairs_per_second": record.get("result", {}).get("pairs_per_second"),
            "settings": record.get("settings"),
        }
    t = time.perf_counter()
    bm25 = BM25Retriever(cfg.bm25).index(ids, texts)
    out["throughput"]["bm25_index_s"] = round(time.perf_counter() - t, 2)
    dense = None
    if any(n.startswith(("dense", "hybrid")) for n in names):
        dense = DenseRetriever.from_config(cfg.dense, cache)
        t = time.perf_counter()
        dense.index(ids, texts)
        dt = time.perf_counter() - t
        if dense.encoder.encoded:
            out["throughput"]["encode_passages_per_s"] = round(dense.encoder.encoded / dt, 1)
    reranker = rescorer = None
    if any("+rerank" in n for n in names):
        t = time.perf_counter()
        reranker = TimedReranker(make_reranker(cfg.reranker, dict(zip(ids, texts)), cache))
        out["throughput"]["reranker_load_s"] = round(time.perf_counter() - t, 2)
    if any("+rescore" in n for n in names):
        rescore_cfg = RerankerConfig(kind="biencoder", model=model_spec(args.rescore_model))
        rescorer = TimedReranker(make_reranker(rescore_cfg, dict(zip(ids, texts)), cache))
        out["models"]["rescore"] = f"bi-encoder rescoring:{rescore_cfg.model}"
    systems = {
        "bm25": bm25,
        "dense": dense,
        "hybrid": HybridRetriever([bm25, dense], cfg.hybrid.depth, cfg.hybrid.rrf_k) if dense else None,
    }
    for n in names:
        if n.endswith(("+rerank", "+rescore")):
            second = reranker if n.endswith("+rerank") else rescorer
            systems[n] = RerankedRetriever(systems[n.split("+")[0]], second, args.pool)

    per_query: dict = {}
    # the published figures are SciFact test's: another folder is printed without them
    scifact = Path(args.beir_dir).name == "scifact" and args.split == "test"
    published = {**PUBLISHED, **(PUBLISHED_CROSS_ENCODER if cross else {})} if scifact else {}
    for n in names:
        second = rescorer if n.endswith("+rescore") else reranker
        before = (second.seconds, second.pairs, getattr(second.inner, "pairs", 0)) if second else (0.0, 0, 0)
        t = time.perf_counter()
        rankings = systems[n].search(queries, 100)
        dt = time.perf_counter() - t
        ev = evaluate(qrels, dict(zip(qids, rankings)), list(METRICS), per_query=True)
        per_query[n] = ev["per_query"]
        unit = [clusters.get(q, q) for q in qids] if clusters else None
        row = {
            "ndcg@10": round(ev["mean"]["ndcg@10"], 4),
            "recall@100": round(ev["mean"]["recall@100"], 4),
            **{f"{m}_ci": interval([per_query[n][m].get(q, 0.0) for q in qids], unit) for m in METRICS},
            "judged@10": judged_share(rankings, qrels, qids),
            "queries_per_s": round(len(qids) / dt, 2),
            "seconds": round(dt, 2),
        }
        if n.endswith(("+rerank", "+rescore")):
            secs, pairs = second.seconds - before[0], second.pairs - before[1]
            scored = getattr(second.inner, "pairs", None)  # a cross-encoder scores a pair once per process
            row["rerank_pairs_scored"] = None if scored is None else scored - before[2]
            row["rerank_seconds"] = round(secs, 2)
            row["rerank_pairs"] = pairs
            row["rerank_ms_per_pair"] = round(1000 * secs / max(row["rerank_pairs_scored"] or pairs, 1), 3)
            row["rerank_seconds_per_query"] = round(secs / max(len(qids), 1), 3)
            row["rerank_pairs_per_s"] = round(pairs / max(secs, 1e-9), 1)
        pub = published.get(n, {})
        row["published_ndcg@10"] = pub.get("ndcg@10")
        row["published_source"] = pub.get("source")
        if pub.get("ndcg@10") is not None:
            row["gap"] = round(row["ndcg@10"] - pub["ndcg@10"], 4)
            row["within_0.02"] = abs(row["gap"]) <= 0.02
        out[n] = row
        ci = row["ndcg@10_ci"]
        print(
            f"{n:<14} nDCG@10 {row['ndcg@10']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]  R@100 {row['recall@100']:.4f}  "
            f"{row['queries_per_s']:>8.1f} q/s" + (f"   published {pub['ndcg@10']}  ({pub['source']})" if pub else ""),
            flush=True,
        )
    comparisons = {}
    for n in names:
        first = n.split("+")[0]
        rescored = f"{first}+rescore" if n.endswith("+rerank") and f"{first}+rescore" in names else first
        for base in dict.fromkeys(["bm25", first, rescored]):
            if n != base and base in per_query:
                comparisons[f"{n} - {base}"] = paired(per_query, base, n, qids, clusters)
    out["paired"] = comparisons
    for k, v in comparisons.items():
        d = v["ndcg@10"]
        print(f"{k:<28} nDCG@10 {d['diff']:+.4f} [{d['ci'][0]:+.4f}, {d['ci'][1]:+.4f}]  p={d['p_value']}")

    # BM25 search speed alone (index already built), as in bm25s's own benchmark
    t = time.perf_counter()
    bm25.search(queries, 10)
    out["throughput"]["bm25_queries_per_s"] = round(len(qids) / (time.perf_counter() - t), 1)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["throughput"]))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
