"""Issue 40 on hand-built cases: few-shot examples drawn per chunk from other documents, fact-checks
planned with their label, boilerplate chunks never a source, and the screening of written questions
(a false premise rejected, a copy rejected, a fact-check claim stored with its label and checked by a
scripted judge), with the rejection table counting each check."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spacelm.lib.ingest.chunking import Chunk
from spacelm.lib.llm.types import Completion
from spacelm.lib.synth import questions as synth
from spacelm.lib.synth.checks import LABELS, QuestionChecks, alteration, premise_contexts
from spacelm.lib.synth.golden import GoldenSample
from spacelm.lib.synth.screening import (
    audit_table,
    golden_records,
    judge_checks,
    judge_requests,
    rejection_table,
    screen,
)

HANDBOOK = [
    "NASA Conjunction Assessment Risk Analysis handbook, issued by NASA in 2023.",
    "The CARA team screens every conjunction of a protected asset against the catalogue each day.",
    "When the probability of collision exceeds 1e-4, the owner operator plans a mitigation manoeuvre.",
    "Null or non-positive-definite covariances are repaired before the probability is computed.",
    "The European Space Agency follows a similar practice for its missions.",
    "Appendix text on the history of the office and its staff.",
]
LICENCE = (
    "This article is licensed under a Creative Commons Attribution 4.0 International License, which permits use "
    "and sharing in any medium. © The Author(s) 2023. All rights reserved."
)


def _chunks(texts, doc="handbook"):
    out, pos = [], 0
    for i, t in enumerate(texts):
        out.append(Chunk(f"{doc}:{i}", doc, t, 1, 1, pos, pos + len(t), 100))
        pos += len(t) + 1
    return out


def _writing(**kw):
    base = synth.QuestionWriting(
        seed=3,
        tasks=("direct_qa", "fact_checking"),
        sampling="every_task",
        max_chunks=None,
        n_fewshot=2,
        fewshot_sampling="per_chunk",
        min_question_words=4,
        max_tokens=64,
        reference_max_tokens=None,
        unanswerable_kinds=(),
        unanswerable_per_task=None,
        filter_top_n=10,
        filter_retriever="union",
        checks=QuestionChecks(context_chunks=1, front_chars=80),
    )
    return replace(base, **kw)


def _golden():
    out = []
    for i, doc in enumerate(["handbook", "handbook", "law", "law", "policy", "policy"]):
        out.append(GoldenSample(f"dq-{i}", "direct_qa", f"Which rule {i} applies?", f"passage {i}", doc_id=doc))
    for i, verdict in enumerate(["supported", "supported", "refuted", "refuted", "not_enough_info", "not_enough_info"]):
        doc = "law" if i % 2 else "policy"
        out.append(GoldenSample(f"fc-{i}", "fact_checking", f"Claim {i}.", f"p {i}", doc_id=doc, verdict=verdict))
    return out


def test_per_chunk_examples_come_from_other_documents_and_vary():
    plan = synth.plan_generation(_writing(), _chunks(HANDBOOK), _golden())
    direct = [p for p in plan if p["task"] == "direct_qa"]
    assert all(not any(i in ("dq-0", "dq-1") for i in p["fewshot_ids"]) for p in direct)  # not the chunk's document
    assert len({tuple(p["fewshot_ids"]) for p in direct}) > 1  # drawn per chunk
    assert synth.fewshot_share(plan)["direct_qa"] < 1.0
    fixed = synth.plan_generation(_writing(fewshot_sampling="per_task_fixed"), _chunks(HANDBOOK), _golden())
    assert synth.fewshot_share(fixed)["direct_qa"] == 1.0


def test_per_document_examples_are_one_draw_per_document_from_other_documents():
    chunks = _chunks(HANDBOOK) + _chunks(HANDBOOK, doc="law")
    plan = synth.plan_generation(_writing(fewshot_sampling="per_document"), chunks, _golden())
    direct = [p for p in plan if p["task"] == "direct_qa"]
    by_doc: dict = {}
    for p in direct:
        by_doc.setdefault(p["chunk"].doc_id, set()).add(tuple(p["fewshot_ids"]))
    assert all(len(draws) == 1 for draws in by_doc.values())  # one draw per document: a shared prefix
    assert {i for d in by_doc["handbook"] for i in d}.isdisjoint({"dq-0", "dq-1"})  # not its own document's
    assert {i for d in by_doc["law"] for i in d}.isdisjoint({"dq-2", "dq-3"})
    same = [p for p in direct if p["chunk"].doc_id == "handbook"]
    assert all(p["messages"][:-1] == same[0]["messages"][:-1] for p in same)


def test_fact_checks_are_planned_with_balanced_labels_and_examples_of_that_verdict():
    plan = [p for p in synth.plan_generation(_writing(), _chunks(HANDBOOK), _golden()) if p["task"] == "fact_checking"]
    labels = [p["label"] for p in plan]
    assert sorted(set(labels)) == sorted(LABELS) and all(labels.count(x) == 2 for x in LABELS)
    verdict_of = {g.id: g.verdict for g in _golden()}
    want = {"supported": "supported", "refuted": "refuted", "unverifiable": "not_enough_info"}
    for p in plan:
        assert all(verdict_of[i] == want[p["label"]] for i in p["fewshot_ids"])
        assert p["label"].upper() in p["messages"][0]["content"]  # the prompt asks for that label
    assert all(p.get("label") is None for p in synth.plan_generation(_writing(), _chunks(HANDBOOK), _golden())[:6])


def test_a_boilerplate_chunk_is_never_a_source():
    chunks = _chunks(HANDBOOK + [LICENCE])
    assert synth.boilerplate_chunks(chunks) == {"handbook:6": "licence"}
    plan = synth.plan_generation(_writing(), chunks, _golden())
    assert "handbook:6" not in {p["chunk"].chunk_id for p in plan}
    kept = synth.plan_generation(_writing(checks=QuestionChecks(skip_boilerplate=False)), chunks, _golden())
    assert "handbook:6" in {p["chunk"].chunk_id for p in kept}


def _record(qid, question, chunk_id, task="direct_qa", label=None):
    r = {"qid": qid, "task": task, "question": question, "source_chunk_id": chunk_id, "doc_id": "handbook"}
    r.update(drop_reason=None, kept=False, answerable=True, **({"label": label} if label else {}))
    return r


CHECKS = QuestionChecks(context_chunks=1, front_chars=80)


def _screened(*records):
    chunks = _chunks(HANDBOOK)
    contexts = premise_contexts(chunks, CHECKS.context_chunks, CHECKS.front_chars)
    pending = screen(list(records), contexts, CHECKS)
    return contexts, pending


def test_a_false_premise_is_rejected_and_a_name_from_the_front_matter_is_not():
    council = _record("q1", "What did the Council recommend about repairing null covariances?", "handbook:3")
    front = _record("q2", "How does NASA deal with degenerate covariance matrices?", "handbook:3")
    _screened(council, front)
    assert council["drop_reason"] == "premise" and "Council" in council["checks"]["premise"]
    assert front["drop_reason"] is None and front["checks"] == {
        "boilerplate": "passed",
        "copy": "passed",
        "premise": "passed",
    }


def test_a_name_only_elsewhere_in_the_document_goes_to_the_judge():
    esa = _record("q3", "Why does the European Space Agency repair degenerate covariance matrices?", "handbook:2")
    contexts, pending = _screened(esa)
    assert esa["checks"]["premise"] == "pending" and pending == {"q3": ["European Space Agency"]}
    reqs = judge_requests([esa], contexts, pending)
    assert [r[1] for r in reqs] == ["premise"]
    assert "European Space Agency follows" in reqs[0][2].messages[-1]["content"]  # the mention is shown


def test_a_copied_question_is_rejected():
    copy = _record(
        "q4", "When the probability of collision exceeds 1e-4, what does the owner operator plan?", "handbook:2"
    )
    _screened(copy)
    assert copy["drop_reason"] == "copy" and "verbatim run of 7 words > 5" in copy["checks"]["copy"]


def test_fact_check_claims_keep_their_label_skip_the_premise_check_and_go_to_the_judge():
    refuted = _record(
        "f1",
        "Operators plan a mitigation manoeuvre once collision risk passes 1e-3.",
        "handbook:2",
        "fact_checking",
        "refuted",
    )
    vague = _record(
        "f2",
        "Mitigation manoeuvres are planned by owner operators after screening.",
        "handbook:2",
        "fact_checking",
        "refuted",
    )
    unverifiable = _record(
        "f3", "The Council funds a second screening centre in 2030.", "handbook:2", "fact_checking", "unverifiable"
    )
    _screened(refuted, vague, unverifiable)
    assert alteration(refuted["question"], HANDBOOK[2]) == ["1e-3"]
    assert refuted["label"] == "refuted" and refuted["checks"]["premise"] == "skipped: refuted claim"
    assert refuted["checks"]["label"] == "pending" and refuted["drop_reason"] is None
    assert refuted["alteration"] == ["1e-3"]  # what a reader can check against the chunk
    # a claim changed within the chunk's own words (a swap) shows no alteration: the judge decides
    assert vague["alteration"] == [] and vague["checks"]["label"] == "pending" and vague["drop_reason"] is None
    assert alteration("Operators never plan a mitigation manoeuvre.", HANDBOOK[2]) == ["negation"]
    assert unverifiable["checks"]["premise"] == "skipped: unverifiable claim" and unverifiable["drop_reason"] is None


class ScriptedJudge:
    """Answers every request with the P(yes) its rule gives for the request's prompt text."""

    def __init__(self, rule):
        self.rule, self.seen = rule, []

    def chat_many(self, reqs, progress=None):
        self.seen += reqs
        return [Completion(text="", choice_probs={"yes": p, "no": 1 - p}) for p in map(self.rule, reqs)]


