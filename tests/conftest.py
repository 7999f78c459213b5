"""Shared fixtures: tiny corpora and PDFs built inside the tests with PyMuPDF."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LOREM = (
    "Collision avoidance for satellites in low Earth orbit relies on conjunction data messages issued by "
    "surveillance networks. Operators compare the probability of collision with a threshold and plan a "
    "manoeuvre when the risk is too high. "
)


def make_pdf(path: Path, pages: list, two_column: bool = False, encrypt: bool = False) -> Path:
    """Write a PDF whose pages hold the given texts. With `two_column`, each page's text is a pair
    (left, right) placed in two columns."""
    import pymupdf

    doc = pymupdf.open()
    for content in pages:
        page = doc.new_page(width=595, height=842)
        if two_column:
            left, right = content
            page.insert_textbox(pymupdf.Rect(50, 60, 290, 780), left, fontsize=10)
            page.insert_textbox(pymupdf.Rect(305, 60, 545, 780), right, fontsize=10)
        else:
            page.insert_textbox(pymupdf.Rect(50, 60, 545, 780), content, fontsize=10)
        page.insert_text((280, 820), f"Page {doc.page_count} of {len(pages)}", fontsize=8)
    kwargs = {}
    if encrypt:
        kwargs = dict(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="secret")
    doc.save(path, **kwargs)
    doc.close()
    return path


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """Three small documents: a multi-page PDF with references, a Markdown file, a text file."""
    raw = tmp_path / "raw"
    raw.mkdir()
    body = [LOREM * 6 + "\n\nThe operators then re-\nviewed the orbit determination.", LOREM * 5,
            LOREM * 3 + "\n\nReferences\n\n[1] IADC. Space Debris Mitigation Guidelines. 2020.\n"
            "[2] ESA. Space Environment Report. 2024."]
    make_pdf(raw / "ops-note.pdf", body)
    (raw / "guide.md").write_text("# Guide\n\n" + LOREM * 8 + "\n\n## Section 2\n\n" + LOREM * 4, encoding="utf-8")
    (raw / "notes.txt").write_text(LOREM * 10, encoding="utf-8")
    (raw / "README.md").write_text("not a corpus document", encoding="utf-8")
    return raw


@pytest.fixture
def tiny_config(tmp_path: Path, tiny_corpus: Path):
    """A config whose every path lives in tmp_path."""
    from spacelm.config import from_dict

    return from_dict({
        "run_name": "test",
        "corpus": {"raw_dir": str(tiny_corpus), "golden_samples": str(tiny_corpus / "golden_samples.jsonl")},
        "paths": {"processed_dir": str(tmp_path / "processed"), "synthetic_dir": str(tmp_path / "synthetic"),
                  "results_dir": str(tmp_path / "results"), "cache_dir": str(tmp_path / "cache")},
        "chunking": {"max_tokens": 64},
    }, source="<test>", root=str(ROOT))
