"""Text blocks of a page, their reading order, and the blocks that are not text a reader reads.

A PDF page is read as PyMuPDF text blocks (each with its box and whether its lines are
rotated). Reading order: PyMuPDF gives blocks in content-stream order ("stream"), which is
right for most generators but interleaves the columns of some two-column files; "columns"
detects a two-column page whose stream order jumps back up from the right column into the
left, and reads it band by band (a full-width block starts a new band), left column before
right, top to bottom. Other pages, tables among them, keep the stream order.

Noise blocks: bare page numbers, rotated text (margin stamps), figure text set letter by
letter ("F ig ur e 3"), and running headers and footers (short lines at the top or bottom of a
page that recur on most pages, or on most odd or most even pages when they alternate).
Equation-heavy blocks are counted, not removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Block:
    page: int  # 1-based
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    rotated: bool = False


# --------------------------------------------------------------------------- reading order
def _side(b: Block, width: float) -> int | None:
    """0 for a block wholly in the left half, 1 wholly in the right half, None if it spans both."""
    mid, tol = width / 2, 0.02 * width
    if b.x1 <= mid + tol:
        return 0
    if b.x0 >= mid - tol:
        return 1
    return None


def _column_blocks(blocks: Sequence[Block], width: float) -> list[Block]:
    """Blocks of running text set in a column: narrow, several lines (not table cells)."""
    return [
        b
        for b in blocks
        if not b.rotated
        and _side(b, width) is not None
        and b.text.count("\n") >= 2
        and 0.2 * width <= b.x1 - b.x0 <= 0.55 * width
    ]


def is_two_column(blocks: Sequence[Block], width: float) -> bool:
    sides = {_side(b, width) for b in _column_blocks(blocks, width)}
    return sides == {0, 1}


def columns_interleaved(blocks: Sequence[Block], width: float) -> bool:
    """The given order jumps from the right column back into the left one with no full-width
    block between (a generator that wrote pieces of the two columns alternately): a new band
    of columns only starts after a full-width block."""
    columns = {id(b) for b in _column_blocks(blocks, width)}
    last = None
    for b in blocks:
        side = _side(b, width)
        if side is None and not b.rotated:
            last = None  # a full-width block: the next column text starts a new band
        elif id(b) in columns:
            if last == 1 and side == 0:
                return True
            last = side
    return False


def order_blocks(blocks: list[Block], width: float, layout: str = "columns") -> list[Block]:
    """Blocks in reading order. "stream" keeps PyMuPDF's order; "columns" keeps it too unless the
    page is two-column and that order interleaves the columns, then reads band by band (a
    full-width block starts a new band), left column before right, top to bottom."""
    if layout == "stream" or not is_two_column(blocks, width) or not columns_interleaved(blocks, width):
        return list(blocks)
    out: list[Block] = []
    band: list[Block] = []

    def flush():
        out.extend(sorted(band, key=lambda b: (_side(b, width), b.y0, b.x0)))
        band.clear()

    for b in sorted(blocks, key=lambda b: (b.y0, b.x0)):
        if _side(b, width) is None and not b.rotated:  # a full-width block (title, figure, table) ends a band
            flush()
            out.append(b)
        else:
            band.append(b)
    flush()
    return out


# --------------------------------------------------------------------------- noise
PAGE_NUMBER = re.compile(r"^\s*(?:page\s*|p\.\s*|-\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?\s*-?\s*$", re.I)
_ALPHA = re.compile(r"[A-Za-z]+")
_SHORT_WORDS = set(
    "a i an as at be by do go he if in is it me my no of on or so to up us we am "
    "the and for are but not you all any can had her was one our out day get has him his how man new now "
    "old see two way who its let put say she too use via per may did yes off own far few low key top end set "
    "km kg mm cm nm ms kw mw gb mb hz dB eg ie al vs etc fig tab sec eq".lower().split()
)
_MATH = set("=+*/^()[]−×÷∑∫√≤≥±_{}<>|∂∆∇∞≈≠∝·αβγδεθλμνπρστφχψωΩΣΔΓΛΦΨ")


_TOKEN = re.compile(r"[A-Za-z]+\.?")


def is_fragmented(text: str, min_tokens: int = 5, share: float = 0.45) -> bool:
    """Text set letter by letter: most alphabetic tokens are 1-3-letter pieces that are neither
    common short words, acronyms nor abbreviations with their full stop ("F ig ur e 3 - Whe n d
    oin g"; not "Newman, L. K. Adv. Space Res.")."""
    tokens = _TOKEN.findall(text)
    if len(tokens) < min_tokens:
        return False
    frag = [
        t
        for t in tokens
        if len(t) <= 3 and not t.endswith(".") and t.lower() not in _SHORT_WORDS and not (t.isupper() and len(t) >= 2)
    ]
    return len(frag) / len(tokens) >= share


def is_equation(text: str, share: float = 0.15) -> bool:
    """Dense in mathematical symbols, with a relation sign (a row of asterisks is not maths)."""
    chars = [c for c in text if not c.isspace()]
    if len(chars) < 8 or not any(c in "=≤≥≈≠∝<>" for c in chars):
        return False
    return sum(c in _MATH for c in chars) / len(chars) >= share


def noise_reason(b: Block) -> str | None:
    """Why a block is not reading text, or None."""
    t = b.text.strip()
    if not t:
        return "empty"
    if b.rotated:
        return "rotated_text"
    if PAGE_NUMBER.match(t):
        return "page_number"
    if is_fragmented(t) and not is_equation(t):
        return "figure_fragment"
    return None


def _line_key(line: str) -> str:
    return re.sub(r"\d+", "#", line.strip().lower())


def running_lines(pages: Sequence[Sequence[Block]], min_share: float = 0.6, edge_blocks: int = 2) -> set[str]:
    """Keys of short lines (in blocks of one or two lines among the top and bottom blocks of a
    page) that recur on most pages, or on most odd or most even pages (alternating heads)."""
    n = len(pages)
    if n < 3:
        return set()
    seen: dict[str, set[int]] = {}
    for i, blocks in enumerate(pages, 1):
        by_y = sorted(blocks, key=lambda b: b.y0)
        edges = [b for b in by_y[:edge_blocks] + by_y[-edge_blocks:] if b.text.count("\n") < 2]  # short blocks
        for b in edges:
            for ln in b.text.split("\n"):
                if 0 < len(ln.strip()) <= 120:
                    seen.setdefault(_line_key(ln), set()).add(i)
    odd, even = (n + 1) // 2, n // 2
    out = set()
    for key, where in seen.items():
        n_odd = sum(p % 2 for p in where)
        n_even = len(where) - n_odd
        if (
            len(where) >= max(3, min_share * n)
            or (odd >= 2 and n_odd >= max(2, min_share * odd) and n_even == 0)
            or (even >= 2 and n_even >= max(2, min_share * even) and n_odd == 0)
        ):
            out.add(key)
    return out


def strip_lines(b: Block, keys: set[str]) -> tuple[Block, list[str]]:
    """The block without the lines whose key is in `keys`, and the lines removed."""
    kept, gone = [], []
    for ln in b.text.split("\n"):
        (gone if ln.strip() and _line_key(ln) in keys else kept).append(ln)
    if not gone:
        return b, []
    return Block(b.page, b.x0, b.y0, b.x1, b.y1, "\n".join(kept), b.rotated), gone
