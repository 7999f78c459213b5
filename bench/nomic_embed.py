"""nomic-embed-text-v1.5 (f16 GGUF through llama.cpp's embedding mode) beside the default dense
encoder all-MiniLM-L6-v2, on BEIR SciFact: retrieval quality and encoding cost.

    python bench/nomic_embed.py --cost-docs 200 --no-eval        # estimate: cost on a sample only
    python bench/nomic_embed.py --cost-docs 0                    # quality on a 1,000-passage SciFact corpus
    python bench/nomic_embed.py --cost-docs 0 --corpus-sample 0  # ... on the whole corpus (~95 min on 2 cores)

1. Cost, measured in one process on the same sample of passages for both encoders (no cache,
   after a warm-up, `--cost-repeats` alternating rounds, best round kept): seconds per 1,000
   tokens, tokens counted with each model's own tokenizer — both the tokens the model actually
   ran (after its truncation: 256 word pieces for MiniLM, 2,048 tokens for nomic) and the input
   tokens before truncation.
2. Quality: dense retrieval over the whole corpus (title + text, as BEIR's flat baselines),
   nDCG@10 and Recall@100 on the test queries, beside published figures. Passage embeddings go
   to the embedding cache in --cache-dir as they are made, so an interrupted run resumes and a
   re-run costs only the queries.
Threads: --threads (default 2) for both torch and llama.cpp.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.lib.retrieval.beir import load_beir  # noqa: E402
from spacelm.lib.retrieval.dense import DenseRetriever, Encoder  # noqa: E402
from spacelm.lib.retrieval.gguf_embedding import GGUFEncoder, is_gguf_embedding  # noqa: E402
from spacelm.lib.retrieval.metrics import evaluate  # noqa: E402
from spacelm.lib.stats import cluster_t, paired_difference  # noqa: E402

NOMIC = "embedded:nomic-embed-text-v1.5"
MINILM = "embedded:minilm"

# Published SciFact (test) nDCG@10, for the printout.
PUBLISHED = {
    MINILM: {"ndcg@10": 0.645, "source": "all-MiniLM-L6-v2 on MTEB SciFact (as in bench/beir_anchor.py)"},
    NOMIC: {
        "ndcg@10": 0.70,
        "source": "nomic-embed-text-v1.5 on MTEB SciFact: about 0.70-0.71 (task brief); the exact "
        "leaderboard number was not found in the searchable reference corpus, so no "
        "within-0.02 verdict is drawn from it",
    },
}


def make(spec: str, threads: int, cache_dir):
    if is_gguf_embedding(spec):
        return GGUFEncoder(spec, cache_dir=cache_dir, n_threads=threads)
    return Encoder(spec, cache_dir=cache_dir)


def token_counts(enc, texts: list[str]) -> tuple[int, int]:
    """(tokens the model runs after its truncation, input tokens before it), each model's own tokenizer."""
    if isinstance(enc, GGUFEncoder):
        full = [len(enc.tokenize(enc.passage_prefix + t)) for t in texts]
        return sum(min(n, enc.n_ctx) for n in full), sum(full)
    tok = enc.model.tokenizer
    full = [len(ids) for ids in tok([enc.passage_prefix + t for t in texts], add_special_tokens=True)["input_ids"]]
    return sum(min(n, enc.model.max_seq_length) for n in full), sum(full)


