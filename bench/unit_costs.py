"""Cost per unit of model work against the physical limit of this machine.

    python bench/unit_costs.py [--config configs/standard.yaml] [--questions 4] [--passages 8]
                               [--writes 6] [--out results/bench/unit_costs.json]

For each unit a run pays for (a graded pair, a question written, an answer written, an answer
judged) the bench calls spacelm's own library function for that unit (the same code the stages
run, no cache) on real material from the config's corpus and golden samples, and records every
request in the order the model received it. It then replays those requests through bare
llama-cpp-python (the same GGUF file, threads, context and batch; its own prefix reuse; greedy,
the same number of generated tokens, no grammar) right after, so both figures come from one
stretch of machine time. Per unit it writes:

- `seconds`: our wall time per unit;
- `tokens_evaluated`: prompt tokens the model evaluated (after prefix reuse) plus tokens it
  generated, per unit; `prompt_tokens` is the prompt length before reuse;
- `raw_llamacpp_seconds`: bare llama.cpp's time per unit on the same token sequences;
- `ratio`: raw_llamacpp_seconds / seconds (1.0 = no overhead above the engine; goal >= 0.9).

Run it on an otherwise idle machine: llama.cpp uses both cores. The figures are ratios measured
in one run; absolute seconds move with the machine and its load (recorded as `load_avg`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.llm import LLM  # noqa: E402
from spacelm.lib.llm.llamacpp import shared_prefix_length  # noqa: E402
from spacelm.lib.llm.models import resolve_model_path  # noqa: E402


class Recorder:
    """A backend wrapper that passes every request to the real llama.cpp backend and keeps
    (request, completion) in the order the model received them."""

    def __init__(self, backend):
        self.backend = backend
        self.sent: list = []

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def complete_many(self, reqs, on_done) -> None:
        def done(i, comp):
            self.sent.append((reqs[i], comp))
            on_done(i, comp)

        self.backend.complete_many(reqs, done)


def our_llm(llm_cfg) -> tuple[LLM, Recorder]:
    """spacelm's LLM on the llama.cpp backend, without the call cache, recording what it sends."""
    from spacelm.lib.llm.llamacpp import LlamaCppBackend

    rec = Recorder(LlamaCppBackend(llm_cfg))
    return LLM(llm_cfg, cache=None, backend=rec), rec


def measure(name: str, n_units: int, llm: LLM, rec: Recorder, work) -> dict:
    """Run `work()` (one library call over n_units units) through our LLM, then replay what it
    sent through bare llama.cpp."""
    b = rec.backend
    rec.sent.clear()
    b.llm.reset()  # no KV state carried over from the previous unit's run
    t0 = time.perf_counter()
    work()
    ours = time.perf_counter() - t0
    prompts = [b.prompt_tokens(req.messages)[0] for req, _ in rec.sent]  # tokenised once, for both
    evaluated = tokens_left_after_reuse(prompts)
    generated = sum(c.completion_tokens for _, c in rec.sent)
    prompt = sum(c.prompt_tokens for _, c in rec.sent)
    raw = replay_raw(llm.cfg, prompts, rec.sent)
    out = {
        "n_units": n_units,
        "calls_per_unit": round(len(rec.sent) / n_units, 2),
        "seconds": round(ours / n_units, 3),
        "tokens_evaluated": round((evaluated + generated) / n_units, 1),
        "prompt_tokens": round(prompt / n_units, 1),
        "generated_tokens": round(generated / n_units, 1),
        "raw_llamacpp_seconds": round(raw / n_units, 3),
        "ratio": round(raw / ours, 3) if ours else None,
        "load_avg": round(os.getloadavg()[0], 2),
    }
    print(f"{name:16s} {json.dumps(out)}", flush=True)
    return out


def tokens_left_after_reuse(prompts: list[list[int]]) -> int:
    """Prompt tokens the engine must evaluate for `prompts` in that order when it keeps the KV
    cache of the previous sequence, as llama.cpp does: each prompt less its longest common prefix
    with the one before (at least one token; generated tokens follow a prompt, none is shared)."""
    return sum(max(1, len(t) - shared_prefix_length(p, t)) for p, t in zip([[]] + prompts, prompts))


_RAW: dict = {}


