"""Synthetic questions: few-shot prompts from golden samples, parsing the replies, the
retrieval filter, the retention table, and the BEIR / Hugging Face exports."""
from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Optional


# --------------------------------------------------------------------------- generation
DROP_REASONS = ("empty", "too_short", "refers_to_passage", "duplicate", "copied_example", "not_retrieved")
_DEICTIC = re.compile(r"\b(?:the|this|given|above|provided) (?:passage|text|excerpt|document)\b", re.I)


def _rng(*parts) -> random.Random:
    """A random generator seeded by the parts (stable whatever order items are processed in)."""
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def fewshot_messages(task: str, examples: list, passage: str) -> list[dict]:
    """System prompt (task definition), the examples as user/assistant turns, then the target
    passage. With fixed examples per task, every prompt of a task shares the same prefix."""
    from .prompting import template

    system, user = template(f"synth_{task}")
    msgs = [{"role": "system", "content": system}]
    for ex in examples:
        msgs.append({"role": "user", "content": user.format(passage=ex.passage)})
        msgs.append({"role": "assistant", "content": ex.question})
    msgs.append({"role": "user", "content": user.format(passage=passage)})
    return msgs


def select_chunks(chunks: list, max_chunks, seed: int, min_tokens: int = 40) -> list:
    """Chunks to write questions for: all (paper), or a seeded sample of substantial ones."""
    eligible = [c for c in chunks if c.n_tokens >= min_tokens] or list(chunks)
    if max_chunks and max_chunks < len(eligible):
        picked = set(c.chunk_id for c in _rng(seed, "chunks").sample(eligible, max_chunks))
        eligible = [c for c in eligible if c.chunk_id in picked]
    return eligible


def plan_generation(cfg, chunks: list, golden: list) -> list[dict]:
    """One planned call per chunk × task, ordered task by task so that prompts sharing few-shot
    examples run consecutively."""
    sc = cfg.synth
    targets = select_chunks(chunks, sc.max_chunks, cfg.seed)
    plan = []
    for task in sc.tasks:
        pool = sorted((g for g in golden if g.task == task), key=lambda g: g.id)
        fixed = _rng(cfg.seed, "fewshot", task).sample(pool, sc.n_fewshot) if sc.fewshot_sampling == "per_task_fixed" else None
        for c in targets:
            examples = fixed if fixed is not None else _rng(cfg.seed, "fewshot", task, c.chunk_id).sample(pool, sc.n_fewshot)
            msgs = fewshot_messages(task, examples, c.text)
            plan.append({
                "qid": f"syn-{task}-{c.chunk_id}", "task": task, "chunk": c, "fewshot_ids": [e.id for e in examples],
                "examples": [e.question for e in examples], "messages": msgs,
                "prompt_hash": hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:16],
            })
    return plan


_PREFIX = re.compile(r"^\s*(?:\d+[.)]\s*|[-*•]\s*)?(?:\*\*)?(?:question|statement|request|q|claim|task)\s*\d*\s*[:.-]\s*(?:\*\*)?\s*", re.I)


def parse_question(text: str, min_words: int = 4) -> tuple[Optional[str], Optional[str]]:
    """The question in a model's reply, or (None, reason). Keeps the first substantive line,
    strips labels ("Question:"), list markers, quotes and markdown emphasis."""
    for line in (text or "").splitlines():
        line = _PREFIX.sub("", line.strip()).strip().strip('"\u201c\u201d*` ').strip()
        if not line or line.lower().startswith(("here is", "here's", "sure", "certainly")) and line.endswith(":"):
            continue
        if len(line.split()) < min_words:
            return None, "too_short"
        if _DEICTIC.search(line):
            return None, "refers_to_passage"  # not self-contained: useless as a search query
        return line, None
    return None, "empty"


