"""The opening section's Table 2 facts: read from the run's files, labelled cells only, in the
paper's rubric and setting order; holes and the judge's own rows are left out."""

from __future__ import annotations

import json

import pandas as pd

from spacelm.lib import names
from spacelm.lib.report.found import found
from spacelm.lib.report.render import render


def _run(tmp_path):
    run = tmp_path / "run"
    (run / "answer_labels").mkdir(parents=True)
    rows = [
        ("relevance", "3_wrong", 3.5, "labels", 0),
        ("faithfulness", "3_wrong", 3.3, "labels", 0),
        ("faithfulness", "standard", 3.1, "labels", 0),
        ("faithfulness", "standard", 3.8, "judge", 0),  # the judge's row: not the labels
        ("negative_rejection", "5_wrong_only", 2.0, "labels", 4),  # 4 answers unlabelled
    ]
    pd.DataFrame(
        [
            dict(metric=m, setting=s, mean=v, ci_low=v - 0.5, ci_high=v + 0.5, n=20, instrument=i, holes=h)
            for m, s, v, i, h in rows
        ]
    ).to_csv(run / names.TABLE2, index=False)
    tests = dict(metric="faithfulness", setting_a="standard", setting_b="3_wrong", n_questions=20, n_source_chunks=20)
    tests |= dict(
        mean_a=3.1, mean_b=3.3, diff=0.2, ci_low=-0.9, ci_high=1.3, cluster="document", n_clusters=14, holes=0
    )
    pd.DataFrame([tests, dict(tests, metric="relevance", holes=2)]).to_csv(run / names.LABEL_TABLE2_TESTS, index=False)
    measures = dict(setting="3_wrong", pipeline="table2", n=20, refused_phrase=0.05, refused_phrase_ci_low=0.01)
    measures |= dict(
        refused_phrase_ci_high=0.24, n_with_noise=20, leakage_answers=0.85, leakage_ci_low=0.64, leakage_ci_high=0.95
    )
    pd.DataFrame([measures]).to_csv(run / names.ANSWER_MEASURES, index=False)
    judge = {"faithfulness": {"n": 8, "bias": 0.2, "bias_ci": [-2.6, 3.0], "spearman": 0.47}, "relevance": {"n": 0}}
    (run / names.ANSWER_JUDGES_VS_LABELS).write_text(json.dumps(judge))
    return run


def test_table2_facts_are_the_labelled_cells_in_the_paper_s_order(tmp_path):
    f = found(_run(tmp_path), "r")
    assert [(x.measure, x.setting, x.value) for x in f.table2] == [
        ("faithfulness", "standard", 3.1),
        ("faithfulness", "3_wrong", 3.3),
        ("relevance", "3_wrong", 3.5),
    ]
    assert [(d.measure, d.a, d.b, d.diff, d.n_clusters) for d in f.table2_changes] == [
        ("faithfulness", "standard", "3_wrong", 0.2, 14)
    ]
    assert [(m.measure, m.value, m.ci_high) for m in f.answer_measures] == [
        ("leakage_answers", 0.85, 0.95),
        ("refused_phrase", 0.05, 0.24),
    ]
    assert list(f.answer_judge) == ["faithfulness"]


def test_table2_facts_render_each_once(tmp_path):
    page = render("found.md", found(_run(tmp_path), "r"))
    assert page.count("3.10 [2.60, 3.60]") == 1 and "[3.30, 4.30]" not in page
    assert "+0.20 [-0.90, +1.30]" in page and "85% [64%, 95%]" in page
    assert "; ." not in page and ";." not in page


def test_a_negative_setting_that_held_answers_is_said_once(tmp_path):
    run = _run(tmp_path)
    held = {"n": 26, "answering": 14, "holes": 0, "share": 0.5385, "ci": [0.3546, 0.7124]}
    held |= {"holds": False, "state": "held answers"}
    rows = [{"id": "negative_rejection_level", "verdict": "not tested", "premise": held}]
    (run / names.FINDINGS).write_text(json.dumps(rows))
    f = found(run, "r")
    assert f.negative_premise == held
    page = render("found.md", f)
    assert page.count("14 of its 26 questions") == 1 and "54% [35%, 71%]" in page
    shown = dict(held, answering=0, share=0.0, ci=[0.0, 0.1287], holds=True, state="holds")
    (run / names.FINDINGS).write_text(json.dumps([dict(rows[0], premise=shown)]))
    page = render("found.md", found(run, "r"))
    assert page.count("0 of its 26 questions had one") == 1 and "0% [0%, 13%]" in page
    for state in ("holes", "too few"):  # said in the finding's reason, not among what the run found
        (run / names.FINDINGS).write_text(json.dumps([dict(rows[0], premise=dict(held, state=state))]))
        assert "14 of its 26" not in render("found.md", found(run, "r"))
