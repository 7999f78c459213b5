"""How well the evidence gate's score separates answerable from unanswerable questions, on
every question a run has (no generator call: the gate reads only the passages).

    python bench/gate_calibration.py --config configs/quick.yaml --out results/bench/gate_calibration.json

Questions: the kept answerable synthetic questions and the answerable golden samples located
in the chunks; the kept unanswerable questions (synthetic and golden). Each is scored on its
top `answer.retrieve_k` passages from `answer.retriever` (BM25 by default), as pipeline B
would see them. Reported: the AUC of the score (answerable above unanswerable) with a 95%
bootstrap CI, the refusal recall and false-refusal rate at the configured thresholds, and the
threshold that maximises recall minus false-refusal rate (Youden's J) — a figure to choose a
threshold from, on data other than the run being reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.answer.answerability import refusal_metrics  # noqa: E402
from spacelm.lib.answer.gate import score_items  # noqa: E402
from spacelm.lib.retrieval.dense import Encoder  # noqa: E402
from spacelm.lib.retrieval.systems import build_systems  # noqa: E402
from spacelm.lib.stats import auc, bootstrap_ci  # noqa: E402
from spacelm.runner.data import load_chunks, load_questions  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/quick.yaml")
    ap.add_argument("--out", default="results/bench/gate_calibration.json")
    a = ap.parse_args()
    cfg = load_config(a.config)
    chunks = load_chunks(cfg)
    text_of = {c.chunk_id: c.text for c in chunks}
    sys.path.insert(0, str(ROOT / "bench"))
    from citations import golden_questions

    answerable = load_questions(cfg, chunks) + golden_questions(cfg, chunks)
    unanswerable = load_questions(cfg, chunks, answerable=False)
    qs = [dict(q, answerable=True) for q in answerable] + unanswerable
    system = build_systems(
        cfg.retrieval.setup(),
        list(text_of),
        list(text_of.values()),
        names=[cfg.answer.retriever],
        cache_dir=cfg.cache_dir,
    )[cfg.answer.retriever]
    rankings = system.search([q["question"] for q in qs], cfg.answer.retrieve_k)
    items = [
        {
            "qid": q["qid"],
            "question": q["question"],
            "answerable": q["answerable"],
            "kind": q.get("unanswerable_kind"),
            "passage_ids": [d for d, _ in r],
        }
        for q, r in zip(qs, rankings)
    ]
    dc = cfg.retrieval.dense
    score_items(
        items,
        text_of,
        Encoder(dc.model, dc.batch_size, dc.query_prefix, dc.passage_prefix, cfg.cache_dir, dc.max_seq_length),
        cfg.answer.gate.rules(),
    )
    y = [int(it["answerable"]) for it in items]
    s = [it["gate"]["score"] for it in items]
    lo, hi = bootstrap_ci(list(zip(y, s)), lambda u: auc([a for a, _ in u], [b for _, b in u]), 1000, cfg.seed)
    at_config = refusal_metrics([{"answerable": it["answerable"], "refused": not it["gate"]["passed"]} for it in items])
    best = max(
        (
            (t, refusal_metrics([{"answerable": it["answerable"], "refused": it["gate"]["score"] < t} for it in items]))
            for t in np.linspace(0, 1, 101)
        ),
        key=lambda x: (x[1]["refusal_recall"] - x[1]["false_refusal_rate"], -x[0]),
    )
    r = lambda x: None if x != x else round(float(x), 3)
    out = {
        "command": "python bench/gate_calibration.py " + " ".join(sys.argv[1:]),
        "config": a.config,
        "retriever": cfg.answer.retriever,
        "top_k": cfg.answer.retrieve_k,
        "n_answerable": sum(y),
        "n_unanswerable": len(y) - sum(y),
        "auc": r(auc(y, s)),
        "auc_ci": [r(lo), r(hi)],
        "configured": {
            "threshold": cfg.answer.gate.threshold,
            "strong_threshold": cfg.answer.gate.strong_threshold,
            **{k: r(v) for k, v in at_config.items()},
        },
        "youden_best": {"threshold": r(best[0]), **{k: r(v) for k, v in best[1].items()}},
        "scores": {
            "answerable": [r(v) for v, t in zip(s, y) if t],
            "unanswerable": [r(v) for v, t in zip(s, y) if not t],
        },
        "by_kind": {
            k: [r(it["gate"]["score"]) for it in items if it["kind"] == k]
            for k in sorted({it["kind"] for it in items if it["kind"]})
        },
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(
        f"gate AUC {out['auc']} {out['auc_ci']} on {out['n_answerable']} answerable / {out['n_unanswerable']} "
        f"unanswerable; configured: recall {out['configured']['refusal_recall']}, false refusals "
        f"{out['configured']['false_refusal_rate']}; best J at {out['youden_best']['threshold']}: recall "
        f"{out['youden_best']['refusal_recall']}, false refusals {out['youden_best']['false_refusal_rate']}"
    )


if __name__ == "__main__":
    main()
