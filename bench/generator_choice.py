"""Which embedded generator answers? Each candidate answers the golden samples from their source passage
(as Table 2's standard setting shows it) and the golden unanswerable questions from BM25's top passages
(as pipeline B does), and deterministic checks read the answers, no judge:

- **facts**: the reference answer's numbers (with units) and named entities present in the answer
  (`lib/answer/facts.fact_check`; only references holding one count);
- **false refusal**: an answerable question declined (the refusal phrase check);
- **non-answer**: fewer than 4 words outside citation markers; a sentence ending on its citation after a copula
  ("The equation used ... is [2]."); or the question restated (its content words are ≥ 75% of the answer's);
- **refusal where the corpus cannot answer**: an unanswerable question declined.

    python bench/generator_choice.py --config configs/standard.yaml \
        --models embedded:qwen2.5-coder-0.5b,embedded:qwen2.5-coder-1.5b --max 30 \
        --out results/bench/generator_choice.json

Shares carry 95% Wilson intervals; calls are cached (`cfg.cache_dir`), so a second run reads them back (its
`seconds` then time the cache, not the model: read `stats.model_seconds`). The output holds aggregates only.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config.load import load_config  # noqa: E402
from spacelm.lib.answer.answers import generate, is_refusal  # noqa: E402
from spacelm.lib.answer.facts import fact_check  # noqa: E402
from spacelm.lib.answer.failures import non_answer  # noqa: E402
from spacelm.lib.io import write_json  # noqa: E402
from spacelm.lib.stats import wilson_ci  # noqa: E402
from spacelm.runner.base import ModelTurns  # noqa: E402
from spacelm.runner.data import golden_questions, load_chunks  # noqa: E402


def share(values: list[bool]) -> dict:
    n, k = len(values), sum(values)
    lo, hi = wilson_ci(k, n) if n else (None, None)
    return {"n": n, "k": k, "share": round(k / n, 3) if n else None, "ci": [round(lo, 3), round(hi, 3)] if n else None}


def items_for(cfg, chunks, n_max: int, seed: int) -> list[dict]:
    from spacelm.lib.retrieval.bm25 import BM25Config, BM25Retriever

    rows = golden_questions(cfg, chunks)
    rng = random.Random(seed)
    answerable = [r for r in rows if r["answerable"] and r.get("answer") and r.get("source_chunk_id")]
    unanswerable = [r for r in rows if not r["answerable"]]
    answerable = sorted(rng.sample(answerable, min(n_max, len(answerable))), key=lambda r: r["qid"])
    unanswerable = sorted(rng.sample(unanswerable, min(n_max, len(unanswerable))), key=lambda r: r["qid"])
    bm25 = BM25Retriever(BM25Config()).index([c.chunk_id for c in chunks], [c.text for c in chunks])
    tops = bm25.search([r["question"] for r in unanswerable], 3) if unanswerable else []
    items = [_item(r, [r["source_chunk_id"]], "table2") for r in answerable]
    return items + [_item(r, [d for d, _ in top], "B") for r, top in zip(unanswerable, tops)]


def _item(r: dict, ids: list[str], pipeline: str) -> dict:
    return {
        "qid": r["qid"],
        "task": r["task"],
        "question": r["question"],
        "answerable": r["answerable"],
        "reference_answer": r.get("answer"),
        "label": None,
        "pipeline": pipeline,
        "setting": "standard" if pipeline == "table2" else "unanswerable",
        "passage_ids": ids,
    }


def measure(items: list[dict]) -> dict:
    ans = [it for it in items if it["answerable"]]
    una = [it for it in items if not it["answerable"]]
    facts = [fact_check(it["answer"], it["reference_answer"])["verdict"] for it in ans]
    kinds = [non_answer(it["answer"], it["question"]) for it in ans if not is_refusal(it["answer"])]
    return {
        "facts_present": share([v for v in facts if v is not None]),
        "false_refusal": share([is_refusal(it["answer"]) for it in ans]),
        "non_answer": share([k is not None for k in kinds]),
        "non_answer_kinds": {k: kinds.count(k) for k in sorted({k for k in kinds if k})},
        "refusal_unanswerable": share([is_refusal(it["answer"]) for it in una]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--models", default="embedded:qwen2.5-coder-0.5b,embedded:qwen2.5-coder-1.5b")
    ap.add_argument("--max", type=int, default=30, help="answerable (and unanswerable) golden questions, at most")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "generator_choice.json"))
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    chunks = load_chunks(cfg)
    text_of = {c.chunk_id: c.text for c in chunks}
    design = cfg.answer_design()
    out = {"config": args.config, "max": args.max, "generators": {}}
    for model in args.models.split(","):
        gen = dataclasses.replace(cfg.models.generator, model=model)
        run = dataclasses.replace(cfg, models=dataclasses.replace(cfg.models, generator=gen))
        items = items_for(cfg, chunks, args.max, cfg.seed)
        turns = ModelTurns(run, "bench")
        t0 = time.perf_counter()
        turns.use("generator", lambda llm, items=items: generate(llm, items, text_of, design), "answers")
        turns.release()
        res = measure(items)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        res["stats"] = turns.stats.get("generator")
        out["generators"][model] = res
        print(model, {k: res[k] for k in ("facts_present", "false_refusal", "non_answer", "refusal_unanswerable")})
    write_json(Path(args.out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
