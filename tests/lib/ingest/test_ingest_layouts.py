"""Real-world PDF layouts, built in the tests: what ingest removes (each with a row naming
its reason and page) and what it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from spacelm.lib.ingest import documents as ingest
from spacelm.lib.ingest.bibliography import find_bibliography
from tests.conftest import LOREM

W, H = 595, 842


def build(path, pages) -> Path:
    """A PDF whose pages hold the given blocks: (x0, y0, x1, y1, text[, fontsize[, rotate]])."""
    import pymupdf

    doc = pymupdf.open()
    for blocks in pages:
        page = doc.new_page(width=W, height=H)
        for x0, y0, x1, y1, text, *rest in blocks:
            size = rest[0] if rest else 10
            rotate = rest[1] if len(rest) > 1 else 0
            if rotate:
                page.insert_text((x0, y1), text, fontsize=size, rotate=rotate)
            else:
                spare = page.insert_textbox(pymupdf.Rect(x0, y0, x1, y1), text, fontsize=size)
                assert spare >= 0, f"text does not fit its box: {text[:40]}"
    doc.save(path)
    doc.close()
    return path


def body(y0: float, text: str, y1: float = None) -> tuple:
    return (50, y0, 545, y1 or y0 + 150, text)


def reasons(drops) -> dict:
    out: dict = {}
    for d in drops:
        out.setdefault(d["reason"], []).append(d["preview"])
    return out


REF1 = "[1] Newman, L. K., Frigm, R. C. Conjunction assessment at NASA. Adv. Space Res. 53(2), 2014, 1-12."
REF2 = "[2] Alfano, S. A numerical implementation of collision probability. J. Astronaut. Sci. 53, 2005, 103-109."
REF3 = "[3] Kessler, D. J., Cour-Palais, B. G. Collision frequency of artificial satellites. J. Geophys. Res. 83, 1978."


def test_heading_merged_with_its_first_entry(tmp_path):
    p = build(
        tmp_path / "merged.pdf",
        [[body(60, LOREM * 3), body(230, "References " + REF1 + "\n" + REF2, 330), body(340, REF3, 400)]],
    )
    doc, drops = ingest.ingest_file(p)
    assert "Newman" not in doc.text and "Alfano" not in doc.text and "Kessler" not in doc.text
    assert "References" not in doc.text and "Operators compare" in doc.text
    assert {d["reason"] for d in drops} == {"bibliography"} and len(drops) == 2
    assert doc.dropped_chars["bibliography"] == sum(d["chars"] for d in drops)


def test_newsletter_keeps_every_article_and_what_follows_the_last_list(tmp_path):
    """Three articles, each ending with its own reference list; closing notes after the last."""
    arts = [
        f"Article {i} explains how the operations team handled event {i} and what it learned. " * 4 for i in (1, 2, 3)
    ]
    refs = [
        f"References\n[1] Smith, J. A. Event {i} analysis. Acta Astronaut. 1{i}(2), 2020, 3-9.\n"
        f"[2] Lee, K., et al. Follow-up {i}. J. Space Saf. Eng. 7, 2021, 44-50."
        for i in (1, 2, 3)
    ]
    closing = "Closing notes: the editors thank every contributor and announce the next issue for the spring. " * 3
    p = build(
        tmp_path / "news.pdf",
        [
            [body(60, arts[0]), body(220, refs[0], 300), body(320, arts[1]), body(480, refs[1], 560)],
            [body(60, arts[2]), body(220, refs[2], 300), body(320, closing)],
        ],
    )
    doc, drops = ingest.ingest_file(p)
    for i in (1, 2, 3):
        assert f"Article {i} explains" in doc.text and f"Event {i} analysis" not in doc.text
    assert "Closing notes" in doc.text
    assert sorted((d["page"], d["reason"]) for d in drops) == [
        (1, "bibliography"),
        (1, "bibliography"),
        (2, "bibliography"),
    ]


def test_reference_list_without_a_heading(tmp_path):
    p = build(
        tmp_path / "nohead.pdf",
        [
            [
                body(60, LOREM * 3),
                body(230, REF1, 280),
                body(290, REF2, 340),
                body(350, REF3, 400),
                body(420, "A final remark on operations. " * 5),
            ]
        ],
    )
    doc, drops = ingest.ingest_file(p)
    assert [d["reason"] for d in drops] == ["bibliography"] * 3
    assert "A final remark" in doc.text and "Newman" not in doc.text


def test_one_citation_in_prose_is_kept():
    prose = (
        "Operators compare the probability of collision with a threshold, as Newman et al. (2014) showed for "
        "the fleet that they studied over the years of the programme."
    )
    assert find_bibliography([prose, LOREM]) == []


def _interleaved(tmp_path):
    left = [f"Left column line {i} about the debris flux and its growth." for i in range(12)]
    right = [f"Right column line {i} on disposal rules for operators." for i in range(12)]
    blocks = []
    for k in range(3):  # the generator writes a piece of the left column, then of the right, and so on
        blocks.append((50, 60 + k * 120, 290, 170 + k * 120, "\n".join(left[k * 4 : (k + 1) * 4]), 9))
        blocks.append((305, 60 + k * 120, 545, 170 + k * 120, "\n".join(right[k * 4 : (k + 1) * 4]), 9))
    return build(tmp_path / "two.pdf", [blocks])


def test_two_column_page_whose_stream_interleaves_columns(tmp_path):
    p = _interleaved(tmp_path)
    stream, _ = ingest.ingest_file(p, ingest.IngestRules(layout="stream"))
    columns, _ = ingest.ingest_file(p, ingest.IngestRules(layout="columns"))
    assert stream.text.index("Right column line 0") < stream.text.index("Left column line 4")  # wrong order
    assert columns.text.index("Left column line 11") < columns.text.index("Right column line 0")
    order = [int(x) for x in __import__("re").findall(r"Left column line (\d+)", columns.text)]
    assert order == list(range(12))


def test_alternating_running_heads_are_removed_from_odd_and_even_pages(tmp_path):
    pages = []
    for n in range(1, 7):
        head = "Journal of Space Operations, Volume 7" if n % 2 else "Example Author and Another Author"
        pages.append(
            [
                (50, 20, 545, 40, head, 8),
                body(60, f"Page {n} body text about orbit determination. " * 6),
                (280, 800, 320, 820, str(n), 8),
            ]
        )
    doc, drops = ingest.ingest_file(build(tmp_path / "heads.pdf", pages))
    r = reasons(drops)
    assert sorted(r["running_header_footer"]) == sorted(
        ["Journal of Space Operations, Volume 7"] * 3 + ["Example Author and Another Author"] * 3
    )
    assert sorted(r["page_number"]) == [str(n) for n in range(1, 7)]
    assert "Journal of Space" not in doc.text and all(f"Page {n} body" in doc.text for n in range(1, 7))


def test_letter_by_letter_figure_text_and_rotated_stamps(tmp_path):
    fig = "F ig ur e 3 - Whe n d oin g t he s ame ma n oe uv re"
    p = build(
        tmp_path / "fig.pdf",
        [
            [
                body(60, LOREM * 2),
                (50, 250, 545, 270, fig, 9),
                body(300, LOREM),
                (20, 700, 40, 800, "arXiv:2401.01234v2 [astro-ph.EP]", 8, 90),
            ]
        ],
    )
    doc, drops = ingest.ingest_file(p)
    r = reasons(drops)
    assert r == {"figure_fragment": [fig], "rotated_text": ["arXiv:2401.01234v2 [astro-ph.EP]"]}
    assert "F ig ur" not in doc.text and "arXiv" not in doc.text and doc.text.count("Collision avoidance") == 3


def test_equation_blocks_are_flagged_and_kept(tmp_path):
    eq = "v^2 = mu * (2/r - 1/a) ; T = 2*pi*sqrt(a^3/mu) ; dv = v2 - v1"
    doc, drops = ingest.ingest_file(build(tmp_path / "eq.pdf", [[body(60, LOREM * 2), (50, 250, 545, 270, eq)]]))
    assert doc.equation_blocks == 1 and drops == [] and "sqrt(a^3/mu)" in doc.text


def test_scanned_page_is_reported_and_read_by_ocr_where_tesseract_is(tmp_path):
    """A page holding only an image of text: without OCR it is reported empty; with OCR (where
    Tesseract is installed) its words come back."""
    import pymupdf

    src = pymupdf.open()
    pg = src.new_page(width=W, height=H)
    pg.insert_textbox(
        pymupdf.Rect(50, 60, 545, 300), "SCANNED MANOEUVRE REPORT\nThe burn lasted 42 seconds.", fontsize=22
    )
    png = pg.get_pixmap(dpi=150).tobytes("png")
    doc = pymupdf.open()
    doc.new_page(width=W, height=H).insert_textbox(pymupdf.Rect(50, 60, 545, 780), LOREM * 3, fontsize=10)
    doc.new_page(width=W, height=H).insert_image(pymupdf.Rect(0, 0, W, H), stream=png)
    p = tmp_path / "scan.pdf"
    doc.save(p)
    with pytest.warns(UserWarning, match=r"pages 2 of 2 have no extractable text.*ingest.ocr"):
        plain, _ = ingest.ingest_file(p)
    assert plain.empty_pages == [2] and "MANOEUVRE" not in plain.text
    why_not = ingest.ocr_available()
    if why_not:
        pytest.skip(f"OCR not tested here: {why_not}")
    read, _ = ingest.ingest_file(p, ingest.IngestRules(ocr=True))
    assert read.ocr_pages == [2] and "MANOEUVRE" in read.text.upper() and read.empty_pages == []
