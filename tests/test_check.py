"""`spacelm check` (issue 42): every model-free check of a config and its inputs, one line per
problem, exit 2 on any error; `status` prints the same problems and `run` refuses before it
writes anything."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from spacelm.check import run_check
from spacelm.cli import main

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs" / "quick.yaml"
GOLDEN = ROOT / "data" / "raw" / "golden_samples.jsonl"
SCIFACT = ROOT.parent / "shared" / "beir" / "scifact"
needs_scifact = pytest.mark.skipif(
    not (SCIFACT / "corpus.jsonl").is_file(),
    reason="../shared/beir/scifact (the quick config's reranker training set) not beside the checkout",
)
MISSING = {
    "id": "gs-not-there",
    "task": "direct_qa",
    "question": "At what temperature does lunar regolith sinter in a microwave furnace?",
    "passage": "Lunar regolith sinters at about 1,100 degrees Celsius in a microwave furnace under vacuum.",
}


def _tmp_paths(tmp_path: Path) -> list[str]:
    """--set arguments that keep every folder a command writes inside `tmp_path`."""
    out = []
    for k in ("processed_dir", "synthetic_dir", "results_dir", "cache_dir"):
        out += ["--set", f"paths.{k}={tmp_path / k}"]
    return out


def _golden_with_missing_passage(tmp_path: Path) -> tuple[Path, int]:
    """The quick golden file with a sample whose passage no document holds, as line 4."""
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    lines.insert(3, json.dumps(MISSING))
    p = tmp_path / "golden.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p, 4


@needs_scifact
def test_quick_config_is_clean(tmp_path, capsys):
    assert main(["check", "--config", str(QUICK), *_tmp_paths(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("check passed: 0 errors")
    assert "40 of 40 answerable found" in out
    assert "error" not in err


def test_golden_passage_not_in_corpus_is_one_line_naming_file_and_line(tmp_path, capsys):
    golden, line = _golden_with_missing_passage(tmp_path)
    args = ["check", "--config", str(QUICK), "--set", f"corpus.golden_samples={golden}", *_tmp_paths(tmp_path)]
    assert main(args) == 2
    out, err = capsys.readouterr()
    named = [x for x in err.splitlines() if "gs-not-there" in x]
    assert named == [
        f"spacelm: error: {golden}:{line}: golden sample 'gs-not-there': its passage was not found in any chunk "
        "of the corpus; fix the passage (or doc_id), or add the document it comes from"
    ]
    assert "Warning" not in err  # one line of the check, not a Python warning per sample
    assert out.startswith("check failed: 1 error")


def test_every_bad_golden_line_is_named_at_once(tmp_path, capsys):
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    lines[1] = '{"id": "gs-direct-02", "task": "direct_qa"'  # not JSON
    lines[6] = json.dumps({"id": "x", "task": "recall", "question": "q?", "passage": "p"})
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["check", "--config", str(QUICK), "--set", f"corpus.golden_samples={golden}", *_tmp_paths(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{golden}:2: not valid JSON" in err and f"{golden}:7: unknown task 'recall'" in err


def test_missing_corpus_folder_is_an_error(tmp_path, capsys):
    gone = tmp_path / "no-corpus"
    assert main(["check", "--config", str(QUICK), "--set", f"corpus.raw_dir={gone}", *_tmp_paths(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"spacelm: error: corpus.raw_dir: {gone} is not a folder" in err
    assert "passages were not looked up in the corpus: fix the corpus folder first" in err


def test_corpus_folder_against_its_list(tmp_path):
    """A listed corpus: each file missing or altered is one error naming it and the fetch command."""
    from spacelm.config import load_config

    folder = tmp_path / "corpus"
    folder.mkdir()
    listed = tmp_path / "team.tsv"
    listed.write_text(
        "file\tsha256\tbytes\tpages\tlicence\tsource\tattribution\n"
        f"a.txt\t{'0' * 64}\t5\t1\tCC-BY-4.0\thttps://example.org/a.txt\tA, CC BY 4.0\n"
    )
    cfg = load_config(QUICK, sets=[f"corpus.raw_dir={folder}", f"corpus.file_list={listed}"])
    rep = run_check(cfg, stages=["ingest"])
    (err,) = [str(p) for p in rep.errors]
    assert f"{folder / 'a.txt'}: missing" in err and "spacelm corpus fetch team" in err


def test_judge_check_sources(tiny_config, tmp_path):
    """A missing source folder is a warning (judge-check reports it not run); a folder without its
    qrels is an error (judge-check would stop on it)."""
    rows = [
        {
            "id": f"d{i}",
            "task": "direct_qa",
            "question": f"What do operators compare, note {i}?",
            "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre.",
        }
        for i in range(2)
    ]
    (Path(tiny_config.corpus.raw_dir) / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    src = tiny_config.judge_check.sources[0]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "corpus.jsonl").write_text("")
    (broken / "queries.jsonl").write_text("")
    cfg = dataclasses.replace(
        tiny_config,
        synth=dataclasses.replace(tiny_config.synth, tasks=["direct_qa"], n_fewshot=2),
        judge_check=dataclasses.replace(
            tiny_config.judge_check,
            sources=[
                src,
                dataclasses.replace(src, name="absent", path=str(tmp_path / "nowhere"), in_domain=True),
                dataclasses.replace(src, name="broken", path=str(broken)),
            ],
        ),
    )
    rep = run_check(cfg, stages=["judge-check"])
    (warning,) = [str(p) for p in rep.warnings]
    assert (
        warning.startswith("warning: judge_check.sources[1] (absent):") and "report this source as not run" in warning
    )
    assert "'no evidence'" in warning  # an in-domain source: Table 1's verdicts need it
    (error,) = [str(p) for p in rep.errors]
    assert error.startswith("error: judge_check.sources[2] (broken):") and "qrels/test.tsv missing" in error
    assert "golden passages: 2 of 2 answerable found in the chunks" in rep.summary


def test_status_prints_the_problems_and_exits_2(tmp_path, capsys):
    golden, line = _golden_with_missing_passage(tmp_path)
    args = ["status", "--config", str(QUICK), "--set", f"corpus.golden_samples={golden}", *_tmp_paths(tmp_path)]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert "a run would refuse this config: 1 error" in out and f"{golden}:{line}: golden sample" in err


def test_refused_run_writes_nothing(tmp_path, capsys, monkeypatch):
    """`spacelm run` refuses before its locks, the resolved config and the manifest: a committed
    run folder's config.resolved.yaml is left as it was, and no stage runs."""
    from spacelm.runner import base

    def no_stage(*a, **k):
        raise AssertionError("a stage ran")

    monkeypatch.setattr(base, "execute", no_stage)
    run_dir = tmp_path / "results_dir" / "quick"
    run_dir.mkdir(parents=True)
    resolved = run_dir / "config.resolved.yaml"
    resolved.write_text("# the committed run's resolved config\nrun_name: quick\n")
    before = sorted(p.name for p in run_dir.iterdir())
    golden, line = _golden_with_missing_passage(tmp_path)
    args = ["run", "--config", str(QUICK), "--no-notebooks", "--set", f"corpus.golden_samples={golden}"]
    assert main(args + _tmp_paths(tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"{golden}:{line}: golden sample 'gs-not-there'" in err and "refused before writing anything" in err
    assert resolved.read_text() == "# the committed run's resolved config\nrun_name: quick\n"
    assert sorted(p.name for p in run_dir.iterdir()) == before  # no manifest, no lock, no log
    assert not (tmp_path / "processed_dir").exists() and not (tmp_path / "synthetic_dir").exists()


def test_a_run_that_writes_no_questions_is_refused_until_they_exist(tiny_config):
    import pytest

    from spacelm.config import ConfigError
    from spacelm.config.validate import check_stage_needs
    from spacelm.runner.data import questions_path
    from spacelm.stages import stages_for

    before = tiny_config.section_hash("synth")
    tiny_config.synth.enabled = False
    assert tiny_config.section_hash("synth") == before  # a switch, no input of what a stage writes
    stages = [s.name for s in stages_for(tiny_config)]
    assert "synth" not in stages and "retrieve" in stages
    with pytest.raises(ConfigError, match="synth.enabled"):
        check_stage_needs(tiny_config, stages)
    p = questions_path(tiny_config)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('{"qid": "q0", "question": "what?", "kept": true, "answerable": true}\n')
    check_stage_needs(tiny_config, stages)  # the questions another config wrote are read
    from spacelm.pipeline import write_folders

    assert tiny_config.synthetic_dir not in write_folders(tiny_config)  # read, never locked
