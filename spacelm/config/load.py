"""Loading a config from YAML: strict (an unknown key or a value of the wrong type is a
:class:`ConfigError` naming the file and the dotted key, so a typo never silently falls back
to a default), then checked by `validate.py`."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Union

from .schema import Config, ConfigError
from .validate import blame_set, validate


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


MAX_INT = 2**63 - 1  # what numpy and the engines take; a larger integer fails deep in a stage


def _short(value: Any, limit: int = 120) -> str:
    """`value`'s repr cut to `limit` characters: an error message stays one line whatever the value
    (a YAML alias bomb expands to gigabytes when printed whole)."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxdict, r.maxlevel = limit, limit, 8, 8, 3
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _coerce(value: Any, tp: Any, key: str, source: str) -> Any:
    """Check `value` against the annotation `tp`; build nested dataclasses."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, key, source)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{source}: key '{key}' may not be null")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{source}: key '{key}' must be one of {list(args)}, got {_short(value)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: key '{key}' must be a list, got {type(value).__name__} ({_short(value)})")
        return [_coerce(v, args[0], f"{key}[{i}]", source) for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: key '{key}' must be a mapping, got {type(value).__name__}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: key '{key}' must be a mapping of settings, got {type(value).__name__}")
        return _build(tp, value, key, source)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: key '{key}' must be a number, got {_short(value)}")
        if not math.isfinite(float(value)):
            raise ConfigError(f"{source}: key '{key}' must be a finite number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: key '{key}' must be an integer, got {_short(value)}")
        if abs(value) > MAX_INT:
            raise ConfigError(f"{source}: key '{key}' must be an integer of at most 2**63 - 1 in size, got {value}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: key '{key}' must be true or false, got {_short(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: key '{key}' must be a string, got {_short(value)}")
        return value
    raise ConfigError(f"{source}: key '{key}' has unsupported type {_type_name(tp)}")


def _build(cls: type, data: dict, prefix: str, source: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    kwargs = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{source}: unknown key '{key}' (known keys here: {known})")
        kwargs[k] = _coerce(v, hints[k], key, source)
    return cls(**kwargs)


def from_dict(data: dict, source: str = "<dict>", root: str | None = None) -> Config:
    """Build a validated :class:`Config` from a plain mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    cfg = _build(Config, data, "", source)
    cfg.source = source
    cfg.root = root
    validate(cfg, source)
    return cfg


