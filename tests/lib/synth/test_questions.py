import json
from types import SimpleNamespace as C

import pytest

from spacelm.lib.synth import questions as synth
from spacelm.lib.synth.golden import GoldenSample


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("Question: What altitude do Starlink satellites use?", ("What altitude do Starlink satellites use?", None)),
        ("1. **Statement:** The ISS has a Whipple shield.\nExplanation: ...", ("The ISS has a Whipple shield.", None)),
        ('"Summarise the debris mitigation rules for GEO."', ("Summarise the debris mitigation rules for GEO.", None)),
        ("Why?", (None, "too_short")),
        ("", (None, "empty")),
        ("What does the passage say about drag?", (None, "refers_to_passage")),
    ],
)
def test_parse_question(raw, expected):
    assert synth.parse_question(raw, min_words=3) == expected


def _golden(n=4):
    return [
        GoldenSample(id=f"{t}-{i}", task=t, question=f"{t} question {i}?", passage=f"passage {i}")
        for t in ("direct_qa", "analysis")
        for i in range(n)
    ]


def test_plan_fixed_fewshot_shares_prefix_and_is_seeded(tiny_config):
    from spacelm.runner.data import load_chunks
    from spacelm.stages import chunk, ingest

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    chunks = load_chunks(tiny_config)
    tiny_config.synth.tasks = ["direct_qa", "analysis"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.synth.max_chunks = 3
    tiny_config.synth.sampling = "every_task"
    tiny_config.synth.fewshot_sampling = "per_task_fixed"
    plan = synth.plan_generation(tiny_config.question_writing(), chunks, _golden())
    assert len(plan) == 6 and [p["task"] for p in plan] == ["direct_qa"] * 3 + ["analysis"] * 3
    direct = [p for p in plan if p["task"] == "direct_qa"]
    assert all(p["fewshot_ids"] == direct[0]["fewshot_ids"] for p in direct)  # fixed per task
    assert all(p["messages"][:-1] == direct[0]["messages"][:-1] for p in direct)  # shared prefix
    assert len(direct[0]["messages"]) == 1 + 2 * 2 + 1
    again = synth.plan_generation(tiny_config.question_writing(), chunks, _golden())
    assert [p["fewshot_ids"] for p in again] == [p["fewshot_ids"] for p in plan]
    tiny_config.synth.fewshot_sampling = "per_chunk"
    per_chunk = synth.plan_generation(tiny_config.question_writing(), chunks, _golden())
    assert len({tuple(p["fewshot_ids"]) for p in per_chunk if p["task"] == "direct_qa"}) > 1


def _chunk(cid: str, doc: str, n_tokens: int = 100):
    from spacelm.lib.ingest.chunking import Chunk

    return Chunk(
        chunk_id=cid,
        doc_id=doc,
        text=f"The text of chunk {cid} describes how operators screen conjunctions and plan manoeuvres.",
        page_start=1,
        page_end=1,
        char_start=0,
        char_end=10,
        n_tokens=n_tokens,
    )


def test_stratified_targets_spread_over_documents_and_tasks():
    """Hand-built corpus: doc a has 6 chunks, b 3, c 1 (and one too short to count). 7 picks
    take c's one chunk, then at most ceil(7/3) from each other document; every pick is a distinct
    chunk; 5 tasks rotate so no task gets more than 2 of 7."""
    chunks = (
        [_chunk(f"a:{i}", "a") for i in range(6)]
        + [_chunk(f"b:{i}", "b") for i in range(3)]
        + [_chunk("c:0", "c"), _chunk("c:1", "c", n_tokens=5)]
    )
    tasks = ["direct_qa", "abstract_qa", "analysis", "summarization", "fact_checking"]
    picks = synth.stratified_targets(chunks, 7, tasks, seed=1)
    ids = [c.chunk_id for c, _ in picks]
    assert len(ids) == len(set(ids)) == 7 and "c:1" not in ids
    per_doc = {d: sum(i.startswith(d + ":") for i in ids) for d in "abc"}
    assert per_doc == {"a": 3, "b": 3, "c": 1}
    per_task = [sum(t == task for _, t in picks) for task in tasks]
    assert max(per_task) - min(per_task) <= 1 and sum(per_task) == 7
    # the first round takes one chunk of every document before any document gives a second
    assert sorted(i.split(":")[0] for i in ids[:3]) == ["a", "b", "c"]
    assert synth.stratified_targets(chunks, 7, tasks, seed=1) == picks  # seeded
    assert len(synth.stratified_targets(chunks, None, tasks, seed=1)) == 10  # all substantial chunks
    # a document's chunk never gets the same task in consecutive rounds
    a_tasks = [t for c, t in picks if c.doc_id == "a"]
    assert all(x != y for x, y in zip(a_tasks, a_tasks[1:]))


def test_stratified_plan_has_one_question_per_source_chunk(tiny_config):
    chunks = [_chunk(f"{d}:{i}", d) for d in "abcd" for i in range(4)]
    tiny_config.synth.tasks = ["direct_qa", "analysis"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.synth.max_chunks = 6
    tiny_config.synth.sampling = "stratified"
    plan = synth.plan_generation(tiny_config.question_writing(), chunks, _golden())
    assert len(plan) == 6 == len({p["chunk"].chunk_id for p in plan})
    assert {p["chunk"].doc_id for p in plan} == set("abcd")
    assert [p["task"] for p in plan] == ["direct_qa"] * 3 + ["analysis"] * 3


def test_retention_table_counts_each_filter():
    recs = [
        {"task": "direct_qa", "drop_reason": None, "rank_bm25": 1, "rank_dense": None, "kept": True},
        {"task": "direct_qa", "drop_reason": "not_retrieved", "rank_bm25": None, "rank_dense": None, "kept": False},
        {"task": "analysis", "drop_reason": "duplicate", "kept": False},
        {"task": "analysis", "drop_reason": None, "rank_bm25": None, "rank_dense": 3, "kept": True},
    ]
    df = synth.retention_table(recs).set_index("task")
    assert df.loc["direct_qa", "valid"] == 2 and df.loc["direct_qa", "kept_bm25"] == 1
    assert df.loc["direct_qa", "kept_dense"] == 0 and df.loc["analysis", "kept_union"] == 1
    assert df.loc["all", "generated"] == 4 and df.loc["all", "retention_union_%"] == pytest.approx(66.7)


QUESTIONS = {
    "direct_qa": [
        "Which figure do operators weigh before moving a satellite?",
        "Who decides whether a satellite dodges a close approach?",
    ],
    "summarization": [
        "Give a short overview of how close-approach warnings are handled.",
        "Outline the steps taken after a collision alert.",
    ],
}


@pytest.mark.slow
def test_synth_stage_end_to_end_with_real_model(tiny_config, tiny_corpus, monkeypatch):
    """Real embedded 0.5B model on the tiny corpus: writes questions, filters, exports."""
    pytest.importorskip("llama_cpp")
    rows = []
    for t in ("direct_qa", "summarization"):
        for i in range(2):
            rows.append(
                {
                    "id": f"{t}-{i}",
                    "task": t,
                    "question": QUESTIONS[t][i],
                    "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre.",
                }
            )
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tiny_config.synth.tasks = ["direct_qa", "summarization"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.synth.max_chunks = 2
    tiny_config.synth.sampling = "every_task"  # 2 chunks x 2 tasks
    tiny_config.synth.filter_top_n = 3
    tiny_config.models.question_writer.model = "embedded:qwen2.5-coder-0.5b"
    tiny_config.models.question_writer.max_tokens = 48
    tiny_config.models.judge.model = "embedded:qwen2.5-coder-0.5b"  # checks the unanswerable candidates
    from spacelm.pipeline import run_stages

    res = run_stages(tiny_config, upto="synth")["synth"]
    out = tiny_config.synthetic_dir
    recs = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    # one writer call per distinct prompt, answerable and unanswerable (the tiny corpus repeats its
    # text, so two chunks can give the same prompt)
    distinct = len({r["prompt_hash"] for r in recs if r["prompt_hash"]})
    una = [r for r in recs if not r["answerable"]]
    assert una and all(r["unanswerable_kind"] in ("out_of_corpus", "strong_claim") for r in una)
    assert all(r["kept"] == (r.get("check_passed") is True) for r in una)
    # the judge graded the check pairs (repeated prompts of the tiny corpus are sent once)
    assert 0 < res["llm_judge"]["calls"] <= res["unanswerable_pairs_graded"]
    assert res["generated"] == 4 and res["llm"]["calls"] == distinct
    for r in recs:
        assert {
            "qid",
            "task",
            "question",
            "source_chunk_id",
            "doc_id",
            "fewshot_ids",
            "kept",
            "drop_reason",
            "prompt_hash",
            "model",
        } <= set(r)
        assert r["kept"] == (r["drop_reason"] is None)
    kept = [r for r in recs if r["kept"]]
    queries = (out / "beir" / "queries.jsonl").read_text().splitlines()
    assert len(queries) == len(kept)
    import datasets

    assert len(datasets.load_from_disk(str(out / "hf_dataset"))) == len(kept)
    # a forced re-run is answered from the cache: no model call, identical output
    first = (out / "questions.jsonl").read_bytes()
    res2 = run_stages(tiny_config, upto="synth", force=True)["synth"]
    assert res2["llm"]["calls"] == 0 and res2["llm"]["cache_hits"] == distinct
    assert (out / "questions.jsonl").read_bytes() == first
    assert any(r.get("raw_output") for r in recs)
    # a corpus whose licence does not allow quoting: the writer's raw replies (they copy the passage) stay out
    import spacelm.stages.browse as browse

    monkeypatch.setattr(browse, "text_policy", lambda cfg: (False, "a listed corpus"))
    run_stages(tiny_config, upto="synth", force=True)
    again = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert [r["question"] for r in again] == [r["question"] for r in recs]
    assert all(r["raw_output"] is None for r in again)


# --------------------------------------------------------------------------- unanswerable questions
def _answerable(qid, task, chunk="d:0"):
    return {
        "qid": qid,
        "task": task,
        "question": f"What does {qid} say about drag?",
        "answerable": True,
        "drop_reason": None,
        "source_chunk_id": chunk,
        "doc_id": chunk.split(":")[0],
        "page_start": 1,
        "page_end": 1,
        "kept": True,
    }


def test_plan_unanswerable_rounds_take_new_sources(tiny_config):
    from spacelm.lib.synth import questions as Q

    tiny_config.synth.tasks = ["direct_qa"]
    tiny_config.synth.unanswerable.per_task = 2
    records = [_answerable(f"syn-direct_qa-d:{i}", "direct_qa") for i in range(4)]
    chunks = {"d:0": C(chunk_id="d:0", text="Drag lowers perigee. Nothing about Europa Clipper here.")}
    first = Q.plan_unanswerable(tiny_config.question_writing(), records, chunks, 0)
    assert len(first) == 2 * 2  # two sources x two kinds
    second = Q.plan_unanswerable(tiny_config.question_writing(), records, chunks, 1, ["direct_qa"])
    used = {p["source"]["qid"] for p in first if p["kind"] == "strong_claim"}
    assert len(second) == 2 and all(p["source"]["qid"] not in used for p in second if p["kind"] == "strong_claim")
    assert Q.plan_unanswerable(tiny_config.question_writing(), records, chunks, 1, []) == []
    ooc = [p for p in first if p["kind"] == "out_of_corpus"]
    assert all(p["subject"] and p["subject"] in p["messages"][-1]["content"] for p in ooc)
    assert all("europa clipper" not in p["subject"].lower() for p in ooc)  # the corpus mentions it


def test_subjects_and_replies():
    from spacelm.lib.synth import questions as Q

    assert Q._mentions("disposal of isro satellites", "the Indian Space Research Organisation (ISRO)")
    assert not Q._mentions("the junonia butterfly", "Juno")
    assert (
        Q.unanswerable_reply("Does the passage confirm that X?", "strong_claim") == "Does the documents confirm that X?"
    )
    assert Q.unanswerable_reply("About the passage", "out_of_corpus") == "About the passage"


def test_generate_unanswerable_drops_copies_and_missing_subjects(tiny_config):
    from spacelm.lib.llm.types import Completion
    from spacelm.lib.synth import questions as Q

    src = _answerable("syn-direct_qa-d:0", "direct_qa")
    plan = [
        {"kind": "out_of_corpus", "source": src, "messages": [], "subject": "Juno", "prompt_hash": "h1"},
        {"kind": "out_of_corpus", "source": src, "messages": [], "subject": "Hayabusa2", "prompt_hash": "h2"},
        {"kind": "strong_claim", "source": src, "messages": [], "subject": None, "prompt_hash": "h3"},
    ]
    replies = [
        "How does drag change the orbit of Juno over a year?",
        src["question"],
        "Is it confirmed that drag alone ended every mission?",
    ]

    class LLM:
        identity = {"name": "scripted"}

        def chat_many(self, reqs, progress=None):
            return [Completion(text=t) for t in replies]

    out = Q.generate_unanswerable(tiny_config.question_writing(), LLM(), plan, [src])
    assert [r["drop_reason"] for r in out] == [None, "duplicate", None]
    assert all(not r["answerable"] and not r["kept"] and r["derived_from"] == src["qid"] for r in out)
    replies[0] = "How does drag change the orbit of a cubesat over a year?"
    assert (
        Q.generate_unanswerable(tiny_config.question_writing(), LLM(), plan[:1], [src])[0]["drop_reason"]
        == "subject_missing"
    )


def test_check_keeps_only_candidates_no_passage_answers():
    from spacelm.lib.synth import questions as Q

    class Sys:
        def __init__(self, ranks):
            self.ranks = ranks

        def search(self, qs, k):
            return [[(d, 1.0) for d in self.ranks[q]][:k] for q in qs]

    cands = [
        {"qid": q, "question": q, "answerable": False, "drop_reason": None, "kept": False} for q in ("u1", "u2", "u3")
    ]
    cands.append({"qid": "u4", "question": "u4", "answerable": False, "drop_reason": "duplicate", "kept": False})
    systems = {
        "bm25": Sys({"u1": ["a", "b", "z"], "u2": ["c"], "u3": ["e"]}),
        "dense": Sys({"u1": ["b", "d", "z"], "u2": ["c"], "u3": ["f"]}),
    }
    pairs = Q.unanswerable_check_pairs(systems, cands, 2)
    assert [(p["qid"], p["chunk_id"]) for p in pairs] == [
        ("u1", "a"),
        ("u1", "b"),
        ("u1", "d"),
        ("u2", "c"),
        ("u3", "e"),
        ("u3", "f"),
    ]
    grades = {("u1", "a"): 1, ("u1", "b"): 0, ("u1", "d"): 1, ("u2", "c"): 2, ("u3", "e"): 1, ("u3", "f"): None}
    Q.mark_unanswerable(cands, [{"qid": q, "chunk_id": c, "grade": g} for (q, c), g in grades.items()], 2)
    assert [(c["kept"], c["drop_reason"]) for c in cands] == [
        (True, None),
        (False, "answerable_by_judge"),
        (False, "unverified"),
        (False, "duplicate"),
    ]
    assert cands[0]["check_grades"] == {"a": 1, "b": 0, "d": 1}
    assert [c.get("check_passed") for c in cands] == [True, False, None, None]
    # a golden unanswerable question stays as a person labelled it; the check's verdict is recorded
    gold = Q.golden_unanswerable(
        [C(id="g-1", task="direct_qa", question="Who licensed Tiangong?", doc_id=None, answerable=False)]
    )
    Q.mark_unanswerable(gold, [{"qid": "g-1", "chunk_id": "a", "grade": 3}], 2)
    assert gold[0]["kept"] and gold[0]["drop_reason"] is None and gold[0]["check_passed"] is False


def test_exports_carry_the_answerable_flag(tmp_path):
    import datasets

    from spacelm.lib.synth import questions as Q

    chunks = [C(chunk_id="d:0", doc_id="d", text="Drag lowers perigee.")]
    ans = dict(
        _answerable("syn-direct_qa-d:0", "direct_qa"),
        rank_bm25=1,
        rank_dense=1,
        model="m",
        prompt_hash="h",
        seed=1,
        fewshot_ids=[],
    )
    una = dict(
        ans,
        qid="una-x",
        question="Is it confirmed that drag ends all missions?",
        answerable=False,
        unanswerable_kind="strong_claim",
    )
    gold = Q.golden_unanswerable(
        [C(id="g-1", task="direct_qa", question="Who licensed Tiangong?", doc_id=None, answerable=False)]
    )[0]
    Q.export_beir(chunks, [ans, una, gold], tmp_path / "beir")
    queries = [json.loads(x) for x in (tmp_path / "beir" / "queries.jsonl").read_text().splitlines()]
    assert {q["_id"]: q["metadata"]["answerable"] for q in queries} == {ans["qid"]: True, "una-x": False, "g-1": False}
    qrels = (tmp_path / "beir" / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert qrels == [f"{ans['qid']}\td:0\t1"]  # unanswerable questions have no relevant passage
    Q.export_hf(chunks, [ans, una, gold], tmp_path / "hf")
    ds = datasets.load_from_disk(str(tmp_path / "hf"))
    assert ds["answerable"] == [True, False, False] and ds["unanswerable_kind"] == [None, "strong_claim", "golden"]
    assert ds["passage"] == ["Drag lowers perigee.", "Drag lowers perigee.", ""]


def test_check_waves_stops_at_the_first_answering_passage():
    from spacelm.lib.synth.questions import check_waves

    pairs = [{"qid": q, "chunk_id": f"{q}-{i}"} for q in ("a", "b", "g") for i in range(3)]
    grade_of = {"a-0": 3, "b-0": 0, "b-1": 2, "g-0": 3}
    asked = []

    def grade(batch):
        asked.append([p["chunk_id"] for p in batch])
        return [dict(p, grade=grade_of.get(p["chunk_id"], 0)) for p in batch]

    grades = check_waves(pairs, grade, answerable_grade=2, full={"g"})
    assert asked == [["a-0", "b-0", "g-0"], ["b-1", "g-1"], ["g-2"]]
    assert len(grades) == 6  # a: 1, b: 2 (answered at its second), g (golden): all 3
