"""One model in memory at a time: the model stages on `backend: vllm` with a stand-in for the
`vllm` package whose engine refuses to start while another engine is alive (alive from
construction until its engine-core client is shut down, as in vLLM 0.10-0.32). Checks our
phases and release, not a model; the real engine is exercised in tests/vllm_tier/."""

from __future__ import annotations

import json
import sys
import types
import zlib
from types import SimpleNamespace

import pytest


class Engines:
    """Every stand-in engine's life: (event, model) in order, and which are alive now."""

    def __init__(self):
        self.alive: list = []
        self.events: list[tuple[str, str]] = []
        self.most_alive = 0


def stand_in_vllm(engines: Engines) -> dict:
    """Modules standing in for `vllm`, `vllm.sampling_params` and `vllm.platforms`."""

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class StructuredOutputsParams:
        def __init__(self, choice=None):
            self.choice = choice

    class EngineCoreClient:
        def __init__(self, engine):
            self.engine = engine

        def shutdown(self):
            engines.alive.remove(self.engine)
            engines.events.append(("shutdown", self.engine.model))

    class LLM:
        def __init__(self, **kw):
            if engines.alive:
                raise AssertionError(
                    f"engine for {kw['model']} starts while {[e.model for e in engines.alive]} still holds memory"
                )
            self.model, self.kwargs = kw["model"], kw
            engines.alive.append(self)
            engines.most_alive = max(engines.most_alive, len(engines.alive))
            engines.events.append(("load", self.model))
            self.llm_engine = SimpleNamespace(engine_core=EngineCoreClient(self))

        def get_tokenizer(self):
            return SimpleNamespace(apply_chat_template=lambda m, tokenize, add_generation_prompt: json.dumps(m))

        def generate(self, prompts, params, use_tqdm=False):
            assert self in engines.alive, "generate on an engine that was shut down"
            outs = []
            for p, sp in zip(prompts, params):
                h = zlib.crc32(p.encode())
                so = getattr(sp, "structured_outputs", None)
                text = (
                    so.choice[h % len(so.choice)]
                    if so
                    else f"Which probability threshold do operators compare before manoeuvre number {h}?"
                )
                outs.append(
                    SimpleNamespace(
                        prompt_token_ids=[1, 2, 3],
                        outputs=[SimpleNamespace(text=text, token_ids=[7], finish_reason="stop", logprobs=None)],
                    )
                )
            return outs

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = LLM, SamplingParams
    sp = types.ModuleType("vllm.sampling_params")
    sp.StructuredOutputsParams = StructuredOutputsParams
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = SimpleNamespace(is_cpu=lambda: True)
    vllm.sampling_params, vllm.platforms = sp, platforms
    return {"vllm": vllm, "vllm.sampling_params": sp, "vllm.platforms": platforms}


def stand_in_sentence_transformers():
    """A `sentence_transformers` whose bi-encoder embeds hashed words (the dense retriever is
    not what these tests are about, and loading MiniLM would triple their time)."""
    import numpy as np

    class SentenceTransformer:
        max_seq_length = 256

        def __init__(self, path, device=None):
            pass

        def encode(self, texts, **kw):
            out = np.zeros((len(texts), 64), dtype=np.float32)
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, zlib.crc32(w.encode()) % 64] += 1.0
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    st = types.ModuleType("sentence_transformers")
    st.SentenceTransformer = SentenceTransformer
    return st


@pytest.fixture
def vllm_run(tiny_config, tiny_corpus, monkeypatch):
    """The tiny config with every model on `backend: vllm` (three different models), retrieval
    by BM25 (reranked) and no evidence gate; the engines and the bi-encoder are stand-ins."""
    engines = Engines()
    for name, mod in stand_in_vllm(engines).items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setitem(sys.modules, "sentence_transformers", stand_in_sentence_transformers())
    rows = [
        {
            "id": f"{t}-{i}",
            "task": t,
            "question": f"What does note {i} say about collision probability thresholds?",
            "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre.",
        }
        for t in ("direct_qa", "summarization")
        for i in range(2)
    ]
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tiny_config
    from spacelm.config import LLMConfig

    cfg.models.question_writer = LLMConfig(backend="vllm", model="test/writer", max_tokens=24)
    cfg.models.generator = LLMConfig(backend="vllm", model="test/generator", max_tokens=24)
    cfg.models.judge = LLMConfig(backend="vllm", model="test/judge", max_tokens=8)
    cfg.retrieval.systems, cfg.retrieval.pool = ["bm25", "bm25+rerank"], 10
    cfg.retrieval.reranker.model = "embedded:minilm"
    cfg.synth.tasks, cfg.synth.n_fewshot, cfg.synth.max_chunks = ["direct_qa", "summarization"], 2, 2
    cfg.synth.filter_retriever, cfg.synth.filter_top_n = "bm25", 5
    cfg.grading.retrievers, cfg.grading.top_k, cfg.grading.max_questions = ["bm25"], [1, 3], 2
    cfg.grading.n_bootstrap = cfg.answer.n_bootstrap = 50
    cfg.answer.retriever, cfg.answer.max_questions, cfg.answer.retrieve_k = "bm25", 1, 2
    cfg.answer.n_wrong_values, cfg.answer.negative_n_wrong, cfg.answer.gate.enabled = [0, 1], 2, False
    cfg.judge_check.enabled = False
    return cfg, engines


def _phases(events: list[tuple[str, str]]) -> list[str]:
    """The models loaded, in order; each load must be followed by its own shutdown."""
    loads = []
    for (ev, model), nxt in zip(events[::2], events[1::2]):
        assert ev == "load" and nxt == ("shutdown", model), f"{model}: {ev} then {nxt}"
        loads.append(model)
    assert len(events) % 2 == 0, f"an engine was never shut down: {events[-1]}"
    return loads


def test_model_stages_hold_one_vllm_engine_at_a_time(vllm_run, monkeypatch):
    from spacelm.lib.llm.vllm import VLLMBackend
    from spacelm.stages import answer, chunk, grade, ingest, retrieve, synth

    cfg, engines = vllm_run
    for stage in (ingest, chunk, synth, retrieve):
        stage.run(cfg)
    assert [m for ev, m in engines.events if ev == "load"][0] == "test/writer"
    start = len(engines.events)
    grade.run(cfg)
    graded = _phases(engines.events[start:])
    start = len(engines.events)
    res = answer.run(cfg)
    answered = _phases(engines.events[start:])
    assert engines.most_alive == 1 and not engines.alive
    assert graded == ["test/judge"]
    # answers and rewrites first, then the reference answers the pipelines need, then every judge call
    assert answered == ["test/generator", "test/writer", "test/judge"]
    assert res["llm_generator"]["calls"] > 0 and res["llm_judge"]["calls"] > 0
    n = len(engines.events)  # a warm re-run answers from the call cache: no engine starts
    warm = answer.run(cfg, force=True)
    assert len(engines.events) == n and warm["llm_generator"]["calls"] == warm["llm_judge"]["calls"] == 0
    # the check bites: without the shutdown in release the next engine (the writer's) starts beside the generator's
    monkeypatch.setattr(VLLMBackend, "close", lambda self: None)
    cfg.paths.cache_dir += "-cold"
    with pytest.raises(AssertionError, match=r"test/writer starts while \['test/generator'\] still holds memory"):
        answer.run(cfg, force=True)
