"""Synthetic questions: few-shot prompts from golden samples, parsing the replies, the
retrieval filter, the retention table, and the BEIR / Hugging Face exports."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .checks import QuestionChecks

if TYPE_CHECKING:
    from ..retrieval.systems import RetrievalSetup

# --------------------------------------------------------------------------- generation
DROP_REASONS = (
    "empty",
    "too_short",
    "refers_to_passage",
    "duplicate",
    "copied_example",
    "copy",
    "premise",
    "label",
    "not_retrieved",
    "subject_missing",
    "answerable_by_judge",
    "unverified",
)
UNANSWERABLE_KINDS = ("out_of_corpus", "strong_claim")


@dataclass(frozen=True)
class QuestionWriting:
    """How questions are written and filtered (the run's `synth` section, its seed and the
    models' reply lengths): what the planning, generation and filter functions below take."""

    seed: int
    tasks: tuple[str, ...]
    sampling: str  # "stratified" or "every_task" (see plan_generation)
    max_chunks: int | None
    n_fewshot: int
    fewshot_sampling: str  # "per_chunk", "per_document" or "per_task_fixed"
    min_question_words: int
    max_tokens: int | None  # the question writer's reply length
    reference_max_tokens: int | None  # a reference answer's length (the generator's)
    unanswerable_kinds: tuple[str, ...]
    unanswerable_per_task: int | None
    filter_top_n: int
    filter_retriever: str  # "bm25", "dense" or "union"
    checks: QuestionChecks = QuestionChecks()
    subjects_file: str | None = None  # out-of-corpus subjects (None: the package's list)


_DEICTIC = re.compile(r"\b(?:the|this|given|above|provided) (?:passage|text|excerpt|document)\b", re.I)


def _rng(*parts) -> random.Random:
    """A random generator seeded by the parts (stable whatever order items are processed in)."""
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def fewshot_messages(prompt: str, examples: list, passage: str) -> list[dict]:
    """System prompt (`prompt`'s task definition: "direct_qa" reads `synth_direct_qa.txt`), the
    examples as user/assistant turns, then the target passage."""
    from ..llm.prompting import as_data, template

    system, user = template(f"synth_{prompt}")
    msgs = [{"role": "system", "content": system}]
    for ex in examples:
        msgs.append({"role": "user", "content": user.format(passage=as_data(ex.passage))})
        msgs.append({"role": "assistant", "content": ex.question})
    msgs.append({"role": "user", "content": user.format(passage=as_data(passage))})
    return msgs


def boilerplate_chunks(chunks: list) -> dict[str, str]:
    """{chunk id: why it is boilerplate} for the chunks no question is written from (licences,
    reference lists, tables of contents, captions, headers, code: `checks.boilerplate_reason`)."""
    from .checks import boilerplate_reason

    out = {}
    for c in chunks:
        reason = boilerplate_reason(c.text)
        if reason:
            out[c.chunk_id] = reason
    return out


def select_chunks(chunks: list, max_chunks, seed: int, min_tokens: int = 40) -> list:
    """Chunks to write questions for: all (paper), or a seeded sample of substantial ones."""
    eligible = [c for c in chunks if c.n_tokens >= min_tokens] or list(chunks)
    if max_chunks and max_chunks < len(eligible):
        picked = set(c.chunk_id for c in _rng(seed, "chunks").sample(eligible, max_chunks))
        eligible = [c for c in eligible if c.chunk_id in picked]
    return eligible


def stratified_targets(chunks: list, n: int | None, tasks: list[str], seed: int, min_tokens: int = 40) -> list[tuple]:
    """(chunk, task) pairs, one question per source chunk: `n` substantial chunks (all when None)
    taken round-robin over the documents in a seeded order (each document's chunks in a seeded
    order), so that every document gives as many as it can before any gives one more; tasks
    rotate with the document and the round, so each task gets n/len(tasks) (±1) questions
    spread over the documents. A table's questions then come from as many chunks as questions."""
    eligible = [c for c in chunks if c.n_tokens >= min_tokens] or list(chunks)
    by_doc: dict[str, list] = {}
    for c in sorted(eligible, key=lambda c: c.chunk_id):
        by_doc.setdefault(c.doc_id, []).append(c)
    for doc, cs in by_doc.items():
        _rng(seed, "chunks", doc).shuffle(cs)
    docs = sorted(by_doc)
    _rng(seed, "documents").shuffle(docs)
    total = len(eligible) if n is None else min(n, len(eligible))
    out: list[tuple] = []
    for rnd in range(max((len(v) for v in by_doc.values()), default=0)):
        for j, doc in enumerate(docs):
            if len(out) >= total:
                return out
            if rnd < len(by_doc[doc]):
                out.append((by_doc[doc][rnd], tasks[(rnd + j) % len(tasks)]))
    return out


def claim_labels(chunk_ids: list[str], seed: int) -> dict[str, str]:
    """{chunk id: the label its fact-check claim is written with}: supported, refuted and
    unverifiable in turn over the chunks in a seeded order, so each gets a third (±1)."""
    from .checks import LABELS

    order = sorted(chunk_ids)
    _rng(seed, "claim-labels").shuffle(order)
    return {cid: LABELS[i % len(LABELS)] for i, cid in enumerate(order)}


def example_pool(golden: list, task: str, label: str | None = None) -> list:
    """The answerable golden samples of `task` (for a fact-check label, those with that verdict), by id."""
    from .checks import claim_label

    pool = [g for g in golden if g.task == task and g.answerable]
    if label is not None:
        pool = [g for g in pool if claim_label(g.verdict) == label]
    return sorted(pool, key=lambda g: g.id)


def choose_examples(writing: QuestionWriting, pool: list, chunk, key: tuple) -> list:
    """The few-shot examples of one prompt. "per_task_fixed": the same seeded draw for every chunk
    of the task; "per_chunk": a seeded draw per chunk from the examples of other documents (the
    chunk's own document's examples would hand the writer its passage's wording), from all when
    too few are left; "per_document": the same, drawn once per document, so that a document's
    prompts of a task begin alike (a prefix the engine evaluates once)."""
    n = min(writing.n_fewshot, len(pool))
    if writing.fewshot_sampling == "per_task_fixed":
        return _rng(writing.seed, "fewshot", *key).sample(pool, n)
    others = [g for g in pool if g.doc_id != chunk.doc_id]
    source = others if len(others) >= n else pool
    unit = chunk.doc_id if writing.fewshot_sampling == "per_document" else chunk.chunk_id
    return _rng(writing.seed, "fewshot", *key, unit).sample(source, n)


def skipped_sources(writing: QuestionWriting, chunks: list) -> dict[str, str]:
    """{chunk id: reason} of the boilerplate chunks no question is written from ({} when the checks
    keep them)."""
    return boilerplate_chunks(chunks) if writing.checks.skip_boilerplate else {}


def generation_targets(writing: QuestionWriting, chunks: list, skip: dict | None = None) -> list[tuple]:
    """(chunk, task) pairs to write, the chunks in `skip` (default: `skipped_sources`) left out."""
    skip = skipped_sources(writing, chunks) if skip is None else skip
    usable = [c for c in chunks if c.chunk_id not in skip]
    if writing.sampling == "every_task":
        picked = select_chunks(usable, writing.max_chunks, writing.seed)
        return [(c, t) for t in writing.tasks for c in picked]
    return stratified_targets(usable, writing.max_chunks, list(writing.tasks), writing.seed)


def plan_generation(writing: QuestionWriting, chunks: list, golden: list, skip: dict | None = None) -> list[dict]:
    """The planned question-writing calls, ordered task by task (and fact-check label) so that
    prompts sharing few-shot examples run consecutively. `writing.sampling`: "stratified" (one
    task per source chunk, chunks spread over the documents: `stratified_targets`) or "every_task"
    (the paper's: every selected chunk × every task). A fact-check is written with the label it
    must have (`claim_labels`), from golden examples with that verdict. `skip`: the chunks never
    written from (default: `skipped_sources`)."""
    targets = generation_targets(writing, chunks, skip)
    plan = []
    for task in writing.tasks:
        cs = sorted((c for c, t in targets if t == task), key=lambda c: c.chunk_id)
        labels = claim_labels([c.chunk_id for c in cs], writing.seed) if task == "fact_checking" else {}
        for c in sorted(cs, key=lambda c: (labels.get(c.chunk_id, ""), c.chunk_id)):
            label = labels.get(c.chunk_id)
            pool = example_pool(golden, task, label) or example_pool(golden, task)
            examples = choose_examples(writing, pool, c, (task,) if label is None else (task, label))
            msgs = fewshot_messages(task if label is None else f"{task}_{label}", examples, c.text)
            plan.append(
                {
                    "qid": f"syn-{task}-{c.chunk_id}",
                    "task": task,
                    "label": label,
                    "chunk": c,
                    "fewshot_ids": [e.id for e in examples],
                    "examples": [e.question for e in examples],
                    "messages": msgs,
                    "prompt_hash": hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:16],
                }
            )
    return plan


