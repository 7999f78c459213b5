"""`spacelm plan` on the tiny corpus: it loads no model, its counts follow from the config
before anything has run, and after a run (stand-in models and encoder) its exact counts are the
calls the stages made."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from spacelm.lib.llm import LLM, Completion
from spacelm.plan import plan_run

TOPICS = [
    "conjunction screening",
    "collision probability",
    "manoeuvre planning",
    "orbit determination",
    "debris tracking",
    "re-entry prediction",
    "solar activity",
    "ground station passes",
]


def _corpus(raw: Path) -> Path:
    """Three documents of distinct sentences (no two chunks alike), about 30 chunks of 64 tokens."""
    raw.mkdir(parents=True, exist_ok=True)
    for d, name in enumerate(("screening", "tracking", "weather")):
        sentences = [
            f"In {name} report {d}, section {i} notes that {TOPICS[(i + d) % len(TOPICS)]} took {i * 7 + d} "
            f"hours on satellite {chr(65 + i % 26)}{i}, which the {name} team reviewed."
            for i in range(40)
        ]
        (raw / f"{name}.txt").write_text("\n\n".join(" ".join(sentences[j : j + 4]) for j in range(0, 40, 4)))
    rows = []
    for task, q in (
        ("direct_qa", "How long did conjunction screening take on satellite B{i}?"),
        ("summarization", "Summarise what section {i} of the screening report says."),
    ):
        for i in range(3):
            rows.append(
                {"id": f"{task}-{i}", "task": task, "question": q.format(i=i), "passage": f"section {i} notes that"}
            )
    (raw / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return raw


@pytest.fixture
def cfg(tiny_config, tmp_path):
    c = tiny_config
    raw = _corpus(tmp_path / "distinct")
    c.corpus.raw_dir, c.corpus.golden_samples = str(raw), str(raw / "golden_samples.jsonl")
    c.synth.tasks, c.synth.n_fewshot, c.synth.max_chunks = ["direct_qa", "summarization"], 2, 2
    c.synth.sampling = "every_task"
    c.synth.with_reference_answer = True
    c.grading.n_bootstrap = c.answer.n_bootstrap = c.judge_check.n_bootstrap = 50
    return c


def _no_models(monkeypatch):
    """Every way a model could load fails the test (a GGUF's vocabulary alone may be read)."""
    import spacelm.lib.llm as llm_pkg
    import spacelm.lib.llm.frontend as frontend
    import spacelm.lib.retrieval.dense as retrieval

    def refuse(*a, **kw):
        raise AssertionError("the plan loaded a model")

    monkeypatch.setattr(llm_pkg, "open_llm", refuse)
    monkeypatch.setattr(frontend, "_backend_class", refuse)
    monkeypatch.setattr(retrieval, "Encoder", refuse)
    try:
        import sentence_transformers

        monkeypatch.setattr(sentence_transformers, "SentenceTransformer", refuse)
    except ImportError:
        pass
    try:
        import llama_cpp
    except ImportError:
        return
    real_init = llama_cpp.Llama.__init__

    def vocab_only(self, *a, **kw):
        if not kw.get("vocab_only"):
            raise AssertionError("the plan loaded a model's weights")
        real_init(self, *a, **kw)

    monkeypatch.setattr(llama_cpp.Llama, "__init__", vocab_only)


def _phases(plan: dict) -> dict:
    return {(p["stage"], p["phase"]): p for p in plan["phases"]}


def test_plan_before_any_stage_runs_follows_from_the_config_and_loads_no_model(cfg, monkeypatch):
    _no_models(monkeypatch)
    cfg.models.generator.n_ctx = 300  # too small for the answer prompts: warned about
    plan = plan_run(cfg)
    ph = _phases(plan)
    calls = lambda stage, phase: ph[(stage, phase)]["calls"]
    # synth: 2 chunks x 2 tasks, each question answered; unanswerable: 2 kinds x 2 tasks x per_task 2
    # (each task has exactly 2 questions, so there is no second round)
    assert calls("synth", "questions") == 4 and ph[("synth", "questions")]["calls_basis"] == "exact"
    refs = ph[("synth", "reference answers")]
    assert refs["calls"] == 4 and refs["calls_basis"] == "upper bound"
    assert calls("synth", "unanswerable questions, round 1") == 8
    assert ("synth", "unanswerable questions, round 2") not in ph
    # each candidate checked against the bm25 and dense top-3 (stand-ins overlapping as little as possible)
    assert calls("synth", "unanswerable check, round 1") == 8 * 6
    # grade: 4 questions; its validity pairs (source + a random other document's chunk) again passage first
    assert calls("grade", "validity pairs, passage first") == 4 * 2
    # answer: 4 questions x (3 settings + A + B; C asks what B asks) + B on the 8 unanswerable ones
    assert calls("answer", "answers") == 4 * 5 + 8 and calls("answer", "verification rewrites") == 4
    # one batch of answer judges. Rubrics: standard 2, 3_wrong 3, 5_wrong 1, B and C faithfulness 1
    # each; negative rejection per unanswerable. Yes/no: A 2 (no passages), B 4, C 4 (every judge prompt
    # holds the answer, so C's context check is its own call, after the shared prefix)
    assert calls("answer", "answer judges") == (4 * 8 + 8) + 4 * 10
    assert calls("answer", "rubric scores, gated refusals") == 8
    assert ph[("answer", "claim support")]["calls_basis"] == "estimate"
    assert [(e["stage"], e["role"]) for e in plan["load_order"]] == [
        ("synth", "question_writer + judge"),
        ("judge-check", "generator"),  # the answers the controls draw on
        ("judge-check", "judge"),
        ("grade", "judge"),
        ("answer", "generator"),
        ("answer", "judge"),
    ]
    assert plan["total"]["calls"] == sum(p["calls"] for p in plan["phases"])
    assert all(s["would_recompute"] for s in plan["stages"])
    assert not (cfg.processed_dir / "chunks.jsonl").exists()  # planning writes nothing
    assert any(w.startswith("answer/answers") and "models.generator.n_ctx = 300" in w for w in plan["warnings"])


# --------------------------------------------------------------------------- against a run
def _letters(n: int) -> str:
    """A number spelt in letters (a stand-in question naming a number its chunk lacks fails synth's premise check)."""
    return "".join(chr(97 + int(d)) for d in str(n))


class StandIn:
    """A model for wiring tests: deterministic replies, every request it receives counted."""

    name = "stand-in"
    holds_weights = False
    received: list = []

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            StandIn.received.append(r)
            h = int(hashlib.sha256(json.dumps(r.messages).encode()).hexdigest(), 16)
            if r.choices:
                on_done(i, Completion(text=r.choices[h % len(r.choices)], prompt_tokens=1, completion_tokens=1))
            else:
                on_done(
                    i,
                    Completion(
                        text=f"Operators compare case {_letters(h % 10**8)} with a threshold [1]. "
                        f"They plan manoeuvre {_letters(h % 997)} when needed [2].",
                        prompt_tokens=1,
                        completion_tokens=1,
                    ),
                )


class HashEncoder:
    """A dense encoder for wiring tests: hashed bags of words."""

    def __init__(self, *a, **kw):
        self.encoded = 0

    def _vec(self, t: str) -> np.ndarray:
        v = np.zeros(64, np.float32)
        for w in t.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
        return v / max(1e-9, float(np.linalg.norm(v)))

    def encode_passages(self, texts, progress=None):
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, 64), np.float32)

    def encode_queries(self, texts):
        return self.encode_passages(texts)