def measure_cost(specs: list[str], texts: list[str], threads: int, repeats: int) -> dict:
    encs = {s: make(s, threads, None) for s in specs}
    counts = {s: token_counts(e, texts) for s, e in encs.items()}
    for e in encs.values():  # warm-up (graph allocation, first-call overheads)
        e.encode_passages(texts[:4])
    rounds: dict = {s: [] for s in specs}
    for r in range(repeats):
        for s in specs if r % 2 == 0 else specs[::-1]:
            t = time.perf_counter()
            encs[s].encode_passages(texts)
            rounds[s].append(time.perf_counter() - t)
            print(f"  cost round {r + 1}: {s:<32} {rounds[s][-1]:7.1f} s for {len(texts)} passages", flush=True)
    out = {}
    for s in specs:
        best = min(rounds[s])
        ran, given = counts[s]
        out[s] = {
            "passages": len(texts),
            "tokens_run": ran,
            "tokens_input": given,
            "seconds_best": round(best, 2),
            "seconds_rounds": [round(x, 2) for x in rounds[s]],
            "s_per_1k_tokens_run": round(best / ran * 1000, 4),
            "s_per_1k_tokens_input": round(best / given * 1000, 4),
            "tokens_run_per_s": round(ran / best, 1),
            "passages_per_s": round(len(texts) / best, 2),
        }
    del encs
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir-dir", default=str(ROOT.parent / "shared" / "beir" / "scifact"))
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "nomic_embed.json"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--models", default=f"{MINILM},{NOMIC}")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "spacelm"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--cost-docs",
        type=int,
        default=200,
        help="passages in the cost sample (random, seed 0); 0 keeps the cost from the previous --out",
    )
    ap.add_argument("--cost-repeats", type=int, default=2)
    ap.add_argument("--no-eval", action="store_true", help="measure the cost only (and estimate the full run)")
    ap.add_argument(
        "--corpus-sample",
        type=int,
        default=1000,
        help="evaluate on a reduced corpus: every passage relevant to a test query plus seeded random "
        "others up to this many (default 1000, ~20 min for nomic on 2 cores; 0: the whole corpus, "
        "~95 min there). Both models see the same passages; the "
        "figures are higher than on the whole corpus and compare with each other, not with "
        "published ones",
    )
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    specs = args.models.split(",")
    data = load_beir(Path(args.beir_dir), args.split)
    qids = sorted(data.queries)
    queries = [data.queries[q] for q in qids]
    qrels = {q: data.qrels[q] for q in qids}
    ids, texts = data.passages()
    full_size = len(ids)
    if args.corpus_sample and args.corpus_sample < len(ids):
        relevant = {d for q in qids for d in qrels[q]}
        others = [i for i in ids if i not in relevant]
        keep = relevant | set(random.Random(1).sample(others, max(0, args.corpus_sample - len(relevant))))
        ids, texts = map(list, zip(*[(i, t) for i, t in zip(ids, texts) if i in keep]))
    print(f"{Path(args.beir_dir).name}: {len(ids)} passages, {len(qids)} queries; threads {args.threads}", flush=True)

    out: dict = {
        "dataset": {
            "dir": os.path.relpath(args.beir_dir, ROOT),
            "split": args.split,
            "passages": len(ids),
            "queries": len(qids),
            "corpus": "whole"
            if len(ids) == full_size
            else f"reduced: every passage relevant to a test query + seeded random others, {len(ids)} of "
            f"{full_size} (figures compare between the models, not with published ones)",
        },
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
    }
    old = {}
    if Path(args.out).is_file():
        old = json.loads(Path(args.out).read_text())
    if args.cost_docs > 0:
        sample = random.Random(0).sample(texts, min(args.cost_docs, len(texts)))
        print(f"cost on {len(sample)} sampled passages ...", flush=True)
        cost = measure_cost(specs, sample, args.threads, args.cost_repeats)
        for s in specs:
            c = cost[s]
            full_run = c["tokens_run"] / len(sample) * len(texts) * c["s_per_1k_tokens_run"] / 1000
            c["estimated_full_corpus_s"] = round(full_run)
            print(
                f"{s:<32} {c['s_per_1k_tokens_run']:.3f} s / 1k tokens run ({c['tokens_run_per_s']:.0f} tok/s, "
                f"{c['passages_per_s']:.2f} passages/s); {c['s_per_1k_tokens_input']:.3f} s / 1k input tokens; "
                f"full corpus ~{full_run / 60:.0f} min",
                flush=True,
            )
        out["cost"] = {
            "sample_passages": len(sample),
            "sample_seed": 0,
            "per_model": cost,
            "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        }
    else:
        out["cost"] = old.get("cost", {})  # --cost-docs 0: keep the previous run's cost measurement
    if args.no_eval:
        out["retrieval"] = old.get("retrieval", {})
        out["note"] = "cost only (--no-eval); retrieval kept from the previous run if any"
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.out}")
        return 0

    out["retrieval"] = {}
    per_query: dict = {}
    for s in specs:
        t = time.perf_counter()
        r = DenseRetriever(make(s, args.threads, Path(args.cache_dir)))
        for i in range(0, len(texts), 256):  # fill the cache in slices: an interrupted run resumes
            r.encoder.encode_passages(texts[i : i + 256])
            print(
                f"  {s}: {min(i + 256, len(texts))}/{len(texts)} passages ({r.encoder.encoded} encoded now, "
                f"{time.perf_counter() - t:.0f} s)",
                flush=True,
            )
        r.index(ids, texts, progress=None)  # every passage from the cache now
        t_index = time.perf_counter() - t
        t = time.perf_counter()
        rankings = r.search(queries, 100)
        t_search = time.perf_counter() - t
        ev = evaluate(qrels, dict(zip(qids, rankings)), ["ndcg@10", "recall@100"], per_query=True)
        scores = ev["mean"]
        per_query[s] = ev["per_query"]
        ci = cluster_t([per_query[s]["ndcg@10"][q] for q in qids])
        pub = PUBLISHED.get(s, {}) if len(ids) == full_size else {}  # published figures are whole-corpus ones
        enc = r.encoder
        row = {
            "ndcg@10": round(scores["ndcg@10"], 4),
            "recall@100": round(scores["recall@100"], 4),
            "ndcg@10_ci95": [round(ci["ci_low"], 4), round(ci["ci_high"], 4)],
            "n_queries": len(qids),
            "passages_encoded_this_run": enc.encoded,
            "index_s": round(t_index, 1),
            "queries_s": round(t_search, 2),
            "query_prefix": enc.query_prefix,
            "passage_prefix": enc.passage_prefix,
            "max_tokens": getattr(enc, "n_ctx", None) or enc.model.max_seq_length,
            "published_ndcg@10": pub.get("ndcg@10"),
            "published_source": pub.get("source"),
        }
        if isinstance(enc, GGUFEncoder):
            row["passages_truncated"] = enc.truncated
        if pub.get("ndcg@10") is not None:
            row["gap"] = round(row["ndcg@10"] - pub["ndcg@10"], 4)
        out["retrieval"][s] = row
        print(
            f"{s:<32} nDCG@10 {row['ndcg@10']:.4f}  R@100 {row['recall@100']:.4f}  ({len(qids)} queries; "
            f"index {t_index:.0f} s, {enc.encoded} passages encoded now; published {pub.get('ndcg@10')})",
            flush=True,
        )
        del r
    if len(specs) >= 2:
        out["paired"] = paired_rows(specs, qids, per_query)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


