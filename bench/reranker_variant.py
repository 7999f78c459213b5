"""Train one variant of the configured reranker into its own model name, beside the one in use, without
the stage machinery: the training set is built from the config's files as stage train-reranker builds
it (synth's copies, pseudo-queries, labelled sets), so a variant can be trained while a committed run's
stages are stale by code (a one-stage command would refuse to rewrite them).

    python bench/reranker_variant.py --config configs/standard.yaml --name ce-short1 \
        --set retrieval.reranker.train.short_negatives=1
    python bench/reranker_eval.py --config configs/standard.yaml --set retrieval.reranker.model=trained:ce-short1 \
        --sets run,golden,labels --labels ../shared/judge/space-corpus --out results/bench/reranker_short1.json

Nothing is written under results/ or data/; the variant lands in the model store as `trained:<name>`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--name", required=True, help="the variant's model name: trained:<name>")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)

    import os
    import shutil
    import tempfile

    from spacelm.config import load_config
    from spacelm.stages.train_reranker import model_folder, train

    cfg = load_config(args.config, sets=[*args.overrides, f"retrieval.reranker.model=trained:{args.name}"])
    if model_folder(cfg).exists():
        raise SystemExit(f"{model_folder(cfg)} exists: pick another --name, or remove it first")
    final = model_folder(cfg)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:  # trained beside, renamed into place whole: an interrupted run leaves no half model
        summary = train(cfg, lambda p: tmp / "model" if p == final else p)
        os.replace(tmp / "model", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({k: summary[k] for k in ("trained", "pairs", "train_seconds", "bm25_weight")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
