"""Answer quality under injected noise (the paper's Table 2), plus citations, refusals and the
no-RAG / RAG / RAG+verify pipelines.

Contexts: *standard* holds the question's source chunk; *N_wrong* adds N unrelated passages
from other documents (random, or "hard": high BM25 score but another document); the negative
setting holds only wrong passages. Passage order is shuffled with a seed, and the setting and
the exact passage ids are stored with every answer. A generator answers from the passages,
citing them as [chunk_id]; a separately configured judge scores the answer 1–5 on the
paper's four rubrics. Beside the judge: deterministic citation and refusal checks, binary
judges with one-line reasons, and the agreement of the judge with the deterministic refusal
check.
"""
from __future__ import annotations

import random
import re
import time
from typing import Optional

import numpy as np

from .names import RUBRICS
from .stats import bootstrap_ci

REFUSAL = re.compile(
    r"cannot be found|can ?not be (?:answered|determined)|not (?:contain|include|mention|provide)[a-z]* (?:the |any |enough )?"
    r"(?:information|details|answer)|no (?:relevant )?information|insufficient information|do(?:es)? not know|"
    r"not (?:stated|specified|available) in the (?:provided )?(?:passages|documents|context)", re.I)
CITATION = re.compile(r"\[([A-Za-z0-9_.\-]+:\d+)\]")
# which rubric applies to which kind of setting (the paper's Table 2 layout)
RUBRICS_WITH_RELEVANT = ("faithfulness", "relevance")
RUBRIC_NOISE = "noise_robustness"
RUBRIC_NEGATIVE = "negative_rejection"


def is_refusal(text: str) -> bool:
    return bool(REFUSAL.search(text or ""))


def citations(text: str) -> list[str]:
    return CITATION.findall(text or "")


def citation_check(text: str, context_ids: list[str], known_ids: set) -> dict:
    """Every cited id must exist in the corpus and be one of the passages given."""
    cited = citations(text)
    return {"cited": cited, "n_cited": len(cited),
            "citations_exist": all(c in known_ids for c in cited),
            "citations_in_context": all(c in context_ids for c in cited),
            "citation_accuracy": (sum(c in context_ids for c in cited) / len(cited)) if cited else None}


# --------------------------------------------------------------------------- contexts
def settings(cfg) -> list[dict]:
    """[{name, n_wrong, keep_relevant}] from answer.n_wrong_values (with the relevant passage)
    and answer.negative_n_wrong (wrong passages only)."""
    out = [{"name": "standard" if n == 0 else f"{n}_wrong", "n_wrong": n, "keep_relevant": True}
           for n in cfg.answer.n_wrong_values]
    if cfg.answer.negative_n_wrong:
        n = cfg.answer.negative_n_wrong
        out.append({"name": f"{n}_wrong" if f"{n}_wrong" not in {s["name"] for s in out} else f"{n}_wrong_only",
                    "n_wrong": n, "keep_relevant": False})
    return out


def wrong_passages(q: dict, n: int, chunks: list, rng: random.Random, mode: str, bm25=None) -> list[str]:
    """n chunk ids from documents other than the question's source document."""
    others = [c.chunk_id for c in chunks if c.doc_id != q["doc_id"]]
    if mode == "hard" and bm25 is not None:
        ranked = [d for d, _ in bm25.search([q["question"]], len(chunks))[0]]
        doc_of = {c.chunk_id: c.doc_id for c in chunks}
        return [d for d in ranked if doc_of[d] != q["doc_id"]][:n]
    return rng.sample(others, min(n, len(others)))


def format_context(ids: list[str], text_of: dict) -> str:
    return "\n\n".join(f"[{cid}]\n{text_of[cid]}" for cid in ids)


# --------------------------------------------------------------------------- judging
def judge_rubrics(judge, items: list[dict], text_of: dict) -> None:
    """Score each item's answer on the rubrics its setting calls for (1–5, constrained)."""
    from .judging import judgement_from, score_choices
    from .llm.types import Request
    from .prompting import render

    reqs, where = [], []
    for it in items:
        for rubric in it["rubrics"]:
            ctx_ids = it["wrong_ids"] if rubric == RUBRIC_NOISE else it["passage_ids"]
            msgs = render(f"judge_{rubric}", question=it["question"], context=format_context(ctx_ids, text_of),
                          answer=it["answer"])
            reqs.append(Request(messages=msgs, choices=score_choices(1, 5), max_tokens=2))
            where.append((it, rubric))
    for (it, rubric), comp in zip(where, judge.chat_many(reqs, progress="judging answers")):
        j = judgement_from(comp, 1, 5)
        it["scores"][rubric] = j.value
        it["raw_judge"][rubric] = j.raw
        if j.expected is not None:
            it["expected_scores"][rubric] = round(j.expected, 4)


