"""The answer stage's checks (answer_checks.json) as the tables notebook 05 shows."""

from spacelm.stages.answer import checks_tables


def test_checks_become_rows_per_setting_and_per_check():
    checks = {
        "refusal_rate_by_setting": {"standard": 0.1, "3_wrong": 0.25},
        "citation_accuracy_by_setting": {"standard": None, "3_wrong": 1.0, "5_wrong": 0.5},
        "citation_style": "numbered",
        "missing_scores": 0,
        "refusals_where_passages_cannot_answer": [{"setting": "5_wrong_only", "n": 4, "refusal_rate_phrase": 0.5}],
    }
    by_setting, run_wide, cannot = checks_tables(checks)
    assert by_setting == [
        {"setting": "standard", "refusal rate": 0.1, "citation accuracy": None},
        {"setting": "3_wrong", "refusal rate": 0.25, "citation accuracy": 1.0},
        {"setting": "5_wrong", "refusal rate": None, "citation accuracy": 0.5},
    ]
    assert run_wide == [{"check": "citation style", "value": "numbered"}, {"check": "missing scores", "value": 0}]
    assert cannot == [{"setting": "5_wrong_only", "n": 4, "refusal_rate_phrase": 0.5}]


def test_a_run_without_answers_checks_gives_empty_tables():
    assert checks_tables({}) == ([], [], [])
