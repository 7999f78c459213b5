"""Table 1 per chunk size only where the judge reads the whole chunk and enough questions are
graded: the gate on hand-built chunks, with a word-counting stand-in for the judge's tokenizer."""

from __future__ import annotations

import pytest

from spacelm.lib.ingest.chunking import Chunk
from spacelm.lib.report.chunk_budget import gate_lines
from spacelm.stages import chunk_gate, chunk_sizes


class Words:
    """A token counter that counts words (the interface of lib.llm.dry_run.TokenCounter)."""

    def text(self, t: str) -> int:
        return len(t.split())

    def messages(self, ms: list) -> tuple[int, int]:
        return sum(self.text(m["content"]) for m in ms) + 4 * len(ms), 0


def _chunks(words: int) -> list:
    return [Chunk("d:0", "d", " ".join(["orbit"] * words), 1, 1, 0, 10, words)]


def _prompt_judge(cfg, n_ctx: int):
    cfg.grading.method, cfg.grading.prompt, cfg.grading.diagnostic_features = "prompt", "relevance", []
    cfg.models.judge.backend, cfg.models.judge.n_ctx = "llamacpp", n_ctx
    cfg.chunk_study.grade_questions = 10
    return cfg


def _fixed(cfg) -> int:
    return max(Words().messages(m)[0] + n for _, m, n in chunk_gate.judge_prompts(cfg))


def test_a_size_whose_longest_chunk_does_not_fit_the_judges_context_is_not_graded(tiny_config):
    cfg = _prompt_judge(tiny_config, 0)
    cfg.models.judge.n_ctx = _fixed(cfg) + 5 + 500  # the question below takes 5
    gate = chunk_gate.table1_gate(cfg, {256: _chunks(500), 2000: _chunks(501)}, ["what is the miss distance?"], Words())
    assert gate[256] == {"graded": True, "reason": "the judge reads every chunk whole"}
    assert not gate[2000]["graded"] and "501 tokens" in gate[2000]["reason"]
    assert "models.judge.n_ctx" in gate[2000]["reason"]


def test_too_few_questions_for_the_plan_leave_every_size_ungraded(tiny_config):
    cfg = _prompt_judge(tiny_config, 100_000)
    cfg.chunk_study.min_grade_questions = 11
    gate = chunk_gate.table1_gate(cfg, {256: _chunks(10), 512: _chunks(10)}, [], Words())
    assert not any(g["graded"] for g in gate.values())
    assert "below the 11 questions the analysis needs" in gate[256]["reason"]
    cfg.chunk_study.min_grade_questions = 10
    assert chunk_gate.table1_gate(cfg, {256: _chunks(10)}, [], Words())[256]["graded"]
    # without the key, the analysis plan's chunk-size findings set the need
    from spacelm.config.schema import AnalysisPlanConfig, PlanFindingConfig

    cfg.chunk_study.min_grade_questions = None
    cfg.analysis_plan = AnalysisPlanConfig(
        findings=[PlanFindingConfig("chunks_512_rerank_raises_grade_3", n_needed=12)]
    )
    assert chunk_gate.min_questions(cfg) == 12
    assert not chunk_gate.table1_gate(cfg, {256: _chunks(10)}, [], Words())[256]["graded"]


def test_a_calibrated_grade_with_a_cosine_feature_is_gated_by_its_encoders_window(tiny_config):
    cfg = _prompt_judge(tiny_config, 100_000)
    cfg.grading.method, cfg.grading.calibration = "calibrated", "qwen2.5-coder-1.5b"  # reads the MiniLM cosine
    gate = chunk_gate.table1_gate(cfg, {128: _chunks(100), 512: _chunks(400)}, [], Words())
    assert gate[128]["graded"] and not gate[512]["graded"]
    assert "embedded:minilm" in gate[512]["reason"] and "256 word pieces" in gate[512]["reason"]


def test_the_stage_grades_only_the_sizes_the_gate_lets_through_and_records_why(tiny_config, monkeypatch):
    cfg = _prompt_judge(tiny_config, 0)
    cfg.models.judge.n_ctx = _fixed(cfg) + 200
    cfg.chunk_study.sizes = [128, 2000]
    questions = [{"qid": "q", "question": "why?"}]
    study = {128: _chunks(50), 2000: _chunks(1900)}
    monkeypatch.setattr(chunk_gate, "judge_counter", lambda cfg: Words())
    monkeypatch.setattr(
        chunk_sizes,
        "retrieval_at_size",
        lambda cfg, docs, sets, size: (
            [chunk_sizes.SizeRetrieval(size, "run", questions, study[size], None)],
            [],
            {"chunk_size": size},
        ),
    )
    monkeypatch.setattr(chunk_sizes, "size_differences", lambda *a: None)
    graded = []
    monkeypatch.setattr(chunk_sizes, "grade_sizes", lambda cfg, r, sets, models: graded.extend(x.size for x in r) or [])
    result = chunk_sizes.compute(cfg, [], {"run": questions}, None)
    assert graded == [128]
    assert result.gate[128]["graded"] and not result.gate[2000]["graded"]
    lines = gate_lines({str(k): v for k, v in result.gate.items()})
    assert len(lines) == 1 and lines[0].startswith("Table 1 at 2000 tokens was not graded: the longest chunk is 1,900")


@pytest.mark.parametrize("backend, key", [("llamacpp", "n_ctx"), ("vllm", "max_model_len"), ("openai", "")])
def test_the_context_limit_is_read_from_the_backends_own_key(tiny_config, backend, key):
    llm = tiny_config.models.judge
    llm.backend, llm.n_ctx, llm.max_model_len = backend, 4096, 8192
    assert chunk_gate.context_limit(llm)[1] == key
