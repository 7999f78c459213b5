"""Keeping secrets and machine paths out of what a run writes and prints.

A server URL may carry `user:password@` or an api key in its query; a server's error body may
echo the bearer key it was sent. Outputs (the manifest, error messages) go through these
functions first. Paths are shown relative to a known place (`models:<file>` under the models
folder, relative to the project root, `~/` for the home folder) so that a committed manifest
says nothing about the machine that wrote it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HIDDEN = "***"
BODY_LIMIT = 300  # characters of a server's error body kept in a message

# scheme://user:password@host (or a bare user@host) -> scheme://***@host
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
# key=value pairs whose name says they hold a credential (query strings, form bodies, JSON)
# (bare words such as "key" or "token" are left alone: config messages say "key 'x.y'")
_SECRET_NAMES = (
    r"(?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|"
    r"secret[_-]?key|secret|password|passwd)"
)
_KV = re.compile(r"(?P<name>\b" + _SECRET_NAMES + r")(?P<sep>\"?\s*[=:]\s*\"?)(?P<value>[^\s&\"',;}]+)", re.I)
_BEARER = re.compile(
    r"(?P<name>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{4,})|"
    r"(?P<bname>\bbasic\s+)(?P<bvalue>[A-Za-z0-9+/=]{12,})",
    re.I,
)
# provider-style keys: sk-..., hf_..., gsk_..., xai-..., long opaque tokens after "key"
_KEYLIKE = re.compile(
    r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}|\bhf_[A-Za-z0-9]{8,}|\bgsk_[A-Za-z0-9]{8,}|\bxai-[A-Za-z0-9]{8,}"
)


def redact_text(text: str, limit: int | None = None) -> str:
    """`text` with every credential-looking part replaced by ***, cut to `limit` characters.
    Used on error messages and server bodies before they are printed or stored."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + HIDDEN + "@", str(text))
    text = _BEARER.sub(lambda m: (m.group("name") or m.group("bname")) + HIDDEN, text)
    text = _KV.sub(lambda m: m.group("name") + m.group("sep") + HIDDEN, text)
    text = _KEYLIKE.sub(HIDDEN, text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit} more characters)"
    return text


def redact_url(url: str | None) -> str | None:
    """A URL without its user:password part and with secret query values hidden."""
    return None if url is None else redact_text(url)


def trim_body(body: str, limit: int = BODY_LIMIT) -> str:
    """A server's error body fit for one message line: credentials hidden, whitespace folded,
    at most `limit` characters."""
    return redact_text(" ".join(str(body).split()), limit)


def portable_path(path: Any, roots: Iterable[tuple[str, Path]] = ()) -> str:
    """`path` said relative to the first of `roots` ((label, folder) pairs) that holds it:
    `label:rel` (or plain `rel` for an empty label); `~/rel` under the home folder; else as
    given. Pure string logic: no file is touched."""
    p = os.path.abspath(os.path.expanduser(str(path)))
    for label, root in roots:
        r = os.path.abspath(os.path.expanduser(str(root)))
        if p == r or p.startswith(r.rstrip(os.sep) + os.sep):
            rel = os.path.relpath(p, r)
            return f"{label}:{rel}" if label else rel
    home = os.path.expanduser("~")
    if home not in ("", "/") and p.startswith(home.rstrip(os.sep) + os.sep):
        return "~/" + os.path.relpath(p, home)
    return str(path)


def scrub(obj: Any, roots: Iterable[tuple[str, Path]] = ()) -> Any:
    """A copy of a JSON-like object with URLs' credentials hidden and absolute paths made
    portable (see `portable_path`); what the manifest writer applies before it saves."""
    roots = list(roots)
    if isinstance(obj, dict):
        return {k: scrub(v, roots) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v, roots) for v in obj]
    if isinstance(obj, str):
        if "://" in obj or "=" in obj:
            obj = redact_text(obj)
        if obj.startswith(("/", "~")) or re.match(r"^[A-Za-z]:\\", obj):
            return portable_path(obj, roots)
        return obj
    return obj
