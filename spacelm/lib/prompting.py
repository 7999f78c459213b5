"""Prompt templates live as plain text files in `spacelm/prompts/` so a reader sees them whole.

A template file has a system part and a user part separated by a line `=== user ===`;
placeholders are `{name}` fields filled with str.format (literal braces are doubled).
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources

SEPARATOR = "=== user ==="


@lru_cache(maxsize=None)
def template(name: str) -> tuple[str, str]:
    """(system, user) parts of `spacelm/prompts/<name>.txt`."""
    text = resources.files("spacelm").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    if SEPARATOR not in text:
        raise ValueError(f"spacelm/prompts/{name}.txt: missing the '{SEPARATOR}' line between system and user parts")
    system, user = text.split(SEPARATOR, 1)
    return system.strip(), user.strip()


def has_template(name: str) -> bool:
    return resources.files("spacelm").joinpath("prompts", f"{name}.txt").is_file()


def render(name: str, **fields) -> list[dict]:
    """Chat messages for template `name` with its fields filled in."""
    system, user = template(name)
    return [{"role": "system", "content": system.format(**fields)}, {"role": "user", "content": user.format(**fields)}]


def template_hash(name: str) -> str:
    """A short hash of a template's text ("<missing>" when there is no such file)."""
    if not has_template(name):
        return "<missing>"
    s, u = template(name)
    return hashlib.sha256((s + SEPARATOR + u).encode()).hexdigest()[:12]


def relevance_messages(question: str, passage: str) -> list[dict]:
    """The 0–3 relevance judge prompt (question first, so prompts for one question share a prefix)."""
    return render("relevance", question=question, passage=passage)
