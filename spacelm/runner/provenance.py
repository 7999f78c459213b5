"""How a run's files name paths and read a run's manifest, below both the stage machinery
(`base`) and the manifest writer (`manifest`): no machine path in what a run writes
(:func:`public_path`), and the manifest as data (:func:`read_manifest`)."""

from __future__ import annotations

import json
import os
import re
import subprocess

from ..config import Config
from ..lib.machine_paths import OUTSIDE, remember_project, scrubber


def _inside(p: str, folder: str) -> bool:
    return p == folder or p.startswith(folder.rstrip(os.sep) + os.sep)


def _config_strings(cfg: Config):
    """Every string value of the config, however deep."""

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                yield from walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from walk(x)
        elif isinstance(v, str):
            yield v

    return walk(cfg.to_dict())


def config_anchors(cfg: Config) -> list[str]:
    """Folders outside the project that the config names by a relative path (such as
    `../shared/space_corpus`): a path under one is written relative to the project, as the
    config gives it."""
    if not cfg.root:
        return []
    return [os.path.normpath(os.path.join(cfg.root, v)) for v in _config_strings(cfg) if v.startswith("../")]


def public_path(path, cfg: Config, anchors: list[str] | None = None) -> str:
    """How a run's files name `path` (a relative one is read against the project root):
    a model file as `models:<file>` or `package:<path>`; inside the project, relative to its root;
    under a folder the config names relatively, relative to the root as the config gives it
    (`../shared/space_corpus/x.pdf`); under the home folder as `~/…`; any other machine path
    (say a `--set paths.processed_dir=/tmp/scratch` override) as `<outside the project>/<name>`."""
    from ..lib.machine_paths import path_roots

    raw = os.path.expanduser(str(path))
    p = os.path.normpath(raw if os.path.isabs(raw) or not cfg.root else os.path.join(cfg.root, raw))
    for label, r in path_roots():
        r = os.path.abspath(str(r))
        if _inside(p, r):
            return f"{label}:{os.path.relpath(p, r)}"
    root = os.path.abspath(cfg.root) if cfg.root else None
    if root and _inside(p, root):
        return os.path.relpath(p, root)
    for a in config_anchors(cfg) if anchors is None else anchors:
        if _inside(p, a):
            return os.path.relpath(p, root)
    home = os.path.expanduser("~")
    if home not in ("", "/") and _inside(p, home):
        return "~/" + os.path.relpath(p, home)
    return f"{OUTSIDE}/{os.path.basename(p.rstrip(os.sep)) or 'root'}"


def named_folders(cfg: Config) -> list[str]:
    """The absolute paths the config names (a results folder in /scratch, a server's python):
    text a run writes names what lies under one as `<outside the project>/<its name>/…`."""
    expanded = (os.path.expanduser(v) for v in _config_strings(cfg))
    return [os.path.normpath(v) for v in expanded if os.path.isabs(v)]


def remember_machine(cfg) -> None:
    """Make the text this process writes for people (its log file, a model server's log) name
    no folder of this machine that `cfg` implies: its project root, the folders outside the
    project its config names (see :mod:`spacelm.lib.machine_paths`). A config without a root
    (one built in a test) adds nothing to the places always scrubbed (home, cache, temp)."""
    if getattr(cfg, "root", None):
        remember_project(cfg.root, config_anchors(cfg), named_folders(cfg))


def _looks_like_path(s: str) -> bool:
    """A whole string that is a path, not a sentence that opens with one ("/x/y not found: …"): a
    path-like start, and no space unless the file is there (only those strings touch the disk)."""
    looks = s.startswith(("/", "~/", "../")) or s == "~" or bool(re.match(r"^[A-Za-z]:\\", s))
    return looks and (" " not in s or os.path.exists(s))


def machine_free(obj, cfg: Config, anchors: list[str] | None = None, clean=None):
    """A copy of a JSON-like object with credentials hidden (a server URL's user:password, api
    keys in its query) and every path made public: string values that are absolute paths or climb
    out of the project (`../`), and the path in an input's name (`file:<path>`), by
    :func:`public_path`; a machine path inside any other string (`0.6 (vllm) at /home/me/venv/…`,
    `--model=/root/.cache/x`) by :func:`spacelm.lib.machine_paths.public_text`."""
    from ..lib.redact import redact_text

    anchors = config_anchors(cfg) if anchors is None else anchors
    if clean is None:
        clean = scrubber(cfg.root, anchors, named_folders(cfg) if cfg.root else ())
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str) and k.startswith("file:") and _looks_like_path(k[5:]):
                k = "file:" + public_path(k[5:], cfg, anchors)
            elif isinstance(k, str):
                k = clean(k)
            out[k] = machine_free(v, cfg, anchors, clean)
        return out
    if isinstance(obj, (list, tuple)):
        return [machine_free(v, cfg, anchors, clean) for v in obj]
    if isinstance(obj, str):
        if "://" in obj or "=" in obj:
            obj = redact_text(obj)
        return public_path(obj, cfg, anchors) if _looks_like_path(obj) else clean(obj)
    return obj


def read_manifest(path) -> dict | None:
    """A manifest file's data, or None when it is missing or not a manifest."""
    try:
        data = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("stages"), dict) else None


def git_tracked(root, paths) -> list[str]:
    """The files git tracks under `paths` (files or folders, absolute or relative to `root`), as git
    names them: the committed outputs among them. Empty when `root` is not in a git work tree."""
    if not paths or not root:
        return []
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", *map(str, paths)], cwd=root, capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(f for f in out.stdout.split("\0") if f) if out.returncode == 0 else []


def git_ignored(root: str | None, paths: list[str]) -> set[str]:
    """Those of `paths` (relative to `root`) that git ignores: files a run writes but never
    commits (such as judge_check/pairs.jsonl). Empty when git cannot tell."""
    if not paths or not root:
        return set()
    try:
        out = subprocess.run(
            ["git", "check-ignore", "--stdin"],
            cwd=root,
            input="\n".join(paths),
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    return set(out.stdout.splitlines()) if out.returncode in (0, 1) else set()


# files a run rewrites: their changes do not make the code a run used "dirty"
RUN_OUTPUT_DIRS = ("data/processed", "data/synthetic", "results")


def git_commit(root: str | None) -> str | None:
    """HEAD, with "+dirty" when tracked files outside the run's own outputs differ from it."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root or ".", capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root or ".",
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.splitlines()
        dirty = [ln[3:] for ln in status if not ln[3:].startswith(RUN_OUTPUT_DIRS)]
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None
