"""The segment-cosine score pools each segment on its own: the query's tokens against the passage's,
never the pair as a whole, and padding counts for neither."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spacelm.lib.retrieval.segment_cosine import SegmentCosineCrossEncoder  # noqa: E402


def _scorer(scale=1.0):
    return SegmentCosineCrossEncoder(model=None, tokenizer=None, max_length=8, scale=scale)


def test_each_segment_is_pooled_on_its_own():
    # one pair: two query tokens pointing along x, two passage tokens along y, one padding token along x
    states = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [5.0, 0.0]]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    segment = torch.tensor([[0, 0, 1, 1, 1]])
    score = _scorer(scale=20.0).score_states(states, mask, segment)
    assert score.shape == (1,) and score.item() == pytest.approx(0.0, abs=1e-6)  # orthogonal segments
    # pooling the whole pair against itself would give 1 (× scale); padding would tilt the passage to x
    same = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 9.0]]])
    assert _scorer(scale=20.0).score_states(same, mask, segment).item() == pytest.approx(20.0)


def test_the_passage_mean_ignores_padding_and_the_query():
    states = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-7.0, 3.0]]])
    mask = torch.tensor([[1, 1, 1, 0]])
    segment = torch.tensor([[0, 1, 1, 1]])
    # query mean (1, 0); passage mean over its two real tokens (0.5, 1): cosine 0.5 / sqrt(1.25)
    got = _scorer().score_states(states, mask, segment).item()
    assert got == pytest.approx(0.5 / 1.25**0.5, rel=1e-5)
