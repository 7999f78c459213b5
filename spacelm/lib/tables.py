"""Rendering a table of formatted cells as Markdown or LaTeX (booktabs), with cells marked
bold or underlined: the one table writer every stage uses."""
from __future__ import annotations

import re
from typing import Mapping, Optional

_TEX_SPECIAL = re.compile(r"([&%$#_{}])")


def _escape_tex(s: str) -> str:
    s = s.replace("\\", r"\textbackslash{}").replace("±", r"$\pm$").replace("↓", r"$\downarrow$")
    s = s.replace("↑", r"$\uparrow$").replace("–", "--")
    return _TEX_SPECIAL.sub(r"\\\1", s).replace(r"\$\pm\$", r"$\pm$").replace(r"\$\downarrow\$", r"$\downarrow$") \
        .replace(r"\$\uparrow\$", r"$\uparrow$")


def render(df, fmt: str = "md", marks: Optional[Mapping[tuple[int, str], str]] = None) -> str:
    """`df` holds display strings; `marks[(row position, column)]` is "bold" or "underline".
    `fmt` is "md" (GitHub Markdown) or "tex" (a booktabs tabular via pandas' Styler)."""
    marks = marks or {}
    cells = df.astype(str).copy()
    for (i, col), style in marks.items():
        v = cells.iloc[i][col]
        if fmt == "md":
            cells.iloc[i, cells.columns.get_loc(col)] = f"**{v}**" if style == "bold" else f"<u>{v}</u>"
    if fmt == "md":
        return cells.to_markdown(index=False) + "\n"
    if fmt != "tex":
        raise ValueError(f"unknown table format {fmt!r} (md or tex)")
    tex = cells.map(_escape_tex)
    for (i, col), style in marks.items():
        v = tex.iloc[i][col]
        tex.iloc[i, tex.columns.get_loc(col)] = f"\\textbf{{{v}}}" if style == "bold" else f"\\underline{{{v}}}"
    tex.columns = [_escape_tex(str(c)) for c in tex.columns]
    colfmt = "".join("l" if not any(ch.isdigit() for ch in str(tex.iloc[0][c]) if len(tex)) else "r"
                     for c in tex.columns) if len(tex) else "l" * len(tex.columns)
    return tex.style.hide(axis="index").to_latex(hrules=True, column_format=colfmt) 
