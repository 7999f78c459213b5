"""Rendering a table of formatted cells as Markdown or LaTeX (booktabs), with cells marked
bold or underlined: the one table writer every stage uses."""

from __future__ import annotations

import re
from collections.abc import Mapping

_TEX_SPECIAL = re.compile(r"([&%$#_{}])")


def _escape_tex(s: str) -> str:
    s = s.replace("\\", r"\textbackslash{}").replace("±", r"$\pm$").replace("↓", r"$\downarrow$")
    s = s.replace("↑", r"$\uparrow$").replace("–", "--")
    return (
        _TEX_SPECIAL.sub(r"\\\1", s)
        .replace(r"\$\pm\$", r"$\pm$")
        .replace(r"\$\downarrow\$", r"$\downarrow$")
        .replace(r"\$\uparrow\$", r"$\uparrow$")
    )


# characters of a table cell that Markdown or the HTML inside it would read as structure
_MD_CELL = str.maketrans({"|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "})


def md_cell(value):
    """A text cell as it may sit in a Markdown table: `|` and backticks escaped, `<` and `>` as
    entities (no HTML from corpus text reaches a rendered report), line breaks as spaces.
    Anything that is not a string is returned unchanged."""
    return value.translate(_MD_CELL) if isinstance(value, str) else value


def markdown_table(df, index: bool = False) -> str:
    """`df.to_markdown` with every text cell, column name and index label through
    :func:`md_cell`; numbers keep their formatting."""
    from pandas.api.types import is_numeric_dtype

    out = df.copy()
    align = []
    for col in out.columns:
        numeric = is_numeric_dtype(out[col]) and out[col].dtype != bool
        align.append(("right" if out[col].isna().any() else "decimal") if numeric else "left")
        if numeric and out[col].isna().any():  # a missing number is a dash, not "nan"
            out[col] = out[col].astype(object).map(lambda v: MISSING if v != v or v is None else f"{v:g}")
        elif not numeric:
            out[col] = out[col].astype(object).map(lambda v: MISSING if v is None or v != v else md_cell(v))
    out.columns = [md_cell(c) for c in out.columns]
    if index:
        out.index = [md_cell(i) for i in out.index]
        align.insert(0, "left")
    return out.to_markdown(index=index, colalign=align) if len(out.columns) else out.to_markdown(index=index)


MISSING = "–"


def dash_missing(df):
    """A copy of `df` in which every missing cell of a column that is not float (None, NaN, <NA>
    in text, integer or boolean columns) is a dash; float columns keep their dtype, so a caller
    formats them with `na_rep=MISSING` (`to_html`, `to_string`) and their numbers stay numbers."""
    from pandas.api.types import is_float_dtype

    out = df.copy()
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if not is_float_dtype(col.dtype) and col.isna().any():
            out.isetitem(i, col.astype(object).where(col.notna(), MISSING))
    return out


def as_words(value) -> str:
    """A value as a reader sees it in prose: a dash for None or NaN, yes/no for a truth value,
    `a, b` for a list, `key value, key value` for a mapping; never a Python repr."""
    if value is None or (isinstance(value, float) and value != value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {as_words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(as_words(v) for v in value) or "none"
    return str(value)


def render(df, fmt: str = "md", marks: Mapping[tuple[int, str], str] | None = None) -> str:
    """`df` holds display strings; `marks[(row position, column)]` is "bold" or "underline".
    `fmt` is "md" (GitHub Markdown) or "tex" (a booktabs tabular via pandas' Styler)."""
    marks = marks or {}
    cells = df.astype(object).where(df.notna(), MISSING).astype(str)  # a missing cell is a dash
    if fmt == "md":
        cells = cells.map(md_cell)
        cells.columns = [md_cell(str(c)) for c in cells.columns]
    for (i, col), style in marks.items():
        v = cells.iloc[i][col]
        if fmt == "md":
            cells.iloc[i, cells.columns.get_loc(col)] = f"**{v}**" if style == "bold" else f"<u>{v}</u>"
    if fmt == "md":
        return cells.to_markdown(index=False, disable_numparse=True) + "\n"
    if fmt != "tex":
        raise ValueError(f"unknown table format {fmt!r} (md or tex)")
    tex = cells.map(_escape_tex)
    for (i, col), style in marks.items():
        v = tex.iloc[i][col]
        tex.iloc[i, tex.columns.get_loc(col)] = f"\\textbf{{{v}}}" if style == "bold" else f"\\underline{{{v}}}"
    tex.columns = [_escape_tex(str(c)) for c in tex.columns]
    colfmt = (
        "".join("l" if not any(ch.isdigit() for ch in str(tex.iloc[0][c]) if len(tex)) else "r" for c in tex.columns)
        if len(tex)
        else "l" * len(tex.columns)
    )
    return tex.style.hide(axis="index").to_latex(hrules=True, column_format=colfmt)
