"""Greedy agreement of vLLM (the exported safetensors folder) with llama.cpp (the GGUF file) on
fixed prompts: the same embedded model through both engines, temperature 0, no cache.

llama.cpp and vLLM live in different environments, so each side runs where its engine is and
writes its outputs; `compare` counts the prompts whose greedy text is identical, whose first
token agrees, and the judge prompts whose chosen grade agrees:

    .venv/bin/python bench/vllm_agreement.py run llamacpp --out /tmp/agree_llamacpp.json
    ~/.cache/spacelm/vllm-venv/bin/python bench/vllm_agreement.py run vllm --out /tmp/agree_vllm.json [--dtype float32]
    .venv/bin/python bench/vllm_agreement.py compare /tmp/agree_llamacpp.json /tmp/agree_vllm.json
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
from spacelm.lib.llm import LLM, Request  # noqa: E402
from spacelm.lib.llm.prompting import relevance_messages  # noqa: E402
from spacelm.lib.llm.scores import score_choices  # noqa: E402

FREE = [
    "Name the planet closest to the Sun. Answer in one sentence.",
    "What does a ground station do for a satellite? Answer in two sentences.",
    "Write a Python function that returns the square of a number.",
    "Explain in one sentence why satellites in low Earth orbit experience drag.",
    "List three causes of space debris.",
    "What is the unit of electrical resistance? One word.",
    "Translate 'good morning' into French.",
    "Give one reason to plan a collision avoidance manoeuvre.",
]
JUDGE = [
    (
        "What threshold triggers a collision avoidance manoeuvre?",
        "Operators usually manoeuvre when the probability of collision exceeds 1e-4.",
    ),
    ("What threshold triggers a collision avoidance manoeuvre?", "The cafeteria opens at eight in the morning."),
    ("How are reaction wheels unloaded?", "Reaction wheels saturate and are unloaded with magnetorquers or thrusters."),
    ("How are reaction wheels unloaded?", "Solar arrays lose output each year from radiation damage to the cells."),
]


def requests() -> list[Request]:
    reqs = [Request(messages=[{"role": "user", "content": p}], max_tokens=32, temperature=0.0) for p in FREE]
    reqs += [
        Request(messages=relevance_messages(q, p), choices=score_choices(0, 3), max_tokens=2, temperature=0.0)
        for q, p in JUDGE
    ]
    return reqs


def run(engine: str, model: str, dtype: str, out: Path) -> None:
    cfg = LLMConfig(backend=engine, model=model, n_ctx=2048, dtype=dtype, max_tokens=32)
    llm = LLM(cfg)  # no cache: every prompt reaches the engine
    t0 = time.perf_counter()
    backend = llm.backend
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    comps = llm.chat_many(requests())
    gen_s = time.perf_counter() - t0
    llm.release()
    rows = [{"text": c.text, "choice_probs": c.choice_probs, "completion_tokens": c.completion_tokens} for c in comps]
    out.write_text(
        json.dumps(
            {
                "engine": engine,
                "model": model,
                "dtype": dtype,
                "backend": type(backend).__name__,
                "load_s": round(load_s, 1),
                "generate_s": round(gen_s, 1),
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"{engine}: load {load_s:.1f} s, {len(rows)} prompts in {gen_s:.1f} s -> {out}")


def compare(a_file: Path, b_file: Path) -> dict:
    a, b = json.loads(a_file.read_text()), json.loads(b_file.read_text())
    n_free = len(FREE)
    same = [x["text"].strip() == y["text"].strip() for x, y in zip(a["rows"], b["rows"])]
    first = [x["text"].split()[:1] == y["text"].split()[:1] for x, y in zip(a["rows"], b["rows"])]
    res = {
        "pair": f"{a['engine']} vs {b['engine']} ({b['dtype']})",
        "free_text_identical": f"{sum(same[:n_free])} of {n_free}",
        "free_text_first_word_agrees": f"{sum(first[:n_free])} of {n_free}",
        "judge_grade_agrees": f"{sum(same[n_free:])} of {len(JUDGE)}",
    }
    for i, (x, y, s) in enumerate(zip(a["rows"], b["rows"], same)):
        if not s:
            print(f"--- prompt {i} differs\n  {a['engine']}: {x['text']!r}\n  {b['engine']}: {y['text']!r}")
    print(json.dumps(res, indent=1))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("engine", choices=["llamacpp", "vllm"])
    r.add_argument("--model", default="embedded:qwen2.5-coder-0.5b")
    r.add_argument("--dtype", default="auto", help="vLLM dtype (auto is bfloat16 for the exported folder)")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.engine, args.model, args.dtype, args.out)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
