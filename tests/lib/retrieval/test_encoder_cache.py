"""The bi-encoder's embedding cache is written as encoding goes, so an interrupted run keeps
what it encoded (a stand-in model: this tests our caching, not sentence-transformers)."""

from __future__ import annotations

import numpy as np
import pytest

from spacelm.lib.llm.cache import EmbeddingCache
from spacelm.lib.retrieval import dense


class StandIn:
    """Encodes a text as [its length, 1], and fails once `fail_after` texts have been encoded."""

    def __init__(self, fail_after: int | None = None):
        self.seen: list[str] = []
        self.fail_after = fail_after

    def encode(self, texts, **_):
        if self.fail_after is not None and len(self.seen) + len(texts) > self.fail_after:
            raise KeyboardInterrupt
        self.seen += list(texts)
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def _encoder(tmp_path, model) -> dense.Encoder:
    enc = object.__new__(dense.Encoder)
    enc.spec, enc.model, enc.batch_size = "stand-in", model, 4
    enc.query_prefix, enc.passage_prefix, enc.key, enc.encoded = "", "p: ", "k", 0
    enc.cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    return enc


def test_an_interrupted_encoding_keeps_the_blocks_it_finished(tmp_path, monkeypatch):
    monkeypatch.setattr(dense, "CACHE_EVERY", 8)
    texts = [f"passage {i}" + "x" * i for i in range(40)]
    with pytest.raises(KeyboardInterrupt):
        _encoder(tmp_path, StandIn(fail_after=20)).encode_passages(texts)
    # the first batch (4, timed alone) and two blocks of 8 were written before the failure
    model = StandIn()
    enc = _encoder(tmp_path, model)
    out = enc.encode_passages(texts)
    assert enc.encoded == len(model.seen) == 40 - 20
    assert model.seen == ["p: " + t for t in texts[20:]]
    assert out[:, 0].tolist() == [len("p: " + t) for t in texts]  # every row in the order asked, cached or not
    assert _encoder(tmp_path, StandIn(fail_after=0)).encode_passages(texts).shape == (40, 2)  # all cached now
