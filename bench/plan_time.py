"""How long `spacelm plan` takes to answer, against its goal (issue 55: under 30 s on the paper config).

    python bench/plan_time.py [--config configs/paper.yaml] [--runs 1] [--budget 30]

Runs `spacelm plan --config CONFIG` as a fresh process --runs times (imports included, as a user meets
it) and records each run's wall-clock seconds and the process's CPU seconds. The CPU figure is the one
to read on a shared machine: the wall clock also counts other processes' turns on the cores. Writes
results/bench/plan_time.json and exits 1 when the median CPU time is over --budget seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.lib.io import write_json  # noqa: E402


def one_run(config: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "spacelm.cli", "plan", "--config", config],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"spacelm plan --config {config} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/paper.yaml")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--budget", type=float, default=30.0, help="seconds of CPU time the median run may take")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "plan_time.json"))
    args = ap.parse_args(argv)
    runs = [one_run(args.config) for _ in range(args.runs)]
    cpu = statistics.median(r["cpu_seconds"] for r in runs)
    out = {
        "config": args.config,
        "runs": runs,
        "median_cpu_seconds": cpu,
        "budget_seconds": args.budget,
        "within_budget": cpu <= args.budget,
        "cores": os.cpu_count(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    write_json(Path(args.out), out)
    verdict = "within" if out["within_budget"] else "OVER"
    print(
        f"spacelm plan --config {args.config}: median {cpu:.1f} s CPU ({len(runs)} runs), {verdict} {args.budget:g} s"
    )
    return 0 if out["within_budget"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
