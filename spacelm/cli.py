"""The `spacelm` command line: the same functions the notebooks call.

    spacelm run      --config configs/quick.yaml [--force] [--no-notebooks] [--set KEY=VALUE] [--wait]
    spacelm status   --config configs/quick.yaml [--set KEY=VALUE]
    spacelm check    --config configs/quick.yaml [--set KEY=VALUE]
    spacelm plan     --config configs/paper.yaml [--json] [--use-outputs] [--tokenizer PATH]
    spacelm ingest | chunk | synth | retrieve | judge-check | grade | answer  --config ... [--force]
    spacelm report   --config ... [--recompute] [--wait]
    spacelm label    export --config ... --what pairs|negative|questions|answers --batches N --out DIR
                     | import --config ... --from DIR --assessor NAME | serve --from DIR --batch NAME
    spacelm models   list | path NAME | verify [NAME] | export-hf NAME
    spacelm cache    stats | clear [--model NAME | --embeddings]
    spacelm corpus   verify DIR [--list NAME] | fetch NAME --to DIR | attribution NAME

Exit codes: 0 done; 1 a check failed (models verify); 2 bad input or config; 3 a model
backend (or a package it needs) is unavailable; 4 another run holds the folder; 130
interrupted; 141 stdout closed by its reader (`spacelm plan | head -1`), silently.
`--debug` shows the traceback of an error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings

from .config import ConfigError, load_config
from .lib import names

DEFAULT_CONFIG = "configs/quick.yaml"
EXIT_INPUT, EXIT_BACKEND, EXIT_LOCKED, EXIT_INTERRUPTED = 2, 3, 4, 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command whose reader went away


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of a closed pipe is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


log = logging.getLogger("spacelm")


def _cfg(args):
    return load_config(args.config, sets=args.set or [])


def _add_common(p: argparse.ArgumentParser, force: bool = True) -> None:
    p.add_argument("--config", default=DEFAULT_CONFIG, help=f"YAML config (default {DEFAULT_CONFIG})")
    if force:
        p.add_argument("--force", action="store_true", help="recompute even if outputs are up to date")
        p.add_argument("--wait", action="store_true", help="if another run holds the folders, wait for it")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set chunking.max_tokens=512 (repeatable)",
    )


def version_line(version: str) -> str:
    """`spacelm VERSION (commit C)`: the package's version and the commit of the code it runs (when
    it runs from a git checkout; "+dirty" when tracked files differ from it)."""
    from pathlib import Path

    from .runner.provenance import git_commit

    commit = git_commit(str(Path(__file__).resolve().parent))
    return f"spacelm {version}" + (f" (commit {commit})" if commit else " (not a git checkout: no commit)")


def _stage_cmd(name: str):
    def cmd(args) -> int:
        from .pipeline import run_stages, write_folders
        from .runner.lock import folder_locks

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
    from .check import run_check
    from .lib.redact import shown_name
    from .pipeline import status

    cfg = _cfg(args)
    checked = run_check(cfg)  # what a run would refuse, said after the table
    rows = status(cfg)
    for r in rows:  # a changed input is named by its path (a corpus file's): one line whatever its name
        r["changed"] = [shown_name(c) for c in r["changed"]]
    width = max(len(r["stage"]) for r in rows)
    print(f"run '{cfg.run_name}' ({cfg.source})")
    for r in rows:
        state = r["state"]
        if state == "stale":
            shown = r["changed"][:3] + ([f"… {len(r['changed']) - 3} more"] if len(r["changed"]) > 3 else [])
            state = "stale: " + ", ".join(shown)
        elif r.get("from_manifest"):
            state = "committed: its outputs are as the manifest records them; no stamp here, so a run recomputes it"
        elif r["would_recompute"]:
            state = f"{state}, but a run recomputes it: " + ", ".join(r["changed"][:3])
        print(f"  {r['stage']:<{width}}  {state}")
    todo = [r["stage"] for r in rows if r["would_recompute"]]
    committed = [r["stage"] for r in rows if r.get("from_manifest")]
    print("a run would recompute: " + (", ".join(todo) if todo else "nothing (every stage is up to date)"))
    if committed:
        print(
            f"  ({len(committed)} of them committed and intact: the notebooks and `spacelm report` read them as "
            "committed, and a one-stage command leaves them as they are; docs/notebooks.md)"
        )
    _print_problems(checked)
    if checked.errors:
        print(f"a run would refuse this config: {_counted(checked)} (`spacelm check` lists the same)")
        return EXIT_INPUT
    return 0


def cmd_check(args) -> int:
    """Every check that needs no model: config, corpus folder and list, golden samples and their
    passages in the corpus, labelled folders. Exit 2 on any error, one line per problem."""
    return _run_and_print_check(_cfg(args))


def _run_and_print_check(cfg, after: str | None = None) -> int:
    """`spacelm check` on `cfg`: every problem, the summary, `after` (a next step); exit 2 on any error."""
    from .check import run_check

    checked = run_check(cfg)
    _print_problems(checked)
    print(("check failed: " if checked.errors else "check passed: ") + _counted(checked))
    for line in checked.summary:
        print("  " + line)
    if after:
        print(after)
    return EXIT_INPUT if checked.errors else 0


def _counted(checked) -> str:
    e, w = len(checked.errors), len(checked.warnings)
    return f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"


def _print_problems(checked) -> None:
    """Each problem of a check as one line on stderr, errors first."""
    for p in checked.errors + checked.warnings:
        _say(str(p))


def cmd_plan(args) -> int:
    from .plan import format_plan, plan_json, plan_run

    plan = plan_run(_cfg(args), use_outputs=args.use_outputs, tokenizer=args.tokenizer, exact=args.exact)
    print(plan_json(plan) if args.json else format_plan(plan, wide=args.wide))
    if args.throughput and not args.json:
        from .plan import format_time_estimate, time_estimate

        prompt_tps, gen_tps = args.throughput
        print("\n" + format_time_estimate(time_estimate(plan, prompt_tps, gen_tps), prompt_tps, gen_tps))
    return 0


def _throughput(text: str) -> tuple:
    """`P` or `P:G`: prompt (and generated) tokens per second, both above 0."""
    import argparse

    try:
        parts = [float(x) for x in text.split(":")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2) or min(parts) <= 0:
        raise argparse.ArgumentTypeError(
            f"--throughput {text!r}: give prompt tokens per second, optionally "
            "':' and generated tokens per second, e.g. 5000:400"
        )
    return parts[0], parts[1] if len(parts) == 2 else None


def cmd_report(args) -> int:
    """Rewrite the report of a run that ran, holding the run's folders like a stage does."""
    from .lib.io import InputError
    from .lib.names import MANIFEST
    from .pipeline import write_folders
    from .runner.lock import folder_locks

    cfg = _cfg(args)
    manifest = cfg.run_dir / MANIFEST
    never = InputError(
        f"run '{cfg.run_name}' has not run yet ({manifest} does not exist), so there is nothing to "
        f"report; run `spacelm run --config {args.config}` (or a stage command) first"
    )
    if not cfg.run_dir.is_dir():
        raise never  # checked before the lock, which would create the folder
    with folder_locks(write_folders(cfg), wait=args.wait):
        if not manifest.is_file():
            raise never
        if args.recompute:
            from .lib.names import ANSWERS, GRADES
            from .stages import answer, grade, judge_check

            run = cfg.run_dir
            if not (run / GRADES).is_file() and not (run / ANSWERS).is_file():
                print(
                    f"spacelm report --recompute: {run} holds neither grades.jsonl nor answers.jsonl: run the grade "
                    "or answer stage first",
                    file=sys.stderr,
                )
                return EXIT_INPUT
            from .notebooks import write_resolved_config

            # the tables are recomputed under this config: the run's resolved config says so (the
            # notebooks and a later `spacelm report` read it)
            write_resolved_config(cfg)
            judge_check.recompute(cfg)
            if (run / GRADES).is_file():
                grade.recompute(cfg)
            if (run / ANSWERS).is_file():
                answer.recompute(cfg)
        print(record_report(cfg))
    return 0