def fewshot_share(plan: list[dict]) -> dict[str, float]:
    """{task: the largest share of its prompts any one few-shot example appears in}: how far one
    example's wording can dominate a task (1.0 with fixed examples)."""
    out = {}
    for task in sorted({p["task"] for p in plan}):
        ps = [p for p in plan if p["task"] == task]
        counts: dict[str, int] = {}
        for p in ps:
            for e in p["fewshot_ids"]:
                counts[e] = counts.get(e, 0) + 1
        out[task] = round(max(counts.values(), default=0) / len(ps), 3)
    return out


# more characters per token than the few-shot prompts have with the byte-level BPE tokenizers the
# writers use (3.98-5.04 for the shipped golden samples with Qwen2.5's, chat template included):
# an estimate that undercounts, so a prompt it finds too long is too long
CHARS_PER_TOKEN_LOW = 6


def fewshot_prefix_chars(writing: QuestionWriting, golden: list) -> dict[str, int]:
    """{task: characters of its few-shot prompt before the target passage}: with fixed examples
    per task, those examples; with examples drawn per chunk, the task's shortest ones (the least
    any of its prompts holds)."""
    out = {}
    for task in writing.tasks:
        pool = example_pool(golden, task)
        if len(pool) < writing.n_fewshot:
            continue  # load_golden reports too few samples
        if writing.fewshot_sampling == "per_task_fixed":
            examples = _rng(writing.seed, "fewshot", task).sample(pool, writing.n_fewshot)
        else:
            examples = sorted(pool, key=lambda g: len(g.passage) + len(g.question))[: writing.n_fewshot]
        prompt = f"{task}_supported" if task == "fact_checking" else task
        out[task] = sum(len(m["content"]) for m in fewshot_messages(prompt, examples, ""))
    return out


