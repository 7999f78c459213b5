"""Table 2 through the assessor's scores: an answer's label found by its text, the judges against it."""

from __future__ import annotations

import json

import pytest


def test_answer_labels_replace_the_judges_scores_and_judges_are_measured(tiny_config):
    from spacelm.lib.labels.store import LabelStore, text_sha
    from spacelm.stages.labels import answer_label_items, judges_vs_labels

    cfg = tiny_config
    items = [
        {
            "qid": f"q{i}",
            "question": f"Q{i}?",
            "setting": "standard",
            "answer": f"A{i}",
            "pipeline": "table2",
            "rubrics": ["faithfulness"],
            "scores": {"faithfulness": 5},
            "source_chunk_id": f"c{i}",
        }
        for i in range(4)
    ]
    rows = [
        {
            "question_sha": text_sha(f"Q{i}?"),
            "setting": "standard",
            "answer_sha": text_sha(f"A{i}"),
            "scores": {"faithfulness": 3 + i % 2, "relevance": 4},
            "correct": "yes",
            "batch": "b",
            "key": f"a{i}",
        }
        for i in range(3)  # the fourth answer is not labelled: a hole
    ]
    store = LabelStore(cfg.labels_dir)
    store.add("answers", rows)
    got = answer_label_items(cfg, items)
    assert [it["scores"] for it in got] == [{"faithfulness": 3}, {"faithfulness": 4}, {"faithfulness": 3}, {}]
    m = judges_vs_labels(items, got)["faithfulness"]
    # the judge says 5 on the three labelled answers, the labels 3, 4, 3: bias +5/3
    assert m["n"] == 3 and m["judge_mean"] == 5.0 and m["bias"] == pytest.approx(5 / 3, abs=1e-3)
    assert json.dumps(m)  # plain numbers
