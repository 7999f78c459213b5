"""Broken and hostile configs (issue 26): each is refused at load, or before the first stage,
with one line naming the key (or the `--set` argument) and the fix, exit code 2, before any
model loads. Each test names the defect of the issue it covers."""

import json
from pathlib import Path

import pytest

from spacelm.config import ConfigError, from_dict, load_config, parse_override

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "configs" / "quick.yaml"


def _tmp_paths(tmp_path: Path) -> list[str]:
    """--set arguments that keep every folder a command writes inside `tmp_path`."""
    return [f"paths.{k}={tmp_path / k}" for k in ("processed_dir", "synthetic_dir", "results_dir", "cache_dir")]


# --------------------------------------------------------------------------- #2 duplicate keys
def test_duplicate_top_level_key_names_key_file_and_line(tmp_path):
    """#2: a second `grading:` block silently replaced the first (max_questions vanished)."""
    p = tmp_path / "dup.yaml"
    p.write_text("run_name: dup\ngrading:\n  max_questions: 1\nseed: 3\ngrading:\n  top_k: [3]\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    msg = str(e.value)
    assert f"{p}:5:" in msg and "'grading'" in msg and "line 2" in msg


def test_duplicate_nested_key_is_refused(tmp_path):
    """#2: at any level, not only the top one."""
    p = tmp_path / "dup.yaml"
    p.write_text("grading:\n  max_questions: 1\n  top_k: [3]\n  max_questions: 5\n")
    with pytest.raises(ConfigError, match=r"dup\.yaml:4: key 'max_questions' appears twice.*line 2"):
        load_config(p)


def test_cli_run_with_duplicate_key_exits_2_naming_key_and_line(tmp_path, capsys):
    """#2 contract: `spacelm run --config C` with a duplicate top-level key exits 2."""
    from spacelm.cli import main

    p = tmp_path / "c.yaml"
    p.write_text(QUICK.read_text() + "\nseed: 99\n")
    line = len(QUICK.read_text().splitlines()) + 2
    assert main(["run", "--config", str(p), "--no-notebooks"]) == 2
    err = capsys.readouterr().err
    assert f"c.yaml:{line}: key 'seed' appears twice" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- #3 checks before any model
def test_grade_without_the_reranked_lists_exits_2_before_any_stage(tmp_path, capsys, monkeypatch):
    """#3 contract: `spacelm grade --set 'retrieval.systems=[bm25]'` ran synth, retrieve and
    judge-check before failing with a traceback; now it exits 2 before the first stage."""
    from spacelm import cli
    from spacelm.runner import base

    def no_stage(*a, **k):
        raise AssertionError("a stage ran")

    monkeypatch.setattr(base, "execute", no_stage)
    monkeypatch.setattr("spacelm.pipeline.execute", no_stage)
    sets = ["--set", "retrieval.systems=[bm25]"] + [a for s in _tmp_paths(tmp_path) for a in ("--set", s)]
    assert cli.main(["grade", "--config", str(QUICK)] + sets) == 2
    err = capsys.readouterr().err
    assert "--set retrieval.systems=[bm25]" in err and "bm25+rerank" in err and "dense" in err
    assert not (tmp_path / "results_dir" / "quick" / "manifest.json").exists()


def test_answer_retriever_must_be_a_retrieval_system():
    """#3: the answer stage read answer.retriever's ranking only after the model stages."""
    from spacelm.config.validate import check_stage_needs

    cfg = from_dict(
        {
            "retrieval": {"systems": ["bm25", "bm25+rerank"]},
            "grading": {"retrievers": ["bm25"]},
            "answer": {"retriever": "dense"},
        }
    )
    check_stage_needs(cfg, ["ingest", "chunk", "synth", "retrieve", "grade"])  # answer not run: fine
    with pytest.raises(ConfigError, match=r"retrieval\.systems' lacks 'dense'.*answer\.retriever"):
        check_stage_needs(cfg, ["retrieve", "grade", "answer"])


def test_unknown_stemmer_is_refused_at_load():
    """#3: an unknown retrieval.bm25.stemmer failed inside synth, after the writer's calls."""
    pytest.importorskip("Stemmer")
    with pytest.raises(ConfigError, match=r"retrieval\.bm25\.stemmer.*'klingon'.*english"):
        from_dict({"retrieval": {"bm25": {"stemmer": "klingon"}}})
    assert from_dict({"retrieval": {"bm25": {"stemmer": "german"}}}).retrieval.bm25.stemmer == "german"
    assert from_dict({"retrieval": {"bm25": {"stemmer": None}}}).retrieval.bm25.stemmer is None


def test_no_grading_retriever_is_refused():
    """#3: grading.retrievers=[] gave a bare StopIteration in the grade stage."""
    with pytest.raises(ConfigError, match=r"grading\.retrievers.*at least one"):
        from_dict({"grading": {"retrievers": []}})


def test_hub_model_without_local_copy_is_refused_when_offline(tmp_path, monkeypatch):
    """#3: a hub name that cannot be fetched cost 80 s and a chained traceback."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ConfigError, match=r"retrieval\.dense\.model.*'nobody/no-such-model'.*not in the local hub cache"
    ):
        from_dict({"retrieval": {"dense": {"model": "nobody/no-such-model"}}})
    (tmp_path / "hub" / "models--nobody--no-such-model" / "snapshots").mkdir(parents=True)
    assert from_dict({"retrieval": {"dense": {"model": "nobody/no-such-model"}}})
    # a bare sentence-transformers name is found under that organisation
    (tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots").mkdir(parents=True)
    assert from_dict({"retrieval": {"dense": {"model": "all-MiniLM-L6-v2"}}})


def test_malformed_model_name_is_refused():
    """#3: a name that is no embedded model, path or hub name."""
    with pytest.raises(ConfigError, match=r"models\.judge\.model.*neither an embedded model"):
        from_dict({"models": {"judge": {"model": "my judge!"}}})


def _golden(path: Path, passage_chars: int, n: int = 3) -> Path:
    rows = [
        {
            "id": f"d{i}",
            "task": "direct_qa",
            "question": f"What does sample {i} say about orbits?",
            "passage": ("orbit " * (passage_chars // 6)),
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_fewshot_prompt_longer_than_n_ctx_is_refused_before_synth(tmp_path):
    """#3: a few-shot prompt longer than n_ctx: the plan warned, synth loaded the model and raised.
    3 examples of 3,000 characters are >= 1,500 tokens at 6 characters per token: above 1,024."""
    from spacelm.stages.preflight import check_before_run

    small = {"n_ctx": 1024, "max_tokens": 64}
    cfg = from_dict(
        {
            "corpus": {"golden_samples": str(_golden(tmp_path / "g.jsonl", 3000))},
            "synth": {"tasks": ["direct_qa"], "n_fewshot": 3},
            "models": {"question_writer": small},
        }
    )
    with pytest.raises(ConfigError, match=r"synth\.n_fewshot.*direct_qa.*models\.question_writer\.n_ctx = 1,024"):
        check_before_run(cfg, ["ingest", "chunk", "synth"])
    check_before_run(cfg, ["ingest", "chunk"])  # synth not run: nothing to check
    # the same examples fit a 4,096-token context
    cfg.models.question_writer.n_ctx = 4096
    check_before_run(cfg, ["ingest", "chunk", "synth"])


# --------------------------------------------------------------------------- #8 run_name
@pytest.mark.parametrize("name", ["../x", "../../x", "/tmp/abs", "a/b", "..", ".", "a..b", ""])
def test_run_name_must_be_a_plain_name(name):
    """#8: `../../x` or an absolute run_name wrote outputs outside results/."""
    with pytest.raises(ConfigError, match="run_name"):
        from_dict({"run_name": name})


def test_plain_run_names_load():
    assert from_dict({"run_name": "team-quick_2.v1"}).run_name == "team-quick_2.v1"


def test_cli_set_run_name_outside_results_exits_2(tmp_path, capsys):
    """#8 contract: `--set run_name=../x` exits 2, writing nothing."""
    from spacelm.cli import main

    sets = [a for s in _tmp_paths(tmp_path) + ["run_name=../x"] for a in ("--set", s)]
    assert main(["ingest", "--config", str(QUICK)] + sets) == 2
    assert "--set run_name=../x: key 'run_name'" in capsys.readouterr().err
    assert not (tmp_path / "processed_dir").exists() and not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- #9 malformed --set
@pytest.mark.parametrize(
    "arg", ["retrieval.k_values=[3,5", "grading={a: 1, a: 2}", "retrieval..pool=3", "no_equals_sign", "=3"]
)
def test_malformed_set_names_the_argument(arg):
    """#9: `--set retrieval.k_values=[3,5` gave a YAML traceback with exit 1."""
    with pytest.raises(ConfigError) as e:
        parse_override(arg)
    assert str(e.value).startswith(f"--set {arg}:") and "\n" not in str(e.value)


def test_cli_malformed_set_exits_2_in_one_line(capsys):
    from spacelm.cli import main

    assert main(["status", "--config", str(QUICK), "--set", "retrieval.k_values=[3,5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spacelm: error: --set retrieval.k_values=[3,5: the value is not valid YAML")
    assert len(err.splitlines()) == 1


# --------------------------------------------------------------------------- #17 blame and corpus size
def test_errors_about_set_values_name_the_set_argument():
    """#17: errors about `--set` values blamed the YAML file."""
    with pytest.raises(ConfigError) as e:
        load_config(QUICK, sets=["retrieval.k_values=[0, 3]"])
    assert str(e.value).startswith("--set retrieval.k_values=[0, 3]: key 'retrieval.k_values'")
    with pytest.raises(ConfigError) as e:  # a section set whole is blamed for a key inside it
        load_config(QUICK, sets=["chunking={max_tokens: 0}"])
    assert str(e.value).startswith("--set chunking={max_tokens: 0}: key 'chunking.max_tokens'")
    with pytest.raises(ConfigError) as e:  # a key set below a plain value
        load_config(QUICK, sets=["seed.x=3"])
    assert str(e.value).startswith("--set seed.x=3: key 'seed' must be an integer")
    with pytest.raises(ConfigError) as e:  # of several --set arguments, the one that set the key
        load_config(QUICK, sets=["seed=4", "chunking.overlap=5000"])
    assert str(e.value).startswith("--set chunking.overlap=5000:")


def test_file_errors_still_name_the_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("chunking:\n  max_tokens: 0\n")
    with pytest.raises(ConfigError) as e:
        load_config(p, sets=["seed=4"])
    assert str(e.value).startswith(f"{p}: key 'chunking.max_tokens'")


def test_k_above_the_corpus_size_is_refused():
    """#17: k_values above the corpus size was accepted and recall@500 = 1.0 reported."""
    from spacelm.stages.preflight import check_corpus_size

    cfg = load_config(QUICK, sets=["retrieval.k_values=[3, 500]", "retrieval.pool_max=null"])
    with pytest.raises(
        ConfigError,
        match=r"^--set retrieval\.k_values=\[3, 500\]: .*holds 500, above the corpus's "
        r"199 chunks",
    ):
        check_corpus_size(cfg, 199)
    check_corpus_size(cfg, 500)
    cfg = from_dict({"answer": {"retrieve_k": 3}, "grading": {"top_k": [3, 5]}, "retrieval": {"k_values": [3]}})
    with pytest.raises(ConfigError, match=r"grading\.top_k.*holds 5.*4 chunks"):
        check_corpus_size(cfg, 4)


def test_status_says_a_run_would_refuse_the_config(capsys):
    """#3: `status` accepted a config whose grade stage could not run."""
    from spacelm.cli import main

    assert main(["status", "--config", str(QUICK), "--set", "retrieval.systems=[bm25, dense]"]) == 2
    out, err = capsys.readouterr()
    assert "a run would recompute" in out  # the table is still shown
    assert "--set retrieval.systems=[bm25, dense]: key 'retrieval.systems' lacks bm25+rerank, dense+rerank" in err


# --------------------------------------------------------------------------- issue 43: numbers and empty files
def test_an_empty_or_comment_only_config_is_refused(tmp_path):
    """Issue 43: an empty config ran as `quick` with every default (over the committed smoke run)."""
    for text in ("", "# only a comment\n", "\n\n"):
        p = tmp_path / "empty.yaml"
        p.write_text(text)
        with pytest.raises(ConfigError, match=r"empty\.yaml: is empty"):
            load_config(p)


def test_a_config_without_run_name_writes_to_its_own_run(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text("seed: 3\n")
    assert load_config(p).run_name == "mine"


@pytest.mark.parametrize(
    "setting,pattern",
    [
        ("retrieval.bm25.k1=.inf", r"retrieval\.bm25\.k1.*finite number, got inf"),
        ("models.judge.timeout_s=.inf", r"models\.judge\.timeout_s.*finite"),
        ("models.judge.temperature=.nan", r"models\.judge\.temperature.*finite"),
        ("seed=18446744073709551616", r"'seed'.*2\*\*63"),
        ("seed=4294967296", r"'seed' must be between 0 and 4294967295"),
    ],
)
def test_non_finite_and_out_of_range_numbers_are_refused_at_load(setting, pattern):
    """Issue 43: k1=.inf turned BM25's recall@3 from 1.0 to 0.0; timeout and temperature .inf failed later
    as "model backend failed"; seed=2**64 crashed synth after its model calls."""
    with pytest.raises(ConfigError, match=pattern) as e:
        load_config(QUICK, sets=[setting])
    assert str(e.value).startswith(f"--set {setting}")


def test_an_alias_bomb_gives_a_short_error(tmp_path):
    """Issue 43: a YAML alias bomb in a value printed a multi-gigabyte error message. Nine levels of nine
    references expand to 9**9 strings when printed whole; the error is refused in one short line."""
    levels = ['&l0 ["x","x","x","x","x","x","x","x","x"]']
    levels += [f"&l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    p = tmp_path / "bomb.yaml"
    p.write_text("run_name: bomb\nseed: [" + ", ".join(levels) + "]\n")
    import time

    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"expands to more than 100,000 values .* \(key 'seed'\)") as e:
        load_config(p)
    assert len(str(e.value)) < 600 and time.perf_counter() - t0 < 1.0
    # under an unknown key too, and a config just under the bound still loads (its own errors then say)
    p.write_text("run_name: bomb\nnot_a_key: [" + ", ".join(levels) + "]\n")
    with pytest.raises(ConfigError, match="key 'not_a_key'"):
        load_config(p)
    p.write_text("run_name: fine\nseed: [" + ", ".join(levels[:4]) + "]\n")  # 9**4 values
    with pytest.raises(ConfigError, match=r"'seed' must be an integer"):
        load_config(p)


def test_an_alias_bomb_in_a_set_value_is_refused_as_in_a_file():
    """Issue 57 #2: a `--set` value is bounded as a config file is, and its error quotes one line of it."""
    import time

    levels = ['&l0 ["x","x","x","x","x","x","x","x","x"]']
    levels += [f"&l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    bomb = "retrieval.k_values=[" + ", ".join(levels) + "]"
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"--set retrieval.k_values: expands to more than 100,000 values") as e:
        load_config(QUICK, sets=[bomb])
    assert len(str(e.value)) < 600 and time.perf_counter() - t0 < 1.0
    with pytest.raises(ConfigError) as e:
        load_config(QUICK, sets=["retrieval.k_values=[" + "3," * 5000])
    assert len(str(e.value)) < 600
