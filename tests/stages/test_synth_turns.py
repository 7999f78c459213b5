"""synth's models take turns: one engine at a time, shared by roles whose engine settings match."""

from spacelm.config import Config, LLMConfig
from spacelm.lib.llm.types import Completion
from spacelm.runner.base import ModelTurns


def test_roles_with_the_same_engine_settings_share_one_engine():
    from spacelm.lib.llm import LLM

    loads, released = [], []

    class Backend:
        name = "scripted"

        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                on_done(i, Completion(text=f"max_tokens={r.max_tokens}"))

        def close(self):
            released.append(self)

    def open_llm(cfg, cache_dir=None):
        loads.append(cfg.model)
        return LLM(cfg, None, backend=Backend())

    cfg = Config()
    cfg.models.question_writer = LLMConfig(model="m1", max_tokens=96)
    cfg.models.judge = LLMConfig(model="m1", max_tokens=8)  # same engine, other sampling defaults
    turns = ModelTurns(cfg, "synth", opener=open_llm)
    from spacelm.lib.llm.types import Request

    ask = lambda llm: llm.chat_many([Request(messages=[{"role": "user", "content": "x"}])])[0].text
    assert turns.use("question_writer", ask) == "max_tokens=96"
    assert turns.use("judge", ask) == "max_tokens=8"  # the judge's defaults, on the writer's engine
    assert loads == ["m1"]
    cfg.models.judge = LLMConfig(model="m2", max_tokens=8)  # another model: the first is released first
    turns.use("judge", ask)
    assert loads == ["m1", "m2"] and len(released) == 1
    turns.release()
    assert len(released) == 2
    assert turns.stats["question_writer"]["calls"] == 1 and turns.stats["judge"]["calls"] == 2
