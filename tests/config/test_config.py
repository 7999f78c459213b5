import re
from pathlib import Path

import pytest

from spacelm.config import ConfigError, from_dict, load_config, parse_override

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["quick.yaml", "standard.yaml", "paper.yaml", "paper_chunks.yaml"])
def test_shipped_configs_load(name):
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.root == str(ROOT)
    pool = cfg.retrieval.pool
    assert 0 < pool < 1 or pool >= max(cfg.retrieval.k_values)


@pytest.mark.parametrize("pool,msg", [(0.0, "share of the corpus"), (1.5, "share of the corpus"), (-3, "must be >= 1")])
def test_pool_share_or_count(pool, msg):
    with pytest.raises(ConfigError, match=rf"retrieval\.pool.*{msg}"):
        from_dict({"retrieval": {"pool": pool}})
    assert from_dict({"retrieval": {"pool": 0.25}}).retrieval.pool == 0.25
    assert from_dict({"retrieval": {"pool": 30}}).retrieval.pool == 30


def test_paper_config_holds_the_papers_settings():
    cfg = load_config(ROOT / "configs" / "paper.yaml")
    assert cfg.chunking.max_tokens == 2000
    assert cfg.synth.filter_top_n == 50
    assert cfg.retrieval.pool == 100
    assert cfg.retrieval.k_values == [3, 5, 7, 10]


