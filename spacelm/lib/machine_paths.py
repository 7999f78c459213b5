"""This machine's folders out of the text a run writes for people: log lines, a model server's
log, the manifest's strings.

A path under one of the places below is written in its public form, wherever it sits in the text
(at the start, after `--model=`, inside quotes, mid-sentence), by the conventions of the manifest's
`public_path`: a model file as `models:<file>` or `package:<path>`; inside the project, relative to
its root (the root itself as `.`); under a folder the config names relatively, as the config names
it (`../shared/space_corpus/x.pdf`); under the home folder as `~/…`; under the user's cache folder
(when it is not under home) as `<cache>/…`; under the system's temporary folder as `<tmp>/…`; under
a folder the config names by an absolute path elsewhere as `<outside the project>/<its name>/…`.

A place that lies inside another place listed before it is written that one's way (the cache
under home stays `~/.cache/…`, as `public_path` writes it); where places nest the other way, the
deeper one wins (a virtual environment inside the project is `package:…`). A folder matches only
as a whole path: with the project at /work/main, `/work/main2` and `/srv/work/main` are left as
they are. Only text changes: the code that reads files keeps their real paths."""

from __future__ import annotations

import functools
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

OUTSIDE = "<outside the project>"  # stands for a machine folder in what a run writes
CACHE = "<cache>"
TMP = "<tmp>"

# the project roots this process ran a config of, each with the folders outside it that its config
# names relatively (anchors) and those it names by an absolute path (see `remember_project`)
_PROJECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def remember_project(root: Any, anchors: Iterable[Any] = (), named: Iterable[Any] = ()) -> None:
    """Scrub the project at `root` from everything `public_text` cleans from now on, and the
    folders its config names outside it: `anchors` (named relatively, `../shared/x`) and `named`
    (absolute paths such as a results folder in /scratch). A run's log calls this with its config,
    so that a model server started later, which knows no config, scrubs the same places."""
    if not root:
        return
    key = os.path.abspath(os.path.expanduser(str(root)))
    old_anchors, old_named = _PROJECTS.get(key, ((), ()))
    new_anchors = tuple(dict.fromkeys([*old_anchors, *(os.path.abspath(str(a)) for a in anchors)]))
    new_named = tuple(dict.fromkeys([*old_named, *(os.path.abspath(str(n)) for n in named)]))
    _PROJECTS[key] = (new_anchors, new_named)


def user_cache_dir() -> str:
    """The user's cache folder: $XDG_CACHE_HOME, else ~/.cache."""
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def models_dir() -> Path:
    """The model store: $SPACELM_MODELS_DIR, else ~/.cache/spacelm/models."""
    return Path(os.environ.get("SPACELM_MODELS_DIR", Path.home() / ".cache" / "spacelm" / "models"))


def path_roots() -> list[tuple[str, Path]]:
    """The places a model file's path is said relative to in outputs: the models folder
    (`models:`) and the installed packages (`package:`)."""
    import site
    import sysconfig

    roots = [("models", models_dir())]
    for sp in dict.fromkeys([*getattr(site, "getsitepackages", lambda: [])(), sysconfig.get_paths()["purelib"]]):
        roots.append(("package", Path(sp)))
    return roots


def _inside(p: str, folder: str) -> bool:
    return p == folder or p.startswith(folder.rstrip(os.sep) + os.sep)


def places(root: Any = None, anchors: Iterable[Any] = (), named: Iterable[Any] = ()) -> list[tuple[str, str, str]]:
    """(folder, how the folder itself is written, what a path under it starts with) for each place
    whose paths `public_text` rewrites, from `root` and the remembered projects, in the order of
    precedence the module's docstring gives; a place inside an earlier one is left out."""
    projects = dict(_PROJECTS)
    if root:
        key = os.path.abspath(os.path.expanduser(str(root)))
        was_a, was_n = projects.get(key, ((), ()))
        projects[key] = (
            (*was_a, *(os.path.abspath(str(a)) for a in anchors)),
            (*was_n, *(os.path.abspath(str(n)) for n in named)),
        )
    ranked: list[tuple[str, str, str]] = [(str(r), f"{label}:.", f"{label}:") for label, r in path_roots()]
    ranked += [(r, ".", "") for r in projects]
    for r, (anchors_of, _) in projects.items():
        for a in anchors_of:
            rel = os.path.relpath(a, r)
            ranked.append((a, rel, rel + "/"))
    home = os.path.expanduser("~")
    ranked += [(home, "~", "~/"), (user_cache_dir(), CACHE, CACHE + "/"), (tempfile.gettempdir(), TMP, TMP + "/")]
    for _, (_, named_of) in projects.items():
        for n in named_of:
            name = os.path.basename(n.rstrip(os.sep)) or "root"
            ranked.append((n, f"{OUTSIDE}/{name}", f"{OUTSIDE}/{name}/"))
    out: list[tuple[str, str, str]] = []
    for folder, bare, child in ranked:
        for f in dict.fromkeys([os.path.abspath(os.path.expanduser(folder)), os.path.realpath(folder)]):
            if f in ("", os.sep) or any(_inside(f, kept) for kept, _, _ in out):
                continue
            out.append((f, bare, child))
    return out