def _text(req):
    return " ".join(m["content"] for m in req.messages)


def test_the_judge_settles_labels_asked_both_ways():
    supported = _record(
        "f4",
        "Degenerate covariances get fixed before the collision odds are computed.",
        "handbook:3",
        "fact_checking",
        "supported",
    )
    refuted = _record(
        "f5",
        "Operators plan a mitigation manoeuvre once collision risk passes 1e-3.",
        "handbook:2",
        "fact_checking",
        "refuted",
    )
    contexts, pending = _screened(supported, refuted)
    # a judge reading every claim as supported, whichever way it is asked
    judge = ScriptedJudge(lambda r: 0.1 if "not support" in _text(r) else 0.9)
    judge_checks(judge, judge_requests([supported, refuted], contexts, pending))
    assert len(judge.seen) == 4  # two checks, each asked both ways
    assert supported["checks"]["label"] == "passed" and supported["drop_reason"] is None
    assert supported["check_scores"]["label"] == pytest.approx(0.9)
    assert refuted["drop_reason"] == "label" and "label refuted" in refuted["checks"]["label"]
    # a judge saying "yes" to everything reads no support either way: p 0.5 passes supported only
    yes = ScriptedJudge(lambda r: 1.0)
    again = _record(
        "f6",
        "Operators plan a mitigation manoeuvre once collision risk passes 1e-3.",
        "handbook:2",
        "fact_checking",
        "refuted",
    )
    contexts, pending = _screened(again)
    judge_checks(yes, judge_requests([again], contexts, pending))
    assert again["check_scores"]["label"] == pytest.approx(0.5) and again["drop_reason"] == "label"


