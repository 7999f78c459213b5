"""Render the spacelm sample corpus from Markdown sources to PDF.

Usage:
    python scripts/build_corpus_pdfs.py [--src data/corpus_src] [--out data/raw]

Every ``<src>/<name>.md`` file becomes ``<out>/<name>.pdf`` (A4, page numbers in
the footer). The Markdown dialect is deliberately small: ``#`` / ``##``
headings, paragraphs, ``- `` bullet lists, numbered items (``1. ...``), pipe
tables and ``**bold**`` / ``*italic*``. Optional front matter at the top of a
file is written as HTML comments::

    <!-- layout: two-column -->      (default: single-column)
    <!-- style: paper -->            (agency | standard | handbook | paper | brief | workshop | note)
    <!-- footer: Short running title -->

In a two-column document, everything before a ``<!-- body -->`` marker (title,
authors, abstract) is set across the full page width on page 1; the rest flows
column 1 -> column 2 -> next page. Layout is done with the PyMuPDF Story API
(HTML + CSS). Output is deterministic: fixed metadata, no timestamps, and a
reproducible save, so the same input gives byte-identical PDFs.
"""

import argparse
import html
import io
import re
import sys
from pathlib import Path

import pymupdf

PAGE = pymupdf.paper_rect("a4")  # 595 x 842 pt
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 54, 56, 64
COLUMN_GAP = 18
FOOTER_Y = PAGE.height - 34

# Per-style typography. Fonts are the generic families built into MuPDF.
STYLES = {
    "agency": ("sans-serif", 10.0, "#1f4e79"),
    "standard": ("sans-serif", 9.5, "#222222"),
    "handbook": ("serif", 10.5, "#5a2d0c"),
    "paper": ("serif", 9.0, "#000000"),
    "brief": ("sans-serif", 10.5, "#0b5d3b"),
    "workshop": ("sans-serif", 9.0, "#3b3b8f"),
    "note": ("serif", 9.0, "#7a1f1f"),
}

CSS_TEMPLATE = """
* {{ font-family: {font}; font-size: {size}pt; line-height: 1.3; }}
h1 {{ font-size: {h1}pt; font-weight: bold; color: {accent}; margin: 0 0 8pt 0; }}
h2 {{ font-size: {h2}pt; font-weight: bold; color: {accent}; margin: 10pt 0 4pt 0; }}
h3 {{ font-size: {h3}pt; font-weight: bold; font-style: italic; margin: 8pt 0 3pt 0; }}
h4 {{ font-size: {h4}pt; font-style: italic; margin: 6pt 0 2pt 0; }}
p {{ margin: 0 0 5pt 0; text-align: justify; }}
p.meta {{ font-style: italic; text-align: left; margin: 0 0 4pt 0; }}
p.item {{ margin: 0 0 3pt 12pt; text-indent: -12pt; text-align: left; }}
ul {{ margin: 0 0 5pt 0; padding-left: 14pt; }}
li {{ margin: 0 0 2pt 0; }}
table {{ border-collapse: collapse; width: 100%; margin: 4pt 0 8pt 0; }}
th, td {{ border: 0.6pt solid #444444; padding: 2pt 3pt; font-size: {small}pt;
          text-align: left; vertical-align: top; }}
th {{ font-weight: bold; background-color: #e6e6e6; }}
"""

FRONT_MATTER = re.compile(r"^<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->\s*$")
BODY_MARKER = "<!-- body -->"
NUMBERED = re.compile(r"^\d+\.\s")
SUBSECTION = re.compile(r"^\d+(\.\d+)+\s")


