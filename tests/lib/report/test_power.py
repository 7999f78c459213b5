"""The power table: questions needed under each verdict's rule, from a last run's spread or the
stated default."""

import pandas as pd
import pytest

from spacelm.config import from_dict
from spacelm.lib.report import power as P
from spacelm.lib.stats import questions_needed


def _cfg(tmp_path):
    return from_dict(
        {
            "run_name": "r",
            "paths": {"results_dir": str(tmp_path)},
            "grading": {"retrievers": ["bm25", "dense"], "top_k": [3, 5], "max_questions": 30},
            "answer": {"max_questions": 8},
        }
    )


def _row(rows, finding):
    return next(r for r in rows if r["finding"] == finding)


def test_default_spread_when_no_run_is_there(tmp_path):
    rows = P.power_table(_cfg(tmp_path).power_plan())
    top3 = _row(rows, "Reranking raises the share of grade 3 (BM25, top-3)")
    # the paper's +5.10 pp with the default SD of 10 pp, no clustering
    assert (
        top3["questions_needed"] == questions_needed(5.10, P.DEFAULT_SD["share_3"]) and top3["spread_from"] == "default"
    )
    assert top3["questions_planned"] == 30 and top3["source_chunks_planned"] == 30
    level = _row(rows, "Negative rejection")
    assert level["questions_needed"] == "not comparable" and level["questions_planned"] == 8


def test_last_run_spread_and_clusters(tmp_path):
    cfg = _cfg(tmp_path)
    (tmp_path / "r" / "grading").mkdir(parents=True)
    pd.DataFrame(
        [
            {
                "comparison": "reranked - retrieved",
                "retriever": "bm25",
                "top_k": 3,
                "measure": "share_3",
                "n_questions": 30,
                "n_source_chunks": 15,
                "sd": 12.0,
                "deff": 1.5,
            }
        ]
    ).to_csv(tmp_path / "r" / "grading" / "paired_tests.csv", index=False)
    top3 = _row(P.power_table(cfg.power_plan()), "Reranking raises the share of grade 3 (BM25, top-3)")
    n = questions_needed(5.10, 12.0, deff=1.5)
    # 2 questions per source chunk in the last run: half as many chunks
    assert top3["questions_needed"] == n and top3["source_chunks_needed"] == -(-n // 2)
    assert top3["source_chunks_planned"] == 15 and top3["spread_from"].startswith("last run")


def test_spread_solved_back_from_an_old_tables_mde():
    # mde 4.5 pp at n = 30 (α 0.05, 80%): sd = 4.5·√30 / (t_0.975,29 + t_0.8,29) = 24.648 / 2.8994 = 8.501
    sd, deff, per, basis = P.spread({"n_questions": 30, "mde": 4.5}, "share_3")
    assert sd == pytest.approx(8.501, abs=1e-2) and deff == 1.0 and basis == "last run (unclustered)"
    assert P.spread(None, "share_3")[0] == P.DEFAULT_SD["share_3"]


def test_a_labelled_pilot_sets_the_spread_and_the_screen_sets_the_questions_to_write(tmp_path):
    import json

    cfg = _cfg(tmp_path)
    g = tmp_path / "r" / "grading"
    (g / "labels").mkdir(parents=True)
    row = {
        "comparison": "reranked - retrieved",
        "retriever": "bm25",
        "top_k": 3,
        "measure": "share_3",
        "n_questions": 30,
        "n_source_chunks": 30,
        "sd": 12.0,
        "deff": 1.0,
        "holes": 0,
    }
    pd.DataFrame([row]).to_csv(g / "paired_tests.csv", index=False)  # the judge's spread
    pd.DataFrame([{**row, "sd": 30.0}]).to_csv(g / "labels" / "paired_tests.csv", index=False)
    (g / "question_screening.json").write_text(json.dumps({"screened": 40, "rejected_share": 0.25}))
    top3 = _row(P.power_table(cfg.power_plan()), "Reranking raises the share of grade 3 (BM25, top-3)")
    n = questions_needed(5.10, 30.0)
    assert top3["questions_needed"] == n and "labels" in top3["spread_from"]
    assert top3["written_needed"] == -(-n * 4 // 3)  # a quarter screened out: 4/3 as many written
    # a labelled table with holes is no pilot: the judge's spread stands, and no screen: need = written
    pd.DataFrame([{**row, "sd": 30.0, "holes": 3}]).to_csv(g / "labels" / "paired_tests.csv", index=False)
    (g / "question_screening.json").unlink()
    top3 = _row(P.power_table(cfg.power_plan()), "Reranking raises the share of grade 3 (BM25, top-3)")
    assert top3["questions_needed"] == questions_needed(5.10, 12.0) == top3["written_needed"]


def test_the_narrow_plan_names_why_a_level_finding_is_not_comparable():
    """A finding the run cannot compare with the paper prints the reason once, as the reason,
    never as the source of a spread."""
    from spacelm.lib.report.power import format_power

    row = {
        "finding": "Noise robustness is high",
        "rule": "absolute level",
        "paper_effect": "4.87",
        "questions_needed": "not comparable",
        "questions_planned": 40,
        "spread_from": "no: chunks of 256 vs 2,000 tokens",
    }
    text = format_power([row], wide=False)
    assert "not comparable (no: chunks of 256 vs 2,000 tokens); questions planned: 40" in text
    assert "SD from" not in text


def test_answers_the_assessor_scored_set_table2s_spread(tmp_path):
    cfg = _cfg(tmp_path)
    run = tmp_path / "r"
    (run / "answer_labels").mkdir(parents=True)
    row = {"metric": "faithfulness", "setting_a": "standard", "setting_b": "3_wrong", "n_questions": 30}
    row.update(n_source_chunks=30, sd=0.5, deff=1.0, holes=0)
    pd.DataFrame([{**row, "sd": 1.5}]).to_csv(run / "table2_tests.csv", index=False)  # the judges' spread
    pd.DataFrame([row]).to_csv(run / "answer_labels" / "table2_tests.csv", index=False)
    faith = _row(P.power_table(cfg.power_plan()), "Faithfulness changes little from standard to 3 wrong")
    assert "labels" in faith["spread_from"]
    (run / "answer_labels" / "table2_tests.csv").unlink()
    judges = _row(P.power_table(cfg.power_plan()), "Faithfulness changes little from standard to 3 wrong")
    assert "labels" not in judges["spread_from"] and faith["questions_needed"] < judges["questions_needed"]
