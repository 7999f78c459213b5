"""Commit a labelled set or golden samples of a corpus the project does not ship as spans, never as text.

    python scripts/pack_labels.py --labels ../shared/judge/space-corpus --config configs/standard.yaml \
        --out data/space_corpus/labels
    python scripts/pack_labels.py --golden data/space_corpus/golden_samples.jsonl --config configs/standard.yaml \
        --out data/space_corpus/golden

With --golden: writes --out/golden_samples.jsonl, the samples with each passage replaced by its span record
(where it lies in its document, edits, sha256); `spacelm data fetch space-corpus-golden` rebuilds the file the
configs read. Prints the file's sha256 (the registry's `files` entry for the rebuilt file).

Reads a BEIR-layout folder of labels (`corpus.jsonl` with `doc_id`, `char_start`, `char_end` per passage,
`queries.jsonl`, `qrels.tsv`) and the documents of the config's ingest (in memory, as the ingest stage reads
the corpus), and writes to --out: `passages.jsonl` (per passage its document, its labelled span, where it
lies in this project's ingest, the few edits that turn that into the labelled text, and the labelled
text's sha256; no text), and copies of `queries.jsonl` and `qrels.tsv`. `spacelm data fetch NAME`
rebuilds `corpus.jsonl` from them and the fetched corpus, and checks it against the recorded sha256.
Exits 1 when a passage cannot be rebuilt exactly (its id is printed; nothing is written).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.datasets import GOLDEN_NAME, pack_golden, pack_spans, rebuild_golden  # noqa: E402
from spacelm.lib.io import read_jsonl, write_jsonl  # noqa: E402
from spacelm.stages.ingest import ingest_configured  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--labels", type=Path, help="the labelled BEIR folder")
    what.add_argument("--golden", type=Path, help="a golden-samples file whose passages are corpus text")
    ap.add_argument("--config", required=True, help="the config whose ingest gives the documents' text")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    texts = {d.doc_id: d.text for d in ingest_configured(cfg).documents}
    if args.golden:
        return pack_golden_file(args.golden, texts, args.out)
    passages = read_jsonl(args.labels / "corpus.jsonl")
    spans, left = pack_spans(passages, texts)
    if left:
        print(f"{len(left)} of {len(passages)} passages cannot be rebuilt exactly: {', '.join(left[:10])}")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "passages.jsonl", spans)
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copyfile(args.labels / name, args.out / name)
    moved = sum(s["at"] != [s["char_start"], s["char_end"]] for s in spans)
    edited = sum(bool(s["edits"]) for s in spans)
    print(f"{len(spans)} passages packed into {args.out}: {moved} at another span, {edited} with edits")
    return 0


def pack_golden_file(path: Path, texts: dict[str, str], out: Path) -> int:
    import hashlib

    rows = read_jsonl(path)
    packed, left = pack_golden(rows, texts)
    if left:
        print(f"{len(left)} of {len(rows)} golden passages cannot be rebuilt exactly: {', '.join(left[:10])}")
        return 1
    again, problems = rebuild_golden(packed, texts)
    if problems or again != rows:
        print(f"the packed samples do not rebuild the file: {'; '.join(problems[:3])}")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / GOLDEN_NAME, packed)
    spans = sum(isinstance(r.get("passage"), dict) for r in packed)
    print(f"{spans} passages of {len(rows)} samples packed into {out / GOLDEN_NAME}")
    print(f"sha256 of the rebuilt {GOLDEN_NAME}: {hashlib.sha256(path.read_bytes()).hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