def load_config(path: str | Path, overrides: dict | None = None, sets: Sequence[str] = ()) -> Config:
    """Load a YAML config file. Relative paths inside it resolve against the project root
    (the parent of the `configs/` folder holding the file, else the file's own folder).
    `sets` are `--set KEY=VALUE` arguments, applied after `overrides`; an error about a key
    they set names the `--set` argument rather than the file."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: config file not found")
    try:
        data = _load_bounded(p.read_text(encoding="utf-8"), p)
    except _DuplicateKey as e:
        raise ConfigError(
            f"{p}:{e.line}: key '{e.key}' appears twice in one mapping (first on line {e.first}); "
            "the second would silently replace the first: merge them into one"
        ) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start}); save the file as UTF-8") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if not data:
        raise ConfigError(
            f"{p}: is empty (or holds only comments): a config names at least its run (run_name: my-run); with "
            "every default it would write into another run's folder. Start from a copy of configs/quick.yaml"
        )
    if isinstance(data, dict) and "run_name" not in data:  # never another run's folder by default
        data = {"run_name": p.stem, **data}
    set_keys = []
    for text in sets:
        parsed = parse_override(text)
        overrides = merge(overrides or {}, parsed)
        set_keys.append((text, text.split("=", 1)[0].strip()))
    if overrides:
        data = merge(data, overrides) if isinstance(data, dict) else data
    root = p.resolve().parent
    if isinstance(data, dict) and "project_root" in data:  # a resolved config names its project
        root = (root / str(data.pop("project_root"))).resolve()
    elif root.name == "configs":
        root = root.parent
    try:
        cfg = from_dict(data, source=str(p), root=str(root))
    except ConfigError as e:
        raise blame_set(e, str(p), set_keys) from None
    cfg.sets = set_keys
    remember_secrets(cfg)
    return cfg


def remember_secrets(cfg) -> None:
    """Every secret the config hands the models (a base_url's user:password, the api key its
    api_key_env names), so redaction hides it wherever it would be written or printed."""
    import os

    from ..lib.redact import remember_secret, remember_url

    for role in ("question_writer", "generator", "judge"):
        llm = getattr(cfg.models, role, None)
        if llm is None:
            continue
        remember_url(getattr(llm, "base_url", None))
        env = getattr(llm, "api_key_env", None)
        if env:
            remember_secret(os.environ.get(env))


class _DuplicateKey(Exception):
    def __init__(self, key, line: int, first: int):
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


# a config expands to at most this many values once YAML aliases are followed (the largest shipped
# config holds about 600): beyond it, an alias bomb would take minutes and gigabytes to read
MAX_VALUES = 100_000


def expanded_size(node, memo: dict | None = None) -> int:
    """How many values a YAML node stands for once every alias is expanded (shared nodes counted at
    each use; computed once per node, so a bomb is measured without being expanded)."""
    import yaml

    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a recursive alias counts once
    if isinstance(node, yaml.SequenceNode):
        n = 1 + sum(expanded_size(c, memo) for c in node.value)
    elif isinstance(node, yaml.MappingNode):
        n = 1 + sum(expanded_size(k, memo) + expanded_size(v, memo) for k, v in node.value)
    else:
        n = 1
    memo[id(node)] = n
    return n


def _load_bounded(text: str, path: Path):
    """The YAML document in `text`, refused (ConfigError naming the file and the top-level key) when
    its aliases expand it beyond MAX_VALUES values."""
    import yaml

    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if expanded_size(node) > MAX_VALUES:
            big = ""
            if isinstance(node, yaml.MappingNode):
                sizes = [(expanded_size(v), getattr(k, "value", "?")) for k, v in node.value]
                big = f" (key '{max(sizes)[1]}')" if sizes else ""
            raise ConfigError(
                f"{path}: expands to more than {MAX_VALUES:,} values once its YAML aliases (*name) are "
                f"followed{big}: a config is a few hundred values; write the values out, or use fewer aliases"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


@functools.cache
def _loader():
    """A safe YAML loader that refuses a key repeated in one mapping (PyYAML keeps the last and
    drops the first without a word, which can drop a whole config section)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        hash(key)
                    except TypeError:  # an unhashable key: the base loader reports it
                        continue
                    line = key_node.start_mark.line + 1
                    if key in seen:
                        raise _DuplicateKey(key, line, seen[key])
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def parse_override(text: str) -> dict:
    """Turn `retrieval.pool=50` into `{"retrieval": {"pool": 50}}` (value parsed as YAML). A
    malformed argument is a :class:`ConfigError` naming it."""
    import yaml

    shown = text if len(text) <= 120 else text[:119] + "…"  # an error quotes the argument, a line at most
    if "=" not in text:
        raise ConfigError(f"--set {shown}: must look like section.key=value")
    key, raw = text.split("=", 1)
    parts = key.strip().split(".")
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part) for part in parts):
        raise ConfigError(f"--set {shown}: {key.strip()[:80]!r} is not a dotted key such as retrieval.pool")
    try:  # bounded as a config file is: aliases expanding past MAX_VALUES are refused, naming the key
        value = _load_bounded(raw, f"--set {key.strip()}")
    except _DuplicateKey as e:
        raise ConfigError(f"--set {shown}: key '{e.key}' appears twice in the value") from None
    except yaml.YAMLError as e:
        reason = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ConfigError(
            f"--set {shown}: the value is not valid YAML ({reason}); write e.g. "
            f"--set 'retrieval.k_values=[3,5]' or quote a string"
        ) from None
    out: dict = {}
    cur = out
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value
    return out
