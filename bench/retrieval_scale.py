"""Retrieval cost at the paper's scale: ~7,000 questions over ~1,500 chunks, top-100, BM25 and
dense, excluding encoding; and at 4x and 16x the corpus.

    python bench/retrieval_scale.py [--queries 7000] [--base-chunks 1500] [--scales 1,4,16]

Corpora are built from the sample corpus's chunks: texts are repeated with a distinct tag per
copy (so BM25 sees a larger vocabulary and postings), embeddings are the real chunk embeddings
plus small noise. Queries are sentences sampled from the chunks (synthetic queries, since the
paper-scale question set does not exist here); their embeddings are perturbed chunk
embeddings, so query encoding is excluded as the goal says.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import BM25Config, DenseConfig, load_config  # noqa: E402
from spacelm.lib.retrieval.bm25 import BM25Retriever  # noqa: E402
from spacelm.lib.retrieval.dense import DenseRetriever, Encoder  # noqa: E402
from spacelm.runner.data import load_chunks  # noqa: E402


class _Precomputed(Encoder):
    """Encoder stand-in returning given query vectors (encoding is excluded from the timing)."""

    def __init__(self, queries: np.ndarray):
        self.q = queries

    def encode_queries(self, texts):
        return self.q[: len(texts)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "quick.yaml"))
    ap.add_argument("--queries", type=int, default=7000)
    ap.add_argument("--base-chunks", type=int, default=1500)
    ap.add_argument("--scales", default="1,4,16")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "retrieval_scale.json"))
    args = ap.parse_args(argv)

    cfg = load_config(args.config)
    rng = random.Random(0)
    nrng = np.random.default_rng(0)
    chunks = load_chunks(cfg)
    texts0 = [c.text for c in chunks]
    enc = DenseRetriever.from_config(DenseConfig(model=cfg.retrieval.dense.model), cfg.cache_dir).encoder
    emb0 = enc.encode_passages(texts0)
    sentences = [s for t in texts0 for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 6]
    queries = [rng.choice(sentences) for _ in range(args.queries)]
    qemb = emb0[nrng.integers(0, len(emb0), args.queries)] + nrng.normal(0, 0.02, (args.queries, emb0.shape[1]))
    qemb = (qemb / np.linalg.norm(qemb, axis=1, keepdims=True)).astype(np.float32)

    results = {"queries": args.queries, "k": args.k, "scales": {}}
    for scale in [int(s) for s in args.scales.split(",")]:
        n = args.base_chunks * scale
        idx = [i % len(texts0) for i in range(n)]
        ids = [f"c{i}" for i in range(n)]
        texts = [f"{texts0[j]} copy{i // len(texts0)}" for i, j in enumerate(idx)]
        embs = emb0[idx] + nrng.normal(0, 0.01, (n, emb0.shape[1])).astype(np.float32)
        embs /= np.linalg.norm(embs, axis=1, keepdims=True)

        t = time.perf_counter()
        bm25 = BM25Retriever(BM25Config()).index(ids, texts)
        bm25_index = time.perf_counter() - t
        t = time.perf_counter()
        bm25.search(queries, args.k)
        bm25_s = time.perf_counter() - t

        import faiss

        dense = DenseRetriever(_Precomputed(qemb))
        dense.ids = ids
        dense.index_ = faiss.IndexFlatIP(embs.shape[1])
        dense.index_.add(embs.astype(np.float32))
        t = time.perf_counter()
        dense.search(queries, args.k)
        dense_s = time.perf_counter() - t
        row = {
            "chunks": n,
            "bm25_index_s": round(bm25_index, 2),
            "bm25_search_s": round(bm25_s, 2),
            "dense_search_s": round(dense_s, 2),
            "both_s": round(bm25_s + dense_s, 2),
        }
        results["scales"][f"{scale}x"] = row
        print(
            f"{scale:>3}x  {n:>6} chunks  BM25 {bm25_s:6.1f}s  dense {dense_s:6.1f}s  "
            f"both {bm25_s + dense_s:6.1f}s  (BM25 index {bm25_index:.1f}s)",
            flush=True,
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
