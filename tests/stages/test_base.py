"""The stage declarations: every declared input makes its stage and everything downstream
stale (and nothing upstream); a failed stage keeps its previous outputs and is stale."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from spacelm.pipeline import status
from spacelm.runner import base
from spacelm.runner.base import Stage, execute, freshness, stage_inputs
from spacelm.stages import BY_NAME, STAGES

CHECKOUT = Path(__file__).resolve().parents[2]


# every stage in pipeline order, the optional chunk-sizes included (it runs after retrieve)
ORDERED = STAGES[: STAGES.index(BY_NAME["retrieve"]) + 1] + [BY_NAME["chunk-sizes"]]
ORDERED += STAGES[STAGES.index(BY_NAME["retrieve"]) + 1 :]


def _downstream(name: str) -> set[str]:
    out = {name}
    for s in ORDERED:  # in pipeline order, so one pass closes the set
        if any(a in out for a in s.after):
            out.add(s.name)
    return out


def _fake_complete(cfg) -> None:
    """Mark every stage complete under `cfg` without running a model: a stand-in build that
    touches the declared outputs, executed through the real machinery."""
    for s in STAGES:

        def build(cfg, out, s=s):
            for p in s.outputs(cfg):
                staged = out(p)
                if p.suffix:
                    staged.write_text("x")
                else:
                    staged.mkdir(parents=True, exist_ok=True)
                    (staged / "f").write_text("x")
            return {}

        # files a stage reads but no stage writes here (the corpus) already exist
        for p in s.reads(cfg):
            if not Path(p).exists():
                Path(p).parent.mkdir(parents=True, exist_ok=True)
                Path(p).write_text("{}\n")
        execute(dataclasses.replace(s, build=build), cfg, force=True)


def _mutate_config(cfg, dotted: str) -> str:
    """Change the config key `dotted` (a whole section: its first plain field); the key changed."""
    parts = dotted.split(".")
    path = list(parts)
    obj = cfg
    for p in parts[:-1]:
        obj = getattr(obj, p)
    value = getattr(obj, parts[-1])
    while dataclasses.is_dataclass(value):  # a whole section: change its first plain field
        obj = value
        f = next(f for f in dataclasses.fields(value) if not dataclasses.is_dataclass(getattr(value, f.name)))
        parts = [f.name]
        path.append(f.name)
        value = getattr(value, f.name)
    if isinstance(value, bool):
        new = not value
    elif isinstance(value, (int, float)):
        new = value + 1
    elif isinstance(value, str):
        new = value + "-changed"
    elif isinstance(value, list):
        new = value + value[:1] if value else ["x"]
    else:
        new = 7
    setattr(obj, parts[-1], new)
    return ".".join(path)


def _covers(a: str, b: str) -> bool:
    """Input `a` holds input `b`: the same input, or a config section and a key inside it."""
    return a == b or (a.startswith("config:") and b.startswith(a + "."))


def _cases():
    """(stage, input kind) pairs to vary; the concrete input is picked at run time."""
    return [(s.name, kind) for s in STAGES for kind in ("config", "file", "prompt", "model", "code", "defs")]


@pytest.mark.parametrize("stage_name,kind", _cases())
def test_every_declared_input_makes_its_stage_and_downstream_stale(tiny_config, monkeypatch, stage_name, kind):
    cfg = tiny_config
    _fake_complete(cfg)
    assert all(r["state"] == "up to date" for r in status(cfg)), status(cfg)
    stage = BY_NAME[stage_name]
    keys = [k for k in stage_inputs(stage, cfg) if k.startswith(kind + ":")]
    if not keys:
        pytest.skip(f"{stage_name} declares no {kind} input")
    # which stages declare which inputs does not change while their hashes do: listed once
    declared = {s.name: list(stage_inputs(s, cfg)) for s in ORDERED}
    for key in keys:
        name = key.split(":", 1)[1]
        changed = key
        with monkeypatch.context() as m:
            if kind == "config":
                import copy

                saved = copy.deepcopy(cfg)
                changed = "config:" + _mutate_config(cfg, name)
            elif kind == "file":
                p = next(p for p in stage.reads(cfg) if key == f"file:{base.display_path(cfg, Path(p))}")
                in_checkout = Path(p).resolve().is_relative_to(CHECKOUT)
                if in_checkout:  # a file of the package (a template) is never edited: other tests read it
                    orig = base.file_hash
                    edited = lambda q, orig=orig, p=Path(p): orig(q) + ("+" if Path(q) == p else "")  # noqa: E731
                    m.setattr(base, "file_hash", edited)
                else:
                    saved_bytes = Path(p).read_bytes() if Path(p).is_file() else None
                    Path(p).write_bytes((saved_bytes or b"") + b"\n")
            elif kind == "prompt":
                import spacelm.lib.llm.prompting as P

                orig = P.template_hash
                m.setattr(
                    P, "template_hash", lambda t, orig=orig, name=name: orig(t) + ("-edited" if t == name else "")
                )
            elif kind == "model":
                orig = base.model_hash
                role = name
                m.setattr(
                    base,
                    "model_hash",
                    lambda c, spec, r, orig=orig, role=role: orig(c, spec, r) + ("-other" if r == role else ""),
                )
            elif kind in ("code", "defs"):
                orig = base.code_inputs
                m.setattr(
                    base,
                    "code_inputs",
                    lambda mods, orig=orig, key=key: {
                        k: v + ("-edited" if k == key else "") for k, v in orig(mods).items()
                    },
                )
            rows = {r["stage"]: r for r in status(cfg)}
            own = rows[stage_name]
            assert own["state"] == "stale" and key in own["changed"] + [
                c for c in own["changed"] if c.startswith(kind)
            ], own
            # every stage that declares this same input is stale too (a model or module can be shared), and so is
            # everything downstream of those; nothing else
            declaring = {
                s.name
                for s in ORDERED
                if s.name == stage_name or any(_covers(k, key) or _covers(k, changed) for k in declared[s.name])
            }
            expected = set().union(*(_downstream(n) for n in declaring))
            # (a change that switches on the optional chunk-sizes stage finds it never run)
            for s in (s for s in ORDERED if s.name in rows):
                assert (rows[s.name]["state"] != "up to date") == (s.name in expected), (key, s.name, rows[s.name])
            if kind == "config":
                for f in dataclasses.fields(cfg):
                    setattr(cfg, f.name, getattr(saved, f.name))
            elif kind == "file" and not in_checkout:
                if saved_bytes is None:
                    Path(p).unlink()
                else:
                    Path(p).write_bytes(saved_bytes)
        final = status(cfg)
        assert all(r["state"] == "up to date" for r in final), (key, [r for r in final if r["state"] != "up to date"])


def test_status_names_the_changed_input(tiny_config):
    _fake_complete(tiny_config)
    tiny_config.grading.top_k = [1, 2]
    rows = {r["stage"]: r for r in status(tiny_config)}
    assert rows["grade"]["changed"] == ["config:grading"]
    assert rows["answer"]["state"] == "up to date" and rows["retrieve"]["state"] == "up to date"


def test_never_run_stages(tiny_config):
    assert {r["state"] for r in status(tiny_config)} == {"never run"}


def test_failed_stage_keeps_previous_outputs_and_is_stale(tiny_config):
    """A build that fails after writing its first output leaves the earlier outputs in place
    and the stage stale; the next run recomputes it."""
    cfg = tiny_config
    first = execute(BY_NAME["ingest"], cfg)
    assert not first["skipped"]
    before = {p: p.read_bytes() for p in BY_NAME["ingest"].outputs(cfg)}

    def failing(cfg, out):
        out(BY_NAME["ingest"].outputs(cfg)[0]).write_text("half-written\n")
        raise RuntimeError("boom")

    cfg.ingest.min_doc_chars = 100  # a changed input, so the stage is rebuilt
    with pytest.raises(RuntimeError, match="boom"):
        execute(dataclasses.replace(BY_NAME["ingest"], build=failing), cfg)
    assert {p: p.read_bytes() for p in before} == before
    assert not list(cfg.processed_dir.glob(".staging-*"))
    state, reasons = freshness(BY_NAME["ingest"], cfg)
    assert state == "stale" and reasons == ["the last run did not finish"]
    again = execute(BY_NAME["ingest"], cfg)
    assert not again["skipped"] and freshness(BY_NAME["ingest"], cfg)[0] == "up to date"


def test_interrupted_stage_is_stale_even_with_the_same_inputs(tiny_config):
    cfg = tiny_config
    execute(BY_NAME["ingest"], cfg)

    def interrupted(cfg, out):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        execute(dataclasses.replace(BY_NAME["ingest"], build=interrupted), cfg, force=True)
    assert freshness(BY_NAME["ingest"], cfg)[0] == "stale"
    assert not execute(BY_NAME["ingest"], cfg)["skipped"]


def test_reuse_only_mode_refuses_to_recompute(tiny_config, monkeypatch):
    monkeypatch.setenv(base.REUSE_ONLY_ENV, "1")
    with pytest.raises(base.StaleStage, match="never run"):
        execute(BY_NAME["ingest"], tiny_config)
    monkeypatch.delenv(base.REUSE_ONLY_ENV)
    execute(BY_NAME["ingest"], tiny_config)
    monkeypatch.setenv(base.REUSE_ONLY_ENV, "1")
    assert execute(BY_NAME["ingest"], tiny_config)["skipped"]


def test_golden_samples_change_does_not_reingest(tiny_config, tiny_corpus):
    (tiny_corpus / "golden_samples.jsonl").write_text('{"id": "a"}\n')
    execute(BY_NAME["ingest"], tiny_config)
    (tiny_corpus / "golden_samples.jsonl").write_text('{"id": "b"}\n')
    tiny_config.corpus.golden_samples = str(tiny_corpus / "other.jsonl")
    assert freshness(BY_NAME["ingest"], tiny_config)[0] == "up to date"


def test_every_stage_declares_what_it_reads():
    for s in STAGES:
        assert isinstance(s, Stage) and s.code and s.doc, s.name
        module = s.name.replace("-", "_")
        assert f"spacelm.stages.{module}" in s.code, s.name


KILLED = """
import dataclasses, sys, time
from spacelm.config import from_dict
from spacelm.stages import BY_NAME
from spacelm.runner.base import execute
import json
cfg = from_dict(json.loads(sys.argv[1]))
def slow(cfg, out):
    out(BY_NAME["ingest"].outputs(cfg)[0]).write_text("half-written\\n")
    print("building", flush=True)
    time.sleep(60)
