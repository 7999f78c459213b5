"""The judges' known-answer controls on the generators' own failures, and the judge's self-preference.

Each candidate generator answers the run's questions under the answer stage's Table 2 settings (the judge-check
stage's `generator_outputs`: the same items and prompts). The deterministic checks flag its failures
(`lib/answer/failures.py`); the controls are built as judge-check builds them (edits of the source's
supporting sentence, plus the flagged answers as bad answers) and scored by the run's judge, as the tables score.

Reported per generator: how many answers raised each flag, per setting; the controls table (per judge: n, kinds,
pass rate at the stated minimum gap); the gap per judge and kind. Then the **self-preference** of the judge when
it is also one of the generators: over the (judge, kind) cells where both generators' flagged answers are bad
answers, the mean difference of the good - bad gap (as a share of the judge's scale) between controls whose bad
answer the judge wrote and controls whose bad answer the other generator wrote. Negative: the judge lets its own
bad answers come closer to the good ones. 95% interval by a bootstrap over controls within cells.

    python bench/control_gaps.py --config configs/standard.yaml \
        --models embedded:qwen2.5-coder-0.5b,embedded:qwen2.5-coder-1.5b --max 12 --n-controls 24 \
        --judges faithfulness,relevance,negative_rejection --out results/bench/control_gaps.json

Calls are cached (`cfg.cache_dir`); the edit controls are shared between the generators, so only the flagged
answers cost judge calls the second time. The output holds aggregates and the controls' kinds, not corpus text.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config.load import load_config  # noqa: E402
from spacelm.lib.io import write_json  # noqa: E402
from spacelm.lib.judge import validity as J  # noqa: E402
from spacelm.lib.stats import wilson_ci  # noqa: E402
from spacelm.runner.base import ModelTurns  # noqa: E402
from spacelm.runner.data import load_chunks, load_questions  # noqa: E402
from spacelm.stages.judge_check import flagged_summary, generator_outputs  # noqa: E402


def self_preference(rows: list[dict], own: str, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean over (judge, kind) cells holding flagged answers of both generators of (own gap - other gap),
    gaps as shares of the judge's scale; a bootstrap over controls within each cell for the 95% interval."""
    got = [r for r in rows if r["origin"] == "output" and r["good_score"] is not None and r["bad_score"] is not None]
    cells: dict = {}
    for r in got:
        side = "own" if r["generator"] == own else "other"
        gap = (r["good_score"] - r["bad_score"]) / J.scale_range(r["rubric"])
        cells.setdefault((r["rubric"], r["kind"]), {"own": [], "other": []})[side].append(gap)
    both = {k: v for k, v in cells.items() if v["own"] and v["other"]}
    if not both:
        return {"cells": 0, "note": "no judge and kind with flagged answers of both generators"}
    diff = lambda cs: float(np.mean([np.mean(c["own"]) - np.mean(c["other"]) for c in cs]))
    rng = random.Random(seed)
    boot = []
    for _ in range(n_boot):
        boot.append(diff([{s: rng.choices(v[s], k=len(v[s])) for s in ("own", "other")} for v in both.values()]))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {
        "cells": len(both),
        "controls_own": sum(len(v["own"]) for v in both.values()),
        "controls_other": sum(len(v["other"]) for v in both.values()),
        "mean_gap_difference": round(diff(list(both.values())), 4),
        "ci": [round(float(lo), 4), round(float(hi), 4)],
        "per_cell": {
            f"{r}/{k}": {
                "own": [len(v["own"]), round(float(np.mean(v["own"])), 3)],
                "other": [len(v["other"]), round(float(np.mean(v["other"])), 3)],
            }
            for (r, k), v in sorted(both.items())
        },
    }


def flag_shares(items: list[dict]) -> dict:
    out = {}
    for setting, row in flagged_summary(items).items():
        n = row.pop("answers")
        out[setting] = {"answers": n}
        for kind, k in sorted(row.items()):
            lo, hi = wilson_ci(k, n)
            out[setting][kind] = {"k": k, "share": round(k / n, 3), "ci": [round(lo, 3), round(hi, 3)]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--models", default="embedded:qwen2.5-coder-0.5b,embedded:qwen2.5-coder-1.5b")
    ap.add_argument("--max", type=int, default=12, help="questions (the answer stage's selection, at most)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "control_gaps.json"))
    ap.add_argument(
        "--judges",
        default="faithfulness,relevance,negative_rejection",
        help="the judges to control (comma-separated; default: the rubrics Table 2's findings read)",
    )
    ap.add_argument("--n-controls", type=int, default=None, help="controls per judge (default: the config's)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    cfg.answer.max_questions = args.max
    chunks = load_chunks(cfg)
    questions = load_questions(cfg, chunks)
    text_of = {c.chunk_id: c.text for c in chunks}
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    jc = cfg.judge_check
    if args.n_controls:
        jc.n_controls = args.n_controls
    judges = tuple(j for j in args.judges.split(",") if j)
    out = {
        "config": args.config,
        "questions": min(args.max, len(questions)),
        "judge": cfg.models.judge.model,
        "min_control_gap": jc.min_control_gap,
        "judges": list(judges),
        "n_controls": jc.n_controls,
        "generators": {},
    }
    all_rows = []
    for model in args.models.split(","):
        gen = dataclasses.replace(cfg.models.generator, model=model)
        run = dataclasses.replace(cfg, models=dataclasses.replace(cfg.models, generator=gen))
        turns = ModelTurns(run, "bench")
        t0 = time.perf_counter()
        items = generator_outputs(run, chunks, questions, turns, text_of)
        flagged = [it for it in items if it["flags"]]
        controls = J.build_controls(questions, text_of, doc_of, jc.n_controls, cfg.seed, judges, outputs=flagged)
        rows = turns.use(
            "judge", lambda llm, c=controls: J.score_controls(llm, c, text_of, cfg.answer.scoring), "controls"
        )
        turns.release()
        for r in rows:
            r["generator"] = model
        all_rows += rows
        table = J.controls_table(rows, jc)
        kinds = J.controls_by_kind(rows, jc)
        out["generators"][model] = {
            "answers": len(items),
            "flags": flag_shares(items),
            "controls": json.loads(table.to_json(orient="records")),  # NaN as null
            "by_kind": json.loads(kinds.to_json(orient="records")),
            "seconds": round(time.perf_counter() - t0, 1),
            "stats": {k: v for k, v in turns.stats.items()},
        }
        print(model, table[["rubric", "n", "pass_rate", "verdict", "kinds"]].to_string(index=False))
    judge = cfg.models.judge.model
    if judge in out["generators"]:
        out["self_preference"] = {"judge": judge, **self_preference(all_rows, judge)}
        print("self-preference", out["self_preference"])
    write_json(Path(args.out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
