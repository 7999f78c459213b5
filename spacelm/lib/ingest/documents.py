"""Ingest: PDFs and text files → page-aware, cleaned document text, and a log of every span
removed on the way.

PDFs are read page by page as PyMuPDF text blocks, put in reading order (`blocks.py`); ``.md``
and ``.txt`` files are single-page documents of paragraph blocks, in UTF-8 or in UTF-16/UTF-32
with a byte-order mark (decoded, and said in the log). Blocks that are not reading
text (page numbers, rotated stamps, letter-by-letter figure text, running headers and
footers) and bibliographies wherever they stand (`bibliography.py`) are removed, each with a
row in the drop log naming the document, the page, the reason and the first 200 characters.
Cleaning normalises Unicode (ligatures such as "ﬁ"), joins words hyphenated across line
breaks and collapses whitespace. Per document: a *garbled-text score* (words run together
without spaces), characters dropped per reason, equation-heavy blocks (kept), pages without
text, and whether the PDF had to be repaired.

A file that cannot be used (empty, encrypted, corrupt, undecodable, a second copy of another
file's bytes, a symbolic link leading out of the corpus folder) is skipped with a warning that
names it and gives the reason, on one line (`redact.shown_name`: control characters, newline
included, escaped; a name starting with '-' shown as './-…'); the run fails only when no
document is usable. Files in hidden folders (`.ipynb_checkpoints/`, `.git/`) are not corpus
files. Control and bidi-override characters are removed from the text (`strip_controls`) and
counted per document (`dropped_chars["control_character"]`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..io import InputError, bom_encoding, decode_text, looks_utf16, sha256_file
from ..redact import printable, shown_name
from .bibliography import BibliographyRules, find_bibliography
from .blocks import Block, is_equation, noise_reason, order_blocks, running_lines, strip_lines

PAGE_SEP = "\n\n"


@dataclass
class Document:
    """A cleaned document: its text and where each (1-based) page starts in it."""

    doc_id: str
    source: str
    format: str
    text: str
    page_starts: list[int]  # char offset of page i+1 in `text`
    n_pages: int
    garbled_score: float = 0.0
    garbled_words: int = 0
    references_dropped_chars: int = 0
    title: str = ""
    repaired: bool = False  # PyMuPDF had to repair the file (truncated or damaged)
    empty_pages: list[int] = field(default_factory=list)  # 1-based pages without extractable text
    dropped_chars: dict = field(default_factory=dict)  # reason -> characters removed (see DROP_REASONS)
    equation_blocks: int = 0  # equation-heavy blocks (kept, flagged)
    ocr_pages: list[int] = field(default_factory=list)  # pages whose text came from OCR

    def page_of(self, offset: int) -> int:
        """1-based page number holding character `offset` of the cleaned text."""
        import bisect

        return max(1, bisect.bisect_right(self.page_starts, offset))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Skipped:
    source: str
    reason: str


@dataclass
class IngestResult:
    documents: list[Document] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)  # one row per removed span


# why a span of a document was removed; every removal is one row of the drop log
DROP_REASONS = (
    "bibliography",
    "running_header_footer",
    "page_number",
    "figure_fragment",
    "rotated_text",
    "control_character",  # control and bidi-override characters (see strip_controls), one row per page
)


@dataclass(frozen=True)
class IngestRules:
    """What ingest removes and how it orders blocks (`ingest` in the config)."""

    reference_filter: bool = True
    noise_filter: bool = True
    layout: str = "columns"
    ocr: bool = False
    ocr_language: str = "eng"
    bibliography: BibliographyRules = BibliographyRules()


# --------------------------------------------------------------------------- reading
def doc_id_for(path: Path) -> str:
    """A stable, readable id from the file name: lower-case, [a-z0-9-] only. Accents are
    dropped (é -> e); a name with letters of another script (Japanese, Greek, ...) gets a short
    hash of the name appended, so two such files never share an id."""
    decomposed = unicodedata.normalize("NFKD", path.stem)
    stem = decomposed.encode("ascii", "ignore").decode()
    base = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    lost = any(ord(ch) > 127 and unicodedata.category(ch)[0] in "LN" for ch in decomposed)
    if not lost and base:
        return base
    # surrogateescape: a name's bytes that are not UTF-8 hash as those bytes
    digest = hashlib.sha256(unicodedata.normalize("NFC", path.stem).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{base or 'doc'}-{digest}"


# how each format's files begin; a file that does not is refused before it is parsed
_PDF_MAGIC = b"%PDF-"


def check_file_kind(path: Path) -> None:
    """Refuse a file whose bytes are not what its extension says: empty, a PDF without the PDF
    header within its first kilobyte (an HTML error page saved as .pdf), or a text file that is
    a PDF or binary."""
    size = path.stat().st_size
    if size == 0:
        raise InputError(f"{shown_name(path)}: empty file (0 bytes); remove it or download it again")
    with path.open("rb") as f:
        head = f.read(1024)
    fmt = path.suffix.lower()
    if fmt == ".pdf":
        if _PDF_MAGIC not in head:
            start = head.lstrip()[:15].lower()
            kind = "an HTML page" if start.startswith((b"<!doctype html", b"<html")) else "not a PDF"
            raise InputError(
                f"{shown_name(path)}: {kind} (no %PDF- header), although named .pdf; download the PDF itself"
            )
    elif head.startswith(_PDF_MAGIC):
        raise InputError(f"{shown_name(path)}: a PDF named {fmt}; rename it to .pdf")
    elif bom_encoding(head):
        return  # UTF-16 and UTF-32 text holds NUL bytes; its byte-order mark says how to read it
    elif looks_utf16(head):
        raise InputError(f"{shown_name(path)}: looks like UTF-16 text without a byte-order mark; save it as UTF-8")
    elif b"\x00" in head:
        raise InputError(f"{shown_name(path)}: binary data (NUL bytes), not {fmt} text")


def read_pdf_blocks(
    path: Path, ocr: bool = False, ocr_language: str = "eng"
) -> tuple[list[list[Block]], list[float], bool, list[int]]:
    """Text blocks of every page (PyMuPDF, content-stream order), page widths, whether PyMuPDF
    had to repair the file (a truncated download is repaired in silence, its lost pages coming
    back empty), and the pages read by OCR (with `ocr`, pages without a text layer are read
    with Tesseract through PyMuPDF).

    Raises InputError for encrypted, corrupt or page-less files."""
    import pymupdf

    try:
        doc = pymupdf.open(path)
    except Exception as e:  # PyMuPDF raises several types for damaged files
        raise InputError(
            f"{shown_name(path)}: cannot open PDF ({type(e).__name__}: {e}); the file is corrupt or not a PDF"
        ) from None
    with doc:
        if doc.needs_pass:
            raise InputError(
                f"{shown_name(path)}: PDF is encrypted (password protected); decrypt it or remove it from the corpus"
            )
        if doc.page_count == 0:
            raise InputError(f"{shown_name(path)}: PDF has no pages")
        pages, widths, ocr_pages = [], [], []
        try:
            for number, page in enumerate(doc, 1):
                blocks = _page_blocks(page, number)
                if ocr and not any(b.text.strip() for b in blocks):
                    blocks = _page_blocks(
                        page, number, page.get_textpage_ocr(language=ocr_language, dpi=200, full=True)
                    )
                    ocr_pages.append(number)
                pages.append(blocks)
                widths.append(float(page.rect.width))
        except InputError:
            raise
        except Exception as e:
            raise InputError(
                f"{shown_name(path)}: PDF is damaged and cannot be read ({type(e).__name__}: {e})"
            ) from None
        return pages, widths, bool(doc.is_repaired), ocr_pages


def _page_blocks(page, number: int, textpage=None) -> list[Block]:
    """One Block per PyMuPDF text block: its lines joined by newlines, rotated when every line
    runs other than left to right."""
    d = page.get_text("dict", textpage=textpage) if textpage is not None else page.get_text("dict")
    out = []
    for b in d["blocks"]:
        if b.get("type") != 0:
            continue
        lines = ["".join(s["text"] for s in ln["spans"]) for ln in b["lines"]]
        text = "\n".join(ln for ln in lines if ln.strip())
        if not text.strip():
            continue
        rotated = all(abs(ln["dir"][1]) > 0.1 for ln in b["lines"]) if b["lines"] else False
        out.append(Block(number, *b["bbox"], text=text.strip(), rotated=rotated))
    return out


def ocr_available() -> str | None:
    """None when PyMuPDF can OCR here (Tesseract and its language data found), else why not."""
    import shutil

    if not shutil.which("tesseract"):
        return "Tesseract is not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
    try:
        import pymupdf

        pymupdf.get_tessdata()
    except Exception as e:  # PyMuPDF raises when it cannot find the language data
        return f"Tesseract's language data was not found ({e}); set TESSDATA_PREFIX"
    return None


def read_text_file(path: Path) -> list[Block]:
    """A Markdown or text file as one page of paragraph blocks (split at blank lines). UTF-8,
    or UTF-16 or UTF-32 with a byte-order mark (as Windows editors save "Unicode" text), which is
    read and said in the log. Any other file that is not UTF-8 raises an InputError naming the
    file, the first byte that is not UTF-8 and its offset, and the fix."""
    data = path.read_bytes()
    text = decode_text(data, shown_name(path))  # UTF-8, or UTF-16/32 with a byte-order mark
    found = bom_encoding(data)
    if found and found[0] != "utf-8":
        logging.getLogger("spacelm").info(
            "%s: decoded from %s, as its byte-order mark says (the text is read in full; nothing to fix)",
            shown_name(path),
            found[0].upper(),
        )
    paras = [p.strip("\n") for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]
    return [Block(1, 0.0, float(i), 1.0, float(i) + 1, p) for i, p in enumerate(paras)]


def _page_list(pages: list[int]) -> str:
    return ", ".join(map(str, pages[:12])) + (f" … ({len(pages)} in all)" if len(pages) > 12 else "")


def check_pdf_health(path: Path, pages: list[list[Block]], repaired: bool) -> list[int]:
    """Pages without text (1-based), with a warning naming the file when the PDF was repaired
    (likely truncated: its last pages are lost) or some pages have no text layer (scanned)."""
    empty = [i for i, bs in enumerate(pages, 1) if not any(b.text.strip() for b in bs)]
    n = len(pages)
    if repaired:
        lost = f"; pages {_page_list(empty)} of {n} came back empty" if empty else ""
        warnings.warn(
            f"{shown_name(path)}: the PDF is damaged and PyMuPDF repaired it{lost}. The file is probably truncated: "
            "download or export it again (documents.csv records the pages)",
            stacklevel=3,
        )
    elif empty and len(empty) < n:
        warnings.warn(
            f"{shown_name(path)}: pages {_page_list(empty)} of {n} have no extractable text (scanned images?); "
            "their content is not in the corpus unless ingest.ocr is true",
            stacklevel=3,
        )
    return empty


# --------------------------------------------------------------------------- cleaning
# characters removed from document text at ingest, so they never reach chunks, prompts or
# notebook outputs: C0 controls but tab, newline and carriage return; DEL; C1 controls; the
# bidirectional marks, embeddings, overrides and isolates (an RLO shows text reversed, and can
# make a passage read differently to a person than to a model). Vertical tab and form feed are
# line breaks and become one.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_CONTROL = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def strip_controls(text: str) -> tuple[str, int]:
    """(`text` without control and bidi-override characters, how many were removed)."""
    text = _LINE_CONTROL.sub("\n", text)
    return _CONTROL.subn("", text)


_SOFT_HYPHEN = re.compile("\u00ad")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u202f\u3000]+")


# a word broken at a line end: either a lower-case continuation (joined, or kept as a compound:
# `_dehyphenate`) or, after a plain hyphen, one that starts with a capital or a digit, which is a
# name's compound ("Fengyun-1C", "non-European", "COSMOS-2251") and keeps its hyphen, never a space
_HYPHEN_WORD_BREAK = re.compile(r"(?<![A-Za-z0-9])([A-Za-z0-9]+)(?:[-\u00ad]\n[ \t]*([a-z]+)|-\n[ \t]*(?=[A-Z0-9]))")
_COMPOUND = re.compile(r"\b([A-Za-z0-9]+-[A-Za-z]+)\b")


def hyphen_vocabulary(text: str) -> tuple[set[str], set[str]]:
    """(words, hyphenated compounds) written in `text` away from line ends: the evidence used
    to decide whether a hyphen at a line break splits a word or belongs to a compound."""
    text = unicodedata.normalize("NFKC", text)
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
    compounds = {m.lower() for m in _COMPOUND.findall(text.replace("-\n", " "))}
    return words, compounds


def _dehyphenate(m: re.Match, words: set[str], compounds: set[str]) -> str:
    left, right = m.group(1), m.group(2)
    if right is None:
        return f"{left}-"  # the continuation starts with a capital or a digit: "Fengyun-" + "1C"
    hyphened, joined = f"{left}-{right}".lower(), f"{left}{right}".lower()
    if left[-1].isdigit() or hyphened in compounds and joined not in words:
        return f"{left}-{right}"  # "25-year", "well-known"
    return left + right  # "manoeu-vre" → "manoeuvre"


def clean_text(text: str, vocab: tuple[set[str], set[str]] | None = None) -> str:
    """Normalise one page: NFKC (ligatures, odd spaces), words hyphenated across line breaks
    joined (a compound seen elsewhere with its hyphen keeps it), single newlines inside a
    paragraph joined by spaces, blank-line paragraph breaks kept."""
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    words, compounds = vocab or (set(), set())
    text = _HYPHEN_WORD_BREAK.sub(lambda m: _dehyphenate(m, words, compounds), text)
    text = _SOFT_HYPHEN.sub("", text)
    paras = re.split(r"\n\s*\n", text)
    out = []
    for p in paras:
        lines = [_SPACES.sub(" ", ln).strip() for ln in p.split("\n")]
        lines = [re.sub(r"^[\u2022\u25aa\u25cf\u2023\u2043]\s*", "- ", ln) for ln in lines if ln]
        if not lines:
            continue
        # keep Markdown structure (headings, list items, table rows) on their own lines
        if any(ln.startswith(("#", "- ", "* ", "|")) or re.match(r"\d+\.\s", ln) for ln in lines):
            out.append("\n".join(lines))
        else:
            out.append(" ".join(lines))
    return "\n\n".join(out)


# --------------------------------------------------------------------------- garbling
_WORD = re.compile(r"[A-Za-z]+")
_COMMON = set(
    "a an the of to in on at by for with from as is are was were be been it its this that these those and or "
    "but not no can could may might will would shall should must has have had do does did than then there "
    "their they we our you your he she his her which who whom what when where why how all any each more "
    "most other some such only also into over under between after before during about up down out".split()
)


def _segments(token: str, vocab: set[str], max_len: int = 20) -> list[str] | None:
    """Fewest vocabulary words that concatenate to `token` (dynamic programming over word counts
    and back-pointers: linear in the token's length, so a 100,000-letter run costs a second, not
    gigabytes), or None."""
    n = len(token)
    count: list[int | None] = [0] + [None] * n
    back = [0] * (n + 1)
    for i in range(1, n + 1):
        for j in range(max(0, i - max_len), i):
            c = count[j]
            if c is not None and (count[i] is None or c + 1 < count[i]) and token[j:i] in vocab:
                count[i], back[i] = c + 1, j
    if count[n] is None:
        return None
    out, i = [], n
    while i > 0:
        out.append(token[back[i] : i])
        i = back[i]
    return out[::-1]


def _is_run_together(token: str, vocab: set[str], min_len: int) -> int:
    """Number of words hidden in `token` if it looks like words run together, else 0.

    Long, unknown, and splits into 3+ corpus words of which one is a function word ("the",
    "of", ...), or into 5+ words, or is 20+ letters long: a rare real word such as
    "interchangeable" (inter|change|able|...) is not flagged."""
    if len(token) < min_len or token in vocab:
        return 0
    pieces = _segments(token, vocab)
    if not pieces or len(pieces) < 3:
        return 0
    if len(pieces) >= 5 or len(token) >= 20 or any(p in _COMMON for p in pieces):
        return len(pieces)
    return 0


def build_vocabulary(texts: list[str]) -> set[str]:
    """Words seen at least twice across the corpus (2–14 letters) plus common function words."""
    counts = Counter(w.lower() for t in texts for w in _WORD.findall(t))
    return {w for w, c in counts.items() if c >= 2 and 2 <= len(w) <= 14} | _COMMON


def garbled_stats(text: str, vocab: set[str], min_len: int = 15) -> tuple[int, int]:
    """(words hidden in run-together tokens, total words).

    A token is run-together when it is long, not itself a known word, and splits into three or
    more known words, e.g. "theregionalcontextcanhelp" → the|regional|context|can|help."""
    hidden = plain = 0
    for w in _WORD.findall(text):
        k = _is_run_together(w.lower(), vocab, min_len)
        if k:
            hidden += k
        else:
            plain += 1
    return hidden, plain + hidden


# --------------------------------------------------------------------------- ingest
def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def scan_sources(raw_dir: Path, extensions: list[str], exclude: list[str]) -> tuple[list[Path], list[Skipped]]:
    """(the corpus files below `raw_dir`, files left out with why). Only files with one of
    `extensions`, not named in `exclude`, and in no hidden folder or hidden file (a path part
    starting with '.', such as .ipynb_checkpoints/ or .git/): those are left out silently. A
    symbolic link whose target lies outside `raw_dir` is left out with a reason (a link to
    /etc/passwd must not become a document)."""
    if not raw_dir.is_dir():
        raise InputError(f"{raw_dir}: corpus folder not found (set corpus.raw_dir in the config)")
    exts = {e.lower() for e in extensions}
    skip = {e.lower() for e in exclude}
    root = raw_dir.resolve()
    found, left_out = [], []
    for p in sorted(raw_dir.rglob("*")):
        rel = p.relative_to(raw_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if p.suffix.lower() not in exts or p.name.lower() in skip or not p.is_file():
            continue
        if not _inside(p.resolve(), root):
            left_out.append(
                Skipped(
                    str(p),
                    f"{shown_name(p)}: a symbolic link to a file outside the corpus folder; skipped "
                    "(copy the file into the folder if it belongs to the corpus)",
                )
            )
            continue
        found.append(p)
    return found, left_out


def list_sources(raw_dir: Path, extensions: list[str], exclude: list[str]) -> list[Path]:
    """The corpus files below `raw_dir` (see `scan_sources`)."""
    return scan_sources(raw_dir, extensions, exclude)[0]


def _title_of(pages: list[str], fallback: str) -> str:
    for line in (pages[0] if pages else "").split("\n"):
        line = line.strip().lstrip("#").strip()
        if len(line) > 3:
            return line[:200]
    return fallback


def _remove_noise(pages: list[list[Block]], drop) -> list[list[Block]]:
    keys = running_lines(pages)
    out = []
    for blocks in pages:
        kept = []
        for b in blocks:
            reason = noise_reason(b)
            if reason:
                drop(b.text, b.page, reason)
                continue
            b, gone = strip_lines(b, keys)
            for ln in gone:
                drop(ln, b.page, "running_header_footer")
            if b.text.strip():
                kept.append(b)
        out.append(kept)
    return out


def ingest_file(path: Path, rules: IngestRules = IngestRules()) -> tuple[Document, list[dict]]:
    """Read and clean one file (no garbled score yet: that needs the corpus vocabulary), and
    the spans removed from it, one row each (doc_id, page, reason, chars, preview)."""
    fmt = path.suffix.lower().lstrip(".")
    doc_id = doc_id_for(path)
    drops: list[dict] = []

    def drop(text: str, page: int, reason: str) -> None:
        text = text.strip()
        drops.append({"doc_id": doc_id, "page": page, "reason": reason, "chars": len(text), "preview": text[:200]})

    check_file_kind(path)
    repaired, empty, ocr_pages = False, [], []
    if fmt == "pdf":
        pages, widths, repaired, ocr_pages = read_pdf_blocks(path, rules.ocr, rules.ocr_language)
        if not any(b.text.strip() for bs in pages for b in bs):
            hint = "" if rules.ocr else "; set ingest.ocr: true to read scanned pages with Tesseract"
            raise InputError(
                f"{shown_name(path)}: no extractable text (empty, or a scanned PDF without a text layer{hint})"
            )
        empty = check_pdf_health(path, pages, repaired)
        pages = [order_blocks(bs, w, rules.layout) for bs, w in zip(pages, widths)]
        if rules.noise_filter:
            pages = _remove_noise(pages, drop)
    else:
        pages = [read_text_file(path)]
    if rules.reference_filter:
        flat = [(i, b) for i, bs in enumerate(pages) for b in bs]
        gone = set(find_bibliography([b.text for _, b in flat], rules.bibliography))
        for k in sorted(gone):
            drop(flat[k][1].text, flat[k][1].page, "bibliography")
        kept = [[] for _ in pages]
        for k, (i, b) in enumerate(flat):
            if k not in gone:
                kept[i].append(b)
        pages = kept
    raw_pages = []
    for number, bs in enumerate(pages, 1):
        page, n = strip_controls("\n\n".join(b.text for b in bs))
        if n:
            drops.append({"doc_id": doc_id, "page": number, "reason": "control_character", "chars": n, "preview": ""})
        raw_pages.append(page)
    vocab = hyphen_vocabulary("\n".join(raw_pages))
    texts = [clean_text(p, vocab) for p in raw_pages]
    if not any(p.strip() for p in texts):
        raise InputError(f"{shown_name(path)}: no text left after removing {len(drops)} noise and bibliography spans")
    text = PAGE_SEP.join(texts)
    starts, pos = [], 0
    for p in texts:
        starts.append(pos)
        pos += len(p) + len(PAGE_SEP)
    dropped = {r: sum(d["chars"] for d in drops if d["reason"] == r) for r in DROP_REASONS}
    doc = Document(
        doc_id=doc_id,
        source=str(path),
        format=fmt,
        text=text,
        page_starts=starts,
        n_pages=len(texts),
        references_dropped_chars=dropped["bibliography"],
        title=_title_of(texts, path.stem),
        repaired=repaired,
        empty_pages=empty,
        dropped_chars=dropped,
        ocr_pages=ocr_pages,
        equation_blocks=sum(is_equation(b.text) for bs in pages for b in bs),
    )
    return doc, drops


def ingest_corpus(
    raw_dir: Path,
    extensions: list[str],
    exclude: list[str],
    rules: IngestRules = IngestRules(),
    garbled_threshold: float = 0.02,
    min_doc_chars: int = 1,
) -> IngestResult:
    """Ingest every usable file below `raw_dir`; unusable ones are skipped with a warning."""
    res = IngestResult()
    seen: dict[str, str] = {}
    contents: dict[str, str] = {}  # sha256 of a file's bytes -> the first file that had them
    paths, left_out = scan_sources(raw_dir, extensions, exclude)
    for s in left_out:
        warnings.warn(f"skipping {s.reason}", stacklevel=2)
        res.skipped.append(s)
    for path in paths:
        try:
            digest = sha256_file(path)
            if digest in contents:
                raise InputError(
                    f"{shown_name(path)}: the same content as {shown_name(contents[digest])} (sha256 {digest[:16]}…); "
                    "skipped as a duplicate (remove one copy)"
                )
            doc, drops = ingest_file(path, rules)
            if len(doc.text) < min_doc_chars:
                raise InputError(
                    f"{shown_name(path)}: only {len(doc.text)} characters of text (minimum {min_doc_chars})"
                )
            if doc.doc_id in seen:
                raise InputError(
                    f"{shown_name(path)}: its id '{doc.doc_id}' clashes with {shown_name(seen[doc.doc_id])}; "
                    "rename one file"
                )
        except InputError as e:
            # file names come escaped (`shown_name`); a library's own text (PyMuPDF's error) loses its
            # terminal controls and line breaks, so the warning is one line of the log
            reason = " ".join(printable(e).splitlines())
            warnings.warn(f"skipping {reason}", stacklevel=2)
            res.skipped.append(Skipped(str(path), reason))
            continue
        contents[digest] = str(path)
        seen[doc.doc_id] = str(path)
        res.documents.append(doc)
        res.dropped.extend(drops)
    vocab = build_vocabulary([d.text for d in res.documents])
    for d in res.documents:
        hidden, total = garbled_stats(d.text, vocab)
        d.garbled_words = hidden
        d.garbled_score = round(hidden / total, 6) if total else 0.0
    if not res.documents:
        reasons = "; ".join(s.reason for s in res.skipped) or f"no {'/'.join(sorted(extensions))} files found"
        raise InputError(f"{raw_dir}: no usable document ({reasons})")
    return res


# --------------------------------------------------------------------------- stage
def documents_table(docs: list[Document]):
    """One row per document: pages, words, garbled score and flag, references dropped; the source
    file as `shown_name` writes it (documents.jsonl keeps the name as it is)."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "doc_id": d.doc_id,
                "format": d.format,
                "pages": d.n_pages,
                "words": len(d.text.split()),
                "chars": len(d.text),
                "garbled_score": d.garbled_score,
                "garbled_words": d.garbled_words,
                "references_dropped_chars": d.references_dropped_chars,
                **{f"dropped_{r}_chars": d.dropped_chars.get(r, 0) for r in DROP_REASONS},
                "equation_blocks": d.equation_blocks,
                "ocr_pages": len(d.ocr_pages),
                "repaired": d.repaired,
                "empty_pages": len(d.empty_pages),
                "empty_page_numbers": " ".join(map(str, d.empty_pages)),
                "title": d.title,
                "source": shown_name(d.source),  # one row per line however the file is named
            }
            for d in docs
        ]
    )
