"""Every valid config yields a report (issue 57, item 1): hypothesis draws valid configs over a
tiny corpus (subsets of tasks, k values, top-k lists, systems, noise settings, judge-check
sources; optional stages and sections on and off) and `spacelm run` takes each to `report.md`
with stand-in models (`tests/test_plan.py`'s deterministic model and hashed-words encoder).

Each draw: exit 0, a report whose every table cell is a number, a dash or words (never `nan`,
`None`, a Python repr), no traceback in the report or the run's log. The fast tier draws 25
configs, the slow tier 200. Stages that do not depend on a drawn key are reused across draws
(one processed folder per chunk size), so a draw costs its model stages and the report. The
notebooks run in this process against each draw's run (`notebook_errors`: a kernel per notebook costs
more than a draw); tests/test_notebooks.py executes them in kernels on the tiny run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

from tests.conftest import machine_paths_in, make_beir
from tests.test_plan import HashEncoder, StandIn, _corpus

TASKS = ("direct_qa", "abstract_qa", "fact_checking", "summarization", "analysis")
FIRST_STAGE = ("bm25", "dense")
SYSTEMS = ("bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid")
# what a report table may say instead of a number (templates and findings' words)
# DRAW_DEBUG=1: a failing draw raises with its traceback (`spacelm run --debug`) instead of exiting 1
DEBUG = ["--debug"] if os.environ.get("DRAW_DEBUG") else []
BAD_CELL = re.compile(r"(?<![\w-])(nan|NaN|None|<NA>|NaT|inf|-inf|null)(?![\w-])|\{'|\['|\bTraceback\b")


def _golden(raw: Path) -> None:
    """Golden samples for every task, their passages sentences of the corpus (so the gold check
    finds them), plus one unanswerable direct_qa sample with no source chunk (issue 57's case)."""
    rows = []
    for t, task in enumerate(TASKS):
        for i in range(2):
            n = 4 * i + t % 4
            row = {"id": f"{task}-{i}", "task": task, "passage": f"section {n} notes that"}
            if task == "fact_checking":
                row.update(
                    question=f"Section {n} of the screening report says the work took hours.", verdict="supported"
                )
            elif task == "summarization":
                row["question"] = f"Summarise what section {n} of the screening report says."
            else:
                row["question"] = f"How long did the work in section {n} of the screening report take?"
            rows.append(row)
    rows.append(
        {
            "id": "direct_qa-unanswerable",
            "task": "direct_qa",
            "question": "How many crew members did the screening report's lunar lander carry?",
            "passage": "",
            "answerable": False,
            "unanswerable_reason": "out_of_corpus",
        }
    )
    (raw / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@st.composite
def configs(draw) -> dict:
    """A valid config's drawn part (merged over `base_config`)."""
    k_values = sorted(draw(st.sets(st.sampled_from([1, 2, 3, 5, 10]), min_size=1, max_size=4)))
    # graded retrievers are built before and after reranking (validation refuses them otherwise)
    retrievers = draw(st.lists(st.sampled_from(FIRST_STAGE), min_size=1, max_size=2, unique=True))
    extra = draw(st.lists(st.sampled_from(SYSTEMS), max_size=3, unique=True))
    systems = list(dict.fromkeys([*retrievers, *(f"{r}+rerank" for r in retrievers), *extra]))
    tasks = draw(st.lists(st.sampled_from(TASKS), min_size=1, max_size=3, unique=True))
    grading_on, answer_on = draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    cfg = {
        "chunking": {"max_tokens": draw(st.sampled_from([64, 96]))},
        "retrieval": {"systems": systems, "k_values": k_values, "pool": draw(st.sampled_from([10, 12]))},
        "synth": {
            "enabled": draw(st.sampled_from([True, True, True, False])),  # off: the golden questions alone
            "tasks": tasks,
            "n_fewshot": draw(st.integers(0, 2)),
            "max_chunks": draw(st.integers(1, 2)),
            "sampling": draw(st.sampled_from(["every_task", "stratified"])),
            "with_reference_answer": draw(st.booleans()),
            "filter_retriever": draw(st.sampled_from(["bm25", "dense", "union"])),
            "unanswerable": {
                "enabled": draw(st.booleans()),
                "kinds": draw(
                    st.lists(st.sampled_from(["out_of_corpus", "strong_claim"]), min_size=1, max_size=2, unique=True)
                ),
                "per_task": draw(st.sampled_from([1, 2])),
            },
        },
        "grading": {
            "enabled": grading_on,
            "retrievers": retrievers,
            "top_k": sorted(draw(st.sets(st.sampled_from([1, 2, 3, 5]), min_size=1, max_size=3))),
            "max_questions": draw(st.sampled_from([1, 2, None])),
            "question_sets": draw(st.sampled_from([["run"], ["run", "golden"]])),
            "consistency_check": draw(st.booleans()),
            # read through labels a run has not imported yet: its verdicts wait on them, the report still comes
            "instrument": draw(st.sampled_from(["judge", "labels", "both"])),
        },
        "answer": {
            "enabled": answer_on,
            "n_wrong_values": sorted(draw(st.sets(st.integers(0, 3), min_size=1, max_size=3))),
            "negative_n_wrong": draw(st.integers(0, 3)),
            "retrieve_k": draw(st.integers(1, 3)),
            "pipelines": draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=3, unique=True)),
            "retriever": draw(st.sampled_from(systems)),
            "max_questions": draw(st.sampled_from([1, 2])),
            "wrong_sampling": draw(st.sampled_from(["random", "hard", "same_document", "bm25"])),
            "claims": draw(st.booleans()),
            "refusal_judge": draw(st.booleans()),
            "gate": {"enabled": draw(st.booleans())},
            "instrument": draw(st.sampled_from(["judge", "labels", "both"])),
        },
        "judge_check": {
            "enabled": draw(st.booleans()),
            "sources": draw(st.sampled_from([[], ["tiny"], ["tiny", "absent"], ["graded"]])),
            "in_domain": draw(st.booleans()),
            "controls": draw(st.booleans()),
            "position_bias": draw(st.booleans()),
            "bias_audit": draw(st.booleans()),
        },
    }
    if draw(st.booleans()):  # the chunk-size study, retrieval only or with Table 1 at the other size
        other = {64: 96, 96: 64}[cfg["chunking"]["max_tokens"]]
        cfg["chunk_study"] = {"sizes": [other], "grade_questions": draw(st.sampled_from([0, 1]))}
    if draw(st.booleans()):  # an optional section, absent or present
        cfg["analysis_plan"] = {
            "fixed": "before the run",
            "findings": [{"id": "rerank_raises_grade_3_bm25_top3", "role": "primary"}],
        }
    return cfg


