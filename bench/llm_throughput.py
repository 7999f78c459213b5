"""LLM throughput: the same relevance-judge prompts through raw llama-cpp-python and through
spacelm's llamacpp backend, plus the speed-up from ordering prompts so they share prefixes.

    python bench/llm_throughput.py [--model embedded:qwen2.5-coder-1.5b] [--questions 4] [--passages 4]

Prints prompt tokens/s, generated tokens/s, calls/s, the ratio ours/raw (goal >= 0.9) and the
ordered-vs-interleaved speed-up; writes the figures as JSON (--out). No cache is used.
Run it on an otherwise idle machine: both cores are used by llama.cpp.
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

from spacelm.config import LLMConfig, load_config  # noqa: E402
from spacelm.lib.llm import LLM, Request  # noqa: E402
from spacelm.lib.llm.models import resolve_model_path  # noqa: E402
from spacelm.lib.llm.prompting import relevance_messages  # noqa: E402
from spacelm.lib.llm.scores import score_choices  # noqa: E402


def judge_prompts(cfg, n_q: int, n_p: int, seed: int = 0) -> list[tuple[int, list]]:
    """(question index, messages) for n_q golden questions × n_p random chunks, question-major."""
    from spacelm.lib.synth.golden import load_golden
    from spacelm.runner.data import load_chunks

    rng = random.Random(seed)
    chunks = load_chunks(cfg)
    golden = load_golden(cfg.path(cfg.corpus.golden_samples))
    qs = rng.sample(golden, n_q)
    out = []
    for qi, g in enumerate(qs):
        for c in rng.sample(chunks, n_p):
            out.append((qi, relevance_messages(g.question, c.text)))
    return out


def run_raw(model_path: str, prompts: list, threads: int) -> dict:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=model_path, n_ctx=4096, n_threads=threads, verbose=False, seed=0, n_batch=512)
    grammar = llama_cpp.LlamaGrammar.from_string('root ::= "0" | "1" | "2" | "3"', verbose=False)
    ptoks = gtoks = 0
    t0 = time.perf_counter()
    for _, msgs in prompts:
        out = llm.create_chat_completion(messages=msgs, max_tokens=1, temperature=0.0, grammar=grammar)
        ptoks += out["usage"]["prompt_tokens"]
        gtoks += out["usage"]["completion_tokens"]
    dt = time.perf_counter() - t0
    del llm
    return {
        "seconds": round(dt, 2),
        "calls_per_s": round(len(prompts) / dt, 3),
        "prompt_tokens": ptoks,
        "prompt_tok_per_s": round(ptoks / dt, 1),
    }


def run_ours(llm: LLM, prompts: list) -> dict:
    before = (llm.backend.prompt_tokens_evaluated, llm.backend.prefix_reused_tokens)
    reqs = [Request(messages=m, choices=score_choices(0, 3), max_tokens=1) for _, m in prompts]
    t0 = time.perf_counter()
    comps = llm.chat_many(reqs)
    dt = time.perf_counter() - t0
    ptoks = sum(c.prompt_tokens for c in comps)
    evaluated = llm.backend.prompt_tokens_evaluated - before[0]
    reused = llm.backend.prefix_reused_tokens - before[1]
    return {
        "seconds": round(dt, 2),
        "calls_per_s": round(len(prompts) / dt, 3),
        "prompt_tokens": ptoks,
        "prompt_tok_per_s": round(ptoks / dt, 1),
        "tokens_evaluated": evaluated,
        "tokens_reused": reused,
    }


def generation(llm: LLM, n: int = 3, max_tokens: int = 64) -> dict:
    reqs = [
        Request(
            messages=[{"role": "user", "content": f"Write {n + i} sentences about orbital debris."}],
            max_tokens=max_tokens,
            seed=i,
        )
        for i in range(n)
    ]
    t0 = time.perf_counter()
    comps = llm.chat_many(reqs)
    dt = time.perf_counter() - t0
    gen = sum(c.completion_tokens for c in comps)
    return {"seconds": round(dt, 2), "generated_tokens": gen, "generated_tok_per_s": round(gen / dt, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "quick.yaml"))
    ap.add_argument("--model", default="embedded:qwen2.5-coder-1.5b")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--passages", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "llm_throughput.json"))
    args = ap.parse_args(argv)

    cfg = load_config(args.config)
    prompts = judge_prompts(cfg, args.questions, args.passages)
    interleaved = sorted(prompts, key=lambda p: (prompts.index(p) % args.passages, p[0]))
    path = resolve_model_path(args.model)
    print(
        f"{args.model}: {len(prompts)} judge prompts ({args.questions} questions x {args.passages} passages), "
        f"{args.threads} threads",
        flush=True,
    )

    raw = run_raw(path, prompts, args.threads)
    print("raw llama-cpp-python     ", raw, flush=True)
    llm = LLM(LLMConfig(model=args.model, n_threads=args.threads, n_ctx=4096))
    ours = run_ours(llm, prompts)
    print("spacelm, question-major  ", ours, flush=True)
    mixed = run_ours(llm, interleaved)
    print("spacelm, interleaved     ", mixed, flush=True)
    gen = generation(llm)
    print("spacelm, free generation ", gen, flush=True)
    result = {
        "model": args.model,
        "threads": args.threads,
        "prompts": len(prompts),
        "raw": raw,
        "ours_ordered": ours,
        "ours_interleaved": mixed,
        "generation": gen,
        "ratio_ours_over_raw_calls_per_s": round(ours["calls_per_s"] / raw["calls_per_s"], 3),
        "speedup_ordered_over_interleaved": round(mixed["seconds"] / ours["seconds"], 3),
    }
    print(
        f"ours/raw = {result['ratio_ours_over_raw_calls_per_s']}   "
        f"ordered vs interleaved speed-up = {result['speedup_ordered_over_interleaved']}x"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