@functools.lru_cache(maxsize=64)
def _pattern(folders: tuple[str, ...]) -> re.Pattern:
    # a folder is a whole path: not preceded by a character of a file name (`/srv/work/main` is not
    # the project /work/main), and followed by '/' and a name, or by a character no file name holds
    # (`/work/main2` and `/work/main.bak` are not the project either; a sentence's full stop after it
    # is no part of a name); the longest folder first, so the deepest place wins
    alternatives = "|".join(re.escape(f) for f in sorted(folders, key=len, reverse=True))
    return re.compile(r"(?<![\w.~-])(?P<folder>" + alternatives + r")(?:(?P<sub>/)(?=[\w.~@+%-])|(?!\.*[\w~@+%-]))")


def scrubber(root: Any = None, anchors: Iterable[Any] = (), named: Iterable[Any] = ()) -> Callable[[str], str]:
    """`public_text` with the places worked out once (for cleaning many strings)."""
    table = {f: (bare, child) for f, bare, child in places(root, anchors, named)}
    if not table:  # no folder to hide (a home of '/', say)
        return lambda text: text
    pattern = _pattern(tuple(table))

    def clean(text: str) -> str:
        def one(m: re.Match) -> str:
            bare, child = table[m.group("folder")]
            return child if m.group("sub") else bare

        return pattern.sub(one, text) if text else text

    return clean


def public_text(text: str, root: Any = None, anchors: Iterable[Any] = (), named: Iterable[Any] = ()) -> str:
    """`text` with every path under one of this machine's places (see the module's docstring)
    written in its public form."""
    return scrubber(root, anchors, named)(str(text))


# an absolute path of two or more parts that no place above covers (a labelling folder, /usr/lib):
# not inside a URL or a relative path, and not a ratio such as km/s (a slash after a word character)
_ABSOLUTE = re.compile(r"(?<![\w.~:/<>-])/(?:[\w.@+%-]+/)+(?P<name>[\w.@+%-]*)")


def strict_scrubber(root: Any = None) -> Callable[[str], str]:
    """`scrubber(root)`, then any absolute path still left written as `<outside the project>/<its last
    part>`: for text whose paths no config names (a command line, a notebook's traceback); the places
    worked out once."""
    clean = scrubber(root)

    def one(m: re.Match) -> str:
        name = m.group("name") or m.group(0).rstrip("/").rsplit("/", 1)[-1]
        return f"{OUTSIDE}/{name}"

    return lambda text: _ABSOLUTE.sub(one, clean(str(text)))


def no_machine_path(text: str, root: Any = None) -> str:
    """One text through :func:`strict_scrubber`."""
    return strict_scrubber(root)(text)


class PublicFormatter(logging.Formatter):
    """A log file's formatter: each line as the base formatter writes it (the traceback included),
    then credentials hidden and machine paths made public. The record itself is left alone, so the
    other handlers (the terminal) print it as they would."""

    def format(self, record: logging.LogRecord) -> str:
        from .redact import redact_text

        return public_text(redact_text(super().format(record)))


def public_lines(source, sink) -> None:
    """Copy a binary stream to a binary file line by line, each line's machine paths made public
    (bytes that are not UTF-8 are kept as they were); until the stream ends or the file is closed.
    What a model server's output goes through on its way to the log in the run folder."""
    clean = scrubber()
    try:
        for line in iter(source.readline, b""):
            sink.write(clean(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
            sink.flush()
    except (OSError, ValueError):  # the log was closed under it (a server that did not stop)
        pass
    finally:
        source.close()