execute(dataclasses.replace(BY_NAME["ingest"], build=slow), cfg, force=True)
"""


def test_kill_9_mid_stage_leaves_it_stale_and_the_next_run_completes_it(tiny_config):
    """A process killed with SIGKILL while building: the earlier outputs stay, the stage is
    stale, and the next run rebuilds it (and cleans the half-written staging folder)."""
    import signal
    import subprocess
    import sys

    cfg = tiny_config
    execute(BY_NAME["ingest"], cfg)
    before = {p: p.read_bytes() for p in BY_NAME["ingest"].outputs(cfg)}
    data = json.dumps(dict(cfg.to_dict(), paths=cfg.to_dict()["paths"]))
    p = subprocess.Popen([sys.executable, "-c", KILLED, data], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "building"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert {q: q.read_bytes() for q in before} == before
    assert freshness(BY_NAME["ingest"], cfg) == ("stale", ["the last run did not finish"])
    assert [r["state"] for r in status(cfg)][:1] == ["stale"]
    again = execute(BY_NAME["ingest"], cfg)
    assert not again["skipped"] and freshness(BY_NAME["ingest"], cfg)[0] == "up to date"
    assert not list(cfg.processed_dir.glob(".staging-*"))


def test_a_file_inside_a_staged_output_folder_is_refused(tmp_path):
    """Writing to out(folder / name) after out(folder) would be lost when the folder's commit
    replaces it: the staging refuses it and names the folder."""
    from spacelm.runner.base import Staging

    out = Staging("x")
    folder = out(tmp_path / "chunk_sizes" / "512")
    folder.mkdir(parents=True)
    (folder / "ok.csv").write_text("a\n")  # inside the staged folder: kept
    with pytest.raises(ValueError, match="inside the staged output"):
        out(tmp_path / "chunk_sizes" / "512" / "paired_tests.csv")
    out.commit()
    assert (tmp_path / "chunk_sizes" / "512" / "ok.csv").read_text() == "a\n"


# --------------------------------------------------------------------------- which code a stage runs
def _package_copy(tmp_path) -> Path:
    """The package's Python source copied into `tmp_path` (to be edited there)."""
    import spacelm

    pkg = Path(spacelm.__file__).parent
    root = tmp_path / "spacelm"
    for f in pkg.rglob("*.py"):
        dest = root / f.relative_to(pkg)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def _add_statement(root: Path, rel: str, function: str) -> None:
    """A statement added at the top of `function`'s body in `rel`: a change to what it does."""
    p = root / rel
    text = p.read_text(encoding="utf-8")
    i = text.index(f"def {function}(")
    j = text.index(":\n", i) + 2
    indent = " " * (len(text[j:]) - len(text[j:].lstrip(" ")))
    p.write_text(text[:j] + f"{indent}_edited = 1\n" + text[j:], encoding="utf-8")


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def test_a_stage_is_stale_when_the_code_it_runs_changes_not_any_module_it_imports(tmp_path):
    """train-reranker imports (through runner.base and lib.llm) lib.answer and a hundred more modules;
    only an edit to code it runs changes its code inputs: its own module, a function it calls (a
    layer down), a config method it calls on the config it is handed."""
    from spacelm.runner.code_reach import Source, code_hashes

    root = _package_copy(tmp_path)
    stage = ("spacelm.stages.train_reranker",)
    inputs = lambda: code_hashes(Source(root), stage)  # noqa: E731
    before = inputs()
    assert "code:spacelm.stages.train_reranker" in before and "defs:spacelm.lib.retrieval.cross_encoder" in before
    assert not any("lib.answer" in k for k in before)

    # not the code it runs: another library's module, an io function it never calls, the stage machinery,
    # a docstring and a comment of a function it does call
    _add_statement(root, "lib/answer/claims.py", "claim_summary")
    _add_statement(root, "lib/io.py", "sha256_text")
    _add_statement(root, "runner/base.py", "execute")
    p = root / "lib/retrieval/cross_encoder.py"
    text = p.read_text().replace("def held_out(", "# a comment\ndef held_out(", 1)
    doc = text.index('"""', text.index("def held_out(")) + 3
    p.write_text(text[:doc] + "Edited words. " + text[doc:])
    assert inputs() == before

    # the code it runs: a function it calls, a method of the config, a helper two calls down, its own module
    cases = [
        ("lib/retrieval/cross_encoder.py", "held_out", "defs:spacelm.lib.retrieval.cross_encoder"),
        ("config/schema.py", "question_writing", "defs:spacelm.config.schema"),
        ("lib/io.py", "atomic_open", "defs:spacelm.lib.io"),
        ("stages/train_reranker.py", "pair_row", "code:spacelm.stages.train_reranker"),
    ]
    for rel, function, key in cases:
        now = inputs()
        _add_statement(root, rel, function)
        assert _changed(now, inputs()) == [key], (rel, _changed(now, inputs()))