def test_the_judge_settles_a_premise_it_reads_as_unsupported_by_dropping_the_question():
    """The European Space Agency is named only elsewhere in the document, so the judge decides. A
    judge that reads the name as not tied to the passage (P(yes) 0.1 asked, 0.9 to the mirrored
    "does not connect" question: 0.1) drops the question at the premise check; one that reads it as
    tied (0.9 and 0.1: 0.9) keeps it."""
    question = "Why does the European Space Agency repair degenerate covariance matrices?"
    for tied, dropped in ((False, "premise"), (True, None)):
        esa = _record("q3", question, "handbook:2")
        contexts, pending = _screened(esa)
        assert esa["checks"]["premise"] == "pending"

        def rule(req, tied=tied):
            says_yes = tied != ("does not connect" in _text(req))
            return 0.9 if says_yes else 0.1

        judge_checks(ScriptedJudge(rule), judge_requests([esa], contexts, pending))
        assert esa["drop_reason"] == dropped
        assert esa["check_scores"]["premise"] == pytest.approx(0.9 if tied else 0.1)
        if tied:
            assert esa["checks"]["premise"] == "passed"
        else:
            assert esa["checks"]["premise"].startswith("judge: the document does not tie the names")


def test_rejection_and_audit_tables_count_each_check_beside_the_golden_samples():
    recs = [
        _record("a", "What did the Council recommend about repairing null covariances?", "handbook:3"),
        _record(
            "b", "When the probability of collision exceeds 1e-4, what does the owner operator plan?", "handbook:2"
        ),
        _record("c", "How does NASA deal with degenerate covariance matrices?", "handbook:3"),
        {**_record("d", "", "handbook:1"), "drop_reason": "empty"},
    ]
    contexts, _ = _screened(*recs)
    recs[2]["kept"] = True
    gold = golden_records(
        [GoldenSample("g1", "direct_qa", "Which office screens conjunctions daily?", "x", doc_id="handbook")],
        {"g1": "handbook:1"},
        {c.chunk_id: c for c in _chunks(HANDBOOK)},
    )
    _screened(*gold)
    df = rejection_table(recs, {"x:9": "licence", "x:8": "licence"}, gold)
    row = df[(df["set"] == "written") & (df["task"] == "direct_qa")].iloc[0]
    assert (row["written"], row["malformed"], row["rejected_copy"], row["rejected_premise"], row["kept"]) == (
        4,
        1,
        1,
        1,
        1,
    )
    assert df[df["set"] == "golden"].iloc[0]["kept"] == 1
    skipped = df[df["set"] == "sources skipped"].iloc[0]
    assert skipped["written"] == 2 and skipped["boilerplate_licence"] == 2
    audit = audit_table({"written": recs[:3], "golden": gold}, contexts, CHECKS).set_index(["set", "task"])
    assert audit.loc[("written", "all"), "n"] == 3
    assert audit.loc[("written", "all"), "share_copy"] == pytest.approx(1 / 3, abs=1e-3)
    assert audit.loc[("golden", "all"), "share_copy"] == 0


