"""What a stage is: one declaration of everything it reads, and the machinery built on it.

A :class:`Stage` names its config sections, the files it reads, the prompt templates it
renders, the models it calls and the code it runs. From that one declaration
come the stage's *inputs* (name → short hash), its fingerprint, the stamp that says its
outputs are current, the manifest entry, and `spacelm status`, which names the inputs that
changed.

A stage is atomic: `build` writes every output into a staging folder beside its final place
(through the ``out`` function it is given); only when the build returns are the outputs moved
into place, and the stamp is written last. A build that fails or is killed leaves the previous
complete outputs untouched and the stage marked stale.

Every stage is written once, in two parts: `compute(inputs..., models)` returns a typed result
(the stage's records and figures) and writes nothing; `write(result, ...)` turns it into files.
`compute` reaches every model through one :class:`ModelTurns`: `spacelm run` gives it the real
models, `spacelm plan` a stand-in that counts the calls (`spacelm.plan.PlanTurns`), and tests
give it scripted models with :func:`models_opened_by`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..lib.io import sha256_file_remembered, write_json
from ..lib.redact import redact_obj

REUSE_ONLY_ENV = "SPACELM_REUSE_ONLY"


class StaleStage(RuntimeError):
    """A stage would have to be recomputed where only reuse is allowed (a notebook executed by
    `spacelm run` never recomputes a stage with other settings than its run's)."""


def _const(value):
    return lambda cfg: value


@dataclass(frozen=True)
class Stage:
    """The declaration of a pipeline stage. Every callable takes the run's :class:`Config`.

    **When its code changed.** A stage goes stale when the code it runs changes, not when any
    module it imports does. Its code is its own module, all of it (plus modules listed by hand in
    `code`), and the functions, classes and constants of other spacelm modules it reaches by name,
    followed through what those use: input `code:<module>` hashes a module counted whole,
    `defs:<module>` the definitions reached in another. A class counts by its body outside its
    methods and its special methods; any other method counts where reached code uses its name as
    an attribute (`x.setup()`) and its class lives in a module reached (the config's always). The
    config classes' fields are the config sections, hashed on their own; the stage machinery
    (`execute`, the stamp) and the planner's stand-ins are left out; comments, docstrings and layout never count
    (`spacelm.runner.code_reach`)."""

    name: str
    home: Callable[[Config], Path]  # folder holding the stamp (and the stage's outputs, mostly)
    outputs: Callable[[Config], list[Path]]  # every file or folder the stage writes
    build: Callable[[Config, Callable[[Path], Path]], dict]  # writes through out(final) -> staged path
    sections: Callable[[Config], list[str]] = _const([])  # dotted config sections it reads
    reads: Callable[[Config], list[Path]] = _const([])  # files it reads
    prompts: Callable[[Config], list[str]] = _const([])  # prompt templates it renders
    models: Callable[[Config], dict] = _const({})  # role -> model spec (config value)
    code: tuple[str, ...] = ()  # modules counted whole: the declaring module plus any listed by hand
    doc: str = ""
    after: tuple[str, ...] = field(default=())  # stages whose outputs it reads
    module: str = ""  # the module declaring the stage (default: its build function's)

    def __post_init__(self):
        """`code` becomes the declaring module and any listed by hand, sorted."""
        module = self.module or self.build.__module__
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "code", tuple(sorted({module, *self.code})))

    def stamp_path(self, cfg: Config) -> Path:
        return self.home(cfg) / f".{self.name}.stamp.json"


# --------------------------------------------------------------------------- inputs
@functools.cache
def _module_origin(module: str) -> str | None:
    spec = importlib.util.find_spec(module)
    return spec.origin if spec is not None and spec.origin else None


def module_hash(module: str) -> str:
    """A module's file's short sha256: how stamps written before `CODE_RULE` recorded its code."""
    origin = _module_origin(module)
    if origin is None or not os.path.isfile(origin):
        return "<missing>"
    return sha256_file_remembered(origin)[:16]


def file_hash(path: Path) -> str:
    p = Path(path)
    if p.is_file():
        return sha256_file_remembered(p)[:16]
    if p.is_dir():
        return _folder_hash(p, sorted(q for q in p.rglob("*") if q.is_file()))
    return "<missing>"


