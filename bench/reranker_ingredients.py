"""Which training ingredient earns its place: the reranker trained on each ingredient alone and on
their mixes, each measured like the configured checkpoint (bench/reranker_eval.py).

    python bench/reranker_ingredients.py --config configs/standard.yaml \
        --labels ../shared/judge/space-corpus --out results/bench/reranker_ingredients.json \
        [--variants synthetic,scifact,pseudo,synthetic+scifact,synthetic+scifact+pseudo] [--pseudo 400]

Ingredients, as `retrieval.reranker.train` sets them (stage `train-reranker`, the config's settings
otherwise):

- `synthetic`: the config's synthetic questions (`questions`, `questions_from`) over training chunks;
- `scifact`: the config's labelled sets (SciFact train);
- `pseudo`: `--pseudo` sentences cut from training chunks as queries (`pseudo_queries`, no model call).

Each variant is trained into its own `trained:ce-ingredients-<variant>` (a variant already trained with
the same settings is reused: the stage's stamp), in a scratch run folder, so neither the configured
checkpoint nor a committed run is touched. Each fits BM25's weight on its own held-back training
queries (pseudo-queries are not in that fit: their chunk still holds the sentence). The golden samples
and the in-domain labels (condensed lists, and full lists where the hole store grades them) measure
each; nothing measured here trains or tunes a variant. Rows are merged into `--out` when it exists.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

VARIANTS = ("synthetic", "scifact", "pseudo", "synthetic+scifact+pseudo")  # synthetic+scifact: the configured one


def variant_sets(cfg, variant: str, pseudo: int, scratch: str) -> list[str]:
    """The --set arguments that train and measure `variant`."""
    t = cfg.retrieval.reranker.train
    parts = set(variant.split("+"))
    unknown = parts - {"synthetic", "scifact", "pseudo"}
    if unknown:
        raise SystemExit(f"--variants: unknown ingredient(s) {sorted(unknown)}; use synthetic, scifact, pseudo")
    labelled = [{k: v for k, v in vars(s).items() if v is not None} for s in t.labelled] if "scifact" in parts else []
    return [
        f"run_name=ingredients-{variant.replace('+', '-')}",
        f"paths.results_dir={scratch}",
        f"retrieval.reranker.model=trained:ce-ingredients-{variant.replace('+', '-')}",
        f"retrieval.reranker.train.questions={t.questions if 'synthetic' in parts else 0}",
        f"retrieval.reranker.train.pseudo_queries={pseudo if 'pseudo' in parts else 0}",
        f"retrieval.reranker.train.labelled={json.dumps(labelled)}",
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--labels", help="in-domain graded labels (BEIR layout), e.g. ../shared/judge/space-corpus")
    ap.add_argument("--out", default="results/bench/reranker_ingredients.json")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--pseudo", type=int, default=400, help="pseudo-queries in a variant that uses them")
    args = ap.parse_args(argv)

    import reranker_eval

    from spacelm.config import load_config
    from spacelm.lib.io import write_json
    from spacelm.runner.base import execute
    from spacelm.stages import train_reranker

    base = load_config(args.config)
    out_p = Path(args.out)
    record = json.loads(out_p.read_text()) if out_p.is_file() else {"config": args.config, "variants": {}}
    record["pseudo_queries"] = args.pseudo
    scratch = tempfile.mkdtemp(prefix="spacelm-ingredients-")
    for variant in args.variants.split(","):
        sets = variant_sets(base, variant, args.pseudo, scratch)
        cfg = load_config(args.config, sets=sets)
        t0 = time.perf_counter()
        summary = execute(train_reranker.STAGE, cfg)
        trained_s = round(time.perf_counter() - t0, 1)
        tmp = Path(scratch) / f"{variant}.json"
        eval_args = ["--config", args.config, "--out", str(tmp), "--sets", "golden,labels"]
        eval_args += [a for s in sets for a in ("--set", s)]
        if args.labels:
            eval_args += ["--labels", args.labels]
        reranker_eval.main(eval_args)
        got = json.loads(tmp.read_text())
        record["variants"][variant] = {
            "train_seconds": summary.get("computed_seconds") or trained_s,
            "checkpoint": got["checkpoint"],
            "weight": got.get("weight"),
            "sets": {name: {k: v for k, v in row.items() if k != "per_query"} for name, row in got["sets"].items()},
        }
        write_json(out_p, record)
        print(f"{variant}: written to {out_p}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
