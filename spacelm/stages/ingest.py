"""Stage 1a, ingest: `corpus.raw_dir` → `documents.jsonl`, `documents.csv`, `ingest_skipped.json`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..config import Config
from ..lib import names
from ..lib.ingest.documents import DROP_REASONS, documents_table, ingest_corpus, list_sources
from ..lib.io import InputError, write_dataframe, write_json, write_jsonl
from ..lib.redact import shown_name
from ..runner.base import Stage, execute
from ..runner.provenance import public_path


def public_source(path: str, cfg: Config) -> str:
    """How documents.jsonl, documents.csv and the skipped list name a corpus file: never a machine
    path. A file of the corpus folder is the folder's public name (`public_path`: relative to the
    project, `~/…`, or `<outside the project>/<folder>`) joined with its path inside the folder,
    so outputs match across clones and machines and two files of the same name stay apart. A byte
    of the name that is not UTF-8 (which Python carries as a lone surrogate, and no UTF-8 file can
    hold) is written as `shown_name` writes it, `\\xe9`; the file is still read by its real path."""
    raw = os.path.abspath(cfg.path(cfg.corpus.raw_dir))
    p = os.path.abspath(path)
    if p == raw or not p.startswith(raw.rstrip(os.sep) + os.sep):
        public = public_path(p, cfg)
    else:
        public = public_path(raw, cfg).rstrip("/") + "/" + Path(os.path.relpath(p, raw)).as_posix()
    return os.fsencode(public).decode("utf-8", "backslashreplace")


def sources(cfg: Config):
    """The corpus files; a missing folder is itself the (missing) input, so status can say so."""
    raw = cfg.path(cfg.corpus.raw_dir)
    return list_sources(raw, cfg.corpus.extensions, cfg.corpus.exclude) if raw.is_dir() else [raw]


def outputs(cfg: Config):
    d = cfg.processed_dir
    return [d / names.DOCUMENTS, d / names.DOCUMENTS_TABLE, d / names.INGEST_SKIPPED, d / names.INGEST_DROPPED]


def check_corpus_list(cfg: Config) -> dict | None:
    """When the config names a corpus list, the folder must hold every listed file intact (checked
    offline by sha256); its identity goes to the manifest. None when no list is named."""
    if not cfg.corpus.file_list:
        return None
    from ..lib.ingest.corpus_list import identity, load_corpus_list, unlisted_files, verify_folder

    lst = load_corpus_list(cfg.corpus.file_list)
    raw = cfg.path(cfg.corpus.raw_dir)
    bad = [s for s in verify_folder(lst, raw) if s.status != "ok"]
    if bad:
        shown = "; ".join(f"{s.file}: {s.status} ({s.detail})" for s in bad[:3]) + (
            f"; … {len(bad) - 3} more" if len(bad) > 3 else ""
        )
        raise InputError(
            f"{raw}: does not match corpus list '{lst.name}' (corpus.file_list): {shown}. Run "
            f"`spacelm corpus fetch {lst.name} --to {cfg.corpus.raw_dir}`, or remove corpus.file_list to "
            "ingest the folder as it is"
        )
    extra = unlisted_files(lst, raw, tuple(cfg.corpus.extensions))
    return {**identity(lst), "verified": True, "unlisted_files_ingested": extra}


class Ingested(NamedTuple):
    """What ingest computes from the corpus folder: the cleaned documents, the files it skipped,
    the text it dropped, the per-document table, and the corpus list's identity (None without)."""

    documents: list  # lib.ingest.documents.Document
    skipped: list  # files not read, with why
    dropped: list[dict]  # text removed from pages, with the reason
    table: object  # pandas DataFrame, one row per document
    corpus_list: dict | None


def ingest_configured(cfg: Config):
    """`ingest_corpus` on the config's corpus folder with its ingest rules: what the stage reads, and
    what `spacelm check` and `spacelm plan` read in memory when the stage's outputs are not current."""
    return ingest_corpus(
        cfg.path(cfg.corpus.raw_dir),
        cfg.corpus.extensions,
        cfg.corpus.exclude,
        cfg.ingest.rules(),
        cfg.ingest.garbled_threshold,
        cfg.ingest.min_doc_chars,
    )


def compute(cfg: Config) -> Ingested:
    """Check the corpus folder (its list, OCR when asked for), then read and clean every file."""
    corpus_list = check_corpus_list(cfg)
    if cfg.ingest.ocr:
        from ..lib.ingest.documents import ocr_available

        why_not = ocr_available()
        if why_not:
            raise InputError(f"ingest.ocr is true but OCR cannot run here: {why_not}; or set ingest.ocr: false")
    res = ingest_configured(cfg)
    for d in res.documents:
        d.source = public_source(d.source, cfg)
    raw = os.path.abspath(cfg.path(cfg.corpus.raw_dir)).rstrip(os.sep) + os.sep
    raw_public = public_path(raw, cfg).rstrip("/") + "/"
    for s in res.skipped:  # the reasons name files too (the skipped one, the first copy of a duplicate), as shown
        public = public_source(s.source, cfg)
        s.reason = s.reason.replace(shown_name(s.source), shown_name(public)).replace(
            shown_name(raw), shown_name(raw_public)
        )
        s.source = public
    table = documents_table(res.documents)
    table["garbled_flag"] = table["garbled_score"] > cfg.ingest.garbled_threshold
    return Ingested(res.documents, res.skipped, res.dropped, table, corpus_list)


def write(cfg: Config, result: Ingested, out) -> dict:
    """documents.jsonl, the dropped text, documents.csv and the skipped files; the summary."""
    docs_jsonl, docs_csv, skipped, dropped = outputs(cfg)
    table = result.table
    write_jsonl(out(docs_jsonl), (d.to_dict() for d in result.documents))
    write_jsonl(out(dropped), result.dropped)
    write_dataframe(table, out(docs_csv))
    write_json(out(skipped), [s.__dict__ for s in result.skipped])
    return {
        "documents": len(result.documents),
        "pages": int(table["pages"].sum()),
        "words": int(table["words"].sum()),
        "skipped_files": [s.__dict__ for s in result.skipped],
        "garbled_flagged": table.loc[table["garbled_flag"], "doc_id"].tolist(),
        "references_dropped_chars": int(table["references_dropped_chars"].sum()),
        "dropped_chars": {r: int(table[f"dropped_{r}_chars"].sum()) for r in DROP_REASONS},
        "repaired_pdfs": table.loc[table["repaired"], "doc_id"].tolist(),
        "empty_pages": int(table["empty_pages"].sum()),
        **({"corpus_list": result.corpus_list} if result.corpus_list else {}),
    }


def build(cfg: Config, out) -> dict:
    return write(cfg, compute(cfg), out)


def _reads(cfg: Config):
    from ..lib.ingest.corpus_list import list_path

    return sources(cfg) + ([list_path(str(cfg.corpus.file_list))] if cfg.corpus.file_list else [])


STAGE = Stage(
    name="ingest",
    doc="read and clean the corpus",
    home=lambda cfg: cfg.processed_dir,
    outputs=outputs,
    build=build,
    sections=lambda cfg: ["corpus.raw_dir", "corpus.file_list", "corpus.extensions", "corpus.exclude", "ingest"],
    reads=_reads,
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