def paired_rows(specs: list[str], qids: list[str], per_query: dict) -> list[dict]:
    """Each model against the first on the same queries: the mean per-query difference (b − a) with
    its 95% t interval and the paired t test's p-value (queries are independent in BEIR)."""
    rows = []
    a = specs[0]
    for b in specs[1:]:
        for m in ("ndcg@10", "recall@100"):
            d = paired_difference([per_query[a][m][q] for q in qids], [per_query[b][m][q] for q in qids])
            wins = sum(per_query[b][m][q] > per_query[a][m][q] for q in qids)
            losses = sum(per_query[b][m][q] < per_query[a][m][q] for q in qids)
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "metric": m,
                    "n_queries": d["n"],
                    "diff_b_minus_a": round(d["diff"], 4),
                    "ci95": [round(d["ci_low"], 4), round(d["ci_high"], 4)],
                    "p_value": None if d["p_value"] != d["p_value"] else float(f"{d['p_value']:.3g}"),
                    "mde_80pct_power": None if d["mde"] != d["mde"] else round(d["mde"], 4),
                    "wins_b": int(wins),
                    "ties": len(qids) - int(wins) - int(losses),
                    "wins_a": int(losses),
                    "test": "paired t over queries",
                }
            )
            r = rows[-1]
            print(f"{b} − {a} {m}: {r['diff_b_minus_a']:+.4f} {r['ci95']} p {r['p_value']}", flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
