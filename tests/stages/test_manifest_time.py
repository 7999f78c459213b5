from spacelm.runner.manifest import model_time


def _llm(made, rec, calls, hits):
    return {"calls": calls, "cache_hits": hits, "model_seconds": made, "recorded_seconds": rec}


def test_model_time_shares_and_units():
    stages = {
        "chunk": {"wall_seconds": 2.0},
        "retrieve": {"wall_seconds": 12.0, "search_seconds": {"bm25": 0.5, "dense": 9.5}},
        "grade": {"wall_seconds": 100.0, "llm": _llm(90.0, 90.0, 30, 0)},
        "answer": {
            "wall_seconds": 20.0,
            "answers": 4,
            "llm_generator": _llm(0.0, 40.0, 0, 8),
            "llm_judge": _llm(10.0, 60.0, 2, 10),
        },
        "synth": {
            "skipped": True,
            "wall_seconds": 0.0,
            "computed_seconds": 50.0,
            "generated": 10,
            "unanswerable_generated": 0,
            "llm": _llm(45.0, 45.0, 10, 0),
        },
    }
    m = model_time(stages, 134.0)
    assert m["model_seconds_this_run"] == 110.0  # the skipped stage made no call now; encoders count
    assert m["encoder_seconds"] == 10.0 and m["model_share_of_wall"] == round(110 / 134, 3)
    # cold: chunk 2, retrieve 12, grade 10 + 90, answer 10 + 100, synth 5 + 45
    assert m["cold_seconds_estimate"] == 274.0
    units = {(u["stage"], " ".join(u["unit"].split()[:2])): u for u in m["per_unit"]}
    assert units[("grade", "graded pair")]["seconds_per_unit"] == 3.0
    assert units[("answer", "answer written")]["seconds_per_unit"] == 5.0  # 40 s over 8 answers written
    assert units[("answer", "answer written")]["n"] == 8
    assert units[("synth", "question written")]["seconds_per_unit"] == 4.5
    judged = [u for u in m["per_unit"] if u["unit"].startswith("answer judged")][0]
    assert judged["n"] == 4 and judged["seconds_per_unit"] == 15.0 and judged["calls_per_unit"] == 3.0


def test_run_sizes_from_stage_summaries():
    from spacelm.runner.manifest import run_sizes

    sizes = run_sizes(
        {
            "synth": {"generated": 12, "kept": 10},
            "grade": {"questions": 5, "pairs_graded": 90},
            "judge-check": {"labelled_pairs": 150, "control_pairs": 80},
            "answer": {"questions": 4, "unanswerable_questions": 3, "answers": 30},
        }
    )
    assert sizes["synthetic_questions_kept"] == 10 and sizes["table1_questions"] == 5
    assert sizes["judge_check_labelled_pairs"] == 150 and sizes["answerability_unanswerable"] == 3
    assert sizes["retrieval_questions"] is None


def test_scale_banner_names_the_small_tables():
    from spacelm.stages.report import scale_banner

    full, smoke = "findings scale", "smoke-scale run"
    assert scale_banner({"grade": {"scale": full, "questions": 30}, "answer": {"scale": full}}) == []
    both = scale_banner({"grade": {"scale": smoke, "questions": 3}, "answer": {"scale": smoke, "questions": 2}})
    assert "Smoke-scale run" in both[0]
    one = scale_banner({"grade": {"scale": full, "questions": 30}, "answer": {"scale": smoke, "questions": 8}})
    assert "Below the findings scale" in one[0] and "Table 2, the pipelines" in one[0] and "(8 questions)" in one[0]
    assert "Table 1" not in one[0]


def test_a_study_sized_by_a_labelled_pilot_is_not_called_a_smoke_run():
    from spacelm.stages.report import scale_banner

    alone = {"answer": {"scale": "smoke-scale run", "questions": 26}}
    assert "Smoke-scale run" in scale_banner(alone)[0]
    planned = scale_banner(alone, pilot="20 questions labelled blind")[0]
    assert "Below the findings scale" in planned and "(26 questions)" in planned
