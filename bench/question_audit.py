"""Audit a run's written questions with the deterministic checks of `spacelm/lib/synth/checks.py`,
beside the golden samples (the baseline their thresholds come from).

    python bench/question_audit.py --config configs/standard.yaml --out results/question_audit.json

Per set (the run's kept synthetic questions against their source chunks; the answerable golden
samples against the chunk holding their passage) and per task: content-word coverage of the question
by its source, the longest verbatim word run, the share with a run of 6+ words, the share naming a term
(name, acronym, number) that neither the source chunk nor its document holds, and how many sources are
boilerplate. Needs the config's chunks and documents (`spacelm chunk --config ...`); loads no model.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config.load import load_config  # noqa: E402
from spacelm.lib.io import write_json  # noqa: E402
from spacelm.lib.synth.checks import (  # noqa: E402
    boilerplate_reason,
    content_coverage,
    longest_verbatim_run,
    summarise,
    unsupported_premises,
)
from spacelm.stages.data import golden_questions, load_chunks, load_documents, load_questions  # noqa: E402


def audit_rows(rows: list[dict], chunks: dict, docs: dict) -> list[dict]:
    out = []
    for r in rows:
        c = chunks.get(r.get("source_chunk_id"))
        if c is None:
            continue
        doc = docs.get(c.doc_id)
        q = r["question"]
        out.append(
            {
                "qid": r["qid"],
                "task": r.get("task"),
                "coverage": content_coverage(q, c.text),
                "verbatim": longest_verbatim_run(q, c.text),
                "unsupported": unsupported_premises(q, c.text, doc.text if doc else ""),
                "boilerplate": boilerplate_reason(c.text),
            }
        )
    return out


def figures(rows: list[dict], run_of: int) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "coverage": summarise(r["coverage"] for r in rows),
        "verbatim": summarise(r["verbatim"] for r in rows),
        f"share_verbatim_{run_of}plus": round(sum(r["verbatim"] >= run_of for r in rows) / n, 3),
        "share_unsupported_premise": round(sum(bool(r["unsupported"]) for r in rows) / n, 3),
        "share_boilerplate_source": round(sum(bool(r["boilerplate"]) for r in rows) / n, 3),
        "unsupported_examples": [(r["qid"], r["unsupported"]) for r in rows if r["unsupported"]][:8],
        "boilerplate_reasons": {
            k: sum(r["boilerplate"] == k for r in rows) for k in sorted({r["boilerplate"] for r in rows} - {None})
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--run-of", type=int, default=6, help="a verbatim run this long or longer counts as a copy")
    ap.add_argument("--out", default=str(ROOT / "results" / "question_audit.json"))
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    chunk_list = load_chunks(cfg)
    chunks = {c.chunk_id: c for c in chunk_list}
    docs = {d.doc_id: d for d in load_documents(cfg)}
    sets = {
        "run": [r for r in load_questions(cfg, chunk_list) if r.get("origin") != "golden"],
        "golden": [r for r in golden_questions(cfg, chunk_list, list(docs.values())) if r["answerable"]],
    }
    out = {"config": args.config, "chunks": len(chunk_list)}
    reasons = Counter(r for r in (boilerplate_reason(c.text) for c in chunk_list) if r)
    out["corpus_boilerplate_chunks"] = {"n": sum(reasons.values()), "by_reason": dict(sorted(reasons.items()))}
    for name, rows in sets.items():
        audited = audit_rows(rows, chunks, docs)
        out[name] = {"all": figures(audited, args.run_of)}
        for task in sorted({r["task"] for r in audited if r["task"]}):
            out[name][task] = figures([r for r in audited if r["task"] == task], args.run_of)
    write_json(Path(args.out), out)
    for name in sets:
        a = out[name]["all"]
        print(
            f"{name:7s} n={a['n']:3d} coverage mean {a['coverage']['mean']} verbatim median {a['verbatim']['median']} "
            f"6+ runs {a[f'share_verbatim_{args.run_of}plus']} unsupported {a['share_unsupported_premise']} "
            f"boilerplate sources {a['share_boilerplate_source']}"
        )
    print("corpus boilerplate chunks:", out["corpus_boilerplate_chunks"]["by_reason"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
