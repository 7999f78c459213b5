"""Stage 1b, chunk: `documents.jsonl` → `chunks.jsonl` (+ per-document chunk counts)."""

from __future__ import annotations

from ..config import Config
from ..lib import names
from ..lib.ingest.chunking import chunk_documents
from ..lib.io import write_dataframe, write_jsonl
from .base import Stage, execute
from .data import chunks_path, documents_path, load_documents


def outputs(cfg: Config):
    return [chunks_path(cfg), cfg.processed_dir / names.CHUNKS_PER_DOCUMENT]


def build(cfg: Config, out) -> dict:
    import pandas as pd

    chunks = chunk_documents(load_documents(cfg), cfg.chunking.max_tokens, cfg.chunking.tokenizer, cfg.chunking.overlap)
    write_jsonl(out(chunks_path(cfg)), (c.to_dict() for c in chunks))
    df = pd.DataFrame([c.to_dict() for c in chunks])
    per_doc = (
        df.groupby("doc_id")
        .agg(chunks=("chunk_id", "size"), tokens_mean=("n_tokens", "mean"), tokens_max=("n_tokens", "max"))
        .reset_index()
    )
    write_dataframe(per_doc.round(1), out(outputs(cfg)[1]))
    return {
        "chunks": len(chunks),
        "tokens_mean": round(float(df["n_tokens"].mean()), 1),
        "tokens_max": int(df["n_tokens"].max()),
        "max_tokens": cfg.chunking.max_tokens,
    }


STAGE = Stage(
    name="chunk",
    doc="chunk the cleaned documents",
    home=lambda cfg: cfg.processed_dir,
    outputs=outputs,
    build=build,
    after=("ingest",),
    sections=lambda cfg: ["chunking"],
    reads=lambda cfg: [documents_path(cfg)],
    models=lambda cfg: {"tokenizer": cfg.chunking.tokenizer},
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