def record_report(cfg):
    """The findings (recomputed when their inputs changed: rules or wording of a later commit) and
    the report, each put into the run's manifest with its outputs' hashes as a one-stage command
    does, so the committed manifest keeps describing the files beside it."""
    from .runner.manifest import Manifest
    from .stages.report import build_report

    manifest, done = Manifest(cfg, command="report"), []
    path = build_report(cfg, done=done)
    manifest.record_computed(done)
    manifest.finish()
    return path


def cmd_label(args) -> int:
    """`label export`: a run's unlabelled items as blind batches for an assessor; `label import`:
    the assessor's answers merged into the label store when its standing reaches the floor;
    `label serve`: a browser page for a person to grade one batch (docs/labels.md)."""
    import os
    from pathlib import Path

    from .lib.io import InputError

    if args.action == "serve":
        if not args.source:
            raise InputError("label serve: --from DIR, the folder `spacelm label export` wrote")
        if not args.batch:
            raise InputError("label serve: --batch NAME, one of the batches in DIR/batches (e.g. batch-01)")
        return serve_labels(args.source, args.batch, args.port)
    from .stages import labels as stage

    run = []
    if args.run:  # the run folder, as everywhere --run is given: results/NAME
        folder = Path(args.run)
        run = [f"run_name={folder.name}", f"paths.results_dir={folder.parent.resolve()}"]
    cfg = load_config(args.config, sets=(args.set or []) + run)
    from .pipeline import write_folders
    from .runner.lock import folder_locks

    if args.action == "export":
        if not args.out:
            raise InputError("label export: --out DIR, a new folder for the batches, the brief and the key")
        # the run's folders held as a stage holds them: never a grades.jsonl a stage is replacing
        with folder_locks(write_folders(cfg), wait=args.wait):
            summary = stage.export(cfg, args.what, args.batches, args.out, args.draw)
        summary["next"] = (
            f"give each assessor {args.out}/brief.md and one file of {args.out}/batches/ (never key.jsonl); its "
            f"answers go to {args.out}/labels/<batch>.labels.jsonl; then `spacelm label import --config "
            f"{args.config} --run {os.path.relpath(cfg.run_dir)} --from {args.out} --assessor NAME`"
        )
        print(json.dumps(summary, indent=2))
        return 0
    if not args.source:
        raise InputError("label import: --from DIR, the export folder holding labels/<batch>.labels.jsonl")
    from .runner.manifest import Manifest

    with folder_locks(write_folders(cfg), wait=args.wait):
        record = stage.import_labels(cfg, args.source, args.assessor)
        if (cfg.run_dir / names.MANIFEST).is_file():
            manifest = Manifest(cfg, command="label import")
            manifest.record_stage("labels", {k: v for k, v in record.items()})
            manifest.finish()
    record["next"] = f"`spacelm report --recompute --config {args.config}` reads the labels (no model call)"
    print(json.dumps(record, indent=2, default=str))
    return 0


