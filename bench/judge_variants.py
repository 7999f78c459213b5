"""Judge variants measured against human relevance labels: which model, prompt and reading of
the answer (expected grade vs the argmax digit, one order vs the mean of both) agrees best with
people, and at what cost per graded pair.

    python bench/judge_variants.py \
        --source scifact-train=../shared/beir/scifact:train:20 \
        --source trec-dl-2020=../shared/judge/trec-dl-2020:test:8 \
        --variant embedded:qwen2.5-coder-1.5b:relevance \
        --variant embedded:qwen2.5-coder-1.5b:relevance_rubric \
        --out results/bench/judge_variants.json

Choose on SciFact's *train* qrels and TREC DL 2020, never on SciFact test; then report the
chosen variant on SciFact test. Every variant grades the same pairs (seeded sample). Cost is
measured on the llama.cpp backend: seconds and prompt tokens actually evaluated per pair
after prefix reuse. Model calls go through a cache of their own
(`.cache/spacelm/bench_judge.sqlite`), so an interrupted run resumes; cost figures come from
the calls made, so clear that cache to re-measure cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import LLMConfig  # noqa: E402
from spacelm.lib.judge.relevance import grade_pairs  # noqa: E402
from spacelm.lib.judge.validity import agreement, is_graded, mean_of_orders, sample_check_pairs  # noqa: E402
from spacelm.lib.llm import LLM  # noqa: E402
from spacelm.lib.llm.cache import CallCache  # noqa: E402
from spacelm.lib.retrieval.beir import load_beir  # noqa: E402


def parse_source(text: str) -> tuple[str, Path, str, int]:
    name, rest = text.split("=", 1)
    path, split, n = rest.rsplit(":", 2)
    return name, (ROOT / path) if not Path(path).is_absolute() else Path(path), split, int(n)


def parse_variant(text: str) -> tuple[str, str]:
    model, prompt = text.rsplit(":", 1)
    return model, prompt


def grade(llm: LLM, pairs: list, passages: dict, template: str) -> tuple[list, dict]:
    b = llm.backend
    before = (b.prompt_tokens_evaluated, b.prefix_reused_tokens, llm.stats.calls)
    t0 = time.perf_counter()
    rows = grade_pairs(llm, pairs, passages, template=template)
    dt = time.perf_counter() - t0
    calls = llm.stats.calls - before[2]
    cost = {
        "calls": calls,
        "seconds": round(dt, 1),
        "seconds_per_pair": round(dt / calls, 2) if calls else None,
        "prompt_tokens_evaluated_per_pair": round((b.prompt_tokens_evaluated - before[0]) / calls, 1)
        if calls
        else None,
        "prompt_tokens_reused_per_pair": round((b.prefix_reused_tokens - before[1]) / calls, 1) if calls else None,
    }
    for r, p in zip(rows, pairs):
        r.update(label=p["label"], kind=p["kind"])
    return rows, cost


def brief(m: dict) -> dict:
    keys = ("n_pairs", "auc", "auc_ci", "kappa_binary", "kappa_binary_ci", "kappa_weighted", "accuracy")
    out = {k: m.get(k) for k in keys}
    out.update({k: v for k, v in m.items() if k.startswith("auc_relevant_vs_")})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", action="append", required=True, help="name=path:split:n_queries")
    ap.add_argument("--variant", action="append", required=True, help="model:prompt (model may contain ':')")
    ap.add_argument("--both-orders", action="store_true", help="also grade passage-first and report the mean")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "judge_variants.json"))
    args = ap.parse_args(argv)

    cache = CallCache(ROOT / ".cache" / "spacelm" / "bench_judge.sqlite")
    sources = []
    for s in args.source:
        name, path, split, n = parse_source(s)
        data = load_beir(path, split)
        pairs = sample_check_pairs(data, n, args.seed, name)
        ids, texts = data.passages()
        need = {p["chunk_id"] for p in pairs}
        sources.append((name, pairs, {i: t for i, t in zip(ids, texts) if i in need}, is_graded(data.qrels)))
        print(f"{name}: {len(pairs)} pairs from {n} queries ({split})", flush=True)
    results = []
    for v in args.variant:
        model, prompt = parse_variant(v)
        llm = LLM(LLMConfig(model=model, max_tokens=2, n_ctx=4096), cache)
        for name, pairs, passages, graded in sources:
            rows, cost = grade(llm, pairs, passages, prompt)
            res = {
                "model": model,
                "prompt": prompt,
                "source": name,
                "cost": cost,
                "expected_grade": brief(agreement(rows, args.n_boot, args.seed, graded)),
                "argmax_grade": brief(
                    agreement([dict(r, expected_grade=None) for r in rows], args.n_boot, args.seed, graded)
                ),
            }
            if args.both_orders:
                swapped, cost2 = grade(llm, pairs, passages, prompt + "_swapped")
                res["both_orders"] = brief(agreement(mean_of_orders(rows, swapped), args.n_boot, args.seed, graded))
                res["cost_swapped"] = cost2
            results.append(res)
            e = res["expected_grade"]
            print(
                f"{model} {prompt} {name}: AUC {e['auc']} {e['auc_ci']} kappa {e['kappa_binary']} "
                f"(argmax AUC {res['argmax_grade']['auc']}) cost {cost}",
                flush=True,
            )
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
        llm.release()
    print(
        "\n| model | prompt | source | pairs | AUC (expected) | AUC (argmax) | κ (grade ≥ 2) | s/pair "
        "| tokens evaluated/pair |"
    )
    print("|---|---|---|---:|---|---:|---|---:|---:|")
    for r in results:
        e, a, c = r["expected_grade"], r["argmax_grade"], r["cost"]
        print(
            f"| {r['model'].split(':')[-1]} | {r['prompt']} | {r['source']} | {e['n_pairs']} | "
            f"{e['auc']} {e['auc_ci']} | "
            f"{a['auc']} | {e['kappa_binary']} {e['kappa_binary_ci']} | {c['seconds_per_pair']} | "
            f"{c['prompt_tokens_evaluated_per_pair']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
