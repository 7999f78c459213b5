"""Words from facts: the Jinja2 templates of spacelm/templates, with the number and interval
filters registered once (a section's facts come as a dataclass; its template words them)."""

from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from functools import lru_cache
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
MISSING = "–"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, digits: int = 2, signed: bool = False) -> str:
    """A number with `digits` decimals (a sign when `signed`), "–" when missing."""
    if _missing(x):
        return MISSING
    return f"{float(x):+.{digits}f}" if signed else f"{float(x):.{digits}f}"


def ci(bounds, digits: int = 2, signed: bool = False) -> str:
    """A 95% interval " [lo, hi]" (after a space, to follow its estimate), "" when a bound is missing."""
    lo, hi = (list(bounds) + [None, None])[:2] if bounds is not None else (None, None)
    if _missing(lo) or _missing(hi):
        return ""
    return f" [{num(lo, digits, signed)}, {num(hi, digits, signed)}]"


def pct(x, digits: int = 0) -> str:
    """A share (0-1) as a percentage."""
    return MISSING if _missing(x) else f"{100 * float(x):.{digits}f}%"


def pct_ci(bounds, digits: int = 0) -> str:
    """An interval of shares (0-1) as percentages " [15%, 52%]", "" when a bound is missing."""
    lo, hi = (list(bounds) + [None, None])[:2] if bounds is not None else (None, None)
    if _missing(lo) or _missing(hi):
        return ""
    return f" [{pct(lo, digits)}, {pct(hi, digits)}]"


@lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(num=num, ci=ci, pct=pct, pct_ci=pct_ci)
    return env


def render(template: str, facts) -> str:
    """`template` (a file of spacelm/templates) rendered with `facts` (a dataclass or a dict)."""
    ctx = asdict(facts) if is_dataclass(facts) else dict(facts)
    return environment().get_template(template).render(**ctx)
