"""BEIR-format folders: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv` — read and write."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..io import InputError, atomic_open, read_jsonl, write_jsonl


@dataclass
class BeirData:
    corpus: dict  # doc id → {"title", "text"}
    queries: dict  # query id → text
    qrels: dict  # query id → {doc id: grade}

    def passages(self) -> tuple[list[str], list[str]]:
        """(ids, texts) with title and text joined as BEIR's flat baselines do."""
        ids = list(self.corpus)
        return ids, [(d.get("title", "") + " " + d.get("text", "")).strip() for d in self.corpus.values()]


def qrels_file(folder: Path, split: str = "test") -> Path:
    """`qrels/<split>.tsv`, or a single `qrels.tsv` beside the corpus (as TREC-style folders hold)."""
    folder = Path(folder)
    nested = folder / "qrels" / f"{split}.tsv"
    return nested if nested.is_file() or not (folder / "qrels.tsv").is_file() else folder / "qrels.tsv"


def load_beir(folder: Path, split: str = "test") -> BeirData:
    """Load a BEIR folder; queries are restricted to those judged in `split`."""
    folder = Path(folder)
    qfile = qrels_file(folder, split)
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qfile):
        if not path.is_file():
            raise InputError(
                f"{path}: missing; a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/{split}.tsv (or qrels.tsv)"
            )
    corpus = {}
    for i, row in enumerate(read_jsonl(folder / "corpus.jsonl"), 1):
        if "_id" not in row:
            raise InputError(f"{folder / 'corpus.jsonl'}:{i}: no '_id' field")
        corpus[str(row["_id"])] = {"title": row.get("title", ""), "text": row.get("text", "")}
    qrels: dict = {}
    with open(qfile, encoding="utf-8") as f:
        for lineno, parts in enumerate(csv.reader(f, delimiter="\t"), 1):
            if lineno == 1 and not parts[-1].strip().lstrip("-").isdigit():
                continue  # header
            if len(parts) < 3:
                raise InputError(f"{qfile}:{lineno}: expected query-id, corpus-id, score")
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {str(r["_id"]): r["text"] for r in read_jsonl(folder / "queries.jsonl") if str(r["_id"]) in qrels}
    missing = set(qrels) - set(queries)
    if missing:
        raise InputError(
            f"{folder}/queries.jsonl: {len(missing)} judged queries have no text (e.g. {sorted(missing)[:3]})"
        )
    return BeirData(corpus, queries, qrels)


def write_beir_corpus(folder: Path, corpus: dict) -> None:
    """`corpus.jsonl` of a BEIR folder (atomically): one line per passage, `_id`, `title`, `text`
    and any further field of the passage."""
    write_jsonl(
        Path(folder) / "corpus.jsonl",
        ({"_id": k, "title": v.get("title", ""), "text": v["text"], **v} for k, v in corpus.items()),
    )


def write_beir(folder: Path, data: BeirData, split: str = "test", query_metadata: dict = None) -> None:
    """Write a BEIR folder (atomically, file by file); a passage's fields beyond title and text (a
    `doc_id`) are kept; `query_metadata` {query id: {...}} goes into each query's `metadata` field."""
    folder = Path(folder)
    meta = query_metadata or {}
    write_beir_corpus(folder, data.corpus)
    write_jsonl(
        folder / "queries.jsonl",
        ({"_id": k, "text": v, **({"metadata": meta[k]} if k in meta else {})} for k, v in data.queries.items()),
    )
    with atomic_open(folder / "qrels" / f"{split}.tsv") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, docs in data.qrels.items():
            for d, g in docs.items():
                f.write(f"{q}\t{d}\t{g}\n")