def base_config(tmp: Path, raw: Path, drawn: dict) -> dict:
    """The tiny project's config with the drawn keys over it; the processed folder is shared by
    the draws of one chunk size (ingest and chunk are reused), the rest is the draw's own."""
    sources = {
        "tiny": {"name": "tiny", "path": str(tmp / "beir"), "n_queries": 2},
        "graded": {"name": "graded", "path": str(tmp / "graded"), "n_queries": 1},
        "absent": {"name": "absent", "path": str(tmp / "no-such-folder")},
    }
    jc = dict(drawn["judge_check"], sources=[sources[s] for s in drawn["judge_check"]["sources"]])
    jc.update(n_in_domain=1, n_controls=2, n_bootstrap=30, min_pairs=2)
    size = drawn["chunking"]["max_tokens"]
    cfg = {
        "run_name": "draw",
        "corpus": {"raw_dir": str(raw), "golden_samples": str(raw / "golden_samples.jsonl")},
        "paths": {
            "processed_dir": str(tmp / f"processed-{size}"),
            "synthetic_dir": str(tmp / "draw" / "synthetic"),
            "results_dir": str(tmp / "draw" / "results"),
            "cache_dir": str(tmp / "cache"),
        },
        **{k: v for k, v in drawn.items() if k != "judge_check"},
        "judge_check": jc,
    }
    cfg["retrieval"] = dict(drawn["retrieval"], reranker={"kind": "biencoder", "model": "embedded:minilm"})
    cfg["synth"] = dict(drawn["synth"], filter_top_n=5)
    cfg["grading"] = dict(drawn["grading"], n_bootstrap=30)
    cfg["answer"] = dict(drawn["answer"], n_bootstrap=30)
    return cfg


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The tiny corpus (three documents of distinct sentences), golden samples for every task,
    two made-up labelled folders; made once for all draws."""
    tmp = tmp_path_factory.mktemp("property")
    raw = _corpus(tmp / "raw")
    _golden(raw)
    make_beir(tmp / "beir")
    make_beir(tmp / "graded", graded=True)
    return tmp, raw


def run_draw(tmp: Path, raw: Path, drawn: dict, monkeypatch) -> tuple[int, Path]:
    """`spacelm run --no-notebooks` on the drawn config, in this process, with stand-in models:
    (exit code, run folder). The draw's own folders are emptied first."""
    import shutil

    import spacelm.lib.retrieval.dense as retrieval
    from spacelm import cli
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.cache import CallCache
    from spacelm.runner.base import models_opened_by

    shutil.rmtree(tmp / "draw", ignore_errors=True)
    (tmp / "draw").mkdir()
    path = tmp / "draw" / "draw.yaml"
    path.write_text(yaml.safe_dump(base_config(tmp, raw, drawn), sort_keys=False))
    monkeypatch.setattr(retrieval, "Encoder", HashEncoder)
    opener = lambda c, d=None: LLM(c, CallCache(Path(d) / "llm_calls.sqlite") if d else None, StandIn())
    with models_opened_by(opener):
        code = cli.main(["run", "--config", str(path), "--no-notebooks", *DEBUG])
    StandIn.received.clear()
    return code, tmp / "draw" / "results" / "draw"