def cmd_models(args) -> int:
    from .lib.llm import models

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
        from .lib.llm.hf_export import export_hf

        if not args.name:
            print(
                "spacelm models export-hf: give a GGUF model name, e.g. qwen2.5-coder-0.5b (see `spacelm models list`)",
                file=sys.stderr,
            )
            return EXIT_INPUT
        folder, written = export_hf(args.name)
        if not written:
            print(f"already exported from the same GGUF file (sha256 in {folder}.json)", file=sys.stderr)
        print(folder)
        return 0
    bad = []
    for row in models.verify_models(args.name and [args.name]):
        status = "ok" if row["ok"] else "FAILED"
        print(f"{row['name']:<20} {status}  {row.get('error') or row['got']}")
        if not row["ok"]:
            bad.append(row)
    for row in bad:
        if row.get("path"):  # assembled but damaged (a missing package has its own message above)
            print(
                f"{row['name']}: {row['path']} does not match its recorded sha256; "
                f"{models.damaged_hint(row['name'], row['path'])}",
                file=sys.stderr,
            )
    return 1 if bad else 0


def cmd_cache(args) -> int:
    """Statistics of, or clear, the call cache (llm_calls.sqlite) and, with --embeddings, the
    embedding cache (embeddings.sqlite) under paths.cache_dir."""
    from .lib.llm.cache import CallCache, EmbeddingCache

    cfg = _cfg(args)
    if args.embeddings:
        if args.model:
            raise ConfigError("--model applies to the call cache; --embeddings clears every stored vector")
        path = cfg.cache_dir / "embeddings.sqlite"
        if not path.exists():
            print(f"no embedding cache yet at {path}")
            return 0
        emb = EmbeddingCache(path)  # a damaged file is moved aside here (and named in the log)
        try:
            if args.action == "clear":
                print(f"removed {emb.clear()} cached embedding(s) from {path}")
            else:
                print(json.dumps(emb.summary(), indent=2))
        finally:
            emb.close()
        return 0
    path = cfg.cache_dir / "llm_calls.sqlite"
    if not path.exists():
        print(f"no cache yet at {path}")
        return 0
    cache = CallCache(path)  # a damaged file is moved aside here (and named in the log)
    if args.action == "clear":
        n = cache.clear(args.model)
        aside = "".join(f"; the damaged cache was moved aside to {p.name}" for p in cache.moved_aside)
        print(f"removed {n} cached call(s) from {path}{aside}")
        return 0
    print(json.dumps(cache.summary(), indent=2))
    return 0


def cmd_corpus(args) -> int:
    """Check a corpus folder against its list (offline), or fetch the listed files."""
    from pathlib import Path

    from .lib.ingest import corpus_list as cl

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
    print(
        f"{ok} of {len(rows)} files ok against corpus list '{lst.name}' ({lst.path.name})"
        + (f"; {len(extra)} file(s) in the folder are not listed: {', '.join(extra[:5])}" if extra else "")
    )
    if ok < len(rows):
        hint = (
            f"`spacelm corpus fetch {lst.name} --to {folder}` downloads what is missing or damaged"
            if args.action == "verify"
            else "the files above could not be fetched; download them by hand from "
            "the sources in the list and run `spacelm corpus verify`"
        )
        print(hint, file=sys.stderr)
        return 1
    return 0