_PREFIX = re.compile(
    r"^\s*(?:\d+[.)]\s*|[-*•]\s*)?(?:\*\*)?(?:question|statement|request|q|claim|task)\s*\d*\s*[:.-]\s*(?:\*\*)?\s*",
    re.I,
)


def parse_question(text: str, min_words: int = 4) -> tuple[str | None, str | None]:
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


def generate_questions(writing: QuestionWriting, llm, plan: list[dict]) -> list[dict]:
    """Run the planned calls (cached, resumable) and parse every reply into a record."""
    from ..llm.types import Request

    reqs = [Request(messages=p["messages"], max_tokens=writing.max_tokens) for p in plan]
    comps = llm.chat_many(reqs, progress="writing questions")
    seen: set = set()
    records = []
    for p, comp in zip(plan, comps):
        c = p["chunk"]
        q, reason = parse_question(comp.text, writing.min_question_words)
        if q is not None:
            key = _norm(q)
            if any(_norm(e) == key for e in p["examples"]):
                reason = "copied_example"
            elif key in seen:
                reason = "duplicate"
            seen.add(key)
        records.append(
            {
                "qid": p["qid"],
                "task": p["task"],
                "question": q or "",
                **({"label": p["label"]} if p.get("label") else {}),
                "source_chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "page_start": c.page_start,
                "page_end": c.page_end,
                "span_start": c.char_start,
                "span_end": c.char_end,
                "fewshot_ids": p["fewshot_ids"],
                "fewshot_sampling": writing.fewshot_sampling,
                "model": llm.identity.get("name"),
                "model_sha256": llm.identity.get("sha256"),
                "prompt_hash": p["prompt_hash"],
                "seed": writing.seed,
                "raw_output": comp.text,
                "kept": False,
                "drop_reason": reason,
                "answerable": True,
            }
        )
    return records