def parse_binary(text: str) -> tuple[Optional[bool], str]:
    m = re.match(r"\s*\**\s*(yes|no)\b\W*(.*)", text or "", re.I | re.S)
    if not m:
        return None, (text or "").strip()[:300]
    return m.group(1).lower() == "yes", m.group(2).strip().split("\n")[0][:300]


def judge_binary(judge, items: list[dict], text_of: dict, checks=None) -> None:
    """Yes/no judges with a one-line reason: correctness against the reference answer (when
    there is one), groundedness in the passages, and relevance of the retrieved passages.
    `checks(item)`, when given, names the judges to run on that item."""
    from .llm.types import Request
    from .prompting import render

    reqs, where = [], []
    for it in items:
        wanted = set(checks(it)) if checks else {"correct", "grounded", "context_relevant"}
        todo = []
        if it.get("reference_answer") and "correct" in wanted:
            todo.append(("correct", f"Reference answer: {it['reference_answer']}\n\nAssistant's answer: {it['answer']}",
                         "Is the assistant's answer correct and consistent with the reference answer?"))
        if it["passage_ids"]:
            ctx = format_context(it["passage_ids"], text_of)
            if "grounded" in wanted:
                todo.append(("grounded", f"Passages:\n{ctx}\n\nAssistant's answer: {it['answer']}",
                             "Is every claim in the assistant's answer supported by the passages?"))
            if "context_relevant" in wanted:
                todo.append(("context_relevant", f"Passages:\n{ctx}",
                             "Do the passages contain the information needed to answer the question?"))
        for name, material, check in todo:
            reqs.append(Request(messages=render("judge_binary", question=it["question"], material=material, check=check),
                                max_tokens=60))
            where.append((it, name))
    for (it, name), comp in zip(where, judge.chat_many(reqs, progress="binary judges")):
        verdict, reason = parse_binary(comp.text)
        it["binary"][name] = {"verdict": verdict, "reason": reason, "raw": comp.text}


# --------------------------------------------------------------------------- generation
def generate(gen, items: list[dict], text_of: dict, cfg) -> None:
    from .llm.types import Request
    from .prompting import render

    reqs = []
    for it in items:
        if it["pipeline"] == "A":
            msgs = render("answer_closed_book", question=it["question"])
        else:
            msgs = render("answer", question=it["question"], context=format_context(it["passage_ids"], text_of))
        reqs.append(Request(messages=msgs, max_tokens=cfg.models.generator.max_tokens))
    for it, comp in zip(items, gen.chat_many(reqs, progress="generating answers")):
        it["answer"] = comp.text.strip()
        it["latency_s"] = round(comp.latency_s, 3)
        it["tokens"] = {"prompt": comp.prompt_tokens, "completion": comp.completion_tokens}


def verify(gen, items: list[dict], text_of: dict, cfg) -> None:
    """Pipeline C: one verification pass rewriting unsupported sentences."""
    from .llm.types import Request
    from .prompting import render

    reqs = [Request(messages=render("verify_rewrite", question=it["question"], answer=it["draft_answer"],
                                    context=format_context(it["passage_ids"], text_of)),
                    max_tokens=cfg.models.generator.max_tokens) for it in items]
    for it, comp in zip(items, gen.chat_many(reqs, progress="verifying answers")):
        it["answer"] = comp.text.strip()
        it["latency_s"] = round(it["latency_s"] + comp.latency_s, 3)
        it["tokens"]["prompt"] += comp.prompt_tokens
        it["tokens"]["completion"] += comp.completion_tokens


def _item(q: dict, setting: str, pipeline: str, passage_ids: list, wrong_ids: list, rubrics) -> dict:
    return {"qid": q["qid"], "task": q["task"], "question": q["question"], "reference_answer": q.get("answer"),
            "setting": setting, "pipeline": pipeline, "source_chunk_id": q["source_chunk_id"],
            "passage_ids": passage_ids, "wrong_ids": wrong_ids, "rubrics": list(rubrics), "scores": {},
            "expected_scores": {}, "raw_judge": {}, "binary": {}}


