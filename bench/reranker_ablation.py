"""Which cross-encoder reranks this corpus: an ablation on the in-domain reference labels.

    python bench/reranker_ablation.py --chunks data/processed/space_corpus-256/chunks.jsonl \
        --labels ../shared/judge/space-corpus --out results/bench/reranker_ablation.json \
        [--queries 1500] [--variants segcos,cls]

Training data, with no model call: **pseudo-queries cut from the corpus** — a sentence of 8-30 words
of a chunk is the query, the chunk with that sentence removed is the positive, and three of BM25's
top-10 for the query that hold no part of the source chunk (another document, or the same document
beyond the neighbouring chunks) are the negatives. Chunks of the labelled pool and their neighbours
are held out (the labels measure, never train). Variants, each trained on the same groups with the
listwise loss of `lib/retrieval/cross_encoder.py`:

- `segcos`: the suite's segment-cosine cross-encoder (mean states of query and passage, scaled cosine);
- `cls`: a relevance head over the joint [CLS] state (sentence-transformers' CrossEncoder layout);
- `base`: the segment-cosine scorer over the shipped MiniLM with no training at all;

and each also interpolated with BM25 (`+bm25`): per query, both scores z-normalised over the pool and
mixed with weight w fitted on training data only, never on the labels: on held-back pseudo-queries, or
with `--fit-set DIR` on a labelled set's train split (BEIR layout, e.g. SciFact train: BM25 top-20 per
query, nDCG@10 with unjudged passages as not relevant). Rows are merged into `--out` when it exists.

Evaluation: the labels' answerable queries with a passage graded 2 or 3; BM25 top-100 over the
whole chunk set, reranked; nDCG@10 on the judged passages only (the pool is BM25 and MiniLM top-4,
so unjudged passages are left out of each list: condensed lists, and the pool's coverage is printed),
per query, paired with BM25, 95% bootstrap CI over queries; and the share of top-3 passages under 400
characters beside BM25's.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def read_jsonl(p):
    return [json.loads(x) for x in Path(p).read_text(encoding="utf-8").splitlines() if x.strip()]


def load(chunks_path, labels_dir):
    chunks = read_jsonl(chunks_path)
    by_id = {c["chunk_id"]: c for c in chunks}
    queries = {str(r["_id"]): r for r in read_jsonl(Path(labels_dir) / "queries.jsonl")}
    labelled = {str(r["_id"]): r for r in read_jsonl(Path(labels_dir) / "corpus.jsonl")}
    qrels: dict = {}
    for i, line in enumerate((Path(labels_dir) / "qrels.tsv").read_text().splitlines()):
        parts = line.split("\t")
        if i == 0 or len(parts) != 3:
            continue
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    same = sum(
        1
        for d in labelled
        if d in by_id and " ".join(by_id[d]["text"].split()) == " ".join(labelled[d]["text"].split())
    )
    return chunks, by_id, queries, qrels, same / max(1, len(labelled))


def held_out(chunks, qrels):
    """The labelled pool's chunks and their neighbours (same document, index ± 1)."""
    pool = {d for q in qrels.values() for d in q}
    out = set()
    for c in chunks:
        doc, _, idx = c["chunk_id"].rpartition(":")
        if any(f"{doc}:{int(idx) + k}" in pool for k in (-1, 0, 1)):
            out.add(c["chunk_id"])
    return out


def pseudo_queries(chunks, held, n, seed, bm25_rank):
    """Groups (query, [positive text, negative texts...]) cut from the corpus, no model call."""
    rng = random.Random(seed)
    pool = [c for c in chunks if c["chunk_id"] not in held]
    rng.shuffle(pool)
    cands = []
    for c in pool:
        sents = [
            s
            for s in SENTENCE.split(c["text"])
            if 8 <= len(s.split()) <= 30 and sum(ch.isalpha() for ch in s) > 0.7 * len(s)
        ]
        if not sents:
            continue
        s = rng.choice(sents)
        rest = c["text"].replace(s, " ").strip()
        if len(rest.split()) < 20:
            continue
        cands.append((s, c, rest))
        if len(cands) >= n:
            break
    ranks = bm25_rank([s for s, _, _ in cands], 12)
    by_id = {c["chunk_id"]: c for c in chunks}
    groups = []
    for (s, c, rest), ranking in zip(cands, ranks):
        doc, _, idx = c["chunk_id"].rpartition(":")
        near = {f"{doc}:{int(idx) + k}" for k in (-1, 0, 1)}
        negs = [d for d in ranking if d not in near and d not in held][:10]
        if len(negs) < 3:
            continue
        picked = rng.sample(negs, 3)
        groups.append((s, [rest] + [by_id[d]["text"] for d in picked]))
    return groups


def untrained(base, max_length=256):
    """The segment-cosine scorer over the encoder at `base`, as shipped (no training)."""
    from spacelm.lib.retrieval.segment_cosine import SegmentCosineCrossEncoder

    ce = SegmentCosineCrossEncoder.from_encoder(base, max_length)
    ce.model.eval()
    return (lambda pairs: [float(x) for x in ce.predict(pairs, batch_size=32)]), {
        "steps": 0,
        "seconds": 0.0,
        "loss_first": None,
        "loss_last": None,
    }