def inline(text):
    """Escape HTML and apply **bold** / *italic* markup."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)
    return text


def table_html(rows):
    """Pipe-table lines -> HTML table (the second line is the --- separator)."""
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    head, body = cells[0], [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    out = ["<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"]
    for r in body:
        out.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def block_html(block, first_after_title):
    """Convert one blank-line separated block of Markdown lines to HTML."""
    first = block[0]
    if first.startswith("# "):
        return f"<h1>{inline(first[2:])}</h1>"
    if first.startswith("## ") or first.startswith("### "):
        title = first.split(" ", 1)[1]
        number = SUBSECTION.match(title)
        depth = number.group(0).count(".") if number else 0
        tag = "h4" if depth >= 2 else "h3" if depth == 1 or first.startswith("### ") else "h2"
        return f"<{tag}>{inline(title)}</{tag}>"
    if first.startswith("|"):
        return table_html(block)
    if first.startswith("- "):
        items, current = [], []
        for line in block:
            if line.startswith("- ") and current:
                items.append(" ".join(current))
                current = []
            current.append(line[2:] if line.startswith("- ") else line.strip())
        items.append(" ".join(current))
        return "<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>"
    if NUMBERED.match(first):
        items, current = [], []
        for line in block:
            if NUMBERED.match(line) and current:
                items.append(" ".join(current))
                current = []
            current.append(line.strip())
        items.append(" ".join(current))
        return "".join(f'<p class="item">{inline(i)}</p>' for i in items)
    cls = ' class="meta"' if first_after_title else ""
    return f"<p{cls}>{inline(' '.join(line.strip() for line in block))}</p>"


def block_is_title(out):
    return bool(out) and out[-1].startswith("<h1>")


def parse(path):
    """Return (options, header_html, body_html) for one Markdown source."""
    lines = path.read_text(encoding="utf-8").splitlines()
    options = {}
    while lines and FRONT_MATTER.match(lines[0]) and lines[0].strip() != BODY_MARKER:
        key, value = FRONT_MATTER.match(lines[0]).groups()
        options[key] = value
        lines.pop(0)
    parts, current = [[]], []  # parts: [header blocks, body blocks] split at BODY_MARKER
    for line in lines + [""]:
        if line.strip() == BODY_MARKER or not line.strip():
            if current:
                parts[-1].append(current)
                current = []
            if line.strip() == BODY_MARKER:
                parts.append([])
        else:
            current.append(line.rstrip())
    html_parts = []
    for blocks in parts:
        out, meta = [], False
        for block in blocks:
            # Plain paragraphs directly below the title (authors, affiliation, note)
            # are set in the italic "meta" style until the first heading/list/table.
            meta = (meta or block_is_title(out)) and not block[0].startswith(("#", "|", "- "))
            out.append(block_html(block, meta))
        html_parts.append("\n".join(out))
    header = html_parts[0] if len(html_parts) > 1 else ""
    body = "\n".join(html_parts[1:]) if len(html_parts) > 1 else html_parts[0]
    return options, header, body


def make_css(style):
    font, size, accent = STYLES.get(style, STYLES["agency"])
    return CSS_TEMPLATE.format(
        font=font, size=size, accent=accent, h1=size + 8, h2=size + 2.5, h3=size + 1.5, h4=size + 1, small=size - 1
    )


def layout_pdf(options, header, body, cuts):
    """Flow the HTML onto A4 pages.

    Returns the raw PDF bytes (no footers yet) and the list of (page index, rect)
    text areas in reading order. ``cuts`` maps an area index to a shortened
    bottom edge, used to push a stranded heading into the next area.
    """
    css = make_css(options.get("style", "agency"))
    two_columns = options.get("layout", "single-column") == "two-column"
    if not two_columns:  # single column: the header is simply part of the flow
        body, header = header + "\n" + body, ""
    content = pymupdf.Rect(MARGIN_X, MARGIN_TOP, PAGE.width - MARGIN_X, PAGE.height - MARGIN_BOTTOM)
    buf = io.BytesIO()
    writer = pymupdf.DocumentWriter(buf)
    story = pymupdf.Story(html=body, user_css=css)
    used, more = [], True
    while more:
        page_index = len({page for page, _ in used})
        device = writer.begin_page(PAGE)
        top = content.y0
        if page_index == 0 and header:
            head = pymupdf.Story(html=header, user_css=css)
            head_more, filled = head.place(content)
            if head_more:
                sys.exit("error: header section does not fit on the first page")
            head.draw(device)
            top = pymupdf.Rect(filled).y1 + 10
        if two_columns:
            width = (content.width - COLUMN_GAP) / 2
            areas = [
                pymupdf.Rect(content.x0, top, content.x0 + width, content.y1),
                pymupdf.Rect(content.x1 - width, top, content.x1, content.y1),
            ]
        else:
            areas = [pymupdf.Rect(content.x0, top, content.x1, content.y1)]
        for area in areas:  # column 1 first, then column 2: keeps reading order
            area.y1 = cuts.get(len(used), area.y1)
            used.append((page_index, area))
            more, _ = story.place(area)
            story.draw(device)
            if not more:
                break
        writer.end_page()
        if page_index > 200:
            sys.exit("error: layout did not terminate")
    writer.close()
    return buf.getvalue(), used


def stranded_heading(raw, areas, body_size):
    """Find a heading that ends a text area (orphaned from its text).

    Returns (area index, y of the heading top) for the first such area, or None.
    Headings are recognised by a font size larger than the body text.
    """
    doc = pymupdf.open("pdf", raw)
    for k, (page_index, area) in enumerate(areas[:-1]):
        lines = [
            line
            for block in doc[page_index].get_text("dict", clip=area)["blocks"]
            for line in block.get("lines", [])
            if line["spans"]
        ]
        lines.sort(key=lambda line: line["bbox"][1])
        top = None
        while lines and max(span["size"] for span in lines[-1]["spans"]) > body_size + 0.5:
            top = lines.pop()["bbox"][1]
        if top is not None and lines:  # heading(s) at the bottom, text above them
            return k, top - 1
    return None


def layout_without_orphans(options, header, body):
    """Repeat the layout, shortening areas until no heading ends an area."""
    body_size = STYLES.get(options.get("style", "agency"), STYLES["agency"])[1]
    cuts = {}
    for _ in range(20):
        raw, areas = layout_pdf(options, header, body, cuts)
        found = stranded_heading(raw, areas, body_size)
        if found is None:
            return raw
        cuts[found[0]] = found[1]
    return raw


def finish_pdf(raw, title, footer):
    """Add footers, rules and fixed metadata; return deterministic PDF bytes."""
    doc = pymupdf.open("pdf", raw)
    total = doc.page_count
    for page in doc:
        page.draw_line(
            (MARGIN_X, FOOTER_Y - 10), (PAGE.width - MARGIN_X, FOOTER_Y - 10), color=(0.5, 0.5, 0.5), width=0.5
        )
        page.insert_text((MARGIN_X, FOOTER_Y), footer, fontname="helv", fontsize=7.5, color=(0.3, 0.3, 0.3))
        label = f"Page {page.number + 1} of {total}"
        x = PAGE.width - MARGIN_X - pymupdf.get_text_length(label, "helv", 7.5)
        page.insert_text((x, FOOTER_Y), label, fontname="helv", fontsize=7.5, color=(0.3, 0.3, 0.3))
    doc.set_metadata(
        {
            "title": title,
            "author": "spacelm sample corpus",
            "subject": "space operations",
            "keywords": "space debris, space operations, sample document",
            "creator": "scripts/build_corpus_pdfs.py",
            "producer": "PyMuPDF",
            "creationDate": "",
            "modDate": "",
            "trapped": "",
            "format": "",
            "encryption": None,
        }
    )
    doc.del_xml_metadata()
    out = doc.tobytes(garbage=4, deflate=True, no_new_id=True, reproducible=True)
    doc.close()
    return out


def build(src, out):
    sources = sorted(src.glob("*.md"))
    if not sources:
        sys.exit(f"error: no Markdown sources in {src}")
    out.mkdir(parents=True, exist_ok=True)
    for path in sources:
        options, header, body = parse(path)
        title_match = re.search(r"<h1>(.*?)</h1>", header + body)
        title = html.unescape(title_match.group(1)) if title_match else path.stem
        pdf = finish_pdf(layout_without_orphans(options, header, body), title, options.get("footer", title))
        target = out / f"{path.stem}.pdf"
        target.write_bytes(pdf)
        pages = pymupdf.open("pdf", pdf).page_count
        print(f"{path.name} -> {target} ({pages} pages, {options.get('layout', 'single-column')})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("data/corpus_src"), help="Markdown source folder")
    parser.add_argument("--out", type=Path, default=Path("data/raw"), help="PDF output folder")
    args = parser.parse_args(argv)
    build(args.src, args.out)


if __name__ == "__main__":
    main()