def test_after_a_run_the_exact_counts_are_the_calls_the_stages_made(cfg, monkeypatch):
    """Every stage runs with a stand-in model (behind the real front end and call cache) and a
    stand-in encoder; the plan of the finished run then reads its files: each stage's exact
    count is the number of requests that reached the model, the upper bounds hold, and the
    claim estimate (from this run's claims) is close."""
    import spacelm.lib.retrieval.dense as retrieval
    from spacelm.lib.io import read_jsonl
    from spacelm.lib.llm.cache import CallCache
    from spacelm.pipeline import run_stages
    from spacelm.runner.base import models_opened_by

    monkeypatch.setattr(retrieval, "Encoder", HashEncoder)
    opener = lambda c, d=None: LLM(c, CallCache(Path(d) / "llm_calls.sqlite") if d else None, StandIn())
    cfg.retrieval.systems = ["bm25", "dense", "bm25+rerank", "dense+rerank"]
    made = {}
    for stage in ("synth", "retrieve", "judge-check", "grade", "answer"):
        before = len(StandIn.received)
        with models_opened_by(opener):
            run_stages(cfg, upto=stage)
        made[stage] = len(StandIn.received) - before
    StandIn.received.clear()
    _no_models(monkeypatch)
    plan = plan_run(cfg)
    assert not any(s["would_recompute"] for s in plan["stages"])  # read from the run's files
    per_stage = {s["stage"]: s for s in plan["stages"]}
    for stage in ("synth", "grade"):
        assert per_stage[stage]["calls_basis"] == "exact" and per_stage[stage]["calls"] == made[stage], stage
    # judge-check: every phase exact but the bias audit's (what the systems retrieve is not known before
    # they run), an upper bound that holds
    jc = [p for p in plan["phases"] if p["stage"] == "judge-check"]
    assert all(p["calls_basis"] == "exact" for p in jc if not p["phase"].startswith("bias audit"))
    assert any(p["phase"].startswith("bias audit") and p["calls_basis"] == "upper bound" for p in jc)
    assert per_stage["judge-check"]["calls"] >= made["judge-check"]
    ph = [p for p in plan["phases"] if p["stage"] == "answer"]
    exact = sum(p["calls"] for p in ph if p["calls_basis"] == "exact")
    answers = list(read_jsonl(cfg.run_dir / "answers.jsonl"))
    gated = sum(1 for a in answers if a["setting"] == "unanswerable" and not a.get("gate", {}).get("passed", True))
    # each claim check is asked both ways (claims.CLAIM_PROMPTS): two calls per check
    checks = 2 * sum(len(r["support"]) for r in read_jsonl(cfg.run_dir / "claims.jsonl"))
    # judge-check answered the Table 2 items already (the generator's answers its controls draw on): the
    # answer stage read those from the call cache and the plan counts them as repeats, on both sides left
    # out. The plan also finds a few of the answer judges' requests among judge-check's control requests (a
    # generator answer taken as a control's bad answer as written) and counts them once, at most one per
    # question
    assert cfg.judge_check.controls and cfg.judge_check.control_outputs
    n_q = len({a["qid"] for a in answers if a["pipeline"] == "table2"})
    assert 0 <= (made["answer"] - gated - checks) - exact <= n_q
    planned = {p["phase"]: p["calls"] for p in ph}
    assert planned.get("rubric scores, gated refusals", 0) >= gated
    assert abs(planned["claim support"] - checks) <= 2
    # without the run's call cache the synth stage cannot be replayed: counted as a new run, an upper bound
    (cfg.cache_dir / "llm_calls.sqlite").rename(cfg.cache_dir / "moved.sqlite")
    again = {s["stage"]: s for s in plan_run(cfg)["stages"]}
    assert again["synth"]["calls_basis"] == "upper bound" and again["synth"]["calls"] >= made["synth"]


