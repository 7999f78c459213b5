"""The `spacelm` command line: the same functions the notebooks call.

    spacelm run      --config configs/quick.yaml [--force] [--no-notebooks] [--set KEY=VALUE] [--wait]
    spacelm status   --config configs/quick.yaml [--set KEY=VALUE]
    spacelm plan     --config configs/paper.yaml [--json] [--use-outputs] [--tokenizer PATH]
    spacelm ingest | chunk | synth | retrieve | judge-check | grade | answer  --config ... [--force]
    spacelm report   --config ... [--recompute]
    spacelm models   list | path NAME | verify [NAME] | export-hf NAME
    spacelm cache    stats | clear [--model NAME]
    spacelm corpus   verify DIR [--list NAME] | fetch NAME --to DIR | attribution NAME

Exit codes: 0 done; 1 a check failed (models verify); 2 bad input or config; 3 a model
backend (or a package it needs) is unavailable; 4 another run holds the folder; 130
interrupted. `--debug` shows the traceback of an error.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings

from .config import ConfigError, load_config, merge, parse_override

DEFAULT_CONFIG = "configs/quick.yaml"
EXIT_INPUT, EXIT_BACKEND, EXIT_LOCKED, EXIT_INTERRUPTED = 2, 3, 4, 130
log = logging.getLogger("spacelm")


def _cfg(args):
    overrides: dict = {}
    for o in args.set or []:
        overrides = merge(overrides, parse_override(o))
    return load_config(args.config, overrides or None)


def _add_common(p: argparse.ArgumentParser, force: bool = True) -> None:
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"YAML config (default {DEFAULT_CONFIG})")
    if force:
        p.add_argument("--force", action="store_true", help="recompute even if outputs are up to date")
        p.add_argument("--wait", action="store_true", help="if another run holds the folders, wait for it")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config value, e.g. --set chunking.max_tokens=512 (repeatable)")


def _stage_cmd(name: str):
    def cmd(args) -> int:
        from .pipeline import run_stages, write_folders
        from .stages.lock import folder_locks

        cfg = _cfg(args)
        with folder_locks(write_folders(cfg), wait=args.wait):
            res = run_stages(cfg, upto=name, force=args.force)
        print(json.dumps({k: v for k, v in res[name].items() if k != "inputs"}, indent=2, default=str))
        return 0
    return cmd


def cmd_run(args) -> int:
    from .pipeline import run_all

    run_all(_cfg(args), force=args.force, notebooks=not args.no_notebooks, wait=args.wait)
    return 0


def cmd_status(args) -> int:
    from .pipeline import status

    cfg = _cfg(args)
    rows = status(cfg)
    width = max(len(r["stage"]) for r in rows)
    print(f"run '{cfg.run_name}' ({cfg.source})")
    for r in rows:
        state = r["state"]
        if state == "stale":
            shown = r["changed"][:3] + ([f"… {len(r['changed']) - 3} more"] if len(r["changed"]) > 3 else [])
            state = "stale: " + ", ".join(shown)
        print(f"  {r['stage']:<{width}}  {state}")
    todo = [r["stage"] for r in rows if r["would_recompute"]]
    print("a run would recompute: " + (", ".join(todo) if todo else "nothing (every stage is up to date)"))
    return 0


def cmd_plan(args) -> int:
    from .lib.plan import format_plan
    from .plan import plan_json, plan_run

    plan = plan_run(_cfg(args), use_outputs=args.use_outputs, tokenizer=args.tokenizer)
    print(plan_json(plan) if args.json else format_plan(plan))
    return 0


def cmd_report(args) -> int:
    from .stages.report import build_report

    cfg = _cfg(args)
    if args.recompute:
        from .stages import answer, grade

        run = cfg.run_dir
        if not (run / "grades.jsonl").is_file() and not (run / "answers.jsonl").is_file():
            print(f"spacelm report --recompute: {run} holds neither grades.jsonl nor answers.jsonl: run the grade "
                  "or answer stage first", file=sys.stderr)
            return EXIT_INPUT
        if (run / "grades.jsonl").is_file():
            grade.recompute(cfg)
        if (run / "answers.jsonl").is_file():
            answer.recompute(cfg)
    print(build_report(cfg))
    return 0


def cmd_models(args) -> int:
    from .lib import models

    if args.action == "list":
        for row in models.list_models():
            size = f"{row['size'] / 1e6:.0f} MB" if row.get("size") else "-"
            print(f"{row['name']:<20} {row['kind']:<22} {size:>8}  {row['upstream']}")
            print(f"{'':<20} packages: {row['packages']}  licence: {row['licence']}")
            print(f"{'':<20} path: {row.get('path') or row.get('error')}")
            print(f"{'':<20} sha256: {row.get('sha256') or '-'}")
        return 0
    if args.action == "path":
        if not args.name:
            print("spacelm models path: give a model name (see `spacelm models list`)", file=sys.stderr)
            return EXIT_INPUT
        print(models.model_path(args.name))
        return 0
    if args.action == "export-hf":
        from .lib.hf_export import export_hf

        if not args.name:
            print("spacelm models export-hf: give a GGUF model name, e.g. qwen2.5-coder-0.5b (see `spacelm models list`)",
                  file=sys.stderr)
            return EXIT_INPUT
        folder, written = export_hf(args.name)
        if not written:
            print(f"already exported from the same GGUF file (sha256 in {folder}.json)", file=sys.stderr)
        print(folder)
        return 0
    bad = 0
    for row in models.verify_models(args.name and [args.name]):
        status = "ok" if row["ok"] else "FAILED"
        print(f"{row['name']:<20} {status}  {row.get('error') or row['got']}")
        bad += not row["ok"]
    if bad:
        print("a model file does not match its recorded sha256: delete it (see the path above) and run "
              "`spacelm models verify` again to reassemble it from its packages", file=sys.stderr)
    return 1 if bad else 0


def cmd_cache(args) -> int:
    from .lib.cache import CallCache

    cfg = _cfg(args)
    path = cfg.cache_dir / "llm_calls.sqlite"
    if not path.exists():
        print(f"no cache yet at {path}")
        return 0
    cache = CallCache(path)
    if args.action == "clear":
        n = cache.clear(args.model)
        print(f"removed {n} cached call(s) from {path}")
        return 0
    print(json.dumps(cache.summary(), indent=2))
    return 0


def cmd_corpus(args) -> int:
    """Check a corpus folder against its list (offline), or fetch the listed files."""
    from pathlib import Path

    from .lib import corpus_list as cl

    if args.action == "attribution":
        print(cl.attribution_markdown(cl.load_corpus_list(args.target)), end="")
        return 0
    if args.action == "fetch":
        if not args.to:
            print("spacelm corpus fetch NAME --to DIR: give the folder to download into", file=sys.stderr)
            return EXIT_INPUT
        lst, folder = cl.load_corpus_list(args.target), Path(args.to)
        rows = cl.fetch(lst, folder, progress=lambda f: log.info("fetching %s", f))
    else:
        folder = Path(args.target)
        if not folder.is_dir():
            print(f"spacelm: error: {folder}: no such folder; give the corpus folder to check", file=sys.stderr)
            return EXIT_INPUT
        lst = cl.load_corpus_list(args.list or _guess_list(folder))
        rows = cl.verify_folder(lst, folder)
    for r in rows:
        print(f"{r.status:<8} {r.file}" + (f"  ({r.detail})" if r.detail and r.status != "ok" else ""))
    ok = sum(r.status == "ok" for r in rows)
    extra = cl.unlisted_files(lst, folder) if folder.is_dir() else []
    print(f"{ok} of {len(rows)} files ok against corpus list '{lst.name}' ({lst.path.name})"
          + (f"; {len(extra)} file(s) in the folder are not listed: {', '.join(extra[:5])}" if extra else ""))
    if ok < len(rows):
        hint = (f"`spacelm corpus fetch {lst.name} --to {folder}` downloads what is missing or damaged"
                if args.action == "verify" else "the files above could not be fetched; download them by hand from "
                                                 "the sources in the list and run `spacelm corpus verify`")
        print(hint, file=sys.stderr)
        return 1
    return 0


def _guess_list(folder) -> str:
    """The shipped list whose files the folder holds most of (so `verify DIR` needs no --list)."""
    from .lib import corpus_list as cl

    names = {p.name for p in folder.iterdir()}
    best = max(cl.available_lists(), default=None,
               key=lambda n: len(names & {e.file for e in cl.load_corpus_list(n).entries}))
    if best is None:
        raise cl.InputError("no corpus list is shipped; give one with --list PATH.tsv")
    return best


def build_parser() -> argparse.ArgumentParser:
    from .stages import OPTIONAL, STAGES

    ap = argparse.ArgumentParser(prog="spacelm", description="RAG benchmark suite for space-operations documents")
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    ap.add_argument("--progress", action="store_true", help="progress bars even when not on a terminal")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run every stage, execute the notebooks, write the report into results/<run>/")
    _add_common(p)
    p.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("status", help="per stage: up to date, stale (naming what changed) or never run")
    _add_common(p, force=False)
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("plan", help="per stage and model phase: model calls, prompt and completion tokens, engines in "
                                    "load order; loads no model")
    _add_common(p, force=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--use-outputs", action="store_true",
                   help="read earlier stages' outputs even where a run would recompute them")
    p.add_argument("--tokenizer", metavar="PATH",
                   help="a GGUF file, tokenizer.json or model folder to count tokens with, for models whose own "
                        "tokenizer is not on this machine (e.g. a hub model not downloaded yet)")
    p.set_defaults(func=cmd_plan)
    for stage in STAGES + OPTIONAL:
        p = sub.add_parser(stage.name, help=stage.doc)
        _add_common(p)
        p.set_defaults(func=_stage_cmd(stage.name))
    p = sub.add_parser("report", help="(re)write results/<run>/report.md from the run folder")
    _add_common(p, force=False)
    p.add_argument("--recompute", action="store_true",
                   help="first recompute Table 1, Table 2 and their tests, CIs and plots from the stored grades.jsonl "
                        "and answers.jsonl (no model is loaded)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("models", help="list, locate or verify the embedded models; export-hf writes a GGUF model as "
                                      "a safetensors folder for vLLM")
    p.add_argument("action", choices=["list", "path", "verify", "export-hf"])
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("cache", help="statistics of, or clear, the persistent LLM call cache")
    p.add_argument("action", choices=["stats", "clear"])
    p.add_argument("--config", default=DEFAULT_CONFIG)
    p.add_argument("--model", help="with clear: only this model's entries")
    p.set_defaults(func=cmd_cache, set=None)
    p = sub.add_parser("corpus", help="verify a corpus folder against its list (offline), fetch the listed files "
                                      "from their public sources, or print the attribution list")
    p.add_argument("action", choices=["verify", "fetch", "attribution"])
    p.add_argument("target", help="verify: the folder; fetch and attribution: the list's name (or a .tsv path)")
    p.add_argument("--to", metavar="DIR", help="fetch: the folder to download into")
    p.add_argument("--list", metavar="NAME", help="verify: the list to check against (default: the shipped list "
                                                  "naming most of the folder's files)")
    p.set_defaults(func=cmd_corpus)
    return ap


def setup_logging(progress: bool = False) -> None:
    """One line per event on stderr (spacelm's own at INFO, libraries' only from WARNING);
    progress bars only on a terminal (or with --progress), the libraries' bars included."""
    import os

    from .lib.progress import show_progress

    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s", stream=sys.stderr)
    logging.getLogger("spacelm").setLevel(logging.INFO)
    if progress:
        os.environ["SPACELM_PROGRESS"] = "1"
    if not show_progress():  # tqdm (sentence-transformers, transformers, datasets) reads these
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main(argv=None) -> int:
    from .lib.deps import MissingDependency
    from .lib.io import InputError
    from .lib.llm.types import BackendError, BackendUnavailable
    from .lib.models import ModelNotFound
    from .stages.base import StaleStage
    from .stages.lock import RunLocked

    args = build_parser().parse_args(argv)
    setup_logging(args.progress)
    warnings.simplefilter("default")
    logging.captureWarnings(True)
    try:
        return args.func(args)
    except (ConfigError, InputError, ModelNotFound, StaleStage) as e:
        if args.debug:
            raise
        print(f"spacelm: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except BackendUnavailable as e:
        if args.debug:
            raise
        print(f"spacelm: model backend unavailable: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except MissingDependency as e:
        if args.debug:
            raise
        print(f"spacelm: error: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except BackendError as e:
        if args.debug:
            raise
        print(f"spacelm: model backend failed: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except RunLocked as e:
        print(f"spacelm: {e}", file=sys.stderr)
        return EXIT_LOCKED
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("spacelm: interrupted; finished model calls are cached and the interrupted stage stays stale, "
              "so the same command resumes", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
