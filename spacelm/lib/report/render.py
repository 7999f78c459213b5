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


def est(x, bounds=None, digits: int = 2, signed: bool = False) -> str:
    """An estimate with its interval, `0.72 [0.61, 0.83]`; "–" when the estimate is missing."""
    return MISSING if _missing(x) else num(x, digits, signed) + ci(bounds, digits, signed)


def fmt(x, spec: str) -> str:
    """`x` in a format spec of Python's (`.0%`, `+.3f`, `g`), "–" when missing."""
    return MISSING if _missing(x) else format(x, spec)


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    import re

    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


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
    from ..tables import as_words, md_cell

    env.filters.update(num=num, ci=ci, pct=pct, pct_ci=pct_ci, est=est, fmt=fmt, slug=slug, words=as_words)
    env.filters.update(cell=lambda v: md_cell(as_words(v)) if not isinstance(v, str) else md_cell(v))
    return env


def render(template: str, facts) -> str:
    """`template` (a file of spacelm/templates) rendered with `facts` (a dataclass or a dict)."""
    ctx = asdict(facts) if is_dataclass(facts) else dict(facts)
    return environment().get_template(template).render(**ctx)


def block(template: str, facts) -> str:
    """`template` rendered as a block of Markdown: paragraphs apart by one blank line (the blank
    lines an optional part leaves behind fold into one), no blank line at either end."""
    import re

    return re.sub(r"\n{3,}", "\n\n", render(template, facts)).strip("\n")


def phrase(template: str, name: str, **facts) -> str:
    """The words of macro `name` of `template` for `facts` (one sentence or one line)."""
    return str(getattr(environment().get_template(template).module, name)(**facts)).strip()
