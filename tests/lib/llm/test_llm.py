"""The LLM layer: parsing, the cache, request building for vLLM and OpenAI-compatible servers.

Backends are swapped for a scripted stand-in only where the test checks our own logic
(caching, retries, parsing); real models are exercised in test_llm_real.py."""

import json
from types import SimpleNamespace

import httpx
import pytest

from spacelm.config import LLMConfig
from spacelm.lib.llm import LLM, Completion, Request
from spacelm.lib.llm.cache import CallCache
from spacelm.lib.llm.openai import OpenAIBackend
from spacelm.lib.llm.scores import judgement_from, parse_score
from spacelm.lib.llm.types import _choice_probs_from_logprobs
from spacelm.lib.llm.vllm import VLLMBackend


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<result>4</result>", 4),
        ("<result>[5]</result>", 5),
        ("Score: 3", 3),
        ("3", 3),
        ("I would give it a 2.", 2),
        ("between 1 and 5", None),
        ("no idea", None),
        ("<result>9</result>", None),
        ("", None),
        ("Score: 4. The answer is 4", 4),
    ],
)
def test_parse_score(text, expected):
    assert parse_score(text, 1, 5) == expected


def test_judgement_keeps_raw_and_never_defaults():
    j = judgement_from(Completion(text="unclear"), 0, 3)
    assert j.value is None and j.raw == "unclear"
    j = judgement_from(Completion(text="2", choice_probs={"0": 0.1, "1": 0.1, "2": 0.6, "3": 0.2}), 0, 3)
    assert j.value == 2 and abs(j.expected - 1.9) < 1e-9


class Scripted:
    """Stand-in backend that records calls (checks our caching logic, not a model)."""

    name = "scripted"

    def __init__(self):
        self.calls = 0

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            self.calls += 1
            on_done(
                i,
                Completion(
                    text=f"echo {r.messages[-1]['content']} t={r.temperature}",
                    prompt_tokens=3,
                    completion_tokens=2,
                    latency_s=0.01,
                ),
            )


def test_cache_warm_rerun_makes_no_calls(tmp_path):
    cfg = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9")
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(5)]
    b1 = Scripted()
    first = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=b1).chat_many(reqs)
    b2 = Scripted()
    llm2 = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=b2)
    second = llm2.chat_many(reqs)
    assert b1.calls == 5 and b2.calls == 0 and llm2.stats.cache_hits == 5
    assert [c.to_dict() for c in first] == [c.to_dict() for c in second]
    # a different sampling parameter is a different call
    llm2.chat_many([Request(messages=reqs[0].messages, temperature=0.7)])
    assert b2.calls == 1


def test_interrupted_run_resumes(tmp_path):
    cfg = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9")

    class Dies(Scripted):
        def complete_many(self, reqs, on_done):
            for i, _r in enumerate(reqs):
                if self.calls == 2:
                    raise KeyboardInterrupt
                self.calls += 1
                on_done(i, Completion(text="ok"))

    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(4)]
    with pytest.raises(KeyboardInterrupt):
        LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=Dies()).chat_many(reqs)
    b = Scripted()
    LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=b).chat_many(reqs)
    assert b.calls == 2  # only the two that had not finished


def test_cache_is_shared_between_processes(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; from spacelm.lib.llm.cache import CallCache; c = CallCache(sys.argv[1]);"
        "[c.put(f'{sys.argv[2]}-{i}', {'v': i}) for i in range(200)]"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c.sqlite"), tag]) for tag in "abcd"]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert CallCache(tmp_path / "c.sqlite").summary()["entries"] == 800


def test_openai_body_and_api_key_never_in_identity(monkeypatch):
    monkeypatch.setenv("SPACELM_TEST_KEY", "sk-secret")
    cfg = LLMConfig(backend="openai", model="served", base_url="http://127.0.0.1:9/v1", api_key_env="SPACELM_TEST_KEY")
    b = OpenAIBackend(cfg)
    assert b.client.headers["authorization"] == "Bearer sk-secret"
    body = b.build_body(
        Request(messages=[{"role": "user", "content": "x"}], max_tokens=1, choices=["0", "1"]).resolved(cfg)
    )
    assert body["guided_choice"] == ["0", "1"] and 'root ::= "0" | "1"' == body["grammar"] and body["logprobs"]
    ident = LLM(cfg, backend=b).identity
    assert "sk-secret" not in json.dumps(ident)


def test_openai_retries_on_429_and_5xx_then_succeeds():
    seen = []

    def handler(request):
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(429, headers={"retry-after": "0"}, text="slow down")
        if len(seen) == 2:
            return httpx.Response(503, text="busy")
        return httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 1},
            },
        )

    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1", max_retries=3)
    b = OpenAIBackend(cfg, transport=httpx.MockTransport(handler))
    b_sleep = []
    import spacelm.lib.llm.openai as L

    orig = L.time.sleep
    L.time.sleep = lambda s: b_sleep.append(s)
    try:
        c = b.complete(Request(messages=[{"role": "user", "content": "x"}]).resolved(cfg))
    finally:
        L.time.sleep = orig
    assert c.text == "fine" and c.prompt_tokens == 7 and len(seen) == 3 and len(b_sleep) == 2