def cmd_data(args) -> int:
    """`data list`: each external set, its licence, size and whether it is here; `data fetch NAME`:
    put one where the configs read it (or --to DIR), from its public source or a mirror (--from DIR)."""
    from pathlib import Path

    from .lib import datasets as dsets

    if args.action == "list":
        rows = []
        for ds in dsets.registry().values():
            where = dsets.default_dir(ds)
            rows.append((ds.name, dsets.present(ds, where), ds.size, ds.dir, ds.licence, ds.what))
        for name, state, size, folder, licence, what in rows:
            print(f"{name}  [{state}]  {size}  {folder}\n    {what}\n    licence: {licence}")
        missing = [r[0] for r in rows if r[1] != "present"]
        if missing:
            print("get one with `spacelm data fetch NAME` (or `--from DIR` for a copy you have): " + ", ".join(missing))
        return 0
    if not args.name:
        print("spacelm data fetch NAME [--from DIR] [--to DIR]: name the set (`spacelm data list`)", file=sys.stderr)
        return EXIT_INPUT
    try:
        ds = dsets.get(args.name)
    except KeyError as e:
        print(f"spacelm: error: {e.args[0]}", file=sys.stderr)
        return EXIT_INPUT
    mirror = Path(args.source) if args.source else None
    if mirror is not None and not mirror.is_dir():
        print(
            f"spacelm: error: --from {mirror}: no such folder; give a folder holding the set's files", file=sys.stderr
        )
        return EXIT_INPUT
    to = Path(args.to) if args.to else dsets.default_dir(ds)
    texts = None
    if ds.kind == "spans" and mirror is None:
        needed = dsets.get(ds.needs)
        state = dsets.present(needed, dsets.default_dir(needed))
        if state != "present":
            print(
                f"spacelm: error: {ds.name}'s passages are rebuilt from {ds.needs}'s documents, which are {state}: "
                f"run `spacelm data fetch {ds.needs}` first (or give a copy with --from DIR)",
                file=sys.stderr,
            )
            return EXIT_INPUT

        def texts() -> dict[str, str]:
            from .config import load_config
            from .stages.ingest import ingest_configured

            print(f"reading {ds.needs}'s documents as {ds.ingest_config} ingests them (about a minute)")
            docs = ingest_configured(load_config(dsets.project_root() / ds.ingest_config)).documents
            return {d.doc_id: d.text for d in docs}

    try:
        states = dsets.fetch(ds, to, mirror, texts=texts)
    except dsets.NeedsMirror as e:
        print(f"spacelm: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    for st in states:
        print(f"{st.status:<8} {st.file}" + (f"  ({st.detail})" if st.detail else ""))
    ok = sum(st.status == "ok" for st in states)
    print(f"{ds.name}: {ok} of {len(states)} files intact in {to}")
    return 0 if ok == len(states) else 1


def cmd_init(args) -> int:
    """Write a config of the team's own (its run name, corpus, golden samples, trained-model name and
    out-of-corpus subjects in the config, nothing in the package), then check it: every problem at once."""
    from pathlib import Path

    from .config import load_config
    from .lib.team import write_team_config

    try:
        out = write_team_config(
            Path(args.corpus), Path(args.golden), args.name, args.scale, Path(args.out) if args.out else None
        )
    except ValueError as e:
        print(f"spacelm: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    print(f"wrote {out}")
    after = f"next: fix what check says, then `spacelm plan --config {out}` and `spacelm run --config {out}`"
    return _run_and_print_check(load_config(out), after)


def _guess_list(folder) -> str:
    """The shipped list whose files the folder holds most of (so `verify DIR` needs no --list)."""
    from .lib.ingest import corpus_list as cl

    names = {p.name for p in folder.iterdir()}
    best = max(
        cl.available_lists(), default=None, key=lambda n: len(names & {e.file for e in cl.load_corpus_list(n).entries})
    )
    if best is None:
        raise cl.InputError("no corpus list is shipped; give one with --list PATH.tsv")
    return best


# --------------------------------------------------------------------------- drill-down (issue 42)
def _run_folder_config(run: str):
    """(config, run folder) of `--run results/<run>`: the run's config.resolved.yaml (this machine's
    git-ignored copy when there is one), so the drill-down reads that run's data folders."""
    from pathlib import Path

    from .lib.io import InputError
    from .notebooks import readable_config

    folder = Path(run)
    if not folder.is_dir() and (Path("results") / run).is_dir():
        folder = Path("results") / run  # a bare run name
    resolved = folder / names.RESOLVED_CONFIG
    if not resolved.is_file():
        raise InputError(
            f"{resolved} not found: give a run folder a run wrote (e.g. --run results/quick); it holds "
            "config.resolved.yaml beside manifest.json"
        )
    return load_config(readable_config(resolved)), folder


def cmd_browse(args) -> int:
    """Write results/<run>/browse.html from the run's files (no model call)."""
    from .stages.browse import write_browse

    cfg, folder = _run_folder_config(args.run)
    text = {"auto": None, "yes": True, "no": False}[args.text]
    from .runner.provenance import git_tracked

    out = args.out or folder / ("browse.local.html" if text and cfg.corpus.file_list else names.BROWSE)
    kept = None
    if not args.out and git_tracked(cfg.root, [out]):  # a committed run's page is the run's: never rewritten
        kept, out = out, folder / "browse.local.html"
    data = write_browse(cfg, out, run_dir=folder, k=args.k, text=text)
    shown = "included" if data["passages"] else "not included"
    print(f"wrote {out}: {len(data['questions'])} questions, passage text {shown}")
    if kept is not None:
        print(f"{kept} is committed with its run and left as it is; this page is this machine's copy (not committed)")
    if data["text_note"]:
        print(data["text_note"], file=sys.stderr)
    return 0


def cmd_show(args) -> int:
    """The drill-down of a run's questions in the terminal."""
    from .lib.io import InputError
    from .lib.report.browse import index_lines, question_lines, select
    from .stages.browse import collect

    cfg, folder = _run_folder_config(args.run)
    data = collect(cfg, run_dir=folder, k=args.k, text=None if args.text == "auto" else args.text == "yes")
    chosen = select(data, args.qid, args.filter or [])
    if args.qid and not chosen:
        if not select(data, args.qid):
            raise InputError(f"question {args.qid!r} is not in {folder}; `spacelm show --run {args.run}` lists them")
        print(f"question {args.qid} does not pass the filter(s) {', '.join(args.filter)}")
        return 0
    if not args.qid and not args.filter:
        print("\n".join(index_lines(data, chosen)))
        print("give --qid ID (or --filter NAME) to see passages, grades and answers")
        return 0
    for q in chosen:
        print("\n".join(question_lines(data, q)))
    if not chosen:
        print(f"no question of run '{data['run']}' passes {', '.join(args.filter)}")
    return 0


def cmd_export_beir(args) -> int:
    """Complete the BEIR export of a run's questions: corpus.jsonl from the chunks, rebuilt by
    ingest + chunk when they are not on this machine (no model call)."""
    from .stages.beir_export import export_beir_corpus

    cfg = _cfg(args)
    res = export_beir_corpus(cfg, out=args.out, accept_different=args.accept_different)
    how = "rebuilt by ingest + chunk (no model)" if res["how"] == "rebuilt" else "read from the processed folder"
    print(f"wrote {res['folder'] / 'corpus.jsonl'}: {res['chunks']} chunks, {how}")
    if res["matches"] is False:
        print(
            f"warning: written although these chunks hash otherwise than the chunks.jsonl run '{cfg.run_name}' "
            f"recorded ({res['recorded']}): every chunk id the run names is there, but some text may differ",
            file=sys.stderr,
        )
    elif res["matches"]:
        print(f"the chunks are the ones run '{cfg.run_name}' recorded (chunks.jsonl sha256 {res['recorded']}…)")
    return 0


def serve_labels(folder, batch: str, port: int = 0) -> int:
    """Serve one batch of an export folder on 127.0.0.1 until interrupted (spacelm label serve)."""
    from .lib.labels.server import BatchLabels, make_server

    store = BatchLabels(folder, batch)
    server = make_server(store, port)
    server.on_grade = lambda st: print(f"  {st.graded} of {st.total} graded", file=sys.stderr)
    host, bound = server.server_address[:2]
    print(
        f"grading {store.total} items of {batch} ({store.graded} graded already) at http://{host}:{bound}/ ; "
        f"grades are saved to {store.path} as they are given; Ctrl-C stops (the same command resumes)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print(f"stopped: {store.graded} of {store.total} items graded in {store.path}")
    return 0


def _add_drilldown(sub) -> None:
    from .lib.report.browse import FILTERS

    p = sub.add_parser(
        "browse",
        help="write results/<run>/browse.html: per question its passages, grades and answers, one file that "
        "opens from disk (no model call)",
    )
    p.add_argument("--run", required=True, metavar="FOLDER", help="the run folder, e.g. results/quick")
    p.add_argument("--out", metavar="PATH", help="where to write the page (default: <run>/browse.html)")
    p.add_argument("--k", type=int, help="passages shown per system (default: the deepest grading.top_k)")
    p.add_argument(
        "--text",
        choices=["auto", "yes", "no"],
        default="auto",
        help="put passage text in the page: auto follows the corpus licences "
        "(docs/stages.md#drill-down-one-question-at-a-time); "
        "yes on a listed corpus writes browse.local.html, which git ignores",
    )
    p.set_defaults(func=cmd_browse)
    p = sub.add_parser("show", help="a run's questions with their passages, grades and answers, in the terminal")
    p.add_argument("--run", required=True, metavar="FOLDER", help="the run folder, e.g. results/quick")
    p.add_argument("--qid", help="one question's id (without it and --filter: the list of questions)")
    p.add_argument("--filter", action="append", choices=list(FILTERS), help="only questions that meet it (repeatable)")
    p.add_argument("--k", type=int, help="passages shown per system (default: the deepest grading.top_k)")
    p.add_argument("--text", choices=["auto", "yes", "no"], default="yes", help="show passage snippets (default yes)")
    p.set_defaults(func=cmd_show)


# `spacelm --help` lists the subcommands by what a user does with them
COMMAND_GROUPS = (
    ("run a study", ("init", "check", "plan", "run", "status", "report")),
    (
        "one stage (never rewrites a committed run)",
        (
            "ingest",
            "chunk",
            "synth",
            "train-reranker",
            "retrieve",
            "judge-check",
            "grade",
            "answer",
            "findings",
            "chunk-sizes",
        ),
    ),
    ("inspect a run", ("browse", "show", "export-beir")),
    ("labels", ("label",)),
    ("data and models", ("data", "corpus", "models", "cache")),
)


class GroupedHelp(argparse.HelpFormatter):
    """Lists the subcommands under COMMAND_GROUPS' headings (any other under "other")."""

    def _format_action(self, action):
        if not isinstance(action, argparse._SubParsersAction):
            return super()._format_action(action)
        import textwrap

        helps = {a.dest: a.help or "" for a in action._choices_actions}
        grouped = [n for _, names in COMMAND_GROUPS for n in names]
        groups = [*COMMAND_GROUPS, ("other", tuple(n for n in helps if n not in grouped))]
        width = max(len(n) for n in helps) + 2
        lines = []
        for title, members in groups:
            shown = [n for n in members if n in helps]
            if not shown:
                continue
            lines.append(f"{title}:")
            for n in shown:
                body = textwrap.wrap(helps[n], width=max(40, 100 - width - 4))
                lines.append(f"  {n:<{width}}{body[0] if body else ''}")
                lines += [" " * (width + 2) + b for b in body[1:]]
        return "\n".join(lines) + "\n\n"


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .stages import OPTIONAL, STAGES

    ap = argparse.ArgumentParser(
        prog="spacelm", description="RAG benchmark suite for space-operations documents", formatter_class=GroupedHelp
    )
    ap.add_argument("--version", action="version", version=version_line(__version__))
    for flag, text in GLOBAL_FLAGS:
        ap.add_argument(flag, action="store_true", help=text)
    ap._positionals.title = "commands"
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("run", help="run every stage, execute the notebooks, write the report into results/<run>/")
    _add_common(p)
    p.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("status", help="per stage: up to date, stale (naming what changed) or never run")
    _add_common(p, force=False)
    p.set_defaults(func=cmd_status)
    p = sub.add_parser(
        "check",
        help="every check that needs no model (config, corpus folder, golden samples and their passages, "
        "labelled folders): one line per problem, exit 2 on any error",
    )
    _add_common(p, force=False)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser(
        "plan",
        help="per stage and model phase: model calls, prompt and completion tokens, engines in "
        "load order; loads no model",
    )
    _add_common(p, force=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--wide", action="store_true", help="every column (model, backend, bases, prefix reuse)")
    p.add_argument(
        "--use-outputs", action="store_true", help="read earlier stages' outputs even where a run would recompute them"
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="tokenize every prompt (slower); by default a phase past its first 100 calls tokenizes one in 50 "
        "and counts the rest by their characters (marked ~)",
    )
    p.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="a GGUF file, tokenizer.json or model folder to count tokens with, for models whose own "
        "tokenizer is not on this machine (e.g. a hub model not downloaded yet)",
    )
    p.add_argument(
        "--throughput",
        metavar="P[:G]",
        type=_throughput,
        help="prompt tokens/s (and generated tokens/s) measured on your serving setup (all replicas "
        "together): prints an estimated time per model",
    )
    p.set_defaults(func=cmd_plan)
    for stage in [s for s in STAGES + OPTIONAL if s.name != "report"]:  # `spacelm report` below
        p = sub.add_parser(stage.name, help=stage.doc)
        _add_common(p)
        p.set_defaults(func=_stage_cmd(stage.name))
    p = sub.add_parser("report", help="(re)write results/<run>/report.md from the run folder")
    _add_common(p, force=False)
    p.add_argument("--wait", action="store_true", help="if another run holds the folders, wait for it")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="first recompute Table 1, Table 2 and their tests, CIs and plots from the stored grades.jsonl "
        "and answers.jsonl (no model is loaded)",
    )
    p.set_defaults(func=cmd_report)
    p = sub.add_parser(
        "label",
        help="labels from an assessor of measured standing: export blind batches of a run's unlabelled "
        "items, import the answers (standing checked), or serve a batch to grade in a browser",
    )
    p.add_argument("action", choices=["export", "import", "serve"])
    _add_common(p, force=False)
    p.add_argument("--wait", action="store_true", help="if a run holds the run's folders, wait for it")
    p.add_argument(
        "--run", metavar="FOLDER", help="the run folder, e.g. results/quick (default: the config's own run's)"
    )
    p.add_argument(
        "--what",
        choices=["pairs", "negative", "questions", "answers"],
        default="pairs",
        help="export: what to label (negative: the passages of Table 2's negative setting, graded as pairs)",
    )
    p.add_argument("--batches", type=int, default=1, help="export: how many batches (100-150 items each)")
    p.add_argument("--out", metavar="DIR", help="export: a new folder for the batches, brief and key")
    p.add_argument(
        "--draw",
        type=int,
        default=0,
        help="export: which disjoint draw of calibration pairs (a new pass after a refused one: 1, 2, ...)",
    )
    p.add_argument("--from", dest="source", metavar="DIR", help="import, serve: the folder export wrote")
    p.add_argument("--assessor", help="import: who graded (a person, or the model and its version)")
    p.add_argument("--batch", help="serve: the batch to grade (e.g. batch-01)")
    p.add_argument("--port", type=int, default=0, help="serve: the port (default: a free one)")
    p.set_defaults(func=cmd_label)
    p = sub.add_parser(
        "models",
        help="list, locate or verify the embedded models; export-hf writes a GGUF model as "
        "a safetensors folder for vLLM",
    )
    p.add_argument("action", choices=["list", "path", "verify", "export-hf"])
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("cache", help="statistics of, or clear, the persistent LLM call cache (or the embedding cache)")
    p.add_argument("action", choices=["stats", "clear"])
    p.add_argument("--config", default=DEFAULT_CONFIG)
    p.add_argument("--model", help="with clear: only this model's entries")
    p.add_argument(
        "--embeddings", action="store_true", help="the embedding cache (embeddings.sqlite) instead of the call cache"
    )
    p.set_defaults(func=cmd_cache, set=None)
    p = sub.add_parser(
        "corpus",
        help="verify a corpus folder against its list (offline), fetch the listed files "
        "from their public sources, or print the attribution list",
    )
    p.add_argument("action", choices=["verify", "fetch", "attribution"])
    p.add_argument("target", help="verify: the folder; fetch and attribution: the list's name (or a .tsv path)")
    p.add_argument("--to", metavar="DIR", help="fetch: the folder to download into")
    p.add_argument(
        "--list",
        metavar="NAME",
        help="verify: the list to check against (default: the shipped list naming most of the folder's files)",
    )
    p.set_defaults(func=cmd_corpus)
    p = sub.add_parser(
        "data",
        help="the external data sets a config can read: list them (licence, size, present?) or fetch one",
        description="list: every external set (the real corpus, SciFact, TREC DL 2020, the in-domain labels), "
        "its licence, size and whether it is here, intact; fetch NAME: put it where the configs read it, from "
        "its public source or from a copy you have (--from DIR), every file checked against the sha256 the "
        "project records",
    )
    p.add_argument("action", choices=["list", "fetch"])
    p.add_argument("name", nargs="?", help="fetch: the set's name, as `spacelm data list` gives it")
    p.add_argument("--from", dest="source", metavar="DIR", help="fetch: a folder holding the set's files (a mirror)")
    p.add_argument("--to", metavar="DIR", help="fetch: where to put it (default: where the configs read it)")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser(
        "init",
        help="start a corpus of your own: write configs/NAME.yaml from the quick (or standard) config and check it",
        description="writes a config of your own (run name, corpus folder, golden samples, the trained reranker's "
        "name and a copy of the out-of-corpus subjects list, all in the config and under data/NAME/), then runs "
        "`spacelm check` on it, listing every problem at once",
    )
    p.add_argument("--corpus", required=True, metavar="DIR", help="the folder of your .pdf/.md/.txt documents")
    p.add_argument("--golden", required=True, metavar="FILE", help="your golden samples (docs/team-corpus.md)")
    p.add_argument("--name", required=True, help="the run's name: results/NAME/, configs/NAME.yaml")
    p.add_argument("--scale", choices=["quick", "standard"], default="quick", help="which config to start from")
    p.add_argument("--out", metavar="PATH", help="where to write the config (default: configs/NAME.yaml)")
    p.set_defaults(func=cmd_init)
    _add_drilldown(sub)
    p = sub.add_parser(
        "export-beir",
        help="complete a run's BEIR export (corpus.jsonl) from its chunks, rebuilt by ingest + chunk when "
        "they are not here (no model call)",
    )
    _add_common(p, force=False)
    p.add_argument("--out", metavar="DIR", help="the BEIR folder to write (default: <synthetic dir>/beir)")
    p.add_argument(
        "--accept-different",
        action="store_true",
        help="write the chunks even when they hash otherwise than the run recorded (same chunk ids, other text)",
    )
    p.set_defaults(func=cmd_export_beir)
    _finish_subcommands(sub)  # last: every subcommand, the drill-down's too, gets the global flags
    return ap


GLOBAL_FLAGS = (
    ("--debug", "show tracebacks"),
    ("--progress", "progress bars even when not on a terminal"),
)


def _finish_subcommands(sub) -> None:
    """Every subcommand: its `-h` opens with the line `spacelm --help` shows for it, and the global
    flags are accepted after it as well as before (`spacelm run --debug` = `spacelm --debug run`).
    Given after the subcommand, a flag is stored only when given, so it never resets one given before."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, p in sub.choices.items():
        if not helps.get(name):
            raise AssertionError(f"subcommand {name!r} has no help line")  # a test runs build_parser()
        if p.description is None:
            p.description = helps[name]
        for flag, text in GLOBAL_FLAGS:
            if flag not in p._option_string_actions:
                p.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=text)


def setup_logging(progress: bool = False) -> None:
    """One line per event on stderr (spacelm's own at INFO, libraries' only from WARNING);
    progress bars only on a terminal (or with --progress), the libraries' bars included."""
    import os

    from .lib.progress import show_progress

    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s", stream=sys.stderr)
    from .lib.redact import RedactingFilter

    for h in logging.getLogger().handlers:  # no secret the config was given reaches stderr
        h.addFilter(RedactingFilter())
    logging.getLogger("spacelm").setLevel(logging.INFO)
    if progress:
        os.environ["SPACELM_PROGRESS"] = "1"
    if not show_progress():  # tqdm (sentence-transformers, transformers, datasets) reads these
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _say(text: str) -> None:
    """An error for the user: one line on stderr, credentials hidden, terminal controls escaped."""
    from .lib.redact import printable, redact_text

    print("spacelm: " + " ".join(printable(redact_text(text)).split()), file=sys.stderr)


def _short_warning(message, category, filename, lineno, line=None) -> str:
    """A Python warning as `Category: message` (no file name and source line after it)."""
    from .lib.redact import printable

    return f"{category.__name__}: {printable(message)}"


def quiet_warnings() -> None:
    """Warnings once each, printed short; no ResourceWarning (files and sockets left to the
    garbage collector at exit, which `simplefilter("default")` would otherwise show)."""
    warnings.simplefilter("default")
    warnings.filterwarnings("ignore", category=ResourceWarning)
    warnings.formatwarning = _short_warning
    logging.captureWarnings(True)


def main(argv=None) -> int:
    import sqlite3

    from .check import CheckFailed
    from .lib.deps import MissingDependency
    from .lib.io import InputError, describe_os_error
    from .lib.llm.models import ModelNotFound
    from .lib.llm.types import BackendError, BackendUnavailable
    from .runner.base import StaleStage
    from .runner.lock import RunLocked

    args = build_parser().parse_args(argv)
    setup_logging(args.progress)
    quiet_warnings()
    from .signals import exit_code, terminations

    try:
        with terminations():  # SIGTERM and SIGHUP end the command as Ctrl-C does
            code = args.func(args)
            sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at exit
            return code
    except CheckFailed as e:
        if args.debug:
            raise
        for line in e.lines:
            _say(line)
        _say(f"{e.command} refused before writing anything; `spacelm check` lists the same problems")
        return EXIT_INPUT
    except (ConfigError, InputError, ModelNotFound, StaleStage) as e:
        if args.debug:
            raise
        _say(f"error: {e}")
        return EXIT_INPUT
    except BackendUnavailable as e:
        if args.debug:
            raise
        _say(f"model backend unavailable: {e}")
        return EXIT_BACKEND
    except MissingDependency as e:
        if args.debug:
            raise
        _say(f"error: {e}")
        return EXIT_BACKEND
    except BackendError as e:
        if args.debug:
            raise
        _say(f"model backend failed: {e}")
        return EXIT_BACKEND
    except RunLocked as e:
        _say(str(e))
        return EXIT_LOCKED
    except BrokenPipeError:  # stdout closed by its reader (`spacelm plan | head -1`): not an error of ours
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except (ConnectionError, TimeoutError) as e:  # OSErrors that come from a server, not a file
        if args.debug:
            raise
        _say(f"model backend unavailable: {e}")
        return EXIT_BACKEND
    except OSError as e:
        if args.debug:
            raise
        _say(f"error: {describe_os_error(e)}")
        return EXIT_INPUT
    except sqlite3.Error as e:
        if args.debug:
            raise
        _say(
            f"error: a cache database under paths.cache_dir cannot be used ({type(e).__name__}: {e}); "
            "check that the folder is writable and not full, or run `spacelm cache clear`"
        )
        return EXIT_INPUT
    except KeyboardInterrupt as e:
        if args.debug:
            raise
        _say(
            f"interrupted{f' by {e}' if str(e) else ''}; every model server it started is stopped, finished model "
            "calls are cached and the interrupted stage stays stale, so the same command resumes"
        )
        return exit_code(e, EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