def _folder_hash(p: Path, files: list[Path]) -> str:
    """A folder's short hash over `files` (in it): their names relative to it and their contents."""
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(p)).encode() + b"\0" + sha256_file_remembered(f).encode())
    return h.hexdigest()[:16]


def public_hash(path: Path, root: str | None) -> str:
    """`file_hash` as a clone can check it: a folder's hash leaves out the files in it git ignores
    (a clone never holds them, such as the real corpus's `beir/corpus.jsonl`)."""
    p = Path(path)
    if not p.is_dir() or not root:
        return file_hash(p)
    from .provenance import git_ignored

    files = sorted(q for q in p.rglob("*") if q.is_file())
    rel = {}
    for f in files:
        try:
            rel[f] = str(f.resolve().relative_to(Path(root).resolve()))
        except ValueError:  # outside the project: nothing there is git's to ignore
            rel[f] = None
    ignored = git_ignored(root, [r for r in rel.values() if r])
    return _folder_hash(p, [f for f in files if rel[f] not in ignored])


def model_hash(cfg: Config, spec: str, role: str) -> str:
    """A model's identity without loading it: an embedded model's file's sha256 when it is
    assembled (so a damaged file shows as a changed model), else its recorded sha256; a local
    file's sha256 (both remembered by inode, size, mtime and ctime); or the name (plus server
    URL) otherwise."""
    from ..lib.llm.models import (
        EMBEDDED,
        ModelNotFound,
        file_sha256,
        is_trained,
        model_path,
        read_trained,
        trained_name,
    )

    if is_trained(spec):  # a model the suite trained: its recorded sha256, or "untrained" until it exists
        try:
            return read_trained(trained_name(spec))["sha256"][:16]
        except ModelNotFound:
            return f"untrained:{spec}"
    if spec.startswith("embedded:"):
        name = spec.split(":", 1)[1]
        m = EMBEDDED.get(name)
        if m is None:
            return f"unknown:{spec}"
        try:
            where = model_path(name, assemble=False)  # never assembles: status stays cheap
            wp = where if m.kind.startswith("gguf") else where / m.weights_file
            if wp.is_file():
                return file_sha256(wp)[:16]
        except ModelNotFound:
            pass
        return m.sha256[:16]
    p = Path(spec)
    if p.is_file():
        return file_sha256(p)[:16]
    if p.is_dir():
        weights = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.gguf")) or sorted(p.glob("*.bin"))
        return file_hash(weights[0]) if weights else hashlib.sha256(spec.encode()).hexdigest()[:16]
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def display_path(cfg: Config, p: Path) -> str:
    """`p` as a run's files name it, never by a machine path: relative to the project, as is a
    folder the config names relatively (`../shared/…`); elsewhere in its public form
    (`<outside the project>/<folder>/…`, `~/…`, `<tmp>/…`: `spacelm.lib.machine_paths`); a byte of
    the name that is not UTF-8 as `\\xe9`. The same file always gets the same text (stamps key their
    inputs by it)."""
    try:
        shown = os.path.relpath(p, cfg.root) if cfg.root else str(p)
    except ValueError:
        shown = str(p)
    if cfg.root and shown.startswith(".." + os.sep):
        from ..lib.machine_paths import scrubber
        from .provenance import config_anchors, named_folders, public_path

        anchors = config_anchors(cfg)
        full = os.path.abspath(os.path.join(cfg.root, shown))
        if not any(full == a or full.startswith(a.rstrip(os.sep) + os.sep) for a in anchors):
            public = scrubber(cfg.root, anchors, named_folders(cfg))(full)
            shown = public if public != full else public_path(full, cfg, anchors)
    return os.fsencode(shown).decode("utf-8", "backslashreplace")


CODE_RULE = 2  # stamps record it: one without was written when a stage's code was its whole import closure


@functools.cache
def code_inputs(modules: tuple[str, ...]) -> dict[str, str]:
    """{`code:<module>` | `defs:<module>`: short hash} of the code reached from `modules` (counted
    whole) by the rule in :class:`Stage`'s docstring. Read once per process: the code a process runs
    is the code it imported, even when the files are edited while it runs."""
    from .code_reach import code_hashes, installed

    return code_hashes(installed(), modules)