def _norm(q: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", q.lower()).strip()


def generate_questions(cfg, llm, plan: list[dict]) -> list[dict]:
    """Run the planned calls (cached, resumable) and parse every reply into a record."""
    from .llm.types import Request

    reqs = [Request(messages=p["messages"], max_tokens=cfg.models.question_writer.max_tokens) for p in plan]
    comps = llm.chat_many(reqs, progress="writing questions")
    seen: set = set()
    records = []
    for p, comp in zip(plan, comps):
        c = p["chunk"]
        q, reason = parse_question(comp.text, cfg.synth.min_question_words)
        if q is not None:
            key = _norm(q)
            if any(_norm(e) == key for e in p["examples"]):
                reason = "copied_example"
            elif key in seen:
                reason = "duplicate"
            seen.add(key)
        records.append({
            "qid": p["qid"], "task": p["task"], "question": q or "", "source_chunk_id": c.chunk_id, "doc_id": c.doc_id,
            "page_start": c.page_start, "page_end": c.page_end, "fewshot_ids": p["fewshot_ids"],
            "fewshot_sampling": cfg.synth.fewshot_sampling, "model": llm.identity.get("name"),
            "model_sha256": llm.identity.get("sha256"), "prompt_hash": p["prompt_hash"], "seed": cfg.seed,
            "raw_output": comp.text, "kept": False, "drop_reason": reason,
        })
    return records


def add_reference_answers(cfg, llm, records: list[dict], chunks_by_id: dict) -> None:
    from .llm.types import Request
    from .prompting import render

    todo = [r for r in records if r["question"]]
    reqs = [Request(messages=render("reference_answer", passage=chunks_by_id[r["source_chunk_id"]].text,
                                    question=r["question"]), max_tokens=cfg.models.generator.max_tokens) for r in todo]
    for r, comp in zip(todo, llm.chat_many(reqs, progress="reference answers")):
        r["answer"] = comp.text.strip()


def retrieval_filter(cfg, chunks: list, records: list[dict]) -> None:
    """Rank of each question's source chunk under BM25 and dense; keep it if within top-N of the
    configured filter retriever (bm25, dense, or union = either)."""
    from .retrieval import build_systems

    n = cfg.synth.filter_top_n
    valid = [r for r in records if r["drop_reason"] is None]
    systems = build_systems(cfg.retrieval, [c.chunk_id for c in chunks], [c.text for c in chunks],
                            names=["bm25", "dense"], cache_dir=cfg.cache_dir)
    for name, system in systems.items():
        rankings = system.search([r["question"] for r in valid], n)
        for r, ranking in zip(valid, rankings):
            r[f"rank_{name}"] = next((i for i, (d, _) in enumerate(ranking, 1) if d == r["source_chunk_id"]), None)
    for r in valid:
        ok = {"bm25": r["rank_bm25"] is not None, "dense": r["rank_dense"] is not None}
        ok["union"] = ok["bm25"] or ok["dense"]
        r["kept"] = ok[cfg.synth.filter_retriever]
        r["drop_reason"] = None if r["kept"] else "not_retrieved"


def retention_table(records: list[dict]):
    """Per task: generated, valid, and kept under each filter retriever (the bias a filter
    built on one retriever gives that retriever is visible side by side)."""
    import pandas as pd

    rows = []
    for task in sorted({r["task"] for r in records}):
        rs = [r for r in records if r["task"] == task]
        valid = [r for r in rs if r["drop_reason"] in (None, "not_retrieved")]
        row = {"task": task, "generated": len(rs), "valid": len(valid)}
        for f in ("bm25", "dense"):
            row[f"kept_{f}"] = sum(r.get(f"rank_{f}") is not None for r in valid)
        row["kept_union"] = sum(r.get("rank_bm25") is not None or r.get("rank_dense") is not None for r in valid)
        row["kept"] = sum(r["kept"] for r in rs)
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        total = df.drop(columns="task").sum()
        df = pd.concat([df, pd.DataFrame([{"task": "all", **total.to_dict()}])], ignore_index=True)
        for f in ("bm25", "dense", "union"):
            df[f"retention_{f}_%"] = (100 * df[f"kept_{f}"] / df["valid"].where(df["valid"] > 0)).round(1)
    return df


def export_beir(chunks: list, records: list[dict], folder: Path) -> None:
    """The kept questions as a BEIR folder (corpus = every chunk, qrels = source chunks)."""
    from .beir import BeirData, write_beir

    kept = [r for r in records if r["kept"]]
    write_beir(folder, BeirData(
        corpus={c.chunk_id: {"title": c.doc_id, "text": c.text} for c in chunks},
        queries={r["qid"]: r["question"] for r in kept},
        qrels={r["qid"]: {r["source_chunk_id"]: 1} for r in kept}))


def export_hf(chunks: list, records: list[dict], folder: Path) -> None:
    """The kept questions, with their passages, as a Hugging Face dataset saved to disk."""
    import datasets

    kept = [r for r in records if r["kept"]]
    V = datasets.Value
    features = datasets.Features({
        "qid": V("string"), "task": V("string"), "question": V("string"), "source_chunk_id": V("string"),
        "doc_id": V("string"), "page_start": V("int32"), "page_end": V("int32"),
        "fewshot_ids": datasets.Sequence(V("string")), "model": V("string"), "prompt_hash": V("string"),
        "seed": V("int64"), "rank_bm25": V("int32"), "rank_dense": V("int32"), "answer": V("string"),
        "passage": V("string"),
    })
    text_of = {c.chunk_id: c.text for c in chunks}
    columns = {k: [r.get(k) for r in kept] for k in features if k != "passage"}
    columns["passage"] = [text_of[r["source_chunk_id"]] for r in kept]
    # datasets cannot save an empty dataset in several shards: one shard always
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(folder), num_shards=1)
