"""Do prediction-powered intervals cover? A check where every pair has a human label.

On TREC DL 2020 (54 queries, 11,386 NIST-graded pairs) a reference judge's labels stand in for
our judge's grades (its predictions on every pair), and NIST's grades stand in for the person's
labels. For several retrieval runs over each query's judged pool (so every retrieved pair has a
human grade) the target is the share of the run's top-k pairs that NIST grades 2 or 3, known
exactly. Each of `--draws` seeded draws labels n of the N top-k pairs and computes the PPI
estimate and its 95% interval; we report how often the interval holds the true share (it
must be near 95%), the mean interval width, and beside it the error of the judge-only share
(the mean of the judge's predictions, which no labelling corrects) and the width of the
interval from the n labels alone.

Runs (top-k of each query's judged pool, every pair NIST-graded):
- bm25@10, bm25@50: BM25 over the pooled passages, each query's judged passages in BM25 order;
- random@20: 20 passages drawn at random from each query's pool (a weak run, other mix of grades).
Samplers: `uniform` (n pairs without replacement; PPI with the plain rectifier mean) and
`stratified` (spacelm label's sampler: proportional by judge grade, at least one per grade;
PPI with the stratified mean and variance, lib/ppi.ppi_mean_stratified).
Intervals: classic PPI (pairs as i.i.d. draws), its finite-population variant (the N top-k
pairs are the whole population), PPI++ (the judge's weight tuned per draw; uniform sampler) and,
for reference, the n labels alone (Wilson).

    python bench/ppi_coverage.py --data ../shared/judge/trec-dl-2020 --draws 500 \
        --out results/bench/ppi_coverage.json

No model is called: cheap CPU (about a minute).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import BM25Config  # noqa: E402
from spacelm.lib.judge.ppi import (  # noqa: E402
    power_tuned_lambda,
    ppi_mean,
    ppi_mean_stratified,
    stratified_sample,  # noqa: E402
)
from spacelm.lib.judge.validity import read_reference_judges  # noqa: E402
from spacelm.lib.retrieval.bm25 import BM25Retriever  # noqa: E402
from spacelm.lib.stats import wilson_ci  # noqa: E402


def load(folder: Path) -> tuple[dict, dict, dict]:
    """(qrels {qid: {pid: grade}}, queries {qid: text}, passages {pid: text}) of the judged pool."""
    qrels: dict = {}
    for line in (folder / "qrels.tsv").read_text().splitlines()[1:]:
        q, p, g = line.split("\t")
        qrels.setdefault(q, {})[p] = int(g)
    queries = {r["_id"]: r["text"] for r in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())}
    need = {p for rel in qrels.values() for p in rel}
    passages = {}
    for line in (folder / "corpus.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["_id"] in need:
            passages[r["_id"]] = r["text"]
    return qrels, {q: queries[q] for q in qrels if q in queries}, passages


def runs(qrels: dict, queries: dict, passages: dict, seed: int) -> dict:
    """{run name: [(qid, pid), ...]}: the top-k pairs of each run (see the module docstring)."""
    ids = sorted(passages)
    bm25 = BM25Retriever(BM25Config()).index(ids, [passages[i] for i in ids])
    qids = sorted(queries)
    ranked = {}
    for q, ranking in zip(qids, bm25.search([queries[q] for q in qids], 2000)):
        pool = qrels[q]
        order = [d for d, _ in ranking if d in pool]
        order += sorted(d for d in pool if d not in set(order))  # pool passages BM25 did not score
        ranked[q] = order
    rng = random.Random(seed)
    out = {
        "bm25@10": [(q, d) for q in qids for d in ranked[q][:10]],
        "bm25@50": [(q, d) for q in qids for d in ranked[q][:50]],
        "random@20": [(q, d) for q in qids for d in rng.sample(sorted(qrels[q]), 20)],
    }
    return out


def coverage(
    pairs: list, human: dict, judge: dict, judge_graded: bool, n: int, draws: int, seed: int, sampler: str
) -> dict:
    """Coverage of the 95% PPI intervals of the share graded >= 2 among `pairs` over `draws`."""
    y = np.array([float(human[p] >= 2) for p in pairs])
    f = np.array([float(judge[p] >= 2) if judge_graded else float(judge[p] >= 1) for p in pairs])
    truth = float(y.mean())
    big_n = len(pairs)
    hits = {"classic": 0, "finite_population": 0, "ppi_plus_plus": 0, "labels_only": 0}
    widths = {k: [] for k in hits}
    errors = []
    items = [{"pair_id": str(i), "system": "run", "grade": int(f[i])} for i in range(big_n)]
    for d in range(draws):
        if sampler == "uniform":
            idx = np.random.default_rng([seed, d]).choice(big_n, size=n, replace=False)
            w = None
        else:
            got = stratified_sample(items, n, seed * 100003 + d)
            idx = np.array([int(g["pair_id"]) for g in got])
            w = [g["weight"] for g in got]
        for name, fp in (("classic", False), ("finite_population", True)):
            if sampler == "uniform":
                r = ppi_mean(f, f[idx], y[idx], weights=w, finite_population=fp)
            else:  # the stratified variance (by judge grade), as the sample was drawn
                r = ppi_mean_stratified(f, f, f[idx], y[idx], f[idx], finite_population=fp)
            hits[name] += r["ci_low"] <= truth <= r["ci_high"]
            widths[name].append(r["ci_high"] - r["ci_low"])
            if name == "classic":
                errors.append(r["estimate"] - truth)
        if sampler == "uniform":  # PPI++: the judge's weight tuned on the draw (classic variance)
            lam = power_tuned_lambda(f, f[idx], y[idx])
            r = ppi_mean(f, f[idx], y[idx], lam=lam)
            hits["ppi_plus_plus"] += r["ci_low"] <= truth <= r["ci_high"]
            widths["ppi_plus_plus"].append(r["ci_high"] - r["ci_low"])
        if sampler == "uniform":  # the labels alone, Wilson interval (no judge)
            lo, hi = wilson_ci(int(y[idx].sum()), n)
            hits["labels_only"] += lo <= truth <= hi
            widths["labels_only"].append(hi - lo)
    out = {
        "n_pairs": big_n,
        "n_human": n,
        "draws": draws,
        "sampler": sampler,
        "true_share": round(truth, 4),
        "judge_only_share": round(float(f.mean()), 4),
        "judge_only_error": round(float(f.mean()) - truth, 4),
        "ppi_mean_error": round(float(np.mean(errors)), 4),
        "ppi_rmse": round(float(np.sqrt(np.mean(np.square(errors)))), 4),
    }
    for k in hits:
        if widths[k]:
            out[f"coverage_{k}"] = round(hits[k] / draws, 4)
            out[f"mean_width_{k}"] = round(float(np.mean(widths[k])), 4)
    # the Monte Carlo error of a coverage near 95% over `draws` draws
    out["coverage_mc_se"] = round(float(np.sqrt(0.95 * 0.05 / draws)), 4)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/judge/trec-dl-2020")
    ap.add_argument("--judges", nargs="+", default=["umbrela-gpt-4o", "monot5-base"])
    ap.add_argument("--n", nargs="+", type=int, default=[50, 100, 200])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", default="results/bench/ppi_coverage.json")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    folder = Path(a.data)
    qrels, queries, passages = load(folder)
    refs = read_reference_judges(folder / "reference_judges")
    human = {(q, p): g for q, rel in qrels.items() for p, g in rel.items()}
    top = runs(qrels, queries, passages, a.seed)
    rows = []
    for judge in a.judges:
        labels = refs[judge]
        graded = max(labels.values()) > 1
        for run, pairs in top.items():
            pairs = [p for p in pairs if p in labels]
            for n in a.n:
                for sampler in ("uniform", "stratified"):
                    r = coverage(pairs, human, labels, graded, n, a.draws, a.seed, sampler)
                    rows.append({"judge": judge, "run": run, **r})
                    print(
                        f"{judge:15s} {run:10s} n={n:3d} {sampler:10s} truth {r['true_share']:.3f} judge-only "
                        f"{r['judge_only_error']:+.3f}  coverage classic {r['coverage_classic']:.3f} "
                        f"fpc {r['coverage_finite_population']:.3f}  width {r['mean_width_classic']:.3f}"
                        + (
                            f"  ppi++ cov {r['coverage_ppi_plus_plus']:.3f} width {r['mean_width_ppi_plus_plus']:.3f}"
                            if "coverage_ppi_plus_plus" in r
                            else ""
                        )
                        + (
                            f"  labels-only cov {r['coverage_labels_only']:.3f} width {r['mean_width_labels_only']:.3f}"
                            if "coverage_labels_only" in r
                            else ""
                        ),
                        flush=True,
                    )
    out = {
        "what": "coverage of 95% prediction-powered intervals of the share of NIST grade >= 2 in a run's top-k "
        "on TREC DL 2020; a reference judge's labels as the predictions, NIST grades as the human labels",
        "command": "python bench/ppi_coverage.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "queries": len(queries),
        "seed": a.seed,
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "rows": rows,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out} ({out['wall_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
