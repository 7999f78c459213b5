"""`retrieval.device`: auto picks CUDA only where torch sees it; cuda without a GPU is refused
before any model loads, naming the key; the models load on the device asked for."""

from __future__ import annotations

import pytest

from spacelm.lib.retrieval import systems
from spacelm.lib.retrieval.systems import resolve_device


def test_auto_picks_cuda_only_where_torch_sees_a_gpu():
    assert resolve_device("auto", has_cuda=True) == "cuda"
    assert resolve_device("auto", has_cuda=False) == "cpu"
    assert resolve_device("cpu", has_cuda=True) == "cpu"
    assert resolve_device("cuda", has_cuda=False) == "cuda"  # taken as given: the config check refuses it
    with pytest.raises(ValueError, match="use one of auto, cpu, cuda"):
        resolve_device("gpu")


def test_auto_on_this_machine_follows_torch(monkeypatch):
    monkeypatch.setattr(systems, "cuda_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(systems, "cuda_available", lambda: True)
    assert resolve_device("auto") == "cuda"


def test_cuda_without_a_gpu_is_refused_naming_the_key(tiny_config, monkeypatch):
    from spacelm.config import ConfigError, from_dict

    monkeypatch.setattr(systems, "cuda_available", lambda: False)
    with pytest.raises(ConfigError, match=r"key 'retrieval.device' is 'cuda' but torch sees no GPU"):
        from_dict({"retrieval": {"device": "cuda"}}, source="x.yaml")
    monkeypatch.setattr(systems, "cuda_available", lambda: True)
    cfg = from_dict({"retrieval": {"device": "cuda"}}, source="x.yaml")
    assert cfg.retrieval.setup().device == "cuda"


def test_the_setup_carries_the_resolved_device(monkeypatch):
    from spacelm.config import from_dict

    monkeypatch.setattr(systems, "cuda_available", lambda: False)
    assert from_dict({}, source="x.yaml").retrieval.setup().device == "cpu"


def test_a_sentence_transformers_cross_encoder_loads_on_the_device_asked(tmp_path):
    """`kind: cross-encoder` with a sentence-transformers CrossEncoder folder (what
    BAAI/bge-reranker-v2-m3 is at paper scale): a small local checkpoint made from the shipped MiniLM."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import CrossEncoder

    from spacelm.lib.llm.models import resolve_model_path
    from spacelm.lib.retrieval.rerankers import CrossEncoderReranker

    folder = tmp_path / "tiny-ce"
    CrossEncoder(resolve_model_path("embedded:minilm"), num_labels=1, device="cpu").save(str(folder))
    rr = CrossEncoderReranker(str(folder), {"a": "orbit decay", "b": "ground station"}, device="cpu")
    assert str(rr.model.model.device) == "cpu"
    scores = rr.rescore(["what decays?"], [["a", "b"]])
    assert len(scores[0]) == 2 and all(isinstance(x, float) for x in scores[0])
    with pytest.raises(ValueError, match="int8 runs on the CPU only"):
        CrossEncoderReranker(str(folder), {}, precision="int8", device="cuda")