# --------------------------------------------------------------------------- unanswerable questions
def out_of_corpus_subjects(corpus_text: str, path: str | None = None) -> list[str]:
    """The subjects of the file at `path` (default `spacelm/data/out_of_corpus_subjects.txt`) that
    occur nowhere in the corpus (matched on their core name, case-insensitively)."""
    from importlib import resources
    from pathlib import Path

    if path:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = resources.files("spacelm").joinpath("data", "out_of_corpus_subjects.txt").read_text(encoding="utf-8")
    low = corpus_text.lower()
    out = []
    for line in text.splitlines():
        subject = line.strip()
        if not subject or subject.startswith("#"):
            continue
        if not _mentions(low, subject):
            out.append(subject)
    return out


def _mentions(text: str, subject: str) -> bool:
    """Whether lower-cased `text` names `subject` by its core name or its acronym: "the Indian
    Space Research Organisation (ISRO)" is named by "indian space research organisation" or
    "isro"."""
    s = subject.lower().strip()
    acronym = re.search(r"\(([^)]+)\)$", s)
    core = re.sub(r"\s*\(.*\)$", "", re.sub(r"^the (?:year |asteroid )?", "", s))
    names = [core] + ([acronym.group(1)] if acronym else [])
    # a plain substring test first: the regex scan of a whole corpus is only paid for a name it holds
    return any(n in text and re.search(r"(?<![a-z0-9])" + re.escape(n) + r"(?![a-z0-9])", text) for n in names)


def plan_unanswerable(
    writing: QuestionWriting,
    records: list[dict],
    chunks_by_id: dict,
    round_: int = 0,
    tasks: Sequence[str] | None = None,
) -> list[dict]:
    """Calls asking the question writer for items the source passage cannot answer, one per
    source question and kind. Per task type and kind, the answerable questions are put in a
    seeded order: round 0 takes the first `writing.unanswerable_per_task` (all when null), each
    later round the next one, for the `tasks` still without a kept unanswerable question. An
    out-of-corpus prompt names a subject the corpus never mentions."""
    from ..llm.prompting import render

    if round_ and not writing.unanswerable_per_task:
        return []
    absent = (
        out_of_corpus_subjects("\n".join(c.text for c in chunks_by_id.values()), writing.subjects_file)
        if "out_of_corpus" in writing.unanswerable_kinds
        else []
    )
    plan = []
    for kind in writing.unanswerable_kinds:
        for task in tasks if tasks is not None else writing.tasks:
            pool = sorted(
                (
                    r
                    for r in records
                    if r["task"] == task
                    and r.get("answerable", True)
                    and r["question"]
                    and r["drop_reason"] in (None, "not_retrieved")
                ),
                key=lambda r: r["qid"],
            )
            order = _rng(writing.seed, "unanswerable", kind, task).sample(pool, len(pool))
            if writing.unanswerable_per_task:
                lo = 0 if round_ == 0 else writing.unanswerable_per_task + round_ - 1
                order = order[lo : writing.unanswerable_per_task if round_ == 0 else lo + 1]
            for r in sorted(order, key=lambda r: r["qid"]):
                subject = _rng(writing.seed, "subjects", r["qid"]).choice(absent) if absent else "another mission"
                msgs = render(
                    f"synth_unanswerable_{kind}",
                    passage=chunks_by_id[r["source_chunk_id"]].text,
                    question=r["question"],
                    subject=subject,
                )
                plan.append(
                    {
                        "kind": kind,
                        "source": r,
                        "messages": msgs,
                        "subject": subject if kind == "out_of_corpus" else None,
                        "prompt_hash": hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:16],
                    }
                )
    return plan


_THE_PASSAGE = re.compile(r"\bthe (?:passage|text|excerpt)\b", re.I)


def unanswerable_reply(text: str, kind: str) -> str:
    """The item in a question writer's reply; in a strong-claim reply, "the passage" becomes "the
    documents" (the question asks about the collection)."""
    return text if kind == "out_of_corpus" else _THE_PASSAGE.sub("the documents", text or "")