def test_the_planners_stand_ins_are_not_code_a_stage_runs(tmp_path):
    """synth calls `llm.chat_many`: the LLM front end's method is code it runs, `spacelm plan`'s
    stand-in (PlanLLM.chat_many) is not, so planning work never makes a committed run stale."""
    from spacelm.runner.code_reach import Source, code_hashes

    root = _package_copy(tmp_path)
    inputs = lambda: code_hashes(Source(root), ("spacelm.stages.synth",))  # noqa: E731
    before = inputs()
    _add_statement(root, "lib/llm/dry_run.py", "chat_many")
    _add_statement(root, "lib/llm/dry_run.py", "search")
    assert inputs() == before
    _add_statement(root, "lib/llm/frontend.py", "chat_many")
    assert _changed(before, inputs()) == ["defs:spacelm.lib.llm.frontend"]


def test_status_over_an_edited_copy_of_the_package(tiny_config, tmp_path, monkeypatch):
    """Through `status`: an edit to a module the chunk stage never runs leaves it up to date; an edit to
    the chunking function makes it (and what reads its chunks) stale."""
    from spacelm.runner.code_reach import Source, code_hashes

    root = _package_copy(tmp_path)
    monkeypatch.setattr(base, "code_inputs", lambda mods: code_hashes(Source(root), mods))
    _fake_complete(tiny_config)
    _add_statement(root, "lib/answer/claims.py", "claim_summary")
    rows = {r["stage"]: r for r in status(tiny_config)}
    assert rows["chunk"]["state"] == rows["ingest"]["state"] == rows["retrieve"]["state"] == "up to date", rows
    _add_statement(root, "lib/ingest/chunking.py", "chunk_document")
    rows = {r["stage"]: r for r in status(tiny_config)}
    assert rows["chunk"]["state"] == "stale" and rows["chunk"]["changed"] == ["defs:spacelm.lib.ingest.chunking"]
    assert rows["ingest"]["state"] == "up to date" and rows["synth"]["state"] == "stale"