def build_items(cfg, questions: list[dict], chunks: list, rankings: Optional[dict]) -> list[dict]:
    """Every (question, setting) for Table 2 and every (question, pipeline) for A/B/C."""
    from ..config import BM25Config
    from .retrieval import BM25Retriever

    bm25 = BM25Retriever(BM25Config()).index([c.chunk_id for c in chunks], [c.text for c in chunks]) \
        if cfg.answer.wrong_sampling == "hard" else None
    items = []
    for q in questions:
        for s in settings(cfg):
            rng = random.Random(f"{cfg.seed}|{q['qid']}|{s['name']}")
            wrong = wrong_passages(q, s["n_wrong"], chunks, rng, cfg.answer.wrong_sampling, bm25)
            ids = ([q["source_chunk_id"]] if s["keep_relevant"] else []) + wrong
            rng.shuffle(ids)
            if not s["keep_relevant"]:
                rubrics = (RUBRIC_NEGATIVE,)
            else:
                rubrics = RUBRICS_WITH_RELEVANT + ((RUBRIC_NOISE,) if wrong else ())
            items.append(_item(q, s["name"], "table2", ids, wrong, rubrics))
        for p in cfg.answer.pipelines:
            if p == "A":
                ids = []
            else:
                ranked = (rankings or {}).get(q["qid"], [])
                ids = ranked[: cfg.answer.retrieve_k]
            items.append(_item(q, "retrieved" if p != "A" else "closed_book", p, ids, [],
                               () if p == "A" else ("faithfulness",)))
    return items


# --------------------------------------------------------------------------- tables
def table2(items: list[dict], setting_names: list[str], n_boot: int, seed: int):
    """Long form: metric, setting, mean, std, n, ci_low, ci_high, missing."""
    import pandas as pd

    rows = []
    for metric in RUBRICS:
        for s in setting_names:
            its = [it for it in items if it["pipeline"] == "table2" and it["setting"] == s and metric in it["rubrics"]]
            if not its:
                continue
            vals = [it["scores"].get(metric) for it in its]
            got = [v for v in vals if v is not None]
            lo, hi = bootstrap_ci(got, None, n_boot, seed)
            rows.append({"metric": metric, "setting": s, "mean": round(float(np.mean(got)), 3) if got else None,
                         "std": round(float(np.std(got, ddof=1)), 3) if len(got) > 1 else None, "n": len(got),
                         "ci_low": round(lo, 3), "ci_high": round(hi, 3), "missing": len(vals) - len(got)})
    return pd.DataFrame(rows)


def table2_wide(long, setting_names: list[str], fmt: str = "md") -> str:
    """The paper's layout: metrics × settings, `mean ± std (n)`; a dash where a metric does not apply."""
    import pandas as pd

    from .tables import render

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


def pipelines_table(items: list[dict]):
    import pandas as pd

    rows = []
    for p in sorted({it["pipeline"] for it in items if it["pipeline"] != "table2"}):
        its = [it for it in items if it["pipeline"] == p]
        lat = [it["latency_s"] for it in its]
        corr = [it["binary"].get("correct", {}).get("verdict") for it in its]
        corr = [c for c in corr if c is not None]
        faith = [it["scores"].get("faithfulness") for it in its if it["scores"].get("faithfulness") is not None]
        acc = [it["citation"]["citation_accuracy"] for it in its if it["citation"]["citation_accuracy"] is not None]
        rows.append({"pipeline": p, "n": len(its),
                     "correctness": round(float(np.mean(corr)), 3) if corr else None, "n_correctness": len(corr),
                     "faithfulness": round(float(np.mean(faith)), 3) if faith else None,
                     "citation_accuracy": round(float(np.mean(acc)), 3) if acc else None,
                     "answers_with_citations": round(float(np.mean([it["citation"]["n_cited"] > 0 for it in its])), 3),
                     "refusal_rate": round(float(np.mean([it["refusal"] for it in its])), 3),
                     "latency_p50_s": round(float(np.percentile(lat, 50)), 2),
                     "latency_p95_s": round(float(np.percentile(lat, 95)), 2)})
    return pd.DataFrame(rows)
