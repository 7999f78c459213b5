"""What the 2-hour reference run leaves out, and what each part would add on this machine.

    python bench/left_out_costs.py [--config configs/standard.yaml] [--run results/standard]
                                   [--out results/bench/left_out_costs.json]

`configs/standard.yaml` is sized to finish cold within 2 hours; it leaves out parts of the
study. For each part, this script plans the standard config with that part switched on, on the
run's own questions and rankings (the plan of `spacelm plan --use-outputs`: every call the run
would make, with the prompt tokens left after prefix reuse), and prices the difference from the
plan of the config as it is, at the throughput the committed run itself measured:

- calls that score options (judges, graders, checks): the judge's evaluated prompt tokens per
  second over the run's judge calls (`prompt_tokens_evaluated / model_seconds`);
- calls that write text: the run's seconds per answer written (generator) and per question
  written (question writer).

Two further rows price sizes the run cannot reach from its own outputs (more source chunks
than synth kept): Table 1 and Table 2 at the number of questions `spacelm plan`'s power table
asks for, from the run's measured seconds per unit. Loads no model; takes a few minutes (the
plan tokenises every prompt). The figures are estimates from measured rates, not timed runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib import names  # noqa: E402
from spacelm.lib.io import write_json  # noqa: E402
from spacelm.plan import plan_run  # noqa: E402

# each left-out part: (what it is, the config overrides that switch it on)
PARTS = [
    ("Table 2's negative setting (5 wrong passages, no relevant one)", {"answer.negative_n_wrong": 5}),
    ("pipelines A (closed book) and C (verify and rewrite)", {"answer.pipelines": ["A", "B", "C"]}),
    ("binary judges on the pipelines' answers", {"answer.binary_judges": True}),
    ("claim support in the pipelines' answers", {"answer.claims": True, "answer.claims_scope": "pipelines"}),
    ("reference answers for the answered questions", {"answer.reference_answers": True}),
    (
        "all five answer parts above together",
        {
            "answer.negative_n_wrong": 5,
            "answer.pipelines": ["A", "B", "C"],
            "answer.binary_judges": True,
            "answer.claims": True,
            "answer.claims_scope": "pipelines",
            "answer.reference_answers": True,
        },
    ),
    ("Table 1 at top-5, 7 and 10 as well as top-3", {"grading.top_k": [3, 5, 7, 10]}),
    # not priced here: synthetic unanswerable questions. The plan of a config whose synth is current
    # counts the candidates written but not the judge's check of them (its retrieval filter is not
    # replayed), which is most of their cost: about 25 s of judge time per candidate in earlier runs.
]
# phases whose calls write text, priced per call at the run's measured seconds per unit
WRITES = {
    "questions": "question written",
    "reference answers": "question written",
    "answers": "answer written",
    "verification rewrites": "answer written",
}


def unit_seconds(manifest: dict) -> dict:
    """{unit prefix: seconds per unit} from the run's model-time table."""
    out = {}
    for u in manifest["model_time"]["per_unit"]:
        key = " ".join(u["unit"].split()[:2])
        out.setdefault(key, u["seconds_per_unit"])
    return out


def judge_rate(manifest: dict) -> float:
    """Evaluated prompt tokens per second over every judge call the run made."""
    tokens = seconds = 0.0
    for stage in manifest["stages"].values():
        for key, v in stage.items():
            if key.startswith("llm") and isinstance(v, dict) and v.get("prompt_tokens_evaluated"):
                tokens += v["prompt_tokens_evaluated"]
                seconds += v["model_seconds"]
    return tokens / seconds


def phase_costs(plan: dict) -> dict:
    """{(stage, phase): (calls, evaluated prompt tokens)} of a plan."""
    return {(p["stage"], p["phase"]): (p["calls"], p["prompt_tokens_evaluated"]) for p in plan["phases"]}


def added_seconds(base: dict, variant: dict, rate: float, per_unit: dict) -> tuple[float, dict]:
    """Seconds the variant's extra calls take: text-writing phases at their measured seconds per
    unit, scoring phases at the judge's measured token rate."""
    total, rows = 0.0, {}
    for key, (calls, tokens) in variant.items():
        c0, t0 = base.get(key, (0, 0))
        if calls <= c0 and tokens <= t0:
            continue
        phase = key[1].split(",")[0]
        unit = next((u for p, u in WRITES.items() if phase.startswith(p)), None)
        s = (calls - c0) * per_unit[unit] if unit else (tokens - t0) / rate
        rows[f"{key[0]}: {key[1]}"] = {"calls": calls - c0, "prompt_tokens_evaluated": tokens - t0, "seconds": round(s)}
        total += s
    return total, rows


def plan_with(config: str, overrides: dict) -> dict:
    sets = [f"{k}={json.dumps(v)}" for k, v in overrides.items()]
    return plan_run(load_config(config, sets=sets), use_outputs=True)


def size_rows(manifest: dict, per_unit: dict, power: list[dict]) -> list[dict]:
    """Table 1 and Table 2 at the power table's sizes, from the run's per-question costs."""
    z, st = manifest["sizes"], manifest["stages"]
    keep = st["synth"]["kept"] / st["synth"]["generated"]
    pairs_per_q = z["table1_pairs_graded"] / z["table1_questions"]
    answers_per_q = (z["answers"] - z["answerability_unanswerable"]) / z["table2_questions_per_setting"]
    per_answer = per_unit["answer written"] + per_unit["answer judged"]
    rows = []
    power = {r["finding"]: r for r in power}
    for finding, table, need in (
        ("Reranking raises the share of grade 3 (every retriever and top-k)", "table1", 96),
        ("Faithfulness changes little from standard to 3 wrong", "table2", 104),
    ):
        planned = power.get(finding, {}).get("questions_needed")
        planned = str(planned).replace(",", "")
        need = int(planned) if planned.isdigit() else need
        have = z["table1_questions"] if table == "table1" else z["table2_questions_per_setting"]
        more = max(0, need - have)
        if table == "table1":
            written = max(0, math.ceil(need / keep) - st["synth"]["generated"])
            s = more * pairs_per_q * per_unit["graded pair"] + written * per_unit["question written"]
            what = f"{more} more questions ({written} more written at the filter's {keep:.0%} keep rate)"
        else:
            s = more * answers_per_q * per_answer
            what = f"{more} more questions ({answers_per_q:.1f} answers each, written and judged)"
        rows.append({"part": f"{finding}: {need} questions", "what": what, "seconds": round(s)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--run", default="results/standard")
    ap.add_argument("--out", default="results/bench/left_out_costs.json")
    a = ap.parse_args(argv)
    manifest = json.loads((ROOT / a.run / names.MANIFEST).read_text())
    per_unit, rate = unit_seconds(manifest), judge_rate(manifest)
    base_plan = plan_with(a.config, {})
    base = phase_costs(base_plan)
    parts = []
    for name, overrides in PARTS:
        seconds, rows = added_seconds(base, phase_costs(plan_with(a.config, overrides)), rate, per_unit)
        parts.append({"part": name, "overrides": overrides, "seconds": round(seconds), "phases": rows})
        print(f"{name}: +{seconds / 60:.0f} min", flush=True)
    out = {
        "run": a.run,
        "run_total_seconds": manifest["total_seconds"],
        "judge_tokens_per_second": round(rate, 1),
        "seconds_per_unit": per_unit,
        "parts": parts,
        "sizes": size_rows(manifest, per_unit, base_plan["power"]),
    }
    write_json(ROOT / a.out, out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