def ndcg10_full(ranked, rel):
    """nDCG@10 with unjudged passages counted as not relevant (a set whose qrels list only positives)."""
    import math

    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:10]))
    return dcg / idcg if idcg else 0.0


def fit_w_on_set(score, folder, n_queries):
    """The BM25 weight maximising nDCG@10 on a labelled set's train split (BM25 top-20 reranked)."""
    import numpy as np

    from spacelm.lib.retrieval.bm25 import BM25Config, BM25Retriever

    corpus = read_jsonl(Path(folder) / "corpus.jsonl")
    qs = {str(r["_id"]): r["text"] for r in read_jsonl(Path(folder) / "queries.jsonl")}
    qrels: dict = {}
    for i, line in enumerate((Path(folder) / "qrels" / "train.tsv").read_text().splitlines()):
        p = line.split("\t")
        if i and len(p) == 3:
            qrels.setdefault(p[0], {})[p[1]] = int(p[2])
    text = {str(c["_id"]): (c.get("title", "") + " " + c["text"]).strip() for c in corpus}
    bm = BM25Retriever(BM25Config()).index(list(text), list(text.values()))
    tq = sorted(q for q in qrels if q in qs)[:n_queries]
    hits = bm.search([qs[q] for q in tq], 20)
    cs = [score([(qs[q], text[d]) for d, _ in h]) for q, h in zip(tq, hits)]
    best = (-1.0, 0.0)
    for w in np.linspace(0, 1, 11):
        nd = []
        for q, h, c in zip(tq, hits, cs):
            s = (1 - w) * zs(c) + w * zs([b for _, b in h])
            nd.append(ndcg10_full([h[i][0] for i in np.argsort(-s, kind="stable")], qrels[q]))
        best = max(best, (float(np.mean(nd)), float(w)))
    return best[1], best[0]