def refusal(path: Path) -> list[str]:
    """The check's errors for the draw's config: a config the run refuses before any stage."""
    from spacelm.check import run_check
    from spacelm.config import load_config

    return [str(p) for p in run_check(load_config(path)).errors]


def table_cells(markdown: str) -> list[tuple[int, str]]:
    """(line number, cell) of every body cell of every table in a Markdown text."""
    cells = []
    for n, line in enumerate(markdown.splitlines(), 1):
        if line.startswith("|") and not re.fullmatch(r"\|[\s:|-]+\|?", line):
            cells += [(n, c.strip()) for c in line.strip().strip("|").split("|")]
    return cells


def assert_report(code: int, run: Path) -> None:
    assert code == 0, f"exit {code}"
    report = run / "report.md"
    assert report.is_file(), "no report.md"
    text = report.read_text(encoding="utf-8")
    assert "Traceback" not in text
    cells = table_cells(text)
    assert cells, "the report holds no table"
    bad = [(n, c) for n, c in cells if BAD_CELL.search(c)]
    assert not bad, f"report.md cells that are neither numbers nor words: {bad[:5]}"
    log = (run / "logs" / "spacelm.log").read_text(encoding="utf-8")
    assert "Traceback" not in log, log[log.index("Traceback") - 300 :][:3000]


def _shown(value) -> str:
    """What a notebook shows of a value: its HTML when it has one (a frame, a styled table), else its repr."""
    html = getattr(value, "_repr_html_", None)
    return html() if callable(html) else repr(value)


def notebook_errors(run: Path, monkeypatch) -> dict[str, str]:
    """Each notebook's code cells run in this process against the draw's run folder, reuse-only, as
    its kernel runs them (a cell's last expression and every `display` shown as HTML); {notebook: the
    failing cell's error}. In process rather than one kernel per notebook: a kernel costs more than a
    draw, and a cell's error is the same in both."""
    from spacelm.config import load_config
    from spacelm.notebooks import NOTEBOOK_STAGES, notebook_dir, readable_config
    from spacelm.runner.base import REUSE_ONLY_ENV
    from spacelm.stages import stages_for

    config = readable_config(run / "config.resolved.yaml").resolve()
    cfg = load_config(config)
    present = {st.name for st in stages_for(cfg)}
    folder = notebook_dir(cfg)
    errors = {}
    with monkeypatch.context() as m:  # undone before the next draw (hypothesis reuses the test's monkeypatch)
        m.setenv("SPACELM_CONFIG", str(config))
        m.setenv(REUSE_ONLY_ENV, "1")
        m.chdir(folder)
        for src in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            stage = NOTEBOOK_STAGES.get(src.name[:2])
            if stage and stage not in present:
                continue  # the notebook of a stage this run does not have is skipped, as execute_notebooks does
            error = _run_cells(src)
            if error:
                errors[src.name] = error
    return errors


def _run_cells(src: Path) -> str | None:
    """The notebook's code cells run in one namespace; the first failing cell's error, or None."""
    import ast
    import traceback

    import matplotlib.pyplot as plt
    import nbformat

    ns = {"__name__": "__main__", "display": lambda *values, **kw: [_shown(v) for v in values]}
    try:
        for n, cell in enumerate(nbformat.read(src, as_version=4).cells):
            if cell.cell_type != "code":
                continue
            tree = ast.parse(cell.source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            try:
                exec(compile(tree, f"{src.name} cell {n}", "exec"), ns)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), f"{src.name} cell {n}", "eval"), ns)
                    if value is not None:
                        _shown(value)
            except Exception:
                return f"cell {n}: " + traceback.format_exc(limit=-4)
        return None
    finally:
        plt.close("all")


