"""What a chunk size costs on a corpus: chunks, tokens, and the seconds each model spends per
chunk, measured on a sample of chunks at every size in one process (ratios between sizes hold
across machines; absolute seconds are this machine's).

    python bench/chunk_size_cost.py --config configs/paper_chunks.yaml [--sample 24] [--pairs 6] \
        [--out results/bench/chunk_size_cost.json]

Per size: the documents are chunked with the study's tokenizer; `--sample` chunks are drawn
(seeded) and encoded by the study's dense model and by the reranker, and `--pairs` (question,
chunk) pairs are graded by the judge with the Table 1 prompt (the questions are golden samples;
the grade itself is not the point, its cost is). The projection multiplies by the corpus's
chunk count: the cost of indexing the corpus at that size, and of one graded pair. Encoders run
without the embedding cache so every passage is really encoded.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.ingest.chunking import chunk_documents  # noqa: E402
from spacelm.lib.synth.golden import load_golden  # noqa: E402
from spacelm.pipeline import run_stages  # noqa: E402
from spacelm.runner.data import golden_path, load_documents  # noqa: E402


def time_encoder(spec: str, texts: list[str], passage_prefix: str = "") -> float:
    from spacelm.lib.retrieval.dense import make_encoder

    enc = make_encoder(spec, 8, "", passage_prefix, None, None)
    enc.encode_passages(texts[:1])  # warm-up: model load and first allocation outside the timing
    t0 = time.perf_counter()
    enc.encode_passages(texts)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "paper_chunks.yaml"))
    ap.add_argument("--sample", type=int, default=24, help="chunks encoded per size and model")
    ap.add_argument("--pairs", type=int, default=6, help="pairs graded per size (0: no judge)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "chunk_size_cost.json"))
    args = ap.parse_args(argv)

    cfg = load_config(args.config)
    cs = cfg.chunk_study
    run_stages(cfg, upto="ingest")
    docs = load_documents(cfg)
    tokenizer = cs.tokenizer or cfg.chunking.tokenizer
    dense = cs.dense_model or cfg.retrieval.dense.model
    questions = [s.question for s in load_golden(golden_path(cfg)) if s.answerable]
    judge = None
    if args.pairs:
        from spacelm.lib.llm import open_llm

        judge = open_llm(cfg.models.judge, None)  # no call cache: every pair is really graded
    out = {
        "config": str(Path(args.config).name),
        "corpus_pages": sum(d.n_pages for d in docs),
        "dense_model": dense,
        "reranker": cfg.retrieval.reranker.model,
        "judge": cfg.models.judge.model,
        "tokenizer": tokenizer,
        "sample": args.sample,
        "pairs": args.pairs,
        "sizes": [],
    }
    try:
        for size in cs.sizes:
            chunks = chunk_documents(docs, size, tokenizer, cfg.chunking.overlap)
            rng = random.Random(f"cost-{size}")
            sample = rng.sample(chunks, min(args.sample, len(chunks)))
            texts = [c.text for c in sample]
            tokens = sum(c.n_tokens for c in sample)
            row = {
                "chunk_size": size,
                "chunks": len(chunks),
                "corpus_tokens": sum(c.n_tokens for c in chunks),
                "sample_tokens": tokens,
            }
            for role, spec in (("dense", dense), ("reranker", cfg.retrieval.reranker.model)):
                secs = time_encoder(spec, texts)
                row[f"{role}_s_per_1k_tokens"] = round(1000 * secs / tokens, 3)
                row[f"{role}_s_per_chunk"] = round(secs / len(texts), 3)
                row[f"{role}_corpus_index_s"] = round(secs / len(texts) * len(chunks), 1)
            if judge is not None:
                from spacelm.lib.judge.relevance import grade_pairs

                pairs = [
                    {"qid": f"q{i}", "question": rng.choice(questions), "chunk_id": c.chunk_id, "purpose": ["cost"]}
                    for i, c in enumerate(sample[: args.pairs])
                ]
                t0 = time.perf_counter()
                rows = grade_pairs(judge, pairs, {c.chunk_id: c.text for c in sample}, template=cfg.grading.prompt)
                secs = time.perf_counter() - t0
                row["judge_s_per_pair"] = round(secs / len(pairs), 2)
                row["judge_prompt_tokens_per_pair"] = round(sum(r["prompt_tokens"] or 0 for r in rows) / len(rows))
            out["sizes"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        if judge is not None:
            judge.release()
    base = out["sizes"][0]
    for row in out["sizes"]:
        for key in ("dense_s_per_chunk", "judge_s_per_pair"):
            if key in row and key in base and base[key]:
                row[f"{key}_ratio_to_{base['chunk_size']}"] = round(row[key] / base[key], 2)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