def generate_unanswerable(writing: QuestionWriting, llm, plan: list[dict], records: list[dict]) -> list[dict]:
    """Run the planned calls and parse each reply into a record marked `answerable: false`
    (kept only once :func:`check_unanswerable` has confirmed it)."""
    from ..llm.types import Request

    reqs = [Request(messages=p["messages"], max_tokens=writing.max_tokens) for p in plan]
    comps = llm.chat_many(reqs, progress="writing unanswerable questions")
    seen = {_norm(r["question"]) for r in records if r["question"]}
    out = []
    for p, comp in zip(plan, comps):
        src = p["source"]
        q, reason = parse_question(unanswerable_reply(comp.text, p["kind"]), writing.min_question_words)
        if q is not None:
            key = _norm(q)
            reason = "duplicate" if key in seen else None
            if reason is None and p["subject"] and not _mentions(q.lower(), p["subject"]):
                reason = "subject_missing"  # the swap did not happen: the item may still be answerable
            seen.add(key)
        out.append(
            {
                "qid": f"una-{p['kind']}-{src['qid'][len('syn-') :] if src['qid'].startswith('syn-') else src['qid']}",
                "task": src["task"],
                "question": q or "",
                "answerable": False,
                "unanswerable_kind": p["kind"],
                "derived_from": src["qid"],
                "subject": p["subject"],
                "source_chunk_id": src["source_chunk_id"],
                "doc_id": src["doc_id"],
                "page_start": src["page_start"],
                "page_end": src["page_end"],
                "fewshot_ids": [],
                "fewshot_sampling": None,
                "model": llm.identity.get("name"),
                "model_sha256": llm.identity.get("sha256"),
                "prompt_hash": p["prompt_hash"],
                "seed": writing.seed,
                "raw_output": comp.text,
                "kept": False,
                "drop_reason": reason,
            }
        )
    return out


def golden_unanswerable(golden: list) -> list[dict]:
    """Golden samples marked `answerable: false`: human-written unanswerable questions, kept as
    they are (a person has already decided the corpus cannot answer them)."""
    return [
        {
            "qid": g.id,
            "task": g.task,
            "question": g.question,
            "answerable": False,
            "unanswerable_kind": "golden",
            "derived_from": None,
            "source_chunk_id": None,
            "doc_id": g.doc_id,
            "page_start": None,
            "page_end": None,
            "fewshot_ids": [],
            "fewshot_sampling": None,
            "model": None,
            "model_sha256": None,
            "prompt_hash": None,
            "seed": None,
            "raw_output": None,
            "kept": True,
            "drop_reason": None,
            "origin": "golden",
        }
        for g in golden
        if not g.answerable
    ]


def unanswerable_check_pairs(systems: dict, records: list[dict], k: int) -> list[dict]:
    """(question, passage) pairs to grade: the union of every system's top-k per unanswerable
    candidate (and per golden unanswerable question, to measure the check on human labels)."""
    todo = [r for r in records if r["drop_reason"] is None and not r["answerable"]]
    tops: dict = {r["qid"]: [] for r in todo}
    found = {name: systems[name].search([r["question"] for r in todo], k) for name in sorted(systems)}
    for rank in range(k):  # by rank across systems: the passages most likely to answer come first
        for name in sorted(systems):
            for r, ranking in zip(todo, found[name]):
                if rank < len(ranking) and ranking[rank][0] not in tops[r["qid"]]:
                    tops[r["qid"]].append(ranking[rank][0])
    return [
        {"qid": r["qid"], "question": r["question"], "chunk_id": d, "purpose": ["unanswerable_check"]}
        for r in todo
        for d in tops[r["qid"]]
    ]


