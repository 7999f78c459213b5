"""Audit a run's kept questions with the checks of `spacelm/lib/synth/checks.py`, beside the golden samples
(the baseline their thresholds come from): the figures synth writes to `question_audit.csv`, for any
questions file, e.g. one written before the checks existed.

    python bench/question_audit.py --config configs/standard.yaml [--questions old/questions.jsonl]

Per set (the kept synthetic questions; the answerable golden samples against the chunk holding their
passage) and task: content-word coverage, the longest verbatim run (median, p90), and the shares over the
config's copy limits, naming a term outside the chunk's context or outside its document, and from a
boilerplate chunk; then the corpus's boilerplate chunks by reason. Needs the config's chunks
(`spacelm chunk --config ...`); loads no model.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config.load import load_config  # noqa: E402
from spacelm.lib.io import read_jsonl, write_json  # noqa: E402
from spacelm.lib.synth.checks import premise_contexts  # noqa: E402
from spacelm.lib.synth.questions import boilerplate_chunks  # noqa: E402
from spacelm.lib.tables import markdown_table  # noqa: E402
from spacelm.runner.data import golden_questions, load_chunks, questions_path  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--questions", help="a questions.jsonl to audit (default: the config's)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "question_audit.json"))
    args = ap.parse_args(argv)
    from spacelm.lib.synth.screening import audit_table

    cfg = load_config(args.config)
    chunks = load_chunks(cfg)
    checks = cfg.question_writing().checks
    contexts = premise_contexts(chunks, checks.context_chunks, checks.front_chars)
    rows = list(read_jsonl(Path(args.questions) if args.questions else questions_path(cfg)))
    sets = {
        "run": [r for r in rows if r["kept"] and r.get("answerable", True) and r.get("origin") != "golden"],
        "golden": [r for r in golden_questions(cfg, chunks) if r["answerable"]],
    }
    table = audit_table(sets, contexts, checks)
    skipped = Counter(boilerplate_chunks(chunks).values())
    out = {
        "config": args.config,
        "questions": args.questions or str(questions_path(cfg)),
        "chunks": len(chunks),
        "limits": {"max_verbatim_run": checks.max_verbatim_run, "max_coverage": checks.max_coverage},
        "corpus_boilerplate_chunks": {"n": sum(skipped.values()), "by_reason": dict(sorted(skipped.items()))},
        "audit": table.to_dict("records"),
    }
    write_json(Path(args.out), out)
    print(markdown_table(table[table.task == "all"].round(3)))
    print("corpus boilerplate chunks:", out["corpus_boilerplate_chunks"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
