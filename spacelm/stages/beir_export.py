"""The BEIR export of a run's synthetic questions, made complete without a model.

The synth stage writes `<synthetic dir>/beir/` (corpus.jsonl, queries.jsonl, qrels/test.tsv). A
committed run on a licensed corpus holds queries and qrels but not corpus.jsonl, whose lines are
the corpus text (git ignores it). `spacelm export-beir` writes it again: from the processed
chunks when they are on this machine, else by ingest and chunk in memory (a tokenizer, no model;
nothing under `paths.processed_dir` is written and no stage record changes). The chunks are
checked against the run before anything is written: the hash of chunks.jsonl its manifest
recorded, and every chunk id its rankings and qrels name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import InputError, read_jsonl
from ..runner.data import chunks_path, load_chunks, questions_path


def corpus_missing_error(cfg: Config) -> InputError:
    """Why the chunk text cannot be rebuilt here, and how to get the corpus back."""
    raw = cfg.path(cfg.corpus.raw_dir)
    fix = (
        f"run `spacelm corpus fetch {cfg.corpus.file_list} --to {cfg.corpus.raw_dir}` to download the listed files"
        if cfg.corpus.file_list
        else "put the corpus files back in that folder"
    )
    return InputError(
        f"{raw}: the corpus folder (corpus.raw_dir: {cfg.corpus.raw_dir}) is not on this machine and "
        f"{chunks_path(cfg)} is missing too, so the chunk text cannot be rebuilt; {fix}, or set corpus.raw_dir "
        "to where the corpus is"
    )


def chunks_for_export(cfg: Config) -> tuple[list, str]:
    """(chunks, how): the processed chunks when present ("read"), else ingest + chunk of the
    corpus folder in memory ("rebuilt"); an InputError naming corpus.raw_dir when neither is here."""
    from . import chunk, ingest

    if chunks_path(cfg).is_file():
        return load_chunks(cfg), "read"
    if not cfg.path(cfg.corpus.raw_dir).is_dir():
        raise corpus_missing_error(cfg)
    return chunk.compute(cfg, ingest.compute(cfg).documents), "rebuilt"


def chunks_sha(chunks: list) -> str:
    """The sha256 of chunks.jsonl as the chunk stage writes it (one JSON line per chunk)."""
    h = hashlib.sha256()
    for c in chunks:
        h.update((json.dumps(c.to_dict(), ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8"))
    return h.hexdigest()


def ids_the_run_names(cfg: Config, run_dir: Path) -> set:
    """Every chunk id the run's rankings rank and its questions name as their source."""
    ids: set = set()
    rankings = run_dir / names.RANKINGS
    for r in read_jsonl(rankings) if rankings.is_file() else []:
        ids.update(d for d, _ in r["ranking"])
    questions = questions_path(cfg)
    for q in read_jsonl(questions) if questions.is_file() else []:
        if q.get("kept") and q.get("source_chunk_id"):
            ids.add(q["source_chunk_id"])
    return ids


def recorded_chunks_hash(run_dir: Path, chunks: Path, cfg: Config) -> str | None:
    """The (short) hash of chunks.jsonl a stage of the run recorded in its manifest, if any."""
    manifest = run_dir / names.MANIFEST
    if not manifest.is_file():
        return None
    try:
        rel = chunks.resolve().relative_to(Path(cfg.root or ".").resolve()).as_posix()
    except ValueError:
        rel = chunks.as_posix()
    key = f"file:{rel}"
    found: list = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == key and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    try:
        walk(json.loads(manifest.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return found[-1] if found else None


def check_against_run(cfg: Config, chunks: list, run_dir: Path) -> dict:
    """{recorded, matches, missing}: the chunks.jsonl hash the run's manifest recorded (None if
    none), whether these chunks hash the same, and the chunk ids the run names that they lack."""
    recorded = recorded_chunks_hash(run_dir, chunks_path(cfg), cfg)
    have = {c.chunk_id for c in chunks}
    missing = sorted(ids_the_run_names(cfg, run_dir) - have)
    return {
        "recorded": recorded,
        "matches": None if recorded is None else chunks_sha(chunks).startswith(recorded),
        "missing": missing,
    }


def _not_the_runs_chunks(cfg: Config, how: str, missing: list, run_dir: Path) -> InputError:
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    where = f"corpus.raw_dir ({cfg.corpus.raw_dir})" if how == "rebuilt" else str(chunks_path(cfg))
    return InputError(
        f"the chunks {how} from {where} lack {len(missing)} chunk ids that run '{run_dir.name}' ranks or asks "
        f"about ({shown}): they are not the run's chunks (another corpus version or other chunking settings); "
        "nothing was written"
    )


def _other_text(cfg: Config, how: str, recorded: str) -> InputError:
    return InputError(
        f"the chunks {how} for run '{cfg.run_name}' hash otherwise than the chunks.jsonl its manifest recorded "
        f"({recorded}): every chunk id the run names is there, but their text or cut differs (the corpus "
        "files, the ingest code or the chunking settings changed since the run); nothing was written. Pass "
        "--accept-different to write them all the same"
    )


def export_beir_corpus(
    cfg: Config, out: Path | None = None, run_dir: Path | None = None, accept_different: bool = False
) -> dict:
    """Write the BEIR folder's corpus.jsonl (and queries and qrels when they are missing too) from
    the run's chunks, read or rebuilt. Refused (InputError) when the run names chunk ids the chunks
    lack, or when they hash otherwise than the run's manifest recorded unless `accept_different`.
    {folder, chunks, how, matches, recorded, missing}; `matches` None: the manifest records no hash."""
    from ..lib.retrieval.beir import qrels_file, write_beir_corpus
    from ..lib.synth.questions import beir_corpus, export_beir

    folder = Path(out) if out else cfg.synthetic_dir / "beir"
    run_dir = Path(run_dir or cfg.run_dir)
    chunks, how = chunks_for_export(cfg)
    check = check_against_run(cfg, chunks, run_dir)
    if check["missing"]:
        raise _not_the_runs_chunks(cfg, how, check["missing"], run_dir)
    if check["matches"] is False and not accept_different:
        raise _other_text(cfg, how, check["recorded"])
    if (folder / "queries.jsonl").is_file() and qrels_file(folder).is_file():
        write_beir_corpus(folder, beir_corpus(chunks))
    else:
        export_beir(chunks, read_jsonl(questions_path(cfg)), folder)
    return {"folder": folder, "chunks": len(chunks), "how": how, **check}
