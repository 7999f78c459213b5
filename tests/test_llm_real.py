"""Real models: llama.cpp in process, and an OpenAI-compatible llama.cpp server on 127.0.0.1.
Uses the embedded 0.5B GGUF (fast) so these run in CI in well under a minute."""
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from spacelm.cache import CallCache
from spacelm.config import LLMConfig
from spacelm.llm import LLM, Request
from spacelm.models import model_path

pytest.importorskip("llama_cpp")

SMALL = "embedded:qwen2.5-coder-0.5b"
GRADE = [{"role": "system", "content": "You rate relevance. Reply with one digit from 0 to 3."},
         {"role": "user", "content": "Question: What threshold triggers a collision avoidance manoeuvre?\n"
                                     "Passage: Operators usually manoeuvre when the probability of collision exceeds 1e-4.\n"
                                     "Rate 0 (irrelevant) to 3 (relevant). Digit only."}]


@pytest.fixture(scope="module")
def small_llm(tmp_path_factory):
    cache = CallCache(tmp_path_factory.mktemp("cache") / "c.sqlite")
    return LLM(LLMConfig(model=SMALL, n_ctx=1024, max_tokens=24), cache)


def test_free_text_generation(small_llm):
    c = small_llm.chat([{"role": "user", "content": "Name the planet we live on, one word."}])
    assert c.text.strip() and c.prompt_tokens > 5 and c.completion_tokens > 0 and c.latency_s > 0


def test_choice_probabilities_agree_with_grammar_decoding(small_llm):
    fast = small_llm.chat(GRADE, choices=["0", "1", "2", "3"])
    assert fast.text in {"0", "1", "2", "3"} and abs(sum(fast.choice_probs.values()) - 1) < 1e-6
    assert fast.text == max(fast.choice_probs, key=fast.choice_probs.get)
    # the grammar path (forced by multi-character options) must pick the same option
    g = small_llm.chat(GRADE, choices=["0", "1", "2", "3", "none"], max_tokens=4)
    assert g.text in {"0", "1", "2", "3", "none"}


def test_prefix_is_reused_between_prompts(small_llm):
    b = small_llm.backend
    before = b.prefix_reused_tokens
    other = [GRADE[0], {"role": "user", "content": GRADE[1]["content"].replace("1e-4", "one in ten thousand")}]
    small_llm.chat(GRADE, choices=["0", "1", "2", "3"], seed=1)
    small_llm.chat(other, choices=["0", "1", "2", "3"], seed=1)
    assert b.prefix_reused_tokens - before > 20


def test_warm_rerun_is_byte_identical_without_calls(small_llm, tmp_path):
    reqs = [Request(messages=[{"role": "user", "content": f"Say the number {i}."}], max_tokens=6) for i in range(3)]
    first = small_llm.chat_many(reqs)
    calls = small_llm.stats.calls
    second = small_llm.chat_many(reqs)
    assert small_llm.stats.calls == calls
    assert [c.to_dict() for c in first] == [c.to_dict() for c in second]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path("qwen2.5-coder-0.5b")),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024", "--n_threads", str(os.cpu_count() or 2)],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama.cpp server exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/models", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail(f"llama.cpp server did not start within 120 s: {log_path.read_text()[-2000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_openai_backend_against_real_server(server, tmp_path):
    cfg = LLMConfig(backend="openai", model="qwen-small", base_url=server, max_tokens=16, max_concurrency=2)
    llm = LLM(cfg, CallCache(tmp_path / "c.sqlite"))
    res = llm.chat_many([Request(messages=GRADE, choices=["0", "1", "2", "3"]),
                         Request(messages=[{"role": "user", "content": "Reply with the word yes."}])])
    assert res[0].text.strip() in {"0", "1", "2", "3"}  # the server honours the grammar
    assert res[1].text.strip() and res[1].prompt_tokens > 0
    again = LLM(cfg, CallCache(tmp_path / "c.sqlite"))
    again.chat_many([Request(messages=GRADE, choices=["0", "1", "2", "3"])])
    assert again.stats.calls == 0 and again.stats.cache_hits == 1


def test_openai_backend_gives_up_on_dead_server(tmp_path):
    from spacelm.llm import BackendUnavailable

    cfg = LLMConfig(backend="openai", model="m", base_url=f"http://127.0.0.1:{_free_port()}/v1", max_retries=1,
                    timeout_s=2)
    with pytest.raises(BackendUnavailable, match="gave up after 2 attempts"):
        LLM(cfg).chat([{"role": "user", "content": "x"}])


def test_table1_regenerates_on_an_openai_compatible_server(server, tiny_config, tiny_corpus):
    """ingest → chunk → retrieve → grade with the judge behind a real local server."""
    import json

    import pandas as pd

    from spacelm import chunk, grading, ingest, retrieval

    golden = [{"id": f"g{i}", "task": "direct_qa", "question": q, "passage": p} for i, (q, p) in enumerate([
        ("What do operators compare with a threshold?", "Operators compare the probability of collision with a threshold"),
        ("What is reviewed after re-planning?", "The operators then reviewed the orbit determination."),
    ])]
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
    tiny_config.retrieval.systems = ["bm25", "bm25+rerank"]
    tiny_config.retrieval.reranker.model = "embedded:minilm"
    tiny_config.retrieval.pool = 10
    tiny_config.grading.retrievers = ["bm25"]
    tiny_config.grading.top_k = [1, 3]
    tiny_config.grading.n_bootstrap = 50
    tiny_config.models.judge = LLMConfig(backend="openai", model="qwen-small", base_url=server, max_tokens=4,
                                         max_concurrency=2)
    for stage in (ingest, chunk, retrieval):  # no synth stage: the golden samples are the questions
        stage.run(tiny_config)
    res = grading.run(tiny_config)
    assert res["pairs_graded"] > 0 and res["llm"]["calls"] > 0
    t1 = pd.read_csv(tiny_config.run_dir / "table1_relevance.csv")
    assert set(t1.stage) == {"retrieved", "reranked"} and t1.groupby(["stage", "top_k"])["percent"].sum().round(1).eq(100).all()
    assert json.loads((tiny_config.run_dir / "judge_validity.json").read_text())["n_pairs"] == 4