def test_unknown_key_names_key_and_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("chunking:\n  max_tokns: 10\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert "chunking.max_tokns" in str(e.value) and str(p) in str(e.value)


def test_wrong_type_names_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("retrieval:\n  pool: lots\n")
    with pytest.raises(ConfigError, match=r"retrieval\.pool.*integer"):
        load_config(p)


def test_bool_is_not_an_int():
    with pytest.raises(ConfigError, match="chunking.max_tokens"):
        from_dict({"chunking": {"max_tokens": True}})


def test_literal_choices_are_checked():
    with pytest.raises(ConfigError, match="reranker.kind"):
        from_dict({"retrieval": {"reranker": {"kind": "magic"}}})


def test_cross_field_validation():
    with pytest.raises(ConfigError, match="retrieval.pool"):
        from_dict({"retrieval": {"pool": 5, "k_values": [3, 10]}})


def test_chunk_sizes_beyond_the_dense_window_are_refused_only_when_a_dense_system_reads_them():
    study = {"sizes": [256, 2000], "systems": ["bm25", "dense"]}
    with pytest.raises(ConfigError, match="chunk_study.dense_model.*256 word pieces"):
        from_dict({"retrieval": {"dense": {"model": "embedded:minilm"}}, "chunk_study": study})
    bm25_only = dict(study, systems=["bm25"])
    cfg = from_dict({"retrieval": {"dense": {"model": "embedded:minilm"}}, "chunk_study": bm25_only})
    assert cfg.chunk_study.sizes == [256, 2000]


@pytest.mark.parametrize(
    "key, value", [("budgets", [512, 0]), ("budgets", []), ("budgets", [1.5]), ("min_grade_questions", 0)]
)
def test_reader_budgets_and_the_minimum_of_graded_questions_must_be_positive_counts(key, value):
    study = {"sizes": [256, 2000], "systems": ["bm25"], key: value}
    with pytest.raises(ConfigError, match=f"key 'chunk_study.{key}"):
        from_dict({"chunk_study": study})
    ok = from_dict({"chunk_study": {"sizes": [256], "systems": ["bm25"], "budgets": [700], "min_grade_questions": 40}})
    assert ok.chunk_study.budgets == [700] and ok.chunk_study.min_grade_questions == 40


def test_invalid_yaml_and_missing_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_override_parsing_and_merge(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("chunking:\n  max_tokens: 100\n")
    cfg = load_config(p, parse_override("chunking.max_tokens=300"))
    assert cfg.chunking.max_tokens == 300


def test_section_hash_changes_with_section_only():
    a = from_dict({"chunking": {"max_tokens": 100}})
    b = from_dict({"chunking": {"max_tokens": 100}, "retrieval": {"pool": 200}})
    c = from_dict({"chunking": {"max_tokens": 101}})
    assert a.section_hash("chunking") == b.section_hash("chunking")
    assert a.section_hash("chunking") != c.section_hash("chunking")


def test_a_setting_added_at_its_neutral_default_leaves_the_hash_as_before_it():
    """`answer.negative_sampling` came after runs were made: at its default (None, as
    `wrong_sampling`) a section hashes as it did without the key; set, it changes the hash."""
    import dataclasses
    import hashlib
    import json

    cfg = from_dict({})
    before = dataclasses.asdict(cfg.answer)
    before.pop("negative_sampling")
    digest = hashlib.sha256(json.dumps({"answer": before}, sort_keys=True).encode()).hexdigest()[:16]
    assert cfg.section_hash("answer") == digest
    told = from_dict({"answer": {"negative_sampling": "hard"}})
    assert told.section_hash("answer") != digest


def test_a_stage_naming_a_neutral_setting_at_its_default_has_the_inputs_it_had_before_it():
    """runner.base.stage_inputs leaves out a `config:` key that is a neutral setting at its default
    (the judge check names answer.negative_sampling): its inputs, and a committed run's freshness,
    are as before the key existed; set, it is an input."""
    from spacelm.runner.base import stage_inputs
    from spacelm.stages.judge_check import STAGE

    plain = stage_inputs(STAGE, from_dict({}))
    assert "config:answer.negative_sampling" not in plain and "config:answer.wrong_sampling" in plain
    told = stage_inputs(STAGE, from_dict({"answer": {"negative_sampling": "random"}}))
    assert "config:answer.negative_sampling" in told


@pytest.mark.parametrize(
    "override,key",
    [
        ({"grading": {"top_k": [-3]}}, "grading.top_k"),
        ({"grading": {"top_k": [3, 500]}, "retrieval": {"pool": 100}}, "grading.top_k"),
        ({"answer": {"retrieve_k": -2}}, "answer.retrieve_k"),
        ({"answer": {"retrieve_k": 0}}, "answer.retrieve_k"),
        ({"synth": {"filter_top_n": 0}}, "synth.filter_top_n"),
        ({"grading": {"n_bootstrap": -1}}, "grading.n_bootstrap"),
        ({"grading": {"max_questions": -1}}, "grading.max_questions"),
        ({"answer": {"max_questions": 0}}, "answer.max_questions"),
        ({"synth": {"max_chunks": -5}}, "synth.max_chunks"),
        ({"retrieval": {"k_values": []}}, "retrieval.k_values"),
        ({"grading": {"retrievers": ["bm25+rerank"]}}, "grading.retrievers"),
        ({"answer": {"retriever": "tfidf"}}, "answer.retriever"),
        ({"models": {"judge": {"top_p": 0}}}, "models.judge.top_p"),
        ({"models": {"judge": {"temperature": -0.5}}}, "models.judge.temperature"),
        ({"models": {"generator": {"max_tokens": 5000, "n_ctx": 4096}}}, "models.generator.max_tokens"),
        ({"models": {"judge": {"backend": "openai"}}}, "models.judge.base_url"),
        ({"models": {"judge": {"gpu_memory_utilization": 1.5}}}, "models.judge.gpu_memory_utilization"),
        ({"models": {"judge": {"model": "embedded:nope"}}}, "models.judge.model"),
        ({"models": {"judge": {"model": "/no/such/model.gguf"}}}, "models.judge.model"),
        ({"chunking": {"tokenizer": "./missing/tokenizer.json"}}, "chunking.tokenizer"),
        ({"retrieval": {"dense": {"model": "/no/such/folder/minilm"}}}, "retrieval.dense.model"),
    ],
)
def test_out_of_range_values_name_the_key(override, key):
    with pytest.raises(ConfigError, match=re.escape(f"'{key}'")):
        from_dict(override)


def test_valid_edge_values_and_hub_names_pass():
    cfg = from_dict(
        {
            "grading": {"top_k": [1, 100], "max_questions": None},
            "answer": {"retrieve_k": 1},
            "models": {
                "judge": {"backend": "vllm", "model": "meta-llama/Llama-3.3-70B-Instruct"},
                "generator": {"backend": "openai", "model": "served-name", "base_url": "http://x/v1"},
            },
        }
    )
    assert cfg.grading.top_k == [1, 100]


def test_cli_rejects_bad_values_with_exit_2_before_loading_a_model(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacelm.cli",
            "grade",
            "--config",
            str(ROOT / "configs" / "quick.yaml"),
            "--set",
            "grading.top_k=[-3]",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "'grading.top_k'" in r.stderr and "Traceback" not in r.stderr


def test_the_library_parameters_come_from_the_right_sections():
    """Each parameter object a config builds for the library takes its values from the section
    the setting lives in: question length from the writer, answer and reference-answer length
    from the generator, the planned questions from grading / synth / answer in that order."""
    cfg = from_dict(
        {
            "seed": 7,
            "models": {"question_writer": {"max_tokens": 96}, "generator": {"max_tokens": 300}},
            "synth": {"max_chunks": 12, "unanswerable": {"kinds": ["strong_claim"], "per_task": None}},
            "grading": {"retrievers": ["dense"], "top_k": [3]},
            "answer": {"citations": "ids", "n_wrong_values": [0, 2]},
            "retrieval": {"pool": 20, "systems": ["bm25", "bm25+rerank"]},
        }
    )
    w, a = cfg.question_writing(), cfg.answer_design()
    assert (w.seed, w.max_tokens, w.reference_max_tokens, w.max_chunks) == (7, 96, 300, 12)
    assert (w.unanswerable_kinds, w.unanswerable_per_task) == (("strong_claim",), None)
    assert (a.seed, a.max_tokens, a.citations, a.n_wrong_values) == (7, 300, "ids", (0, 2))
    assert cfg.table_design() == type(cfg.table_design())(("dense",), (3,), 7)
    setup = cfg.retrieval.setup()
    assert setup.systems == ("bm25", "bm25+rerank") and setup.pool == 20 and setup.bm25 is cfg.retrieval.bm25
    plan = cfg.power_plan()
    assert (plan.planned_table1, plan.planned_table2, plan.run_dir) == (12, 12, cfg.run_dir)
    cfg.grading.max_questions, cfg.answer.max_questions = 30, 8
    assert (cfg.power_plan().planned_table1, cfg.power_plan().planned_table2) == (30, 8)


def test_primary_beyond_the_budget_is_refused_unless_the_plan_says_underpowered():
    """A primary finding needing more questions than synth can write stops `check`; the same entry
    marked underpowered (with the n it needs) is the plan saying so before the run, and passes."""
    entry = {"id": "faithfulness_changes_little", "role": "primary", "n_needed": 754}
    plan = {"synth": {"max_chunks": 300}, "analysis_plan": {"fixed": "today", "findings": [entry]}}
    with pytest.raises(ConfigError, match="'synth.max_chunks' is 300, but .* needs 754 questions"):
        from_dict(plan)
    plan["analysis_plan"]["findings"] = [dict(entry, n_planned=26)]
    with pytest.raises(ConfigError, match="plans 26 questions where 754 are needed; mark it underpowered"):
        from_dict(plan)
    plan["analysis_plan"]["findings"] = [dict(entry, n_planned=26, underpowered=True)]
    assert from_dict(plan).analysis_plan.entries()[0].underpowered


def test_shipped_configs_that_share_a_folder_would_write_the_same_thing_there():
    """Two shipped configs write one processed folder only with the same corpus, ingest and
    chunking, and one synthetic folder only when at most one of them writes questions (the other
    reads them): a run of one never rewrites what another's committed run read (the paper config
    once wrote into the quick run's folders)."""
    from dataclasses import asdict

    cfgs = {p.name: load_config(p) for p in sorted((ROOT / "configs").glob("*.yaml"))}
    made = lambda c: (c.corpus.raw_dir, c.corpus.file_list, asdict(c.ingest), asdict(c.chunking))
    by_processed, writers = {}, {}
    for name, c in cfgs.items():
        by_processed.setdefault(c.paths.processed_dir, []).append(name)
        if c.synth.enabled:
            writers.setdefault(c.paths.synthetic_dir, []).append(name)
    for folder, names in by_processed.items():
        assert len({repr(made(cfgs[n])) for n in names}) == 1, f"{folder}: {names} would chunk differently"
    assert all(len(ns) == 1 for ns in writers.values()), writers