def train(variant, groups, base, seed, max_length=256, lr=3e-5, batch_groups=4):
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    from spacelm.lib.retrieval.cross_encoder import listwise_loss
    from spacelm.lib.retrieval.segment_cosine import SegmentCosineCrossEncoder

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(base)
    if variant == "segcos":
        ce = SegmentCosineCrossEncoder(AutoModel.from_pretrained(base), tok, max_length)
        model = ce.model

        def logits(qs, ps):
            return ce.logits(qs, ps)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)

        def logits(qs, ps):
            f = tok(
                list(qs), list(ps), padding=True, truncation="longest_first", max_length=max_length, return_tensors="pt"
            )
            return model(**f).logits.squeeze(-1)

    head = [p for n, p in model.named_parameters() if n.startswith("classifier")]
    body = [p for n, p in model.named_parameters() if not n.startswith("classifier")]
    opt = torch.optim.AdamW([{"params": body, "lr": lr}] + ([{"params": head, "lr": 1e-3}] if head else []))
    order = list(range(len(groups)))
    random.Random(seed).shuffle(order)
    steps = [order[i : i + batch_groups] for i in range(0, len(order), batch_groups)]
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.1 * len(steps))) * max(0.0, 1 - s / len(steps))
    )
    model.train()
    t0, losses = time.perf_counter(), []
    for b in steps:
        qs = [groups[g][0] for g in b for _ in groups[g][1]]
        ps = [p for g in b for p in groups[g][1]]
        lab = torch.tensor([1.0 if j == 0 else 0.0 for g in b for j in range(len(groups[g][1]))])
        loss = listwise_loss(logits(qs, ps), lab, [len(groups[g][1]) for g in b])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()

    def score(pairs, bs=32):
        out = []
        with torch.inference_mode():
            for i in range(0, len(pairs), bs):
                out += [float(x) for x in logits([q for q, _ in pairs[i : i + bs]], [p for _, p in pairs[i : i + bs]])]
        return out

    tenth = max(1, len(losses) // 10)
    return score, {
        "steps": len(steps),
        "seconds": round(time.perf_counter() - t0, 1),
        "loss_first": round(sum(losses[:tenth]) / tenth, 3),
        "loss_last": round(sum(losses[-tenth:]) / tenth, 3),
    }


def zs(xs):
    import numpy as np

    a = np.asarray(xs, dtype=float)
    return (a - a.mean()) / (a.std() + 1e-9)


def fit_w(score, bm25_scores_of, dev):
    """The BM25 weight w maximising the positive's mean reciprocal rank on held-back pseudo-queries."""
    import numpy as np

    per = []
    for (q, texts), b in zip(dev, bm25_scores_of):
        per.append((zs(score([(q, t) for t in texts])), zs(b)))
    best = (0.0, -1.0)
    for w in np.linspace(0, 1, 11):
        mrr = np.mean(
            [1.0 / (1 + int(np.sum((1 - w) * c[1:] + w * bb[1:] > (1 - w) * c[0] + w * bb[0]))) for c, bb in per]
        )
        best = max(best, (mrr, w))
    return float(best[1]), float(best[0])


def ndcg10(ranked, rel):
    import math

    judged = [d for d in ranked if d in rel][:10]
    dcg = sum((2 ** rel[d] - 1) / math.log2(i + 2) for i, d in enumerate(judged))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def paired(a, b, seed=0, n=2000):
    import numpy as np

    d = np.asarray(b) - np.asarray(a)
    rng = np.random.default_rng(seed)
    boots = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(n)]
    return {
        "diff": round(float(d.mean()), 4),
        "ci": [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--out", default="results/bench/reranker_ablation.json")
    ap.add_argument("--queries", type=int, default=1500)
    ap.add_argument("--variants", default="segcos,cls")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-eval", type=int, default=None, help="at most this many evaluation queries (a smoke test)")
    ap.add_argument("--fit-set", help="fit the BM25 weight on this BEIR folder's train split (e.g. SciFact)")
    ap.add_argument("--fit-queries", type=int, default=80)
    args = ap.parse_args(argv)
    import numpy as np

    from spacelm.lib.llm.models import resolve_model_path
    from spacelm.lib.retrieval.bm25 import BM25Config, BM25Retriever

    chunks, by_id, queries, qrels, same = load(args.chunks, args.labels)
    bm25 = BM25Retriever(BM25Config()).index([c["chunk_id"] for c in chunks], [c["text"] for c in chunks])

    def rank(qs, depth):
        return [[d for d, _ in r] for r in bm25.search(qs, depth)]

    held = held_out(chunks, qrels)
    groups = pseudo_queries(chunks, held, args.queries, args.seed, rank)
    dev, train_groups = groups[:150], groups[150:]
    evalq = [q for q, r in qrels.items() if q in queries and max(r.values()) >= 2][: args.max_eval]
    hits = bm25.search([queries[q]["text"] for q in evalq], 100)
    pools = {q: [(d, s) for d, s in h] for q, h in zip(evalq, hits)}
    base_rank = {q: [d for d, _ in p] for q, p in pools.items()}
    out = {
        "labels_text_match": round(same, 3),
        "eval_queries": len(evalq),
        "pool_coverage_top10": round(
            float(np.mean([sum(d in qrels[q] for d in base_rank[q][:10]) / 10 for q in evalq])), 3
        ),
        "train_groups": len(train_groups),
        "held_out_chunks": len(held),
        "bm25": {"ndcg@10": round(float(np.mean([ndcg10(base_rank[q], qrels[q]) for q in evalq])), 4)},
    }
    short = lambda ranking: float(np.mean([len(by_id[d]["text"]) < 400 for d in ranking[:3]]))
    out["bm25"]["short_top3"] = round(float(np.mean([short(base_rank[q]) for q in evalq])), 4)
    base = resolve_model_path("embedded:minilm")
    bm_ndcg = [ndcg10(base_rank[q], qrels[q]) for q in evalq]
    if Path(args.out).is_file():  # earlier variants' rows are kept
        out = {**json.loads(Path(args.out).read_text()), **out}
    for variant in args.variants.split(","):
        score, info = untrained(base) if variant == "base" else train(variant, train_groups, base, args.seed)
        if args.fit_set:
            w, dev_mrr = fit_w_on_set(score, args.fit_set, args.fit_queries)
            info = {**info, "bm25_weight_fitted_on": f"{Path(args.fit_set).name} train, {args.fit_queries} queries"}
        else:
            dev_bm = []
            for q, texts in dev:
                # BM25 scores of the dev group's passages for its query: an index over those passages alone
                idx = BM25Retriever(BM25Config()).index([str(i) for i in range(len(texts))], texts)
                got = dict(idx.search([q], len(texts))[0])
                dev_bm.append([got.get(str(i), 0.0) for i in range(len(texts))])
            w, dev_mrr = fit_w(score, dev_bm, dev)
        t0 = time.perf_counter()
        ce = {q: score([(queries[q]["text"], by_id[d]["text"]) for d, _ in pools[q]]) for q in evalq}
        per_q_s = (time.perf_counter() - t0) / len(evalq)
        for name, mix in ((variant, 0.0), (f"{variant}+bm25 (w {w:.1f})", w)):
            ranked = {}
            for q in evalq:
                s = (1 - mix) * zs(ce[q]) + mix * zs([b for _, b in pools[q]])
                ranked[q] = [pools[q][i][0] for i in np.argsort(-s, kind="stable")]
            nd = [ndcg10(ranked[q], qrels[q]) for q in evalq]
            out[name] = {
                **info,
                "rerank_seconds_per_query": round(per_q_s, 2),
                "bm25_weight": mix,
                "dev_mrr": round(dev_mrr, 3),
                "ndcg@10": round(float(np.mean(nd)), 4),
                "vs_bm25": paired(bm_ndcg, nd),
                "short_top3": round(float(np.mean([short(ranked[q]) for q in evalq])), 4),
            }
            print(name, json.dumps(out[name]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