def test_cli_plan_prints_json_and_the_table_reads_it(cfg, monkeypatch, capsys, tmp_path):
    import yaml

    from spacelm import cli
    from spacelm.plan import format_plan

    _no_models(monkeypatch)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    assert cli.main(["plan", "--config", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"phases", "stages", "total", "load_order", "tokenizers"} <= set(data)
    text = format_plan(data, wide=True)
    # the default fits 100 columns: the table's main columns, the prose wrapped; --wide gives all
    narrow = format_plan(data)
    assert max(map(len, narrow.splitlines())) <= 100 and "max completion" in narrow and "stage total" in narrow
    assert "after prefix reuse" not in narrow and "after prefix reuse" in text
    for needle in (
        "stage total",
        "engines in load order",
        "prompt tokens",
        "completion tokens (max)",
        "basis",
        "1. synth        question_writer",
        "finding",
        "paper_effect",
        "questions_needed",
        "questions_planned",
        "source_chunks_needed",
    ):
        assert needle in text
    assert {r["finding"] for r in data["power"]} >= {"Reranking raises the share of grade 3 (BM25, top-3)"}
    assert cli.main(["plan", "--config", str(path), "--tokenizer", str(tmp_path / "nothing.json")]) == 2
    assert "--tokenizer" in capsys.readouterr().err


def test_plan_warns_of_k_above_the_corpus(cfg, monkeypatch):
    """Issue 26 #17: `spacelm plan` flags a retrieval.k_values above the chunk count (a run stops
    there after chunking) instead of planning a run whose recall would read 1.0."""
    import dataclasses

    cfg = dataclasses.replace(cfg, retrieval=dataclasses.replace(cfg.retrieval, k_values=[3, 100000]))
    plan = plan_run(cfg)
    assert any("retrieval.k_values" in w and "100000" in w for w in plan["warnings"])


def test_the_plan_runs_each_stage_s_own_compute(cfg, monkeypatch):
    """No stage is written twice: `spacelm plan` holds no per-stage orchestration of its own and
    reaches every model-using stage through the stage's `compute`."""
    import spacelm.plan as plan_module
    from spacelm.stages import STAGES, answer, grade, judge_check, synth

    mirrored = [f"plan_{s.name.replace('-', '_')}" for s in STAGES]
    assert not [n for n in mirrored if hasattr(plan_module, n)]
    ran = []
    for module in (synth, judge_check, grade, answer):
        real = module.compute
        monkeypatch.setattr(
            module, "compute", lambda *a, _real=real, _m=module, **kw: ran.append(_m) or _real(*a, **kw)
        )
    _no_models(monkeypatch)
    plan_run(cfg)
    assert ran == [synth, judge_check, grade, answer]
    ran.clear()  # a Table 1 study plans no answer stage, a Table 2 study no grade stage
    cfg.answer.enabled = False
    plan_run(cfg)
    assert ran == [synth, judge_check, grade]
    ran.clear()
    cfg.answer.enabled, cfg.grading.enabled = True, False
    plan_run(cfg)
    assert ran == [synth, judge_check, answer]


def test_the_plan_counts_the_reranker_training_questions_and_names_its_base_model(cfg, monkeypatch):
    import dataclasses

    _no_models(monkeypatch)
    rr = dataclasses.replace(cfg.retrieval.reranker, kind="cross-encoder", model="trained:ce-plan")
    rr.train = dataclasses.replace(rr.train, questions=3)
    cfg.retrieval.reranker = rr
    plan = plan_run(cfg)
    ph = _phases(plan)[("train-reranker", "reranker training questions")]
    assert ph["calls"] == 3 and ph["model"] == cfg.models.question_writer.model
    assert any(o["stage"] == "train-reranker" and o["model"] == "embedded:minilm" for o in plan["other_models"])
    rr.train = dataclasses.replace(rr.train, questions=3, questions_from="synth_copies")
    assert ("train-reranker", "reranker training questions") not in _phases(plan_run(cfg))  # no model call
    rr.train = dataclasses.replace(rr.train, questions=0, labelled=[])
    assert ("train-reranker", "reranker training questions") not in _phases(plan_run(cfg))


def test_the_plan_counts_the_golden_question_set_in_the_same_grading_turn(cfg, monkeypatch):
    """grading.question_sets [run, golden]: the golden questions' distinct Table 1 pairs join the
    one batch of relevance grades (no validity pairs of their own), and nothing else changes."""
    from spacelm.lib.judge.relevance import table_systems
    from spacelm.plan import stand_in_rankings, typical_order
    from spacelm.runner.data import golden_set

    _no_models(monkeypatch)
    cfg.grading.top_k = [3]
    before = _phases(plan_run(cfg))
    cfg.grading.question_sets = ["run", "golden"]
    after = _phases(plan_run(cfg))
    from spacelm.lib.ingest.chunking import chunk_documents
    from spacelm.stages.ingest import ingest_configured

    docs = ingest_configured(cfg).documents
    chunks = chunk_documents(docs, cfg.chunking.max_tokens, cfg.chunking.tokenizer, cfg.chunking.overlap)
    gold = golden_set(cfg, chunks, [], docs=[])
    assert len(gold) == 6  # every golden sample's passage is found
    ranked = stand_in_rankings(typical_order(chunks), cfg.retrieval.systems, [q["qid"] for q in gold], 3)
    systems = [s for _, _, s in table_systems(cfg.table_design())]
    extra = sum(len({c for s in systems for c in ranked[s][q["qid"]][:3]}) for q in gold)
    key = ("grade", "relevance grades")
    assert after[key]["calls"] - before[key]["calls"] == extra > 0
    assert after[("grade", "validity pairs, passage first")] == before[("grade", "validity pairs, passage first")]


def test_plan_warns_of_each_judge_check_drawn_below_its_own_minimum(cfg):
    """Issue 57 #6: a check the run will draw below its minimum is named before the run (the
    report then says "too few to tell" and gives no figures); one at its minimum is not."""
    import dataclasses
    from types import SimpleNamespace

    from spacelm.plan import below_minimum

    jc = dataclasses.replace(cfg.judge_check, min_pairs=30, min_controls=10, min_control_kinds=3)
    cfg = dataclasses.replace(cfg, judge_check=jc)
    src = lambda name, n: SimpleNamespace(name=name, pairs=[{}] * n)  # noqa: E731
    rows = lambda judge, n, kinds: [{"rubric": judge, "kind": f"k{i % kinds}"} for i in range(n)]  # noqa: E731
    checked = SimpleNamespace(
        sources=[src("trec-dl-2020", 29), src("scifact", 30), {"source": "gone", "path": "x"}],
        control_rows=rows("faithfulness", 9, 3) + rows("relevance", 10, 2) + rows("grounded", 10, 3),
    )
    warned = below_minimum(cfg, checked)
    assert len(warned) == 3, warned
    assert "trec-dl-2020 draws 29 pairs" in warned[0] and "judge_check.min_pairs (30)" in warned[0]
    assert "9 known-answer controls for the faithfulness judge" in warned[1]
    assert "relevance judge's controls hold 2 kinds" in warned[2]
    assert not any("scifact" in w or "grounded" in w for w in warned)


def test_the_plan_reads_documents_another_chunk_size_of_the_same_corpus_ingested(cfg, monkeypatch):
    """A config whose own processed folder is empty, beside one whose ingest is up to date for the
    same corpus and ingest settings, takes its documents from there (no PDF read again); another
    ingest setting does not."""
    import dataclasses

    from spacelm import plan as plan_mod
    from spacelm.pipeline import run_stages

    run_stages(cfg, upto="ingest")
    other = dataclasses.replace(
        cfg, paths=dataclasses.replace(cfg.paths, processed_dir=str(cfg.processed_dir.parent / "other-size"))
    )
    assert plan_mod._same_ingest(other).processed_dir == cfg.processed_dir
    inputs = plan_mod.read_inputs(other, {"ingest": False, "chunk": False}, False)
    assert any(f"documents from {cfg.processed_dir}" in n for n in inputs.notes)
    changed = dataclasses.replace(other, ingest=dataclasses.replace(other.ingest, garbled_threshold=0.3))
    assert plan_mod._same_ingest(changed) is None


def test_plan_warns_of_each_check_the_config_turns_off(cfg):
    """Issue 57 #6: what the report will give as not run is named before the run: the judge check
    off while Table 1 reads the judge, the position-bias check off, a grading.top_k without 3 or 10."""
    import dataclasses

    from spacelm.plan import checks_not_run

    g = dataclasses.replace(cfg.grading, enabled=True, instrument="judge", top_k=[3, 5, 10], method="prompt")
    jc = dataclasses.replace(cfg.judge_check, enabled=True, position_bias=True)
    full = dataclasses.replace(cfg, grading=g, judge_check=jc)
    assert checks_not_run(full) == []
    off = dataclasses.replace(full, judge_check=dataclasses.replace(jc, enabled=False))
    (w,) = checks_not_run(off)
    assert "judge_check.enabled is false" in w and "'no evidence'" in w
    no_pb = dataclasses.replace(full, judge_check=dataclasses.replace(jc, position_bias=False))
    assert ["position_bias is false" in w for w in checks_not_run(no_pb)] == [True]
    three = dataclasses.replace(full, grading=dataclasses.replace(g, top_k=[3]))
    (w,) = checks_not_run(three)
    assert "lacks top-10" in w and "'not tested'" in w
    assert checks_not_run(dataclasses.replace(three, grading=dataclasses.replace(g, top_k=[3], enabled=False))) == []