def _check(project, monkeypatch, drawn):
    tmp, raw = project
    code, run = run_draw(tmp, raw, drawn, monkeypatch)
    refused = refusal(tmp / "draw" / "draw.yaml") if code == 2 else []
    if refused:  # refused by validation before any stage, each reason naming its key
        assert all(re.search(r"\bkey '[\w.\[\]]+'", e) for e in refused), refused
        assert not (run / "manifest.json").exists(), "a refused run wrote a manifest"
        return
    assert_report(code, run)
    errors = notebook_errors(run, monkeypatch)
    assert not errors, "\n".join(f"{name}: {e}" for name, e in errors.items())
    # the draw's config names its folders by absolute paths under the temporary folder
    root = str(Path(__file__).resolve().parents[1])
    leaks = machine_paths_in(run, [str(tmp), os.path.realpath(tmp), root, os.path.expanduser("~") + "/"])
    assert not leaks, f"machine paths in the run folder: {leaks}"


# no shrinking: each draw is a whole run (seconds); the failing draw is printed as drawn
common = dict(
    phases=[Phase.explicit, Phase.generate],
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    print_blob=True,
)


def _named_case(**over) -> dict:
    """A draw fixed by hand: the issue's failing configs, whatever the seed draws."""
    drawn = {
        "chunking": {"max_tokens": 64},
        "retrieval": {"systems": ["bm25", "bm25+rerank"], "k_values": [3, 5, 10], "pool": 10},
        "synth": {"tasks": list(TASKS), "n_fewshot": 1, "max_chunks": 1, "filter_retriever": "bm25"},
        "grading": {"enabled": True, "retrievers": ["bm25"], "top_k": [3], "max_questions": 1},
        "answer": {"enabled": True, "n_wrong_values": [0, 3], "negative_n_wrong": 3, "pipelines": ["A", "B"]},
        "judge_check": {"enabled": False, "sources": []},
    }
    drawn["answer"] |= {"retriever": "bm25", "max_questions": 1}
    for section, keys in over.items():
        drawn[section] = dict(drawn[section], **keys)
    return drawn


# issue 57's two configs that ended without a report: a task whose only questions are golden
# unanswerable ones; k values without 10 (also run by name below, which bench/probe_inputs.py calls)
NAMED = {
    "only_direct_qa": _named_case(synth={"tasks": ["direct_qa"], "n_fewshot": 0}),
    "k_without_10": _named_case(retrieval={"systems": ["bm25", "bm25+rerank"], "k_values": [3, 5], "pool": 10}),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_issue_57_named_config_yields_a_report(project, monkeypatch, name):
    _check(project, monkeypatch, NAMED[name])


@example(drawn=NAMED["only_direct_qa"])
@example(drawn=NAMED["k_without_10"])
@settings(max_examples=int(os.environ.get("DRAWS", 25)), **common)  # DRAWS=N: another count
@given(drawn=configs())
def test_every_valid_config_yields_a_report(project, monkeypatch, drawn):
    _check(project, monkeypatch, drawn)


# the slow tier's 200 draws, in 8 parts of 25 under their own seeds, so pytest-xdist shares them
# among its workers (one test of 200 draws held one worker for most of CI's budget)
SLOW_PARTS = 8


def _slow_part(part: int):
    @pytest.mark.slow
    @seed(57_000 + part)
    @settings(max_examples=200 // SLOW_PARTS, database=None, **dict(common, derandomize=False))
    @given(drawn=configs())
    def test(project, monkeypatch, drawn):
        _check(project, monkeypatch, drawn)

    test.__name__ = f"test_every_valid_config_yields_a_report_200_draws_part{part}"
    return test


for _part in range(SLOW_PARTS):
    globals()[f"test_every_valid_config_yields_a_report_200_draws_part{_part}"] = _slow_part(_part)


def test_findings_skip_the_golden_set_when_the_run_questions_are_the_golden_ones(tiny_config):
    """Found by the draws above: with no synthetic question kept, the run's questions are the golden
    samples and grading/golden/ holds notes saying so; the findings stage read the note as paired
    tests (KeyError: 'comparison', no report). It now adds no golden rows."""
    import pandas as pd

    from spacelm.lib import names
    from spacelm.stages.findings import golden_rows

    note = pd.DataFrame([{"note": "the run's own questions are the golden samples: the run set's tables are theirs"}])
    for f in (names.GOLDEN_PAIRED_TESTS, names.GOLDEN_RELEVANT_SHARES):
        (tiny_config.run_dir / f).parent.mkdir(parents=True, exist_ok=True)
        note.to_csv(tiny_config.run_dir / f, index=False)
    assert golden_rows(tiny_config) == []
