"""Notebooks against a run: the run's resolved config, executing the notebooks top to bottom
(nbclient) into the run folder, and what a notebook says about each stage.

`spacelm run` writes `results/<run>/config.resolved.yaml` (overrides applied) and executes
every notebook with ``$SPACELM_CONFIG`` pointing at it and ``$SPACELM_REUSE_ONLY`` set, so a
notebook shows exactly that run's results and never recomputes a stage with other settings.
A notebook opened by hand from `results/<run>/notebooks/` finds that run's resolved config
itself and is reuse-only too unless recomputing is allowed (``$SPACELM_RECOMPUTE=1`` or
``notebook_config(recompute=True)``; docs/notebooks.md). The committed notebooks stay without
outputs."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from .config import Config
from .lib import names
from .lib.machine_paths import no_machine_path

log = logging.getLogger("spacelm")
RESOLVED_NAME = "config.resolved.yaml"
# beside it, only when the public copy had to hide a machine path or a credential: the config
# as this machine ran it (git-ignored), which notebooks read in its place
LOCAL_RESOLVED_NAME = ".config.resolved.local.yaml"
RECOMPUTE_ENV = "SPACELM_RECOMPUTE"  # "1": a notebook reading a run folder may recompute stages


PROJECT_NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_dir(cfg: Config) -> Path:
    """The notebooks to execute: `notebooks/` beside the config's project, else the ones that
    come with this checkout of spacelm (a config kept elsewhere still runs them)."""
    for d in (cfg.path("notebooks"), PROJECT_NOTEBOOKS):
        if any(d.glob("[0-9][0-9]_*.ipynb")):
            return d
    return PROJECT_NOTEBOOKS


def write_resolved_config(cfg: Config) -> Path:
    """`results/<run>/config.resolved.yaml`: the run's config with every override applied;
    paths stay as written (relative ones resolve against `project_root`). A path outside the
    project that the config gives absolute (`--set paths.processed_dir=/tmp/x`) is written
    `<outside the project>/x`, and credentials as ***; the config as given then goes to a
    git-ignored `.config.resolved.local.yaml` beside it, which the notebooks read instead."""
    import yaml

    from .lib.io import write_text
    from .runner.provenance import machine_free

    path = cfg.run_dir / RESOLVED_NAME
    local = path.parent / LOCAL_RESOLVED_NAME
    data = cfg.to_dict()
    public = machine_free(data, cfg)
    if cfg.root:
        data = {"project_root": os.path.relpath(cfg.root, path.parent), **data}
        public = {"project_root": data["project_root"], **public}
    from .runner.provenance import public_path

    source = public_path(cfg.source, cfg) if cfg.source else cfg.source
    header = (
        f"# The resolved config of run '{cfg.run_name}' (from {source}, overrides applied).\n"
        "# `spacelm run --config` this file reproduces the run; its notebooks were executed against it.\n"
    )
    if public != data:
        header += (
            f"# Machine paths and credentials are hidden here; this machine's copy is {LOCAL_RESOLVED_NAME}\n"
            "# (not committed): set the hidden values again with --set to reproduce the run elsewhere.\n"
        )
        write_text(local, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    else:
        local.unlink(missing_ok=True)
    write_text(path, header + yaml.safe_dump(public, sort_keys=False, allow_unicode=True))
    return path


def readable_config(resolved: Path) -> Path:
    """The file to load for a run's resolved config: this machine's copy when there is one."""
    local = Path(resolved).parent / LOCAL_RESOLVED_NAME
    return local if Path(resolved).name == RESOLVED_NAME and local.is_file() else Path(resolved)


def execute_notebook(
    src: Path, dest: Path, config_file: Path, cwd: Path, timeout: int = 1800, reuse_only: bool = True
) -> Path:
    """Run one notebook against `config_file` (by default in reuse-only mode: a stage that is
    not up to date is an error, never recomputed); write it to `dest`."""
    import nbformat
    from nbclient import NotebookClient

    from .lib.io import atomic_open
    from .runner.base import REUSE_ONLY_ENV

    nb = nbformat.read(src, as_version=4)
    saved = {k: os.environ.get(k) for k in ("SPACELM_CONFIG", REUSE_ONLY_ENV)}
    os.environ["SPACELM_CONFIG"] = str(readable_config(Path(config_file)).resolve())
    if reuse_only:
        os.environ[REUSE_ONLY_ENV] = "1"
    else:
        os.environ.pop(REUSE_ONLY_ENV, None)
    failure = None
    try:
        # the kernel's own log at ERROR: it otherwise warns on every start that its local TCP
        # socket (127.0.0.1, one kernel per notebook) is not encrypted
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(cwd)}},
            extra_arguments=["--log-level=ERROR"],
        ).execute()
    except Exception as e:  # a cell failed: the notebook is kept as far as it ran, with the error shown
        from nbclient.exceptions import CellExecutionError

        if not isinstance(e, CellExecutionError):
            raise
        failure = NotebookFailed(src.name, no_machine_path(_cell_error(e), cwd))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _public_outputs(nb, cwd)
    if failure is not None:
        # an executed copy is replaced only by a successful execution: the failed one goes beside it
        failed_copy = failed_path(dest)
        with atomic_open(failed_copy) as f:
            nbformat.write(nb, f)
        failure.path = failed_copy
        raise failure
    with atomic_open(dest) as f:
        nbformat.write(nb, f)
    stale = failed_path(dest)
    if stale.exists():  # an earlier failure this success supersedes
        stale.unlink()
    return dest


def _public_outputs(nb, root: Path) -> None:
    """Every cell output's text with this machine's folders written in their public form (a
    traceback names the package's files and the interpreter's), in place."""
    from .lib.machine_paths import strict_scrubber

    clean = strict_scrubber(root)
    colour = re.compile(r"\x1b\[[0-9;]*m")  # a traceback's colours hide where a path starts

    def one(v):
        return clean(colour.sub("", v)) if isinstance(v, str) else v

    def text(value):
        return [one(v) for v in value] if isinstance(value, list) else one(value)

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for key in ("text", "evalue", "traceback"):
                if key in out:
                    out[key] = text(out[key])
            for mime, value in (out.get("data") or {}).items():
                if mime.startswith("text/"):
                    out["data"][mime] = text(value)


def failed_path(dest: Path) -> Path:
    """Where a failed execution of `dest` is written: `NAME.failed.ipynb` beside it."""
    return dest.with_name(dest.stem + ".failed.ipynb")


class NotebookFailed(RuntimeError):
    """A cell of a notebook raised; the failed copy (up to and with the error) is written beside the
    executed one (`failed_path`), which stays as it was."""

    def __init__(self, name: str, error: str):
        super().__init__(f"{name}: {error}")
        self.name, self.error = name, error
        self.path: Path | None = None  # the failed copy, written beside the executed one


def _cell_error(e: Exception) -> str:
    """The error a failed cell raised, in one line ("KeyError: 'ndcg@10'")."""
    name, value = getattr(e, "ename", None), getattr(e, "evalue", None)
    if name:
        return f"{name}: {value}"[:300]
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:300]


# notebooks that read one optional stage's outputs (by their number): not executed for a run without it
NOTEBOOK_STAGES = {"04": "grade", "05": "answer", "06": "answer"}


def execute_notebooks(cfg: Config, config_file: Path, failed: dict | None = None) -> list[str]:
    """Execute every notebook against the run's resolved config into `results/<run>/notebooks/`. A
    notebook whose cell fails is written as far as it ran beside its executed copy (NAME.failed.ipynb;
    the executed copy stays as it was), named with its error in `failed` (a dict the caller passes)
    and in a warning, and the others still run: the stages' outputs stand whatever a notebook does
    with them."""
    out_dir = cfg.run_dir / "notebooks"
    done = []
    found = sorted(notebook_dir(cfg).glob("[0-9][0-9]_*.ipynb"))
    if not found:
        log.warning("no notebooks found in %s or %s: none executed", cfg.path("notebooks"), PROJECT_NOTEBOOKS)
    from .stages import stages_for

    present = {st.name for st in stages_for(cfg)}
    for src in found:
        dest = out_dir / src.name
        stage = NOTEBOOK_STAGES.get(src.name[:2])
        if stage and stage not in present:
            log.info("skipping %s: this run has no %s stage", src.name, stage)
            continue
        log.info("executing %s", src.name)
        try:
            execute_notebook(src, dest, config_file, cwd=src.parent)
        except NotebookFailed as e:
            log.warning(
                "notebook %s failed: %s (the failed copy shows where: %s; %s is kept as it was)",
                e.name,
                e.error,
                e.path,
                dest,
            )
            if failed is not None:
                failed[e.name] = e.error
            continue
        done.append(str(dest))
    return done


def find_resolved_config(start: Path | None = None) -> Path | None:
    """The `config.resolved.yaml` of the run folder holding `start` (default: the current
    folder): looked for in `start` and its parents up to the run folder (`results/<run>/`,
    the folder holding a manifest) or the project root, whichever comes first."""
    here = Path(start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        if (d / RESOLVED_NAME).is_file():
            return d / RESOLVED_NAME
        if (d / names.MANIFEST).is_file() or (d / "configs").is_dir() or d.parent.name == "results":
            return None
    return None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def notebook_config(
    config: str | Path | None = None, default: str = "configs/quick.yaml", recompute: bool | None = None
) -> Config:
    """The config a notebook runs with, said in the notebook's output (on stderr outside one):

    0. ``config``, the notebook's parameters cell (``CONFIG``) when it names one: a run folder
       (`results/<run>`, read from its `config.resolved.yaml`, reuse-only unless `recompute`), a
       run's `config.resolved.yaml` (the same), or a config file (which may compute); a relative
       path is found from the current folder or its parents;
    1. ``$SPACELM_CONFIG`` (set by `spacelm run`, which also makes the notebook reuse-only);
    2. else the `config.resolved.yaml` of the run folder the notebook sits in (opened from
       `results/<run>/notebooks/`): that run, reuse-only — a stage whose outputs are not the
       run's raises instead of calling a model — unless `recompute` is true or
       ``$SPACELM_RECOMPUTE=1``;
    3. else `default`, found from the current folder or its parents (a notebook opened from
       the project's `notebooks/` folder), which may compute.

    A resolved config's relative `project_root` resolves from the file's own folder."""
    from .config import load_config
    from .runner.base import REUSE_ONLY_ENV

    env = os.environ.get("SPACELM_CONFIG")
    here = Path.cwd().resolve()
    if config is not None:
        return _explicit_config(Path(config), here, recompute)
    if env:
        cfg = load_config(env)
        _say_config(Path(env), cfg, reuse_only=bool(os.environ.get(REUSE_ONLY_ENV)))
        return cfg
    resolved = find_resolved_config(here)
    if resolved is not None:
        cfg = load_config(readable_config(resolved))
        allow = recompute if recompute is not None else _truthy(os.environ.get(RECOMPUTE_ENV))
        if allow:
            os.environ.pop(REUSE_ONLY_ENV, None)
        else:
            os.environ[REUSE_ONLY_ENV] = "1"
        _say_config(resolved, cfg, reuse_only=not allow)
        return cfg
    for d in [here, *here.parents]:
        if (d / default).is_file():
            cfg = load_config(d / default)
            if recompute is False:
                os.environ[REUSE_ONLY_ENV] = "1"
            _say_config(d / default, cfg, reuse_only=bool(os.environ.get(REUSE_ONLY_ENV)))
            return cfg
    raise FileNotFoundError(
        f"no {RESOLVED_NAME} in a run folder above {here} and no {default} found above it; "
        "set SPACELM_CONFIG to a config file"
    )


def _say_config(path: Path, cfg: Config, reuse_only: bool) -> None:
    """One line naming the config read (relative to the current folder, so an executed notebook
    holds no machine path) and whether stages may be recomputed: in a notebook as ordinary output
    (whose tables from here on show missing values as a dash, :func:`show_missing_as_dash`),
    elsewhere on stderr."""
    import sys

    try:
        shown = os.path.relpath(Path(path).resolve(), Path.cwd().resolve())
    except ValueError:
        shown = Path(path).name
    mode = (
        f"reuse-only: reads what the run wrote, no model call (set {RECOMPUTE_ENV}=1 to allow recomputing)"
        if reuse_only
        else "stages not up to date are recomputed (model calls)"
    )
    msg = f"spacelm: config {shown} (run '{cfg.run_name}'); {mode}"
    log.info(msg)
    if show_missing_as_dash():  # in a notebook: ordinary output, not a red stderr box
        print(msg)
    else:  # a script or a shell: stdout stays for what the caller prints
        print(msg, file=sys.stderr)


def describe_stage(cfg: Config, name: str, summary: dict | None = None) -> str:
    """One line for a notebook: did this run compute the stage, or reuse earlier results?
    Read from the run's manifest (what `spacelm run` did), else from `summary`."""
    rec = None
    try:
        rec = json.loads((cfg.run_dir / names.MANIFEST).read_text())["stages"].get(name)
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    stale = (summary or {}).get("stale") or []
    rec = rec or summary or {}
    llm = [v for k, v in rec.items() if k.startswith("llm") and isinstance(v, dict)]
    calls = sum(x.get("calls", 0) for x in llm)
    hits = sum(x.get("cache_hits", 0) for x in llm)
    if rec.get("skipped"):
        line = (
            f"{name}: reused — its outputs were up to date, computed earlier in "
            f"{rec.get('computed_seconds') or 0:.0f} s; this run made no model call for it"
        )
    else:
        model = f"; {calls} model calls, {hits} answered from the cache" if llm else ""
        line = f"{name}: computed in this run ({rec.get('seconds', 0):.0f} s{model})"
    if stale:  # a committed run read as it is (runner.base.read_as_committed)
        more = f"; and {len(stale) - 3} more" if len(stale) > 3 else ""
        line += (
            f"\n  shown as committed: the code or config changed since this run ({'; '.join(stale[:3])}{more}); "
            "`spacelm run` recomputes it"
        )
    return line


def _explicit_config(given: Path, here: Path, recompute: bool | None) -> Config:
    """The config a parameters cell names (see `notebook_config`)."""
    from .config import load_config
    from .runner.base import REUSE_ONLY_ENV

    found = next((d / given for d in [here, *here.parents] if (d / given).exists()), None)
    if given.is_absolute() or found is None:
        found = given
    if not found.exists():
        raise FileNotFoundError(f"CONFIG = {str(given)!r}: no such run folder or config file from {here} or above")
    resolved = found / RESOLVED_NAME if found.is_dir() else found
    if found.is_dir() and not resolved.is_file():
        raise FileNotFoundError(f"CONFIG = {str(given)!r}: {resolved} not found (a run folder holds one after a run)")
    if resolved.name == RESOLVED_NAME:
        cfg = load_config(readable_config(resolved))
        allow = recompute if recompute is not None else _truthy(os.environ.get(RECOMPUTE_ENV))
    else:
        cfg = load_config(resolved)
        allow = recompute is not False
    if allow:
        os.environ.pop(REUSE_ONLY_ENV, None)
    else:
        os.environ[REUSE_ONLY_ENV] = "1"
    _say_config(resolved, cfg, reuse_only=not allow)
    return cfg


ROWS_SHOWN = 60  # a longer table shows its first rows and says how many it has


def _shown(obj):
    """(the table as a notebook shows it, the line under it or ""): a Series as a one-column frame,
    a mapping or a list in a cell as words (`as_words`), a missing value as "–", every column and
    the whole of each cell; past `ROWS_SHOWN` rows, the first rows and "first N of M rows"."""
    from collections.abc import Mapping

    import pandas as pd

    from .lib.tables import as_words, dash_missing

    df = obj.to_frame() if isinstance(obj, pd.Series) else obj

    def words(v):
        return as_words(v) if isinstance(v, (Mapping, list, tuple, set)) else v

    nested = [i for i in range(df.shape[1]) if pd.api.types.is_object_dtype(df.dtypes.iloc[i])]
    if nested:
        df = df.copy()
        for i in nested:
            df.isetitem(i, df.iloc[:, i].map(words))
    note = ""
    if len(df) > ROWS_SHOWN:
        note = f"first {ROWS_SHOWN} of {len(df):,} rows"
        df = df.head(ROWS_SHOWN)
    return dash_missing(df), note


def _html_table(obj) -> str:
    import pandas as pd

    from .lib.tables import MISSING

    df, note = _shown(obj)
    with pd.option_context("display.max_colwidth", None):
        shown = df.to_html(na_rep=MISSING, notebook=True, max_rows=None, max_cols=None, show_dimensions=False)
    return shown + (f"<p>{note}</p>" if note else "")


def _text_table(obj) -> str:
    import pandas as pd

    from .lib.tables import MISSING

    df, note = _shown(obj)
    if isinstance(obj, pd.Series):
        shown = df.iloc[:, 0].to_string(na_rep=MISSING, max_rows=None, name=True, dtype=True)
    else:
        shown = df.to_string(na_rep=MISSING, max_rows=None, max_cols=None, max_colwidth=None)
    return shown + (f"\n{note}" if note else "")


def show_missing_as_dash() -> bool:
    """In a running notebook (IPython), display every DataFrame and Series as report.md writes a
    table: missing values (NaN, None, <NA>) as "–", mappings and lists in a cell as words, every
    column and the whole of each cell, and past `ROWS_SHOWN` rows the first ones with a line
    saying how many there are (never pandas' "..."); in HTML and in plain text, and styled tables
    alike. False (and nothing done) outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    import pandas as pd
    from pandas.io.formats.style import Styler

    from .lib.tables import MISSING

    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, _html_table)
    formatters["text/html"].for_type(pd.Series, _html_table)
    formatters["text/plain"].for_type(pd.DataFrame, lambda df, p, cycle: p.text(_text_table(df)))
    formatters["text/plain"].for_type(pd.Series, lambda s, p, cycle: p.text(_text_table(s)))
    # a styled table's plain-text view is its data, not "<pandas...Styler at 0x...>"
    formatters["text/plain"].for_type(Styler, lambda st, p, cycle: p.text(_text_table(st.data)))
    pd.set_option("styler.format.na_rep", MISSING)
    return True


def excerpt(text: str, limit: int | None = None, one_line: bool = True) -> str:
    """`text` (on one line unless `one_line` is false), cut at `limit` characters with the cut said
    in words: "[first 300 of 1,024 characters]"."""
    text = " ".join(str(text).split()) if one_line else str(text)
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}{' ' if one_line else chr(10)}[first {limit:,} of {len(text):,} characters]"


def passage_shown(chunk, quotable: bool, limit: int | None = None) -> str:
    """A passage as a notebook shows it: its text (`excerpt`) where the corpus may be quoted, else
    where it lies (document, characters, pages), which the corpus itself holds."""
    if chunk is None:
        return "(no source passage)"
    if quotable:
        return excerpt(chunk.text, limit)
    return (
        f"(text not shown) {chunk.doc_id}, characters {chunk.char_start:,}-{chunk.char_end:,}, "
        f"pages {chunk.page_start}-{chunk.page_end}"
    )


_IMAGE_LINK = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def show(cfg: Config, section: str, **options) -> None:
    """Display one section of the run's report, worded as the report words it: `show(cfg,
    "judge_checks")`, `show(cfg, "judge_banner", table="table2")` (`stages.report.SHOWN` lists them)."""
    from .stages.report import section_text

    show_markdown(cfg, section_text(cfg, section, **options))


def show_markdown(cfg: Config, text: str) -> None:
    """Display a report section in a notebook: its text as Markdown and each figure it links
    (a path in the run folder) as an embedded image, so no figure depends on where the notebook
    file sits; a figure that is not there is named instead."""
    from IPython.display import Image, Markdown, display

    pos = 0
    for m in _IMAGE_LINK.finditer(text):
        if text[pos : m.start()].strip():
            display(Markdown(text[pos : m.start()]))
        path = cfg.run_dir / m.group(2)
        display(
            Image(filename=str(path)) if path.is_file() else Markdown(f"_(figure not in this run: `{m.group(2)}`)_")
        )
        pos = m.end()
    if text[pos:].strip():
        display(Markdown(text[pos:]))