def stage_inputs(stage: Stage, cfg: Config) -> dict[str, str]:
    """Every declared input of `stage` under this config, as {name: short hash}."""
    from ..config.schema import at_neutral_default
    from ..lib.llm.prompting import template_hash

    out: dict[str, str] = {}
    for s in stage.sections(cfg):
        if not at_neutral_default(cfg, s):  # a setting added later, at the default that changes nothing
            out[f"config:{s}"] = cfg.section_hash(s)
    for p in stage.reads(cfg):
        out[f"file:{display_path(cfg, Path(p))}"] = file_hash(Path(p))
    for t in stage.prompts(cfg):
        out[f"prompt:{t}"] = template_hash(t)
    for role, spec in stage.models(cfg).items():
        out[f"model:{role}"] = f"{spec}@{model_hash(cfg, spec, role)}"
    out.update(code_inputs(stage.code))
    return dict(sorted(out.items()))


def fingerprint_of(inputs: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]


# --------------------------------------------------------------------------- freshness
def read_stamp(stage: Stage, cfg: Config) -> dict | None:
    try:
        return json.loads(stage.stamp_path(cfg).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def freshness(stage: Stage, cfg: Config, inputs: dict | None = None) -> tuple[str, list[str]]:
    """("up to date" | "stale" | "never run", reasons) from the stamp and the current inputs."""
    inputs = inputs if inputs is not None else stage_inputs(stage, cfg)
    stamp = read_stamp(stage, cfg)
    if stamp is None:
        return "never run", []
    if stamp.get("state") != "complete":
        return "stale", ["the last run did not finish"]
    missing = [display_path(cfg, p) for p in stage.outputs(cfg) if not Path(p).exists()]
    if missing:
        return "stale", [f"output missing: {m}" for m in missing]
    old = stamp.get("inputs", {})
    if stamp.get("code_rule") != CODE_RULE:
        return ("stale", changed) if (changed := _changed_by_old_rule(old, inputs)) else ("up to date", [])
    changed = [k for k in inputs if old.get(k) != inputs[k]] + [k for k in old if k not in inputs]
    return ("stale", changed) if changed else ("up to date", [])


def _is_code(key: str) -> bool:
    return key.startswith(("code:", "defs:"))


def _changed_by_old_rule(old: dict, inputs: dict) -> list[str]:
    """The inputs changed since a stamp written before `CODE_RULE`, whose code inputs are its
    modules' file hashes: each module the stage runs now is compared by its file's hash, and a
    module it no longer runs is no reason."""
    changed = []
    for k, v in inputs.items():
        if _is_code(k):
            m = k.split(":", 1)[1]
            if old.get(f"code:{m}") != module_hash(m):
                changed.append(k)
        elif old.get(k) != v:
            changed.append(k)
    return changed + [k for k in old if k not in inputs and not _is_code(k)]


# --------------------------------------------------------------------------- a committed run folder
def committed_state(stage, cfg: Config, inputs: dict | None = None, data: dict | None = None):
    """A stage's state read from the run's manifest rather than its stamp (stamps are never
    committed, so a fresh clone has none): ("up to date" | "stale" | "never run", reasons,
    the stage's record).

    Up to date when the manifest records the hashes of the stage's outputs, each recorded
    output is there with that hash (one git ignores, which a clone never holds, may be
    missing), every config section the stage reads hashes as recorded, and every input file
    that exists now hashes as recorded. Code changed since the run does not count: the
    manifest's `git_commit` names the code that made the outputs."""
    from ..lib import names
    from .provenance import config_anchors, git_ignored, machine_free, public_path, read_manifest

    data = data if data is not None else read_manifest(cfg.run_dir / names.MANIFEST)
    rec = ((data or {}).get("stages") or {}).get(stage.name)
    if not isinstance(rec, dict) or rec.get("state") == "building":
        return "never run", [], None
    anchors = config_anchors(cfg)
    now = machine_free(inputs if inputs is not None else stage_inputs(stage, cfg), cfg, anchors)
    old = rec.get("inputs") or {}
    changed = []
    # the run's own manifest, which the report reads, changes as each record goes into it
    own = {"file:" + public_path(cfg.run_dir / names.MANIFEST, cfg, anchors)}
    own.add("file:" + display_path(cfg, cfg.run_dir / names.MANIFEST))  # as stage_inputs names it
    for k in sorted(set(now) | set(old)):
        if k in own:
            continue
        if k.startswith("config:") and now.get(k) != old.get(k):
            changed.append(f"{k} (config changed since the manifest)")
        elif k.startswith("file:") and k in now and now[k] != "<missing>" and k in old and now[k] != old[k]:
            changed.append(f"{k} (changed since the manifest)")
    if not isinstance(rec.get("outputs"), dict) or not rec["outputs"]:
        if not any(Path(p).exists() for p in stage.outputs(cfg)):
            return "never run", [], None
        # a run made before the manifest recorded its outputs: its files cannot be checked
        return "stale", changed + ["the manifest records no output hashes (scripts/manifest_outputs.py)"], rec
    declared = {public_path(p, cfg, anchors): Path(p) for p in stage.outputs(cfg)}
    root = Path(cfg.root) if cfg.root else Path.cwd()
    reasons, missing = [], []
    for pub, recorded in rec["outputs"].items():
        p = declared.get(pub)
        if p is None and not pub.startswith(("<", "~")) and ":" not in pub:
            p = root / pub
        if p is None or not p.exists():
            missing.append(pub)
        elif public_hash(p, cfg.root) != recorded and file_hash(p) != recorded:  # (a run before public_hash)
            reasons.append(f"output changed since the manifest: {pub}")
    ignored = git_ignored(cfg.root, [m for m in missing if not m.startswith(("<", "~")) and ":" not in m])
    # outside the project (a trained model in the user's cache): no clone holds it; the manifest names it
    ignored |= {m for m in missing if m.startswith("models:")}
    reasons += [f"output missing: {m}" for m in missing if m not in ignored]
    reasons = changed + reasons
    return ("stale", reasons, rec) if reasons else ("up to date", [], rec)


# --------------------------------------------------------------------------- execution
class Staging:
    """Maps each final output path to a staged path beside it; `commit` moves them into place."""

    def __init__(self, stage: str):
        self.stage = stage
        self.moves: dict[Path, Path] = {}

    def __call__(self, final: Path) -> Path:
        final = Path(final)
        inside = next((f for f in self.moves if f != final and final.is_relative_to(f)), None)
        if inside is not None:
            # the folder's commit would replace it: write into the staged folder instead
            raise ValueError(f"{final} lies inside the staged output {inside}: write to out({inside.name}) / …")
        staged = final.parent / f".staging-{self.stage}" / final.name
        staged.parent.mkdir(parents=True, exist_ok=True)
        self.moves[final] = staged
        return staged

    def commit(self) -> None:
        for final, staged in self.moves.items():
            if not staged.exists():
                continue
            if final.is_dir() and not final.is_symlink():
                old = final.parent / f".old-{self.stage}-{final.name}"
                shutil.rmtree(old, ignore_errors=True)
                final.rename(old)
                staged.rename(final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(staged, final)
        self.cleanup()

    def cleanup(self) -> None:
        for staged in self.moves.values():
            shutil.rmtree(staged.parent, ignore_errors=True)


def read_as_committed(stage: Stage, cfg: Config) -> dict | None:
    """The stage's record in a committed run's manifest, when git tracks the manifest, the record
    is complete and every output the stage declares is there (one git ignores may be missing, as
    in a clone): what a reuse-only reader (a notebook) shows of a run that the code or config has
    since moved past, saying so, instead of stopping. None otherwise."""
    from ..lib import names
    from .provenance import git_ignored, git_tracked, read_manifest

    manifest = cfg.run_dir / names.MANIFEST
    root = str(cfg.root) if cfg.root else None
    if not root or not manifest.is_file() or not git_tracked(root, [os.path.relpath(manifest, root)]):
        return None
    rec = ((read_manifest(manifest) or {}).get("stages") or {}).get(stage.name)
    if not isinstance(rec, dict) or rec.get("state") == "building":
        return None
    absent = [os.path.relpath(p, root) for p in stage.outputs(cfg) if not Path(p).exists()]
    if set(absent) - git_ignored(root, absent):
        return None
    return recorded_summary(rec)


def recorded_summary(rec: dict) -> dict:
    """A manifest's stage record as the summary a build returns (its bookkeeping left out)."""
    return {k: v for k, v in rec.items() if k not in ("inputs", "outputs", "finished", "wall_seconds")}


def execute(stage: Stage, cfg: Config, force: bool = False) -> dict:
    """Run `stage` unless its stamp says the outputs are current. Returns the build's summary
    with `skipped`, `seconds`, `computed_seconds` and `inputs` added."""
    inputs = stage_inputs(stage, cfg)
    state, reasons = freshness(stage, cfg, inputs)
    stamp_path = stage.stamp_path(cfg)
    if state == "up to date" and not force:
        old = read_stamp(stage, cfg) or {}
        # current by a stamp of the old code rule: stamped again by the new one (not from a notebook)
        if old.get("code_rule") != CODE_RULE and not os.environ.get(REUSE_ONLY_ENV):
            write_json(stamp_path, dict(old, inputs=inputs, fingerprint=fingerprint_of(inputs), code_rule=CODE_RULE))
        summary = dict(old.get("summary", {}))
        summary.update(skipped=True, seconds=0.0, computed_seconds=summary.get("computed_seconds"), inputs=inputs)
        return summary
    if os.environ.get(REUSE_ONLY_ENV):
        if state == "never run":  # no stamp (a fresh clone): the outputs the run's manifest recorded
            got, why_not, rec = committed_state(stage, cfg, inputs)
            if got == "up to date":
                keep = recorded_summary(rec)
                keep.update(skipped=True, seconds=0.0, from_manifest=True, inputs=inputs)
                keep.setdefault("computed_seconds", rec.get("seconds"))
                return keep
            reasons = why_not or reasons
        as_committed = read_as_committed(stage, cfg)
        if as_committed is not None:  # a committed run the code or config has moved past: shown as it is
            return dict(as_committed, skipped=True, seconds=0.0, from_manifest=True, inputs=inputs, stale=reasons)
        why = "; ".join(reasons) or state
        raise StaleStage(
            f"stage '{stage.name}' is {state} ({why}) and this process may only reuse results "
            f"(${REUSE_ONLY_ENV} is set): run `spacelm run` or `spacelm {stage.name}` first"
        )
    old = read_stamp(stage, cfg)
    write_json(
        stamp_path,
        {
            "stage": stage.name,
            "state": "building",
            "started": time.time(),
            "previous": old if old and old.get("state") == "complete" else None,
        },
    )
    staging = Staging(stage.name)
    t0 = time.perf_counter()
    from ..lib.llm import model_logs

    try:
        with model_logs(cfg.run_dir / "logs"):  # where a managed model server keeps its log
            summary = stage.build(cfg, staging) or {}
    except BaseException:
        staging.cleanup()
        raise
    seconds = round(time.perf_counter() - t0, 3)
    staging.commit()
    summary = dict(summary, skipped=False, seconds=seconds, computed_seconds=seconds)
    outputs = [os.path.relpath(p, stamp_path.parent) for p in stage.outputs(cfg)]
    record = {
        "stage": stage.name,
        "state": "complete",
        "code_rule": CODE_RULE,
        "fingerprint": fingerprint_of(inputs),
        "inputs": inputs,
        "outputs": outputs,
        "summary": summary,
    }
    from .provenance import machine_free

    # no secret the config was given (a server's password), no machine path; the inputs' names are
    # public already (`display_path`) and stay as they are, so that `freshness` compares like with like
    write_json(stamp_path, dict(machine_free(redact_obj(record), cfg), inputs=inputs))
    return dict(summary, inputs=inputs)


_OPENER: ContextVar = ContextVar("spacelm_model_opener", default=None)


@contextmanager
def models_opened_by(opener: Callable) -> Iterator[None]:
    """Every stage run inside this block opens its language models with `opener(llm_cfg,
    cache_dir) -> LLM` instead of `open_llm` (stand-in models in tests, through the one seam)."""
    token = _OPENER.set(opener)
    try:
        yield
    finally:
        _OPENER.reset(token)


class ModelTurns:
    """The seam through which every stage reaches its models: the stage's models taking turns,
    one in memory at a time, and a role whose engine settings equal the loaded one's (the
    paper's writer and judge are one 70B model) shares that engine, with its own sampling
    defaults, instead of loading it again. Per role, the calls it made (`stats`) and the model's
    identity.

    A stage's `compute` asks this object for everything a model decides: LLM calls (`use`, each
    named by its `phase`), the synth retrieval filter (`retrieval_filter`), the answer gate
    (`gate`). `spacelm plan` runs the same `compute` with a stand-in of this class
    (`spacelm.plan.PlanTurns`) that answers without a model and counts the calls."""

    def __init__(self, cfg: Config, stage: str, opener: Callable | None = None):
        self.cfg = cfg
        self.stage = stage
        self.opener = opener
        self.llm, self.loaded = None, None
        self.stats: dict = {}
        self.identity: dict = {}

    def _open(self, llm_cfg):
        opener = self.opener or _OPENER.get()
        if opener is not None:
            return opener(llm_cfg, self.cfg.cache_dir)
        from ..lib.llm import open_llm

        return open_llm(llm_cfg, self.cfg.cache_dir)

    def use(self, role: str, fn, phase: str = ""):
        """`fn(llm)` with the model of `role` loaded; `phase` names the calls (for the plan)."""
        from ..lib.llm import LLM

        llm_cfg = getattr(self.cfg.models, role)
        if self.llm is None or self.loaded != llm_cfg.engine_key():
            self.release()
            self.llm, self.loaded = self._open(llm_cfg), llm_cfg.engine_key()
            self.llm.stage = self.stage
        elif self.llm.cfg != llm_cfg:  # the same engine, this role's sampling defaults
            old = self.llm
            self.llm = LLM(llm_cfg, old.cache, backend=old._backend)
            old._backend = None  # one holder, so that release() frees the engine
            self.llm.stage = self.stage
        before = self.llm.stats.to_dict()
        try:
            return fn(self.llm)
        finally:
            after = self.llm.stats.to_dict()
            acc = self.stats.setdefault(role, {k: 0 for k in after})
            for k in after:
                acc[k] += after[k] - before[k]
            self.identity[role] = self.llm.identity

    def release(self) -> None:
        """Give the loaded model's memory back (the next `use` loads again)."""
        if self.llm is not None:
            self.llm.release()
        self.llm, self.loaded = None, None

    def retrieval_filter(self, chunks: list, records: list[dict]) -> dict:
        """The synth retrieval filter (BM25 and the dense encoder) on the answerable `records`;
        returns the two retrievers, for the unanswerable check."""
        from ..lib.synth.questions import retrieval_filter

        cfg = self.cfg
        return retrieval_filter(cfg.question_writing(), cfg.retrieval.setup(), chunks, records, cfg.cache_dir)

    def audit_systems(self, names: list[str], ids: list[str], texts: list[str], labelled: dict) -> dict:
        """The run's retrieval systems `names` built over (`ids`, `texts`), as the judge check's
        system-bias audit searches them (`labelled`, {query: its labelled ids}, is for the plan's
        stand-ins, which rank those first)."""
        from ..lib.retrieval.systems import build_systems

        return build_systems(self.cfg.retrieval.setup(), ids, texts, names, cache_dir=self.cfg.cache_dir)

    def gate(self, items: list[dict], text_of: dict) -> None:
        """Set each item's answerability gate from the dense encoder's similarities."""
        from ..lib.answer.gate import score_items
        from ..lib.retrieval.dense import Encoder

        dc = self.cfg.retrieval.dense
        encoder = Encoder(
            dc.model, dc.batch_size, dc.query_prefix, dc.passage_prefix, self.cfg.cache_dir, dc.max_seq_length
        )
        score_items(items, text_of, encoder, self.cfg.answer.gate.rules())

    def as_written(self, items: list[dict]) -> list[dict]:
        """The answers as the generator wrote them (the plan's stand-in gives answers whose
        number of claims is estimated instead)."""
        return items
