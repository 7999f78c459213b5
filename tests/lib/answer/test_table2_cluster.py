"""Table 2's paired tests at the config's cluster unit (issue 44)."""

import math

import pytest

from spacelm.lib.answer.answers import table2_tests


def _items():
    # faithfulness standard 1 everywhere, 3_wrong 4, 4 (document A) and 2, 2 (document B): differences 3, 3, 1, 1
    out = []
    for q, b in {"q1": 4, "q2": 4, "q3": 2, "q4": 2}.items():
        for setting, v in (("standard", 1), ("3_wrong", b)):
            out.append(
                {
                    "qid": q,
                    "pipeline": "table2",
                    "setting": setting,
                    "rubrics": ["faithfulness"],
                    "scores": {"faithfulness": v},
                    "source_chunk_id": f"{q}-chunk",
                }
            )
    return out


def test_table2_tests_cluster_by_the_given_unit_by_hand():
    """By source chunk (four): t 3.4641 on 3 df, p 0.0405. By document (A: q1, q2; B: q3, q4):
    se 1, t 2 on 1 df, p = 1 − (2/π)·atan 2 = 0.29517."""
    chunk = table2_tests(_items(), ["standard", "3_wrong"]).iloc[0]
    docs = {"q1": "A", "q2": "A", "q3": "B", "q4": "B"}
    doc = table2_tests(_items(), ["standard", "3_wrong"], clusters=docs, unit="document").iloc[0]
    assert chunk["cluster"] == "source_chunk" and chunk["p_value"] == pytest.approx(0.0405, abs=1e-4)
    assert doc["cluster"] == "document" and doc["n_clusters"] == 2 and doc["n_source_chunks"] == 4
    assert doc["p_value"] == pytest.approx(1 - 2 / math.pi * math.atan(2), abs=1e-4)
