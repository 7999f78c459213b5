"""The evidence gate: each part and the weighted confidence, computed by hand."""

import numpy as np
import pytest

from spacelm.lib.answer import gate as G


def test_keywords_are_stemmed_content_words_in_first_use_order():
    assert G.keywords("When did the Sentinel-1B satellite fail, and why did satellites fail?") == [
        "sentinel-1b",
        "satellit",
        "fail",
    ]
    assert G.keywords("Is it confirmed in 2022?", G._ASKING) == ["2022"]


@pytest.mark.parametrize(
    "q,strong",
    [
        ("Is it confirmed that the tank burst?", True),
        ("Is there definitive proof that drag decays the orbit?", True),
        ("Does the corpus contain a licence for Tiangong?", True),
        ("Do the documents say when Envisat failed?", True),
        ("When did Envisat fail?", False),
        ("Which operators verify their ephemerides?", False),
    ],
)
def test_strong_claim_detection(q, strong):
    assert G.is_strong_claim(q) == strong


def test_gate_score_by_hand():
    rules = G.GateRules(weights={"similarity": 0.5, "keywords": 0.3, "confirmation": 0.2}, threshold=0.5, top_n=2)
    q = "When was the Envisat mission ended?"  # keywords: envisat, mission, end
    passages = [
        "Envisat stopped responding in April 2012. The mission was declared ended weeks later.",
        "Radar tracks of Envisat continue.",
        "A third passage beyond top_n mentions nothing.",
    ]
    g = G.gate_score(q, passages, [0.8, -0.2, 0.9], rules)
    # similarity: mean of the top-2 cosines, negatives clipped to 0 -> (0.8 + 0) / 2
    assert g["similarity"] == pytest.approx(0.4)
    # every keyword occurs in the top-2 passages
    assert g["keywords"] == pytest.approx(1.0)
    # best single sentence: "The mission was declared ended weeks later." holds mission and end (2 of 3)
    assert g["confirmation"] == pytest.approx(2 / 3, abs=1e-4) and g["evidence"].startswith("The mission")
    assert g["score"] == pytest.approx(0.5 * 0.4 + 0.3 * 1.0 + 0.2 * (2 / 3), abs=1e-4)
    assert g["passed"] and not g["strong_claim"] and g["threshold"] == 0.5


def test_strong_claim_needs_confirmation_language_in_the_same_sentence():
    rules = G.GateRules(
        strong_weights={"similarity": 0.0, "keywords": 0.0, "confirmation": 1.0}, strong_threshold=0.6, top_n=3
    )
    q = "Is it confirmed that the battery exploded on orbit?"
    plain = ["The battery exploded on orbit in 2015."]
    confirmed = ["The battery exploded on orbit in 2015, as telemetry later confirmed."]
    apart = ["The battery exploded on orbit. Investigators confirmed nothing else."]
    assert G.gate_score(q, plain, [0.9], rules)["confirmation"] == 0.0
    g = G.gate_score(q, confirmed, [0.9], rules)
    assert g["strong_claim"] and g["confirmation"] == pytest.approx(1.0) and g["passed"]
    # the confirming sentence does not hold the claim's words: only 0 of 3 ("battery", "explod", "orbit")
    assert G.gate_score(q, apart, [0.9], rules)["confirmation"] == 0.0
    assert G.gated_answer("It exploded [1].", G.gate_score(q, plain, [0.9], rules)) == G.REFUSAL_TEXT
    assert G.gated_answer("It exploded [1].", g) == "It exploded [1]."


def test_score_items_uses_the_passages_most_similar_to_the_question():
    class Encoder:  # unit vectors: the question along x; passages at known angles
        def encode_queries(self, qs):
            return np.array([[1.0, 0.0]] * len(qs))

        def encode_passages(self, texts):
            return np.array([{"near": [1.0, 0.0], "mid": [0.6, 0.8], "far": [0.0, 1.0]}[t] for t in texts])

    items = [{"question": "q?", "passage_ids": ["c", "a", "b"]}, {"question": "q?", "passage_ids": []}]
    G.score_items(items, {"a": "near", "b": "mid", "c": "far"}, Encoder(), G.GateRules(top_n=2))
    assert items[0]["gate"]["passages"] == ["a", "b"]
    assert items[0]["gate"]["similarity"] == pytest.approx((1.0 + 0.6) / 2)
    assert "gate" not in items[1]