def test_openai_client_errors_are_not_retried():
    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1")
    b = OpenAIBackend(cfg, transport=httpx.MockTransport(lambda r: httpx.Response(400, text="bad request")))
    with pytest.raises(RuntimeError, match="HTTP 400"):
        b.complete(Request(messages=[{"role": "user", "content": "x"}]).resolved(cfg))


def test_choice_probs_from_openai_logprobs():
    lp = {
        "content": [
            {
                "token": "2",
                "logprob": -0.2,
                "top_logprobs": [
                    {"token": "2", "logprob": -0.2},
                    {"token": "3", "logprob": -2.0},
                    {"token": "x", "logprob": -3.0},
                ],
            }
        ]
    }
    p = _choice_probs_from_logprobs(lp, ["0", "1", "2", "3"])
    assert p["2"] > p["3"] > 0 and p["0"] == 0 and abs(sum(p.values()) - 1) < 1e-9


def test_vllm_engine_and_sampling_arguments():
    cfg = LLMConfig(
        backend="vllm",
        model="meta-llama/Llama-3.3-70B-Instruct",
        tensor_parallel_size=4,
        pipeline_parallel_size=2,
        distributed_executor_backend="ray",
        quantization="fp8",
        max_model_len=16384,
    )
    kw = VLLMBackend.engine_kwargs(cfg)
    assert kw["tensor_parallel_size"] == 4 and kw["pipeline_parallel_size"] == 2
    assert kw["distributed_executor_backend"] == "ray" and kw["enable_prefix_caching"] and kw["quantization"] == "fp8"
    s = VLLMBackend.sampling_kwargs(Request(messages=[], choices=["0", "1", "2", "3"]).resolved(cfg))
    assert s["logprobs"] == 20 and s["temperature"] == 0.0


def test_vllm_output_parsing():
    lp = lambda tok, v: SimpleNamespace(decoded_token=tok, logprob=v)
    out = SimpleNamespace(
        prompt_token_ids=[1, 2, 3],
        outputs=[
            SimpleNamespace(
                text="3", token_ids=[9], finish_reason="stop", logprobs=[{9: lp("3", -0.1), 8: lp("2", -2.5)}]
            )
        ],
    )
    c = VLLMBackend.parse_output(out, Request(messages=[], choices=["0", "1", "2", "3"]), 0.5)
    assert c.text == "3" and c.prompt_tokens == 3 and c.completion_tokens == 1
    assert c.choice_probs["3"] > c.choice_probs["2"] > 0


def test_vllm_missing_gives_clear_error():
    import importlib.util

    if importlib.util.find_spec("vllm"):
        pytest.skip("vllm is installed")
    from spacelm.lib.llm import BackendUnavailable

    with pytest.raises(BackendUnavailable, match=r"pip install -e \"\.\[vllm\]\""):
        VLLMBackend(LLMConfig(backend="vllm", model="x"))


def _ok(text: str) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        },
    )


def test_openai_error_on_one_request_keeps_every_finished_call(tmp_path):
    """An HTTP 400 on request 0 used to throw away the 7 calls that had completed: now each
    completion is cached as it arrives, and the error says how many were kept."""
    import threading

    gate = threading.Event()

    def handler(request):
        content = json.loads(request.content)["messages"][0]["content"]
        if content == "q0":
            gate.wait(5)  # fail only after the others have finished
            return httpx.Response(400, text="bad request")
        reply = _ok("a" + content)
        if content == "q7":
            gate.set()
        return reply

    from spacelm.lib.llm import BackendError

    # two workers: q0 holds one until the other has answered q1..q7
    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1", max_concurrency=2)
    llm = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=OpenAIBackend(cfg, transport=httpx.MockTransport(handler)))
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(8)]
    with pytest.raises(BackendError, match=r"HTTP 400.*7 of 8 calls finished"):
        llm.chat_many(reqs)
    assert llm.stats.calls == 7
    again = LLM(
        cfg,
        CallCache(tmp_path / "c.sqlite"),
        backend=OpenAIBackend(cfg, transport=httpx.MockTransport(lambda r: _ok("late"))),
    )
    out = again.chat_many(reqs)
    assert again.stats.cache_hits == 7 and again.stats.calls == 1
    assert [c.text for c in out] == ["late"] + [f"aq{i}" for i in range(1, 8)]


def test_openai_dead_server_fails_fast_with_a_circuit_breaker(monkeypatch):
    """With the server gone and 40 requests queued, the old code made 200 attempts over ~85 s;
    now it stops after `breaker_failures` consecutive connection failures."""
    import spacelm.lib.llm.openai as L
    from spacelm.lib.llm import BackendUnavailable

    attempts = []

    def refuse(request):
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    monkeypatch.setattr(L.time, "sleep", lambda s: None)
    cfg = LLMConfig(
        backend="openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        max_retries=4,
        max_concurrency=4,
        breaker_failures=3,
    )
    llm = LLM(cfg, backend=OpenAIBackend(cfg, transport=httpx.MockTransport(refuse)))
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(40)]
    with pytest.raises(BackendUnavailable, match=r"http://127.0.0.1:9/v1 is unreachable.*0 of 40 calls finished"):
        llm.chat_many(reqs)
    # at most one attempt per worker past the limit (those already sending when it opened)
    assert len(attempts) <= cfg.breaker_failures + cfg.max_concurrency


