"""Anchor check: our retrieval layer on a public BEIR dataset, beside published figures.

    python bench/beir_anchor.py --beir-dir ../shared/beir/scifact --out results/beir_anchor.json

Runs bm25, dense (embedded all-MiniLM-L6-v2), bm25+rerank and dense+rerank (embedded
all-mpnet-base-v2 rescoring the top-100 pool) and hybrid (RRF), and prints nDCG@10 and
Recall@100 with throughput. Embeddings are cached in --cache-dir, so a re-run is fast.
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
from spacelm.lib.retrieval.metrics import evaluate  # noqa: E402
from spacelm.lib.retrieval.systems import (  # noqa: E402
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    RerankedRetriever,
    make_reranker,
)

# Published SciFact (test) figures, for the printout (see README "Retrieval anchor").
PUBLISHED = {
    "bm25": {
        "ndcg@10": 0.6789,
        "source": "Anserini BM25 flat (title+text), k1=0.9 b=0.4; BEIR paper 0.665; bm25s 0.687",
    },
    "dense": {"ndcg@10": 0.645, "source": "all-MiniLM-L6-v2 on MTEB SciFact"},
    "bm25+rerank": {
        "ndcg@10": 0.682,
        "source": "BEIR: BM25 top-100 + ms-marco-MiniLM-L-6-v2 cross-encoder; ours "
        "rescores with the all-mpnet-base-v2 bi-encoder (no cross-encoder ships on PyPI)",
    },
    "dense+rerank": {"ndcg@10": 0.656, "source": "nearest published: all-mpnet-base-v2 alone (MTEB) 0.656"},
    "hybrid": {"ndcg@10": None, "source": "no published figure"},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir-dir", default=str(ROOT.parent / "shared" / "beir" / "scifact"))
    ap.add_argument("--out", default=str(ROOT / "results" / "beir_anchor.json"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--systems", default="bm25,dense,bm25+rerank,dense+rerank,hybrid")
    ap.add_argument("--max-queries", type=int, default=None, help="evaluate on the first N queries only")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "spacelm"))
    ap.add_argument("--dense-model", default="embedded:minilm")
    ap.add_argument("--rerank-kind", default="biencoder", choices=["biencoder", "cross-encoder"])
    ap.add_argument("--rerank-model", default="embedded:mpnet")
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    args = ap.parse_args(argv)

    data = load_beir(Path(args.beir_dir), args.split)
    qids = sorted(data.queries)[: args.max_queries] if args.max_queries else sorted(data.queries)
    queries = [data.queries[q] for q in qids]
    qrels = {q: data.qrels[q] for q in qids}
    ids, texts = data.passages()
    names = args.systems.split(",")
    cfg = RetrievalConfig(
        bm25=BM25Config(k1=args.k1, b=args.b),
        dense=DenseConfig(model=args.dense_model),
        hybrid=HybridConfig(),
        reranker=RerankerConfig(kind=args.rerank_kind, model=args.rerank_model),
    )
    cache = Path(args.cache_dir)
    print(f"{Path(args.beir_dir).name}: {len(ids)} passages, {len(qids)} queries", flush=True)

    out: dict = {
        "models": {
            "bm25": f"bm25s lucene k1={args.k1} b={args.b}, English stemmer + stopwords",
            "dense": args.dense_model,
            "reranker": f"{args.rerank_kind}:{args.rerank_model}",
            "pool": cfg.pool,
        },
        "dataset": {"dir": str(args.beir_dir), "passages": len(ids), "queries": len(qids)},
        "throughput": {},
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
    reranker = make_reranker(cfg.reranker, dict(zip(ids, texts)), cache) if any("+rerank" in n for n in names) else None
    systems = {
        "bm25": bm25,
        "dense": dense,
        "hybrid": HybridRetriever([bm25, dense], cfg.hybrid.depth, cfg.hybrid.rrf_k) if dense else None,
    }
    for n in names:
        if n.endswith("+rerank"):
            systems[n] = RerankedRetriever(systems[n.split("+")[0]], reranker, cfg.pool)

    for n in names:
        t = time.perf_counter()
        rankings = systems[n].search(queries, 100)
        dt = time.perf_counter() - t
        scores = evaluate(qrels, dict(zip(qids, rankings)), ["ndcg@10", "recall@100"])["mean"]
        row = {
            "ndcg@10": round(scores["ndcg@10"], 4),
            "recall@100": round(scores["recall@100"], 4),
            "queries_per_s": round(len(qids) / dt, 2),
            "seconds": round(dt, 2),
        }
        if n.endswith("+rerank") and hasattr(reranker, "encoder"):
            row["rerank_pairs_per_s"] = round(len(qids) * cfg.pool / dt, 1)
        pub = PUBLISHED.get(n, {})
        row["published_ndcg@10"] = pub.get("ndcg@10")
        row["published_source"] = pub.get("source")
        if pub.get("ndcg@10") is not None:
            row["gap"] = round(row["ndcg@10"] - pub["ndcg@10"], 4)
            row["within_0.02"] = abs(row["gap"]) <= 0.02
        out[n] = row
        print(
            f"{n:<14} nDCG@10 {row['ndcg@10']:.4f}  R@100 {row['recall@100']:.4f}  "
            f"{row['queries_per_s']:>8.1f} q/s   published {pub.get('ndcg@10')}  ({pub.get('source')})",
            flush=True,
        )

    # BM25 search speed alone (index already built), as in bm25s's own benchmark
    t = time.perf_counter()
    bm25.search(queries, 10)
    out["throughput"]["bm25_queries_per_s"] = round(len(qids) / (time.perf_counter() - t), 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["throughput"]))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