def test_a_stamp_of_the_old_rule_compares_the_modules_run_now_by_their_files(tiny_config):
    """A stamp written when a stage's code was its import closure (`code:<module>`: file hashes, no
    `code_rule`): current while every module the stage runs now hashes as recorded (a module it no
    longer runs is no reason); stale naming the module otherwise; reused, it is stamped by the new rule."""
    _fake_complete(tiny_config)
    stage = BY_NAME["chunk"]
    path = stage.stamp_path(tiny_config)
    stamp = json.loads(path.read_text())
    now = stamp["inputs"]
    old = {k: v for k, v in now.items() if not k.startswith(("code:", "defs:"))}
    for k in now:
        if k.startswith(("code:", "defs:")):
            old["code:" + k.split(":", 1)[1]] = base.module_hash(k.split(":", 1)[1])
    old["code:spacelm.lib.answer.claims"] = "0000000000000000"  # in the old closure; not run now
    old_stamp = {k: v for k, v in stamp.items() if k != "code_rule"} | {"inputs": old}
    path.write_text(json.dumps(old_stamp))
    assert freshness(stage, tiny_config) == ("up to date", [])

    path.write_text(json.dumps(old_stamp | {"inputs": old | {"code:spacelm.lib.ingest.chunking": "edited"}}))
    assert freshness(stage, tiny_config) == ("stale", ["defs:spacelm.lib.ingest.chunking"])

    path.write_text(json.dumps(old_stamp))
    assert execute(stage, tiny_config)["skipped"]
    again = json.loads(path.read_text())
    assert again["code_rule"] == base.CODE_RULE and again["inputs"] == now and again["summary"] == stamp["summary"]
