"""Audit what ingest keeps and removes on any folder of documents, and how fast it reads.

    python bench/ingest_audit.py DIR [--out results/bench/ingest_audit.md] [--layout columns|stream] [--samples 5]

Prints pages per second (goal: at least 50 on 2 cores) and writes a Markdown audit a person
can skim: per document its pages, words, characters dropped per reason, pages without text,
repairs and equation blocks; then, per reason, a sample of the removed spans with their
document and page; then the files that could not be used. Reads the documents only: nothing
is written to the project's data folders.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import IngestConfig  # noqa: E402
from spacelm.lib.ingest.documents import DROP_REASONS, documents_table, ingest_corpus  # noqa: E402


def _cell(text: str, n: int = 160) -> str:
    return " ".join(text.split())[:n].replace("|", "\\|")


def audit(folder: Path, rules, samples: int) -> tuple[str, dict]:
    import pymupdf  # noqa: F401  (imported before the clock starts: loading it takes about a second)

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ingest_corpus(folder, [".pdf", ".md", ".txt"], ["README.md"], rules)
    seconds = time.perf_counter() - t0
    table = documents_table(res.documents)
    pages, words = int(table["pages"].sum()), int(table["words"].sum())
    stats = {
        "documents": len(res.documents),
        "pages": pages,
        "words": words,
        "seconds": round(seconds, 2),
        "pages_per_second": round(pages / seconds, 1) if seconds else None,
        "dropped_chars": {r: int(table[f"dropped_{r}_chars"].sum()) for r in DROP_REASONS},
        "skipped": len(res.skipped),
    }
    cols = (
        ["doc_id", "pages", "words"]
        + [f"dropped_{r}_chars" for r in DROP_REASONS]
        + ["empty_pages", "repaired", "equation_blocks"]
    )
    short = {f"dropped_{r}_chars": r.replace("_", " ") for r in DROP_REASONS}
    lines = [
        f"# Ingest audit: `{folder}`",
        "",
        f"{stats['documents']} documents, {pages} pages, {words:,} words kept; read in {seconds:.1f} s "
        f"({stats['pages_per_second']} pages/s). Characters removed: "
        + ", ".join(f"{r.replace('_', ' ')} {n:,}" for r, n in stats["dropped_chars"].items())
        + ".",
        "",
        "## Per document",
        "",
        table[cols].rename(columns=short).to_markdown(index=False),
        "",
    ]
    for reason in DROP_REASONS:
        rows = [d for d in res.dropped if d["reason"] == reason]
        if not rows:
            continue
        step = max(1, len(rows) // samples)
        lines += [
            f"## Removed as {reason.replace('_', ' ')} ({len(rows)} spans, a sample)",
            "",
            "| document | page | chars | start of the span |",
            "|---|---:|---:|---|",
        ]
        lines += [
            f"| {d['doc_id']} | {d['page']} | {d['chars']} | {_cell(d['preview'])} |" for d in rows[::step][:samples]
        ]
        lines.append("")
    if res.skipped:
        lines += ["## Files not used", ""] + [f"- `{s.source}`: {s.reason}" for s in res.skipped] + [""]
    warned = [str(w.message) for w in caught if "skipping" not in str(w.message)]
    if warned:
        lines += ["## Warnings", ""] + [f"- {_cell(w, 300)}" for w in warned] + [""]
    return "\n".join(lines), stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "ingest_audit.md")
    ap.add_argument("--layout", choices=["columns", "stream"], default="columns")
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args(argv)
    rules = IngestConfig(layout=args.layout).rules()
    text, stats = audit(args.folder, rules, args.samples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(
        f"{stats['documents']} documents, {stats['pages']} pages in {stats['seconds']} s: "
        f"{stats['pages_per_second']} pages/s (goal >= 50); removed {stats['dropped_chars']}; audit: {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