class ScriptedWriter:
    """Writes the same claim for every prompt (a unit-test stand-in for the question writer)."""

    identity = {"name": "scripted", "sha256": None}

    def chat_many(self, reqs, progress=None):
        return [Completion(text=f"Claim number {i}: operators move satellites at risk.") for i, _ in enumerate(reqs)]


def test_a_written_fact_check_row_carries_its_label_and_other_tasks_none():
    plan = synth.plan_generation(_writing(), _chunks(HANDBOOK), _golden())
    rows = synth.generate_questions(_writing(), ScriptedWriter(), plan)
    facts = [r for r in rows if r["task"] == "fact_checking"]
    assert [r["label"] for r in facts] == [p["label"] for p in plan if p["task"] == "fact_checking"]
    assert {r["label"] for r in facts} == set(LABELS)
    assert all("label" not in r for r in rows if r["task"] == "direct_qa")
    assert all(r["fewshot_ids"] and r["fewshot_sampling"] == "per_chunk" for r in rows)


def test_the_label_checks_agreement_with_people_is_counted_per_label():
    from spacelm.lib.synth.screening import label_agreement

    gold = [
        {"label": "supported", "checks": {"label": "passed"}, "check_scores": {"label": 0.8}},
        {"label": "refuted", "checks": {"label": "judge reads ..."}, "check_scores": {"label": 0.7}},
        {"label": "refuted", "checks": {"label": "passed"}, "check_scores": {"label": 0.2}},
        {"label": "refuted", "checks": {"label": "not run: copy"}},  # never read by the judge
        {"label": None, "checks": {}},
    ]
    a = label_agreement(gold)
    assert (a["n"], a["agree"], a["share"]) == (3, 2, 0.667)
    assert a["by_label"] == {"refuted": {"n": 2, "agree": 1}, "supported": {"n": 1, "agree": 1}}
    assert a["ci"][0] < 0.667 < a["ci"][1]
    assert label_agreement([])["share"] is None
