"""The `spacelm` command line: the same functions the notebooks call.

    spacelm run     --config configs/quick.yaml [--force] [--no-notebooks]
    spacelm ingest  --config configs/quick.yaml [--force]
    spacelm chunk   --config configs/quick.yaml [--force]
    spacelm synth   --config configs/quick.yaml [--force]
    spacelm retrieve --config configs/quick.yaml [--force]
    spacelm grade   --config configs/quick.yaml [--force]
    spacelm answer  --config configs/quick.yaml [--force]
    spacelm models  list | path NAME | verify
    spacelm cache   stats | clear [--model NAME]
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings

from .config import ConfigError, load_config, parse_override
from .io import InputError

DEFAULT_CONFIG = "configs/quick.yaml"


def _cfg(args):
    overrides: dict = {}
    from .config import _merge

    for o in args.set or []:
        overrides = _merge(overrides, parse_override(o))
    return load_config(args.config, overrides or None)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"YAML config (default {DEFAULT_CONFIG})")
    p.add_argument("--force", action="store_true", help="recompute even if outputs are up to date")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config value, e.g. --set chunking.max_tokens=512 (repeatable)")


def _stage_cmd(name: str):
    def cmd(args) -> int:
        from .pipeline import run_stages

        cfg = _cfg(args)
        res = run_stages(cfg, upto=name, force=args.force)
        print(json.dumps(res[name], indent=2, default=str))
        return 0
    return cmd


def cmd_run(args) -> int:
    from .pipeline import run_all

    cfg = _cfg(args)
    run_all(cfg, force=args.force, notebooks=not args.no_notebooks)
    return 0


def cmd_report(args) -> int:
    from .report import build_report

    print(build_report(_cfg(args)))
    return 0


def cmd_models(args) -> int:
    from . import models

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
            return 2
        print(models.model_path(args.name))
        return 0
    bad = 0
    for row in models.verify_models(args.name and [args.name]):
        status = "ok" if row["ok"] else "FAILED"
        print(f"{row['name']:<20} {status}  {row.get('error') or row['got']}")
        bad += not row["ok"]
    return 1 if bad else 0


def cmd_cache(args) -> int:
    from .cache import CallCache

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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="spacelm", description="RAG benchmark suite for space-operations documents")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run every stage, then execute the notebooks into results/<run>/")
    _add_common(p)
    p.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    p.set_defaults(func=cmd_run)
    for name, helptext in [("ingest", "read and clean the corpus"), ("chunk", "chunk the cleaned documents"),
                           ("synth", "write synthetic questions and apply the retrieval filter"),
                           ("retrieve", "evaluate the retrieval systems on the questions"),
                           ("grade", "LLM relevance grades 0-3 of retrieved passages (Table 1)"),
                           ("answer", "answer quality under noise (Table 2) and pipelines A/B/C")]:
        p = sub.add_parser(name, help=helptext)
        _add_common(p)
        p.set_defaults(func=_stage_cmd(name))
    p = sub.add_parser("report", help="(re)write results/<run>/report.md from the run folder")
    _add_common(p)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("models", help="list, locate or verify the embedded models")
    p.add_argument("action", choices=["list", "path", "verify"])
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("cache", help="statistics of, or clear, the persistent LLM call cache")
    p.add_argument("action", choices=["stats", "clear"])
    p.add_argument("--config", default=DEFAULT_CONFIG)
    p.add_argument("--model", help="with clear: only this model's entries")
    p.set_defaults(func=cmd_cache, set=None)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    warnings.simplefilter("default")
    try:
        return args.func(args)
    except (ConfigError, InputError) as e:
        print(f"spacelm: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