def replay_raw(llm_cfg, prompts: list[list[int]], sent: list) -> float:
    """Seconds bare llama-cpp-python takes for the same token sequences in the same order."""
    import llama_cpp

    path = resolve_model_path(llm_cfg.model)
    if path not in _RAW:
        _RAW[path] = llama_cpp.Llama(
            model_path=path,
            n_ctx=llm_cfg.n_ctx,
            n_threads=llm_cfg.n_threads or os.cpu_count(),
            n_batch=512,  # as spacelm's llama.cpp backend
            verbose=False,
            seed=0,
        )
    raw = _RAW[path]
    raw.reset()
    t0 = time.perf_counter()
    for tokens, (_, comp) in zip(prompts, sent):
        n_gen = max(1, comp.completion_tokens)
        raw.create_completion(prompt=tokens, max_tokens=n_gen, temperature=0.0, stop=[])
    return time.perf_counter() - t0


def material(cfg, n_questions: int, n_passages: int):
    """Golden questions of the config with their BM25 top passages from its chunks."""
    from spacelm.lib.retrieval.bm25 import BM25Retriever
    from spacelm.lib.synth.golden import load_golden
    from spacelm.pipeline import run_stages
    from spacelm.runner.data import load_chunks

    run_stages(cfg, upto="chunk")
    chunks = load_chunks(cfg)
    golden = [g for g in load_golden(cfg.path(cfg.corpus.golden_samples)) if g.answerable and g.answer]
    step = max(1, len(golden) // n_questions)
    picked = golden[::step][:n_questions]
    bm25 = BM25Retriever(cfg.retrieval.bm25)
    bm25.index([c.chunk_id for c in chunks], [c.text for c in chunks])
    top = bm25.search([g.question for g in picked], n_passages)
    return chunks, golden, picked, [[d for d, _ in r] for r in top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "standard.yaml"))
    ap.add_argument("--questions", type=int, default=4, help="golden questions (answers written and judged)")
    ap.add_argument("--passages", type=int, default=8, help="graded passages per question")
    ap.add_argument("--writes", type=int, default=6, help="questions written")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "unit_costs.json"))
    args = ap.parse_args(argv)

    from spacelm.lib.answer.answers import _item, generate, judge_answers
    from spacelm.lib.judge.relevance import grade_pairs
    from spacelm.lib.synth.questions import generate_questions, plan_generation

    # the chunk stage's outputs are shared with the config's runs; the bench's own run folder
    # (manifest) is apart, so the config's committed run is not touched
    cfg = load_config(args.config, sets=["run_name=bench-unit-costs"])
    chunks, golden, picked, tops = material(cfg, args.questions, args.passages)
    text_of = {c.chunk_id: c.text for c in chunks}
    units: dict = {}

    judge, jrec = our_llm(cfg.models.judge)
    pairs = [
        {"qid": g.id, "question": g.question, "chunk_id": cid, "purpose": ["bench"]}
        for g, ids in zip(picked, tops)
        for cid in ids
    ]
    judging = cfg.grading.judging(cfg.root)
    units["graded_pair"] = measure(
        "graded pair", len(pairs), judge, jrec, lambda: grade_pairs(judge, pairs, text_of, judging=judging)
    )
    plan = plan_generation(cfg.question_writing(), chunks, golden)[: args.writes]
    writer = LLM(cfg.models.question_writer, cache=None, backend=jrec)  # the paper's writer = judge engine
    units["question_written"] = measure(
        "question written", len(plan), writer, jrec, lambda: generate_questions(cfg.question_writing(), writer, plan)
    )

    k = cfg.answer.retrieve_k
    qs = [
        {"qid": g.id, "task": g.task, "question": g.question, "answer": g.answer, "source_chunk_id": ""} for g in picked
    ]
    items = [_item(q, "standard", "B", ids[:k], [], ["faithfulness", "relevance"]) for q, ids in zip(qs, tops)]
    gen, grec = our_llm(cfg.models.generator)
    units["answer_written"] = measure(
        "answer written", len(items), gen, grec, lambda: generate(gen, items, text_of, cfg.answer_design())
    )
    gen.release()
    units["answer_judged"] = measure(
        "answer judged", len(items), judge, jrec, lambda: judge_answers(judge, items, items, text_of)
    )
    judge.release()

    result = {
        "config": os.path.relpath(args.config, ROOT),
        "models": {"judge": cfg.models.judge.model, "generator": cfg.models.generator.model},
        "threads": cfg.models.judge.n_threads or os.cpu_count(),
        "units": units,
        "note": "seconds and raw_llamacpp_seconds per unit, measured back to back in one run; ratio = raw / ours",
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
