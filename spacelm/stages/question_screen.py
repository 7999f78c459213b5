"""The assessor's screening of a run's written questions (labels of kind screening): which questions
leave Table 1, and what the screening says about the question writer and the synth checks.

`spacelm label export --what questions` lists the questions (stages/labels.py); the grade stage's
tables and `spacelm report --recompute` read Table 1 without the questions screened out (`screened`).
"""

from __future__ import annotations

from ..config import Config
from ..lib.io import read_jsonl
from ..lib.labels.store import SCREENING, LabelStore, Span, relevance_key

# the synth checks whose rejections the assessor also screens: each says a question is unfit to ask of
# its passage (a copy is fit to ask, only too easy; not_retrieved is the retrieval filter's call)
SCREENED_DROPS = ("premise", "label", "refers_to_passage", "not_retrieved")


def answerable(q: dict) -> bool:
    return q.get("answerable", True) not in (False, "False")


def suite_verdict(q: dict) -> str | None:
    """What synth said of a written question: "kept", or the check that dropped it."""
    return "kept" if q.get("kept") in (True, "True") else q.get("drop_reason")


def screen_of(screens: dict, question: dict, chunks: dict) -> str | None:
    """The assessor's screen (`screens`: LabelStore.screens()) of a written question against its
    source chunk, or None (not screened)."""
    c = chunks.get(question.get("source_chunk_id"))
    if c is None or not question.get("question"):
        return None
    return screens.get(relevance_key(question["question"], Span.of_chunk(c)))


def screening_facts(cfg: Config, questions: list[dict], chunks: dict) -> dict | None:
    """What the assessor's screening of the run's written questions found (None when it screened
    none): per task, the questions screened and rejected (a measure of the writer), the reasons, the
    questions Table 1 keeps (the screened-in and the not yet screened), and how the synth checks'
    verdicts agree with the assessor's on every screened question, kept or dropped by a check."""
    from ..runner.data import questions_path

    st = LabelStore(cfg.labels_dir)
    if not st.rows[SCREENING]:
        return None
    screens = st.screens()
    per_task: dict = {}
    rejected, unscreened = [], []
    for q in questions:
        s = screen_of(screens, q, chunks)
        t = per_task.setdefault(q.get("task") or "-", {"questions": 0, "screened": 0, "rejected": 0, "reasons": {}})
        t["questions"] += 1
        if s is None:
            unscreened.append(q["qid"])
            continue
        t["screened"] += 1
        if s != "answerable":
            t["rejected"] += 1
            t["reasons"][s] = t["reasons"].get(s, 0) + 1
            rejected.append(q["qid"])
    screened = sum(t["screened"] for t in per_task.values())
    checks: dict = {}
    p = questions_path(cfg)
    for q in read_jsonl(p) if p.is_file() else []:
        if not answerable(q):
            continue
        s = screen_of(screens, q, chunks)
        if s is None:
            continue
        c = checks.setdefault(suite_verdict(q), {"screened": 0, "answerable": 0})
        c["screened"] += 1
        c["answerable"] += s == "answerable"
    from ..lib.stats import wilson_ci

    lo, hi = wilson_ci(len(rejected), screened) if screened else (None, None)
    return {
        "questions": len(questions),
        "screened": screened,
        "rejected": len(rejected),
        "rejected_share": round(len(rejected) / screened, 4) if screened else None,
        "rejected_ci": [None if lo is None else round(lo, 4), None if hi is None else round(hi, 4)],
        "unscreened": len(unscreened),
        "kept_for_table1": len(questions) - len(rejected),
        "rejected_qids": sorted(rejected),
        "per_task": dict(sorted(per_task.items())),
        "by_suite_verdict": dict(sorted(checks.items())),
        "rule": "a written question the assessor screens other than answerable leaves Table 1; "
        "one not yet screened stays",
    }


def screened(cfg: Config, questions: list[dict]) -> tuple[list[dict], dict | None]:
    """(the run's questions less those the assessor screened out, the screening facts of
    screening_facts or None when none was screened). Each question kept is marked with
    whether it was graded to the largest top-k (`deep`, drawn over all the run's questions), so
    leaving questions out never moves the deep draw onto questions graded only to the smallest."""
    from ..lib.judge.relevance import deep_qids
    from ..runner.data import load_chunks

    if not LabelStore(cfg.labels_dir).rows[SCREENING]:
        return questions, None
    facts = screening_facts(cfg, questions, {c.chunk_id: c for c in load_chunks(cfg)})
    deep = deep_qids(cfg.table_design(), questions)
    drop = set(facts["rejected_qids"]) if facts else set()
    return [dict(q, deep=q["qid"] in deep) for q in questions if q["qid"] not in drop], facts