def test_openai_breaker_resets_when_the_server_answers(monkeypatch):
    import spacelm.lib.llm.openai as L

    n = []

    def flaky(request):
        n.append(1)
        if len(n) % 2:  # every other attempt fails to connect
            raise httpx.ConnectError("blip", request=request)
        return _ok("ok")

    monkeypatch.setattr(L.time, "sleep", lambda s: None)
    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1", max_concurrency=1, breaker_failures=2)
    llm = LLM(cfg, backend=OpenAIBackend(cfg, transport=httpx.MockTransport(flaky)))
    out = llm.chat_many([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(6)])
    assert [c.text for c in out] == ["ok"] * 6


def test_vllm_hands_back_each_batch_before_the_next(tmp_path):
    """A failure in the second batch keeps the first batch's completions in the cache."""

    class Engine:  # stand-in for vllm.LLM: checks our batching, not a model
        def __init__(self):
            self.batches = []

        def get_tokenizer(self):
            return SimpleNamespace(apply_chat_template=lambda m, tokenize, add_generation_prompt: m[0]["content"])

        def generate(self, prompts, params, use_tqdm):
            self.batches.append(list(prompts))
            if len(self.batches) == 2:
                raise RuntimeError("engine died")
            return [
                SimpleNamespace(
                    prompt_token_ids=[1],
                    outputs=[SimpleNamespace(text="A:" + p, token_ids=[2], finish_reason="stop", logprobs=None)],
                )
                for p in prompts
            ]

    cfg = LLMConfig(backend="vllm", model="x", submit_batch=3)
    b = VLLMBackend.__new__(VLLMBackend)
    b.cfg, b.engine = cfg, Engine()
    b._sampling_params = lambda r: None
    llm = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=b)
    llm._identity = {"name": "x"}
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(7)]
    with pytest.raises(RuntimeError, match="engine died"):
        llm.chat_many(reqs)
    assert b.engine.batches == [["q0", "q1", "q2"], ["q3", "q4", "q5"]] and llm.stats.calls == 3
    b.engine = Engine()
    b.engine.batches = [None, None]  # past the failing batch
    out = llm.chat_many(reqs)
    assert llm.stats.cache_hits == 3 and [c.text for c in out] == [f"A:q{i}" for i in range(7)]


def test_a_request_repeated_in_one_batch_is_sent_once(tmp_path):
    """Pipeline C's first draft is the same request as pipeline B's answer: computed once, so a
    cold run and its warm re-run give the same answers (the cache keeps one completion per key)."""
    cfg = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9")
    b = Scripted()
    llm = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=b)
    reqs = [Request(messages=[{"role": "user", "content": q}]) for q in ("a", "b", "a", "a")]
    out = llm.chat_many(reqs)
    assert b.calls == 2 and llm.stats.calls == 2
    assert out[0] is out[2] is out[3] and out[1].text != out[0].text
    warm = LLM(cfg, CallCache(tmp_path / "c.sqlite"), backend=Scripted()).chat_many(reqs)
    assert [c.to_dict() for c in warm] == [c.to_dict() for c in out]


def test_requests_go_in_prompt_order_and_come_back_in_call_order():
    from spacelm.config import LLMConfig
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.types import Completion, Request

    sent = []

    class Echo:
        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                sent.append(r.messages[-1]["content"])
                on_done(i, Completion(text=r.messages[-1]["content"]))

    msgs = lambda q, p: [{"role": "system", "content": "grade"}, {"role": "user", "content": f"Q: {q} P: {p}"}]
    reqs = [Request(messages=msgs(q, p)) for q, p in [("b", 1), ("a", 1), ("b", 2), ("a", 2)]]
    out = LLM(LLMConfig(), backend=Echo()).chat_many(reqs)
    assert sent == ["Q: a P: 1", "Q: a P: 2", "Q: b P: 1", "Q: b P: 2"]  # one question's prompts together
    assert [c.text for c in out] == ["Q: b P: 1", "Q: a P: 1", "Q: b P: 2", "Q: a P: 2"]


def test_the_call_cache_key_of_a_request_is_stable():
    """The key under which a call is cached, for one fixed request: the committed runs
    regenerate from the cache only while this stays the same (a changed key is a miss for every
    call made before). The value was computed before LLMConfig moved from config to lib."""
    from spacelm.lib.llm import LLM, LLMConfig, Request

    llm = LLM(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9", max_tokens=20))
    req = Request(messages=[{"role": "user", "content": "hi"}], choices=["0", "1"]).resolved(llm.cfg)
    assert llm._key(req) == "be9eaa23a9274c58a5e0ca98d807709090f46e726fb257ffcbbb627f3d62bc4a"
