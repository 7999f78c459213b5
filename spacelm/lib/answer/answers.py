"""Answer quality under injected noise (the paper's Table 2), plus citations, refusals and the
no-RAG / RAG / RAG+verify pipelines.

Contexts: *standard* holds the question's source chunk; *N_wrong* adds N unrelated passages
from other documents (random, or "hard": high BM25 score but another document); the negative
setting holds only wrong passages. Passage order is shuffled with a seed, and the setting and
the exact passage ids are stored with every answer. A generator answers from the passages,
numbered [1]..[n] (or shown by chunk id, `answer.citations`), citing them by number; a
separately configured judge scores the answer 1–5 on the paper's four rubrics. Beside the
judge: deterministic citation and refusal checks, binary judges with one-line reasons, and the
agreement of the judge with the deterministic refusal check. Unanswerable questions are
answered by pipeline B only (setting ``unanswerable``), for the refusal evaluation. A
fact-checking statement answered from passages is asked for a verdict first (Supported, Refuted,
Unverifiable), scored against the question's label.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np

from ..llm.scores import p_yes
from ..names import FACT_CHECK_LABELS, RUBRICS
from .citations import format_context
from .facts import fact_check, quantities  # noqa: F401 (the deterministic correctness check, re-exported)

REFUSAL = re.compile(
    r"cannot be found|can ?not be (?:answered|determined)|not (?:contain|include|mention|provide)[a-z]* "
    r"(?:the |any |enough )?"
    r"(?:information|details|answer)|no (?:relevant )?information|insufficient information|do(?:es)? not know|"
    r"not (?:stated|specified|available) in the (?:provided )?(?:passages|documents|context)",
    re.I,
)
# which rubric applies to which kind of setting (the paper's Table 2 layout)
RUBRICS_WITH_RELEVANT = ("faithfulness", "relevance")
RUBRIC_NOISE = "noise_robustness"
RUBRIC_NEGATIVE = "negative_rejection"
# judges read passages by chunk id: unambiguous whatever numbering the generator saw
JUDGE_STYLE = "ids"


def is_refusal(text: str) -> bool:
    return bool(REFUSAL.search(text or ""))


# --------------------------------------------------------------------------- contexts
@dataclass(frozen=True)
class AnswerDesign:
    """How answers are set up and generated (the run's `answer` section, its seed and the
    generator's reply length): what the context and generation functions below take."""

    seed: int
    n_wrong_values: tuple[int, ...]  # settings with the relevant passage plus N wrong ones
    negative_n_wrong: int  # the negative setting's wrong passages (0: none)
    wrong_sampling: str  # "random", "hard", "same_document" or "bm25" (see `wrong_passages`)
    pipelines: tuple[str, ...]
    retrieve_k: int
    citations: str  # "numbered" or "ids"
    max_tokens: int | None  # the generator's reply length
    negative_sampling: str = ""  # the negative setting's passages ("": as `wrong_sampling`)


def settings(design: AnswerDesign) -> list[dict]:
    """[{name, n_wrong, keep_relevant}] from `n_wrong_values` (with the relevant passage) and
    `negative_n_wrong` (wrong passages only)."""
    out = [
        {"name": "standard" if n == 0 else f"{n}_wrong", "n_wrong": n, "keep_relevant": True}
        for n in design.n_wrong_values
    ]
    if design.negative_n_wrong:
        n = design.negative_n_wrong
        out.append(
            {
                "name": f"{n}_wrong" if f"{n}_wrong" not in {s["name"] for s in out} else f"{n}_wrong_only",
                "n_wrong": n,
                "keep_relevant": False,
            }
        )
    return out


WRONG_SAMPLING = ("random", "hard", "same_document", "bm25")
OVERLAP_LIMIT = 0.3  # word-trigram Jaccard with the source above which a chunk may hold its answer


def wrong_passages(q: dict, n: int, chunks: list, rng: random.Random, mode: str, bm25=None) -> list[str]:
    """n chunk ids that should not answer the question, drawn as `mode` says:

    - "random": chunks of other documents (unrelated, easy to ignore);
    - "hard": the BM25 ranking for the question, chunks of other documents only;
    - "same_document": chunks of the source's own document (same topic and vocabulary);
    - "bm25": the BM25 ranking for the question, any document.

    The last two leave out the source chunk, its neighbours in the document and any chunk overlapping
    it (`could_answer`), so the passages can mislead without holding the answer."""
    src = q.get("source_chunk_id")
    if mode == "same_document":
        pool = [c.chunk_id for c in chunks if c.doc_id == q["doc_id"] and not could_answer(c, src, chunks)]
        return rng.sample(pool, min(n, len(pool)))
    if mode in ("hard", "bm25") and bm25 is not None:
        by_id = {c.chunk_id: c for c in chunks}
        ranked = [d for d, _ in bm25.search([q["question"]], len(chunks))[0]]
        if mode == "hard":
            return [d for d in ranked if by_id[d].doc_id != q["doc_id"]][:n]
        return [d for d in ranked if not could_answer(by_id[d], src, chunks)][:n]
    others = [c.chunk_id for c in chunks if c.doc_id != q["doc_id"]]
    return rng.sample(others, min(n, len(others)))


def could_answer(chunk, source_id: str | None, chunks: list) -> bool:
    """Whether `chunk` is the source, next to it in its document, or overlaps it (word trigrams)."""
    from .measures import ngrams

    if source_id is None:
        return False
    src = next((c for c in chunks if c.chunk_id == source_id), None)
    if src is None or chunk.chunk_id == source_id:
        return chunk.chunk_id == source_id
    if chunk.doc_id == src.doc_id:
        order = sorted((c for c in chunks if c.doc_id == src.doc_id), key=lambda c: (c.char_start, c.chunk_id))
        ids = [c.chunk_id for c in order]
        if abs(ids.index(chunk.chunk_id) - ids.index(source_id)) <= 1:
            return True
    a, b = ngrams(chunk.text), ngrams(src.text)
    return bool(a and b) and len(a & b) / len(a | b) > OVERLAP_LIMIT


# --------------------------------------------------------------------------- judging
DOCUMENTS_HEADER = "Documents given to the assistant"
NOISE_HEADER = "Documents mixed into the assistant's context as noise"
NO_DOCUMENTS = "(none: the assistant answered without documents)"


def answer_judge_messages(
    item: dict, task: str, text_of: dict, ctx_ids=None, header: str = DOCUMENTS_HEADER, **task_fields
) -> list[dict]:
    """The messages of one judge call on an answer: the frame `judge_answer` (question, documents,
    answer) with the task last, so every judge of one answer shares all but the task's tokens."""
    from ..llm.prompting import render_in_frame

    ids = item["passage_ids"] if ctx_ids is None else ctx_ids
    return render_in_frame(
        "judge_answer",
        task,
        task_fields,
        question=item["question"],
        documents_header=header,
        context=format_context(ids, text_of, JUDGE_STYLE) if ids else NO_DOCUMENTS,
        answer=item["answer"],
    )


def rubric_requests(items: list[dict], text_of: dict) -> list[tuple[dict, str, object]]:
    """(item, rubric, request) for each rubric each item's setting calls for (1-5, constrained).
    Noise robustness reads the item's wrong passages (under their own header); the others read
    the passages the answer was written from."""
    from ..llm.scores import score_choices
    from ..llm.types import Request

    out = []
    for it in items:
        for rubric in it["rubrics"]:
            if rubric == RUBRIC_NOISE:
                msgs = answer_judge_messages(it, f"judge_{rubric}", text_of, it["wrong_ids"], NOISE_HEADER)
            else:
                msgs = answer_judge_messages(it, f"judge_{rubric}", text_of)
            out.append((it, rubric, Request(messages=msgs, choices=score_choices(1, 5), max_tokens=2)))
    return out


BINARY_JUDGES = ("correct", "answer_relevant", "grounded", "context_relevant")
BINARY_CHECKS = {
    "correct": "correctness: is the assistant's answer correct and consistent with the reference answer?",
    "answer_relevant": "answer relevance: does the assistant's answer address the question that was asked, "
    "with the information it asks for?",
    "grounded": "groundedness: is every claim in the assistant's answer supported by the documents?",
    "context_relevant": "context relevance: do the documents contain the information needed to answer the question?",
}


def binary_requests(items: list[dict], text_of: dict, checks=None) -> list[tuple[dict, str, object]]:
    """(item, judge, request) for the yes/no judges: correctness against the reference answer
    (when there is one), whether the answer addresses the question, groundedness in the passages
    and relevance of the passages (these two only when there are passages). `checks(item)`, when
    given, names the judges to run on that item. One constrained token each: the verdict and
    P(yes) from one forward pass (a written reason cost ~4 s of decoding per call on the CPU)."""
    from ..llm.types import Request

    out = []
    for it in items:
        wanted = set(checks(it)) if checks else set(BINARY_JUDGES)
        names = [
            n
            for n in BINARY_JUDGES
            if n in wanted
            and (n != "correct" or it.get("reference_answer"))
            and (n not in ("grounded", "context_relevant") or it["passage_ids"])
        ]
        for name in names:
            if name == "correct":  # the reference answer is model-written text: in its own block
                task, fields = "judge_binary_reference", {"reference": it["reference_answer"]}
            else:
                task, fields = "judge_binary", {}
            msgs = answer_judge_messages(it, task, text_of, check=BINARY_CHECKS[name], **fields)
            out.append((it, name, Request(messages=msgs, choices=["yes", "no"], max_tokens=1)))
    return out


def judge_answers(
    judge, rubric_items: list[dict], binary_items: list[dict], text_of: dict, checks=None, scoring: str = "digit"
) -> None:
    """Score the rubrics of `rubric_items` and run the yes/no judges on `binary_items` in ONE
    batch: the LLM sends a batch in prompt order, so all the judge calls on one answer run back
    to back and the question, documents and answer are evaluated once for all of them. Sets
    `item["scores"]`, `raw_judge`, `expected_scores` (rubrics) and `item["binary"]` (yes/no).
    A rubric's score is the digit (`scoring` "digit") or the expected score ("expected"; None
    when the backend gave no probabilities, never the digit in its place)."""
    from ..llm.scores import judgement_from

    rq = rubric_requests(rubric_items, text_of)
    bq = binary_requests(binary_items, text_of, checks)
    comps = judge.chat_many([r for _, _, r in rq + bq], progress="judging answers")
    for (it, rubric, _), comp in zip(rq, comps[: len(rq)]):
        j = judgement_from(comp, 1, 5)
        it["scores"][rubric] = rubric_score(j, scoring)
        it["raw_judge"][rubric] = j.raw
        if j.expected is not None:
            it["expected_scores"][rubric] = round(j.expected, 4)
    for (it, name, _), comp in zip(bq, comps[len(rq) :]):
        verdict, _ = parse_binary(comp.text)
        it.setdefault("binary", {})[name] = {"verdict": verdict, "p_yes": p_yes(comp), "raw": comp.text}


def rubric_score(j, scoring: str) -> float | int | None:
    """A 1-5 rubric's score from the judgement `j`: its digit, or its expected score rounded to 4
    places (None when either is missing)."""
    if scoring == "expected":
        return None if j.expected is None else round(float(j.expected), 4)
    return j.value


def parse_binary(text: str) -> tuple[bool | None, str]:
    m = re.match(r"\s*\**\s*(yes|no)\b\W*(.*)", text or "", re.I | re.S)
    if not m:
        return None, (text or "").strip()[:300]
    return m.group(1).lower() == "yes", m.group(2).strip().split("\n")[0][:300]


def judge_refusal(judge, items: list[dict]) -> None:
    """The refusal judge: does the answer decline? Asked twice, each a yes/no of one constrained
    token: "does the reply decline?" (prompt `judge_refusal`) and its mirror "does the reply give
    an answer?" (`judge_refusal_mirrored`). P(declines) is the mean of P(yes) to the first and
    P(no) to the second (:func:`~spacelm.lib.llm.scores.mirrored_p_yes`): the embedded 1.5B
    judge answers "yes" to the first question for most answers whatever they say
    (docs/judges.md), and asking both ways cancels that lean. Reads only the question and the
    answer: whether the passages hold the answer is the setting's business, not the judge's.
    Sets `item["binary"]["refusal"]` = {verdict, p_yes (of declining), p_yes_declines,
    p_yes_answers, raw}."""
    from ..llm.prompting import render
    from ..llm.scores import mirrored_p_yes, verdict_of
    from ..llm.types import Request

    names = ("judge_refusal", "judge_refusal_mirrored")
    reqs = [
        Request(messages=render(n, question=it["question"], answer=it["answer"]), choices=["yes", "no"], max_tokens=1)
        for it in items
        for n in names
    ]
    comps = judge.chat_many(reqs, progress="refusal judge")
    for it, asked, mirror in zip(items, comps[0::2], comps[1::2]):
        declines, answers = p_yes(asked), p_yes(mirror)
        p = mirrored_p_yes(declines, answers)
        it.setdefault("binary", {})["refusal"] = {
            "verdict": verdict_of(p),
            "p_yes": p,
            "p_yes_declines": declines,
            "p_yes_answers": answers,
            "raw": f"{asked.text} / {mirror.text}",
        }


# --------------------------------------------------------------------------- generation
def answer_prompt(it: dict, style: str) -> str:
    """The generator's prompt for item `it`: closed book for pipeline A; for a fact-check answered
    from passages, `answer_fact_check` (a verdict first, then the explanation), else `answer`; the
    `_ids` variant when the passages are shown by chunk id (`style` "ids")."""
    if it["pipeline"] == "A":
        return "answer_closed_book"
    name = "answer_fact_check" if asks_verdict(it) else "answer"
    return name if style == "numbered" else f"{name}_ids"


def generate(gen, items: list[dict], text_of: dict, design: AnswerDesign) -> None:
    """Write every item's answer with the generator, in one batch, from the prompt
    :func:`answer_prompt` picks for it; sets `answer`, `latency_s` and `tokens`."""
    from ..llm.prompting import render
    from ..llm.types import Request

    reqs = []
    for it in items:
        name = answer_prompt(it, design.citations)
        if it["pipeline"] == "A":
            msgs = render(name, question=it["question"])
        else:
            msgs = render(
                name, question=it["question"], context=format_context(it["passage_ids"], text_of, design.citations)
            )
        reqs.append(Request(messages=msgs, max_tokens=design.max_tokens))
    for it, comp in zip(items, gen.chat_many(reqs, progress="generating answers")):
        it["answer"] = comp.text.strip()
        it["latency_s"] = round(comp.latency_s, 3)
        it["tokens"] = {"prompt": comp.prompt_tokens, "completion": comp.completion_tokens}


def verify(gen, items: list[dict], text_of: dict, design: AnswerDesign) -> None:
    """Pipeline C: one verification pass rewriting unsupported sentences."""
    from ..llm.prompting import render
    from ..llm.types import Request

    reqs = [
        Request(
            messages=render(
                "verify_rewrite",
                question=it["question"],
                answer=it["draft_answer"],
                context=format_context(it["passage_ids"], text_of, design.citations),
            ),
            max_tokens=design.max_tokens,
        )
        for it in items
    ]
    for it, comp in zip(items, gen.chat_many(reqs, progress="verifying answers")):
        it["answer"] = comp.text.strip()
        it["latency_s"] = round(it["latency_s"] + comp.latency_s, 3)
        it["tokens"]["prompt"] += comp.prompt_tokens
        it["tokens"]["completion"] += comp.completion_tokens


def _item(q: dict, setting: str, pipeline: str, passage_ids: list, wrong_ids: list, rubrics) -> dict:
    return {
        "qid": q["qid"],
        "task": q["task"],
        "question": q["question"],
        "answerable": q.get("answerable", True),
        "unanswerable_kind": q.get("unanswerable_kind"),
        "reference_answer": q.get("answer"),
        "label": fact_check_label(q),
        "setting": setting,
        "pipeline": pipeline,
        "source_chunk_id": q["source_chunk_id"],
        "passage_ids": passage_ids,
        "wrong_ids": wrong_ids,
        "rubrics": list(rubrics),
        "scores": {},
        "expected_scores": {},
        "raw_judge": {},
        "binary": {},
    }


def build_items(design: AnswerDesign, questions: list[dict], chunks: list, rankings: dict | None) -> list[dict]:
    """Every (question, setting) for Table 2 and every (question, pipeline) for A/B/C."""
    from ..retrieval.bm25 import BM25Config, BM25Retriever

    bm25 = (
        BM25Retriever(BM25Config()).index([c.chunk_id for c in chunks], [c.text for c in chunks])
        if {design.wrong_sampling, design.negative_sampling} & {"hard", "bm25"}
        else None
    )
    items = []
    for q in questions:
        for s in settings(design):
            rng = random.Random(f"{design.seed}|{q['qid']}|{s['name']}")
            mode = design.wrong_sampling if s["keep_relevant"] else design.negative_sampling or design.wrong_sampling
            wrong = wrong_passages(q, s["n_wrong"], chunks, rng, mode, bm25)
            ids = ([q["source_chunk_id"]] if s["keep_relevant"] else []) + wrong
            rng.shuffle(ids)
            if not s["keep_relevant"]:
                rubrics = (RUBRIC_NEGATIVE,)
            else:
                rubrics = RUBRICS_WITH_RELEVANT + ((RUBRIC_NOISE,) if wrong else ())
            items.append(_item(q, s["name"], "table2", ids, wrong, rubrics))
        for p in design.pipelines:
            if p == "A":
                ids = []
            else:
                ranked = (rankings or {}).get(q["qid"], [])
                ids = ranked[: design.retrieve_k]
            items.append(
                _item(q, "retrieved" if p != "A" else "closed_book", p, ids, [], () if p == "A" else ("faithfulness",))
            )
    return items


def unanswerable_items(design: AnswerDesign, questions: list[dict], rankings: dict | None) -> list[dict]:
    """Pipeline B on each unanswerable question: its top `retrieve_k` passages, judged on
    negative rejection (the passages cannot answer it, by construction and by the judge's check)."""
    return [
        _item(q, "unanswerable", "B", (rankings or {}).get(q["qid"], [])[: design.retrieve_k], [], (RUBRIC_NEGATIVE,))
        for q in questions
    ]


# --------------------------------------------------------------------------- fact-check verdicts
FACT_CHECKING = "fact_checking"
# what may precede the verdict: markdown, quotes, a "Verdict:" heading, "The statement is"
_VERDICT_LEAD = re.compile(
    r"[\s*_#>`\"'“‘(\[-]*"
    r"(?:(?:final\s+)?(?:verdict|label|answer|assessment)[\s*_`]*[:\-–—][\s*_`\"'“‘(\[]*)?"
    r"(?:(?:the|this)\s+(?:statement|claim)\s+(?:is\s+)?)?",
    re.I,
)
_VERDICT_WORDS = (
    ("supported", re.compile(r"supported\b", re.I)),
    ("refuted", re.compile(r"refuted\b", re.I)),
    (
        "unverifiable",
        re.compile(
            r"(?:unverifiable|unverified|not\s+verifiable|(?:cannot|can\s+not|can't|could\s+not)\s+be\s+verified|"
            r"not\s+enough\s+(?:information|info|evidence)|insufficient\s+(?:information|evidence))\b",
            re.I,
        ),
    ),
)


def fact_check_label(q: dict) -> str | None:
    """The true verdict of a fact-checking question's claim against its source chunk, one of
    FACT_CHECK_LABELS: its `label` (written by synth), else its golden `verdict` ("not_enough_info"
    read as "unverifiable"). None for other tasks, for questions written before labels, and for a
    value outside the labels."""
    from ..synth.checks import claim_label

    if q.get("task") != FACT_CHECKING:
        return None
    label = claim_label(str(q.get("label") or q.get("verdict") or "").strip().lower())
    return label if label in FACT_CHECK_LABELS else None


def asks_verdict(it: dict) -> bool:
    """Whether the generator is asked for a verdict on item `it`: a fact-checking statement
    answered from passages (closed book, pipeline A, has none to check it against)."""
    return it.get("task") == FACT_CHECKING and it.get("pipeline") != "A"


def parse_verdict(text: str | None) -> str | None:
    """The verdict an answer begins with, one of FACT_CHECK_LABELS: its first word(s), whatever
    the case, after markdown, quotes, a "Verdict:" heading or "The statement is". "Not enough
    information", "cannot be verified" and "not verifiable" read as "unverifiable". None when the
    answer begins with none of them ("Not supported" included: refuted or unverifiable?)."""
    text = text or ""
    rest = text[_VERDICT_LEAD.match(text).end() :]
    return next((label for label, pattern in _VERDICT_WORDS if pattern.match(rest)), None)


def expected_verdict(it: dict) -> str | None:
    """The verdict a fact-check answer must give: the question's label where the passages include
    what the label was judged against, and "unverifiable" where the passages cannot answer
    (:func:`cannot_answer`: wrong passages only, or an unanswerable question). None without a label."""
    label = it.get("label")
    if label is None:
        return None
    return "unverifiable" if cannot_answer(it) else label


def score_verdict(it: dict) -> None:
    """Set `verdict` (parsed from the answer), `expected_verdict` and `verdict_correct` (None when
    either is missing) on a fact-check item."""
    verdict, expected = parse_verdict(it.get("answer")), expected_verdict(it)
    it.update(
        verdict=verdict,
        expected_verdict=expected,
        verdict_correct=None if verdict is None or expected is None else verdict == expected,
    )


FACT_CHECK_COLUMNS = [
    "setting",
    "pipeline",
    "label",
    "expected",
    "n",
    "n_verdict",
    "n_correct",
    "accuracy",
    "ci_low",
    "ci_high",
    "n_source_chunks",
    "n_source_in_context",
    *(f"verdict_{v}" for v in FACT_CHECK_LABELS),
    "verdict_none",
]


def fact_check_table(items: list[dict]):
    """Fact-check verdicts against the labels (fact_check_verdicts.csv): per setting and pipeline,
    one row per label and one for them all: answers (`n`), answers with a parsed verdict, the
    accuracy of those verdicts against the expected one with its 95% Wilson interval at the
    effective n (source chunks as clusters), and the confusion (label × verdict counts, `verdict_*`).
    Only answers asked for a verdict whose question has a label; empty (with its columns) when none
    has."""
    import pandas as pd

    its = [it for it in items if asks_verdict(it) and it.get("label")]
    rows = []
    for setting, pipeline in dict.fromkeys((it["setting"], it["pipeline"]) for it in its):
        group = [it for it in its if it["setting"] == setting and it["pipeline"] == pipeline]
        labels = [x for x in FACT_CHECK_LABELS if any(it["label"] == x for it in group)]
        for label in [*labels, "all"]:
            sub = group if label == "all" else [it for it in group if it["label"] == label]
            rows.append(_verdict_row(setting, pipeline, label, sub))
    return pd.DataFrame(rows, columns=FACT_CHECK_COLUMNS)


def _verdict_row(setting: str, pipeline: str, label: str, its: list[dict]) -> dict:
    """One row of :func:`fact_check_table` from its answers `its`."""
    verdicts = [it.get("verdict") for it in its]
    correct = [it.get("verdict_correct") for it in its]
    share, lo, hi, _ = _share(correct, [it.get("source_chunk_id") for it in its])
    expected = {it.get("expected_verdict") for it in its}
    return {
        "setting": setting,
        "pipeline": pipeline,
        "label": label,
        "expected": expected.pop() if len(expected) == 1 else None,
        "n": len(its),
        "n_verdict": sum(v is not None for v in verdicts),
        "n_correct": sum(c is True for c in correct),
        "accuracy": share,
        "ci_low": lo,
        "ci_high": hi,
        "n_source_chunks": len({it.get("source_chunk_id") for it in its}),
        "n_source_in_context": sum(it.get("source_chunk_id") in (it.get("passage_ids") or []) for it in its),
        **{f"verdict_{v}": verdicts.count(v) for v in FACT_CHECK_LABELS},
        "verdict_none": verdicts.count(None),
    }


def fact_check_summary(table) -> dict:
    """The stage summary's line on fact-check verdicts, from :func:`fact_check_table`'s rows for all
    labels: labelled answers, those with a verdict, and the accuracy per setting (Table 2) or
    pipeline and setting (None where no verdict was parsed)."""
    rows = [r for r in table.to_dict("records") if r["label"] == "all"]
    where = lambda r: r["setting"] if r["pipeline"] == "table2" else f"{r['pipeline']} {r['setting']}"
    return {
        "labelled_answers": int(sum(r["n"] for r in rows)),
        "with_verdict": int(sum(r["n_verdict"] for r in rows)),
        "accuracy": {where(r): None if r["accuracy"] != r["accuracy"] else r["accuracy"] for r in rows},
    }


# --------------------------------------------------------------------------- tables
def table2(items: list[dict], setting_names: list[str], n_boot: int = None, seed: int = None):
    """Long form: metric, setting, mean, std (the SD of the scores), n, n_source_chunks, ci_low,
    ci_high (95% cluster-robust t interval over source chunks, bounded by the 1-5 scale), missing. `n_boot`, `seed`:
    unused (the interval is analytic)."""
    import pandas as pd

    from ..stats import cluster_t

    rows = []
    for metric in RUBRICS:
        for s in setting_names:
            its = [it for it in items if it["pipeline"] == "table2" and it["setting"] == s and metric in it["rubrics"]]
            if not its:
                continue
            got = [(it["scores"].get(metric), it.get("source_chunk_id")) for it in its]
            got = [(v, c) for v, c in got if v is not None]
            c = cluster_t([v for v, _ in got], [c for _, c in got])
            # a t interval can pass the ends of the 1-5 scale: the scale bounds it
            c["ci_low"], c["ci_high"] = (float(np.clip(x, 1, 5)) if x == x else x for x in (c["ci_low"], c["ci_high"]))
            r3 = lambda x: None if x is None or np.isnan(x) else round(float(x), 3)
            rows.append(
                {
                    "metric": metric,
                    "setting": s,
                    "mean": r3(c["mean"]) if got else None,
                    "std": round(float(np.std([v for v, _ in got], ddof=1)), 3) if len(got) > 1 else None,
                    "n": len(got),
                    "n_source_chunks": c["n_clusters"],
                    "ci_low": r3(c["ci_low"]),
                    "ci_high": r3(c["ci_high"]),
                    "missing": len(its) - len(got),
                }
            )
    return pd.DataFrame(rows)


def _mean_ci(got: list[tuple]) -> tuple:
    """(mean, ci_low, ci_high) of (score, source chunk) pairs: the cluster-robust t interval of
    Table 2, bounded by the 1-5 scale; None where it is not defined."""
    from ..stats import cluster_t

    c = cluster_t([v for v, _ in got], [k for _, k in got])
    r3 = lambda x: None if x is None or x != x else round(float(np.clip(x, 1, 5)), 3)
    return (round(c["mean"], 4) if got else None), r3(c["ci_low"]), r3(c["ci_high"])


def table2_per_task(items: list[dict]):
    """Table 2 per setting and question task: n (answers), source chunks, and per rubric the mean
    score with its 95% cluster-robust t interval over source chunks (`<rubric>_ci_low`,
    `<rubric>_ci_high`), as Table 2 computes it; no interval below two source chunks."""
    import pandas as pd

    groups: dict = {}
    for it in items:
        if it["pipeline"] == "table2" and it.get("task"):
            groups.setdefault((it["setting"], it["task"]), []).append(it)
    rubrics = sorted({r for its in groups.values() for it in its for r in it["scores"]})
    rows = []
    for (setting, task), its in sorted(groups.items()):
        row = {"setting": setting, "task": task, "n": len(its)}
        row["n_source_chunks"] = len({it.get("source_chunk_id") or it["qid"] for it in its})
        for r in rubrics:
            got = [(it["scores"][r], it.get("source_chunk_id")) for it in its if it["scores"].get(r) is not None]
            row[r], row[f"{r}_ci_low"], row[f"{r}_ci_high"] = _mean_ci(got) if got else (None, None, None)
        rows.append(row)
    return pd.DataFrame(rows)


def table2_tests(
    items: list[dict],
    setting_names: list[str],
    n_boot: int = None,
    seed: int = None,
    clusters: dict | None = None,
    unit: str = "source_chunk",
):
    """Table 2's paired tests: every other setting minus the first (standard) on each rubric
    scored in both, paired over questions and clustered by source chunk, or by `clusters`
    ({qid: cluster}, the unit named `unit` in the `cluster` column): the difference with its
    95% cluster-robust t interval, the cluster-robust t test's p-value, its standard error and
    degrees of freedom, `mde_cell` (detectable at α = 0.05, 80% power) and `p_holm`, Holm-adjusted
    within the row's `family` (one rubric across the settings)."""
    import pandas as pd

    from ..stats import holm, paired_difference

    def scores(setting: str, metric: str) -> dict:
        return {
            it["qid"]: it["scores"].get(metric)
            for it in items
            if it["pipeline"] == "table2"
            and it["setting"] == setting
            and metric in it["rubrics"]
            and it["scores"].get(metric) is not None
        }

    source = {it["qid"]: it.get("source_chunk_id") or it["qid"] for it in items}
    rows = []
    base = setting_names[0] if setting_names else None
    for s in setting_names[1:]:
        for metric in RUBRICS:
            a, b = scores(base, metric), scores(s, metric)
            qids = sorted(set(a) & set(b))
            if not qids:
                continue
            labels = [(clusters or source).get(q) or q for q in qids]
            r = paired_difference([a[q] for q in qids], [b[q] for q in qids], labels)
            rows.append(
                {
                    "metric": metric,
                    "family": f"{metric} / settings - {base}",
                    "setting_a": base,
                    "setting_b": s,
                    "n_questions": r["n"],
                    "n_source_chunks": len({source[q] for q in qids}),
                    "cluster": unit,
                    "n_clusters": r["n_clusters"],
                    "mean_a": float(np.mean([a[q] for q in qids])),
                    "mean_b": float(np.mean([b[q] for q in qids])),
                    "diff": r["diff"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                    "p_value": r["p_value"],
                    "se": r["se"],
                    "df": r["df"],
                    "sd": r["sd"],
                    "deff": r["deff"],
                    "mde_cell": r["mde"],
                }
            )
    for fam in dict.fromkeys(r["family"] for r in rows):
        members = [r for r in rows if r["family"] == fam]
        for row, adj in zip(members, holm([r["p_value"] for r in members])):
            row["p_holm"] = adj
    cols = [
        "metric",
        "family",
        "setting_a",
        "setting_b",
        "n_questions",
        "n_source_chunks",
        "mean_a",
        "mean_b",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "se",
        "df",
        "sd",
        "deff",
        "mde_cell",
        "cluster",
        "n_clusters",
    ]
    return pd.DataFrame(rows, columns=cols).round(4)


def table2_wide(long, setting_names: list[str], fmt: str = "md") -> str:
    """The paper's layout: metrics × settings, `mean ± std (n)`; a dash where a metric does not apply."""
    import pandas as pd

    from ..tables import render

    rows = []
    for metric in RUBRICS:
        row = {"Metric": metric.replace("_", " ").capitalize()}
        for s in setting_names:
            r = long[(long.metric == metric) & (long.setting == s)] if len(long) else long
            if not len(r) or r.iloc[0]["mean"] is None or np.isnan(r.iloc[0]["mean"]):
                row[s] = "–"
                continue
            r = r.iloc[0]
            std = "" if r["std"] is None or np.isnan(r["std"]) else f" ± {r['std']:.2f}"
            row[s] = f"{r['mean']:.2f}{std} (n={int(r['n'])})"
        rows.append(row)
    return render(pd.DataFrame(rows, columns=["Metric", *setting_names]), fmt)


def cannot_answer(it: dict) -> bool:
    """Answers whose passages cannot answer the question: Table 2's negative setting (wrong
    passages only) and the unanswerable questions. There the right answer is a refusal."""
    return RUBRIC_NEGATIVE in it.get("rubrics", ()) or it.get("setting") == "unanswerable"


def refusal_rates(items: list[dict]) -> list[dict]:
    """Per setting where the passages cannot answer: the refusal rate by the phrase check and by
    the refusal judge, each with its 95% Wilson interval, their agreement (share and Cohen's
    kappa), and the 1-5 negative-rejection rubric beside (its mean, and the share scored 4-5)."""
    from ..stats import wilson_ci
    from .answerability import agreement

    rows = []
    its_all = [it for it in items if cannot_answer(it)]
    for setting in sorted({it["setting"] for it in its_all}):
        its = [it for it in its_all if it["setting"] == setting]
        phrase = [bool(it["refusal"]) for it in its]
        judged = [it.get("binary", {}).get("refusal", {}).get("verdict") for it in its]
        rub = [it["scores"].get(RUBRIC_NEGATIVE) for it in its if it["scores"].get(RUBRIC_NEGATIVE) is not None]
        got = [j for j in judged if j is not None]
        r3 = lambda x: None if x is None or x != x else round(float(x), 3)
        p_lo, p_hi = wilson_ci(sum(phrase), len(phrase))
        j_lo, j_hi = wilson_ci(sum(got), len(got))
        ag = agreement(phrase, judged)
        rows.append(
            {
                "setting": setting,
                "n": len(its),
                "refusal_rate_phrase": r3(np.mean(phrase)) if phrase else None,
                "phrase_ci_low": r3(p_lo),
                "phrase_ci_high": r3(p_hi),
                "refusal_rate_judge": r3(np.mean(got)) if got else None,
                "judge_ci_low": r3(j_lo),
                "judge_ci_high": r3(j_hi),
                "n_judge": len(got),
                "agreement": ag["agreement"],
                "kappa": ag["kappa"],
                "rubric_mean": r3(np.mean(rub)) if rub else None,
                "rubric_declines_rate": r3(np.mean([x >= 4 for x in rub])) if rub else None,
                "n_rubric": len(rub),
            }
        )
    return rows


def overall_pass(it: dict) -> bool | None:
    """The answer addresses the question, is grounded in its passages, and the passages hold what
    is needed (three binary judges); None when a verdict is missing or does not apply."""
    v = [it["binary"].get(k, {}).get("verdict") for k in ("answer_relevant", "grounded", "context_relevant")]
    return None if any(x is None for x in v) else all(v)


def _share(values: list, clusters: list = None) -> tuple:
    """(share, ci_low, ci_high, n) of a list of booleans with None left out: the Wilson interval
    at the effective n of the source-chunk clusters (:func:`~spacelm.lib.stats.share_ci`)."""
    from ..stats import share_ci

    r = share_ci(values, clusters)
    if not r["n"]:
        return None, None, None, 0
    r3 = lambda x: None if x is None or np.isnan(x) else round(float(x), 3)
    return r3(r["share"]), r3(r["ci_low"]), r3(r["ci_high"]), r["n"]


def pipelines_table(items: list[dict], n_boot: int = 1000, seed: int = 0):
    """Per pipeline (answerable questions only): correctness, faithfulness, citations, refusals,
    latency, claim-level support and overall pass, each share of questions with its n and 95% Wilson
    interval at the effective n of the source-chunk clusters."""
    import pandas as pd

    from .claims import claim_summary

    rows = []
    pitems = [it for it in items if it["pipeline"] != "table2" and it.get("answerable", True)]
    for p in sorted({it["pipeline"] for it in pitems}):
        its = [it for it in pitems if it["pipeline"] == p]
        lat = [it["latency_s"] for it in its]
        faith = [it["scores"].get("faithfulness") for it in its if it["scores"].get("faithfulness") is not None]
        acc = [it["citation"]["citation_accuracy"] for it in its if it["citation"]["citation_accuracy"] is not None]
        row = {"pipeline": p, "n": len(its)}
        facts = [it.get("fact_check", {}).get("verdict") for it in its]
        for name, vals in (
            ("facts_present", facts),
            ("correctness", [it["binary"].get("correct", {}).get("verdict") for it in its]),
            # the judge's "correct" only where the deterministic check did not find a
            # reference number or entity missing
            (
                "correct_after_facts",
                [False if f is False else it["binary"].get("correct", {}).get("verdict") for f, it in zip(facts, its)],
            ),
            ("answer_relevant", [it["binary"].get("answer_relevant", {}).get("verdict") for it in its]),
            ("overall_pass", [overall_pass(it) for it in its]),
        ):
            m, lo, hi, n = _share(vals, [it.get("source_chunk_id") for it in its])
            row.update({name: m, f"{name}_ci_low": lo, f"{name}_ci_high": hi, f"n_{name}": n})
        row.update(
            {
                "faithfulness": round(float(np.mean(faith)), 3) if faith else None,
                "n_faithfulness": len(faith),
                "citation_accuracy": round(float(np.mean(acc)), 3) if acc else None,
                "answers_with_citations": round(float(np.mean([it["citation"]["n_cited"] > 0 for it in its])), 3),
                "answers_with_valid_citation": round(
                    float(np.mean([it["citation"].get("n_valid", 0) > 0 for it in its])), 3
                ),
                "refusal_rate": round(float(np.mean([it["refusal"] for it in its])), 3),
            }
        )
        claims = claim_summary(its, n_boot, seed)
        claims.pop("n_citations")
        row.update({k: v for k, v in claims.items() if k != "n_claims"}, n_claims=claims["n_claims"])
        row.update(
            {
                "latency_p50_s": round(float(np.percentile(lat, 50)), 2),
                "latency_p95_s": round(float(np.percentile(lat, 95)), 2),
            }
        )
        rows.append(row)
    # no pipeline run (answer.pipelines []): the header alone, so every reader parses the file
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["pipeline", "n"])
