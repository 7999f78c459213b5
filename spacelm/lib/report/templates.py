"""Documents written from a template file: the prose lives in the file, the numbers and tables
come from the caller.

The format is small. A template file holds named blocks; a line ``@@ name`` opens one, and the
block runs to the next such line (one blank line just before it separates the blocks and is not
part of either; text before the first block is a comment). Inside a block, ``${name}`` is
replaced by a value (``$$`` writes a dollar sign). A line holding nothing but ``${name}`` whose
value is a list of lines is a *slot*: it becomes those lines, or disappears when the list is
empty, so an optional section leaves no blank line behind."""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

_HEADER = re.compile(r"^@@ (\w+)\s*$")
_SLOT = re.compile(r"^\$\{(\w+)\}$")


def read_blocks(path: Path) -> dict[str, list[str]]:
    """{block name: its lines} of a template file."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in Path(path).read_text(encoding="utf-8").split("\n"):
        m = _HEADER.match(line)
        if m:
            if current is not None and current and current[-1] == "":
                current.pop()
            current = blocks.setdefault(m.group(1), [])
            continue
        if current is not None:
            current.append(line)
    if current and current[-1] == "":  # the file's final newline
        current.pop()
    return blocks


def render(block: list[str], values: dict) -> list[str]:
    """The lines of `block` with its placeholders filled from `values` (a missing value is an
    error: a template and its caller must agree)."""
    from .tables import as_words

    shown = {k: as_words(v) for k, v in values.items()}  # None, dicts and lists as words, not reprs
    out: list[str] = []
    for line in block:
        slot = _SLOT.match(line)
        if slot and isinstance(values.get(slot.group(1)), list):
            out.extend(values[slot.group(1)])
            continue
        out.append(Template(line).substitute(shown))
    return out
