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


# the secrets this process was given (a base_url's password, an api key read from the environment):
# hidden wherever they appear, whatever surrounds them (a server echoing a key without "Bearer")
_KNOWN: set[str] = set()
MIN_SECRET = 4  # shorter strings would hide ordinary words


def remember_secret(value: str | None) -> None:
    """Hide `value` (and, for a user:password pair, its HTTP Basic encoding) in everything
    `redact_text` cleans from now on."""
    import base64
    from urllib.parse import unquote

    if not value or len(value) < MIN_SECRET:
        return
    for v in {value, unquote(value)}:
        _KNOWN.add(v)
        if ":" in v:
            _KNOWN.add(base64.b64encode(v.encode()).decode())


def remember_url(url: str | None) -> None:
    """Remember the user:password (and the password alone) of a URL, and its secret query values."""
    from urllib.parse import parse_qsl, urlsplit

    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password:
        remember_secret(parts.password)
        remember_secret(f"{parts.username}:{parts.password}")
    for name, value in parse_qsl(parts.query):
        if re.fullmatch(_SECRET_NAMES, name, re.I):
            remember_secret(value)


def redact_text(text: str, limit: int | None = None) -> str:
    """`text` with every secret this process was given (`remember_secret`) and every
    credential-looking part replaced by ***, cut to `limit` characters. Used on error messages,
    server bodies, lock files, stamps and manifests before they are printed or stored."""
    text = str(text)
    for secret in sorted(_KNOWN, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    text = _USERINFO.sub(lambda m: m.group("scheme") + HIDDEN + "@", text)
    text = _BEARER.sub(lambda m: (m.group("name") or m.group("bname")) + HIDDEN, text)
    text = _KV.sub(lambda m: m.group("name") + m.group("sep") + HIDDEN, text)
    text = _KEYLIKE.sub(HIDDEN, text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit} more characters)"
    return text


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like object with `redact_text` applied to every string in it (keys too)."""
    if isinstance(obj, dict):
        return {redact_obj(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return redact_text(obj) if isinstance(obj, str) else obj


# characters that act on a terminal or reorder what it shows instead of being shown: C0 controls
# but tab and newline, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every terminal control and bidi-override character written as an escape
    (ESC -> \\x1b, RLO -> \\u202e), so a file name cannot clear the screen or reverse a line."""

    def escape(m: re.Match) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _UNPRINTABLE.sub(escape, str(text))


# what a file name may hold that `shown_name` writes as an escape: every C0 control (tab and newline
# too: a newline in a name would start a line of its own in the log), DEL, C1 controls, the bidi
# marks, embeddings, overrides and isolates, Unicode's line and paragraph separators, and the lone
# surrogates by which Python carries a name's bytes that are not UTF-8
_NAME_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAME_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_name_char(m: re.Match) -> str:
    ch = m.group()
    if ch in _NAME_ESCAPES:
        return _NAME_ESCAPES[ch]
    c = ord(ch)
    if 0xDC80 <= c <= 0xDCFF:  # a byte of the name that is not UTF-8 (surrogateescape): the byte
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown_name(path: Any) -> str:
    """How a message, a log line or a table a person reads names a file: always one line, its
    control characters written as escapes (newline -> \\n, ESC -> \\x1b, RLO -> \\u202e, a byte
    that is not UTF-8 -> \\xe9), and a name that starts with '-' written './-name' so that it cannot
    read as a command-line option. Only the shown text changes, never the file or an id."""
    text = _NAME_UNSAFE.sub(_escape_name_char, os.fspath(path) if isinstance(path, os.PathLike) else str(path))
    return "./" + text if text.startswith("-") else text


def one_line(text: str) -> str:
    """`text` with its line breaks written as escapes (\\n, \\r)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _flat(value):
    """A log record's argument kept to one line: a text or a path holding a line break as escaped text."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    return one_line(text) if isinstance(text, str) and ("\n" in text or "\r" in text) else value


class RedactingFilter:
    """A logging filter that hides secrets in every record before a handler prints it, and
    escapes the characters that would act on the terminal (`printable`)."""

    def filter(self, record) -> bool:
        # a value put into the message (a file name, a server's reply) keeps to the message's line:
        # its line breaks are written as escapes, so it cannot forge a line of the log
        if isinstance(record.args, tuple):
            record.args = tuple(_flat(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _flat(a) for k, a in record.args.items()}
        msg = record.getMessage()
        clean = printable(redact_text(msg))
        if clean != msg:
            record.msg, record.args = clean, ()
        return True


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
