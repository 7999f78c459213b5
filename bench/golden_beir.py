"""The golden samples as a BEIR folder over a run's chunks, for bench/beir_anchor.py.

    python bench/golden_beir.py --config configs/standard.yaml --out .cache/spacelm/golden-beir
    python bench/beir_anchor.py --beir-dir .cache/spacelm/golden-beir --systems bm25,bm25+rerank,dense,dense+rerank \\
        --rerank-kind cross-encoder --rerank-model trained:NAME --out results/reranker_golden.json

Writes `corpus.jsonl` (every chunk of the config's chunking, with its `doc_id`, so beir_anchor clusters
its intervals by document), `queries.jsonl` (the answerable golden samples whose passage is located in
the corpus) and `qrels/test.tsv`: span gold, the chunks holding enough of each sample's evidence span
(the rule the retrieve stage scores golden samples by). The folder holds the corpus's text: keep it
out of git (the default lives under .cache/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config.load import load_config  # noqa: E402
from spacelm.lib.retrieval.beir import BeirData, write_beir  # noqa: E402
from spacelm.stages.data import golden_questions, load_chunks  # noqa: E402
from spacelm.stages.retrieve import gold_qrels  # noqa: E402


def golden_folder(config: str, out: Path) -> dict:
    """Write the folder; {"queries", "chunks", "documents"} it holds."""
    cfg = load_config(config)
    chunks = load_chunks(cfg)
    rows = [r for r in golden_questions(cfg, chunks) if r["answerable"] and r["doc_id"]]
    qrels = gold_qrels(rows, chunks)
    corpus = {c.chunk_id: {"text": c.text, "doc_id": c.doc_id} for c in chunks}
    write_beir(out, BeirData(corpus, {r["qid"]: r["question"] for r in rows if r["qid"] in qrels}, qrels))
    return {"queries": len(qrels), "chunks": len(chunks), "documents": len({c.doc_id for c in chunks})}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/standard.yaml")
    ap.add_argument("--out", default=str(ROOT / ".cache" / "spacelm" / "golden-beir"))
    args = ap.parse_args(argv)
    print(golden_folder(args.config, Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