def check_waves(pairs: list[dict], grade, answerable_grade: int, full: set = frozenset()) -> list[dict]:
    """Grade the check pairs a passage at a time: wave j grades the j-th passage of every
    question not yet answered (`grade(pairs) -> grades`). A candidate is dropped as soon as one
    passage answers it, so its remaining passages are never graded; the verdict is the same
    as grading them all. Questions in `full` (the golden ones, which measure the check) get
    every passage graded."""
    by_q: dict = {}
    for p in pairs:
        by_q.setdefault(p["qid"], []).append(p)
    grades, answered, wave = [], set(), 0
    while True:
        batch = [ps[wave] for q, ps in by_q.items() if wave < len(ps) and (q in full or q not in answered)]
        if not batch:
            return grades
        for g in grade(batch):
            grades.append(g)
            if g["grade"] is not None and g["grade"] >= answerable_grade:
                answered.add(g["qid"])
        wave += 1


def mark_unanswerable(records: list[dict], grades: list[dict], answerable_grade: int) -> None:
    """The check passes when none of a question's checked passages is graded `answerable_grade`
    or more. A written candidate is kept when it passes, else dropped as `answerable_by_judge`
    (or `unverified` when a grade is missing); a golden one stays as a person labelled it, with
    the check's verdict recorded beside it."""
    by_q: dict = {}
    for g in grades:
        by_q.setdefault(g["qid"], []).append(g)
    for r in records:
        if r["answerable"] or r["drop_reason"] is not None or r["qid"] not in by_q:
            continue
        gs = by_q[r["qid"]]
        r["check_grades"] = {g["chunk_id"]: g["grade"] for g in gs}
        r["check_expected_grades"] = {g["chunk_id"]: g.get("expected_grade") for g in gs}
        answered = any(g["grade"] is not None and g["grade"] >= answerable_grade for g in gs)
        unread = any(g["grade"] is None for g in gs)
        r["check_passed"] = None if unread and not answered else not answered
        if r.get("origin") == "golden":
            continue
        if answered:
            r["drop_reason"] = "answerable_by_judge"
        elif unread:
            r["drop_reason"] = "unverified"
        else:
            r["kept"] = True


def add_reference_answers(writing: QuestionWriting, llm, records: list[dict], chunks_by_id: dict) -> None:
    from ..llm.prompting import render
    from ..llm.types import Request

    todo = [r for r in records if r["question"]]
    reqs = [
        Request(
            messages=render(
                "reference_answer", passage=chunks_by_id[r["source_chunk_id"]].text, question=r["question"]
            ),
            max_tokens=writing.reference_max_tokens,
        )
        for r in todo
    ]
    for r, comp in zip(todo, llm.chat_many(reqs, progress="reference answers")):
        r["answer"] = comp.text.strip()


def retrieval_filter(
    writing: QuestionWriting, setup: RetrievalSetup, chunks: list, records: list[dict], cache_dir: Path | None = None
) -> dict:
    """Rank of each answerable question's source chunk under BM25 and dense; keep it if within
    top-N of the configured filter retriever (bm25, dense, or union = either). Returns the two
    retrievers (built as `setup` says), for the unanswerable check."""
    from ..retrieval.systems import build_systems

    n = writing.filter_top_n
    valid = [r for r in records if r["drop_reason"] is None and r["answerable"]]
    systems = build_systems(
        setup,
        [c.chunk_id for c in chunks],
        [c.text for c in chunks],
        names=["bm25", "dense"],
        cache_dir=cache_dir,
    )
    for name, system in systems.items():
        rankings = system.search([r["question"] for r in valid], n) if valid else []
        for r, ranking in zip(valid, rankings):
            r[f"rank_{name}"] = next((i for i, (d, _) in enumerate(ranking, 1) if d == r["source_chunk_id"]), None)
    for r in valid:
        ok = {"bm25": r["rank_bm25"] is not None, "dense": r["rank_dense"] is not None}
        ok["union"] = ok["bm25"] or ok["dense"]
        r["kept"] = ok[writing.filter_retriever]
        r["drop_reason"] = None if r["kept"] else "not_retrieved"
    return systems


def retention_table(records: list[dict]):
    """Per task: generated, valid, and kept under each filter retriever (the bias a filter
    built on one retriever gives that retriever is visible side by side)."""
    import pandas as pd

    records = [r for r in records if r.get("answerable", True)]
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


