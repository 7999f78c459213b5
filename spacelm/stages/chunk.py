"""Stage 1b, chunk: `documents.jsonl` → `chunks.jsonl` (+ per-document chunk counts)."""

from __future__ import annotations

from ..config import Config
from ..lib import names
from ..lib.ingest.chunking import Chunk, chunk_documents
from ..lib.io import write_dataframe, write_jsonl
from ..runner.base import Stage, execute
from ..runner.data import chunks_path, documents_path, load_documents


def outputs(cfg: Config):
    return [chunks_path(cfg), cfg.processed_dir / names.CHUNKS_PER_DOCUMENT]


def compute(cfg: Config, documents: list) -> list[Chunk]:
    """The documents cut into chunks of at most `chunking.max_tokens` tokens of its tokenizer."""
    return chunk_documents(documents, cfg.chunking.max_tokens, cfg.chunking.tokenizer, cfg.chunking.overlap)


def write(cfg: Config, chunks: list[Chunk], out) -> dict:
    """chunks.jsonl and the per-document counts; the summary."""
    import pandas as pd

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


def build(cfg: Config, out) -> dict:
    return write(cfg, compute(cfg, load_documents(cfg)), out)


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