def unanswerable_table(records: list[dict]):
    """Per task and kind: unanswerable candidates written, well formed (parsed, new, naming the
    swapped-in subject), passing the judge's check, kept, and dropped because the judge found a
    passage that answers them (or could not grade one). Golden rows (kind "golden") are kept as
    labelled; their check_passed is how often the check agrees with a person."""
    import pandas as pd

    una = [r for r in records if not r.get("answerable", True)]
    rows = []
    for kind in sorted({r["unanswerable_kind"] for r in una}):
        for task in sorted({r["task"] for r in una if r["unanswerable_kind"] == kind}):
            rs = [r for r in una if r["unanswerable_kind"] == kind and r["task"] == task]
            rows.append(
                {
                    "kind": kind,
                    "task": task,
                    "generated": len(rs),
                    "check_passed": sum(r.get("check_passed") is True for r in rs),
                    "well_formed": sum(
                        r["drop_reason"]
                        not in ("empty", "too_short", "refers_to_passage", "duplicate", "subject_missing")
                        for r in rs
                    ),
                    "kept": sum(r["kept"] for r in rs),
                    "answerable_by_judge": sum(r["drop_reason"] == "answerable_by_judge" for r in rs),
                    "unverified": sum(r["drop_reason"] == "unverified" for r in rs),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "kind",
            "task",
            "generated",
            "well_formed",
            "check_passed",
            "kept",
            "answerable_by_judge",
            "unverified",
        ],
    )


def beir_corpus(chunks: list) -> dict:
    """The chunks as a BEIR corpus: {chunk id: {"title": its document id, "text": its text}}."""
    return {c.chunk_id: {"title": c.doc_id, "text": c.text} for c in chunks}


def export_beir(chunks: list, records: list[dict], folder: Path) -> None:
    """The kept questions as a BEIR folder (corpus = every chunk, qrels = source chunks). Each
    query carries `metadata.answerable`; unanswerable ones are in queries.jsonl but have no qrels
    (BEIR tools then score only the answerable ones)."""
    from ..retrieval.beir import BeirData, write_beir

    kept = [r for r in records if r["kept"]]
    write_beir(
        folder,
        BeirData(
            corpus=beir_corpus(chunks),
            queries={r["qid"]: r["question"] for r in kept},
            qrels={r["qid"]: {r["source_chunk_id"]: 1} for r in kept if r.get("answerable", True)},
        ),
        query_metadata={r["qid"]: {"task": r["task"], "answerable": r.get("answerable", True)} for r in kept},
    )


def export_hf(chunks: list, records: list[dict], folder: Path, with_text: bool = True) -> None:
    """The kept questions as a Hugging Face dataset saved to disk, with their passages when
    `with_text` (a corpus the project may quote); otherwise `passage` is null and the source
    chunk's id, document and character span say where the text is (`spacelm export-beir` rebuilds
    it from the corpus)."""
    import datasets

    kept = [r for r in records if r["kept"]]
    V = datasets.Value
    features = datasets.Features(
        {
            "qid": V("string"),
            "task": V("string"),
            "question": V("string"),
            "source_chunk_id": V("string"),
            "doc_id": V("string"),
            "page_start": V("int32"),
            "page_end": V("int32"),
            "fewshot_ids": datasets.Sequence(V("string")),
            "model": V("string"),
            "prompt_hash": V("string"),
            "seed": V("int64"),
            "rank_bm25": V("int32"),
            "rank_dense": V("int32"),
            "answer": V("string"),
            "answerable": V("bool"),
            "unanswerable_kind": V("string"),
            "passage": V("string"),
            "passage_char_start": V("int64"),
            "passage_char_end": V("int64"),
        }
    )
    by_id = {c.chunk_id: c for c in chunks}
    columns = {k: [r.get(k) for r in kept] for k in features if not k.startswith("passage") and k != "answerable"}
    columns["answerable"] = [r.get("answerable", True) for r in kept]
    # an unanswerable question's passage is the one it was written from (it does not answer it)
    src = [by_id.get(r["source_chunk_id"]) for r in kept]
    columns["passage"] = [(c.text if c else "") if with_text else None for c in src]
    columns["passage_char_start"] = [getattr(c, "char_start", None) for c in src]
    columns["passage_char_end"] = [getattr(c, "char_end", None) for c in src]
    # datasets cannot save an empty dataset in several shards: one shard always
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(folder), num_shards=1)
