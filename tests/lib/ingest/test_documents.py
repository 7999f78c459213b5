import warnings
from pathlib import Path

import pytest

from spacelm.lib.ingest import documents as ingest
from spacelm.lib.io import InputError
from spacelm.stages import ingest as ingest_stage
from tests.conftest import LOREM, make_pdf


def test_clean_text_ligatures_hyphens_whitespace():
    raw = "The ﬁrst conjunc-\ntion was\nscreened   twice.\n\n\nNext  para."
    assert ingest.clean_text(raw) == "The first conjunction was screened twice.\n\nNext para."


def test_clean_text_keeps_capitalised_hyphen_compounds():
    """A hyphen at a line end followed by a capital or a digit belongs to a name ("Fengyun-1C",
    "COSMOS-2251", "non-European"): the hyphen stays and no space comes in. (The line break itself
    always goes, so asserting it absent tests nothing: compare the whole output.)"""
    assert ingest.clean_text("Fengyun-\n1C test") == "Fengyun-1C test"
    assert ingest.clean_text("debris from COSMOS-\n  2251 and the non-\nEuropean fleet") == (
        "debris from COSMOS-2251 and the non-European fleet"
    )
    # a lower-case continuation is still a word broken in two, and a spaced dash is not a hyphen
    assert ingest.clean_text("the manoeu-\nvre of Fengyun -\n1C") == "the manoeuvre of Fengyun - 1C"


def test_two_column_pdf_reads_left_column_first(tmp_path):
    left = "Left column opens the argument about debris growth. " * 8
    right = "Right column closes it with disposal rules. " * 8
    p = make_pdf(tmp_path / "two.pdf", [(left, right)], two_column=True)
    doc, _ = ingest.ingest_file(p)
    assert doc.text.index("Left column") < doc.text.index("Right column")
    assert doc.n_pages == 1


def test_pages_and_page_offsets(tmp_path):
    p = make_pdf(tmp_path / "p.pdf", ["alpha page one " * 20, "beta page two " * 20, "gamma page three " * 20])
    doc, drops = ingest.ingest_file(p, ingest.IngestRules(reference_filter=False))
    assert doc.n_pages == 3
    assert doc.page_of(doc.text.index("beta")) == 2
    assert doc.page_of(doc.text.index("gamma")) == 3
    assert doc.page_of(0) == 1
    # the footer "Page N of 3" is dropped from every page, each with a row naming its page
    assert "of 3" not in doc.text
    assert sorted((d["page"], d["reason"]) for d in drops if "of 3" in d["preview"]) == [
        (1, "page_number"),
        (2, "page_number"),
        (3, "page_number"),
    ]


def test_hyphenation_joined_across_pdf_lines(tmp_path):
    p = make_pdf(tmp_path / "h.pdf", ["The spacecraft performed a manoeu-\nvre to avoid the object."])
    doc, _ = ingest.ingest_file(p)
    assert "manoeuvre" in doc.text


def test_reference_section_dropped_and_counted(tmp_path):
    text = "# Report\n\n" + LOREM * 10 + "\n\n## References\n\n[1] IADC. Guidelines. 2020.\n[2] ESA. Report. 2024.\n"
    (tmp_path / "r.md").write_text(text)
    doc, drops = ingest.ingest_file(tmp_path / "r.md")
    assert "IADC. Guidelines" not in doc.text and "References" not in doc.text
    assert doc.references_dropped_chars > 40 and {d["reason"] for d in drops} == {"bibliography"}
    kept, drops = ingest.ingest_file(tmp_path / "r.md", ingest.IngestRules(reference_filter=False))
    assert "IADC. Guidelines" in kept.text and kept.references_dropped_chars == 0 and drops == []


def test_text_after_a_reference_list_is_kept(tmp_path):
    text = (
        "Body. " * 100 + "\n\nReferences\n\n[1] A. B. Smith, Title of a paper. J. Space Ops. 12 (2020) 1-9.\n\n"
        "Appendix A. Extra material\n\nKeep me, the appendix explains the procedure in plain words."
    )
    (tmp_path / "a.md").write_text(text)
    doc, drops = ingest.ingest_file(tmp_path / "a.md")
    assert "Keep me" in doc.text and "Appendix A" in doc.text and "Smith" not in doc.text


def test_the_word_references_in_prose_is_not_a_bibliography(tmp_path):
    text = "References to the operations manual are given in each section below.\n\n" + "Body text. " * 100
    (tmp_path / "p.md").write_text(text)
    doc, drops = ingest.ingest_file(tmp_path / "p.md")
    assert "References to the operations manual" in doc.text and drops == []


def test_garbled_text_is_measured():
    clean = "the regional context can help operators decide when the debris risk is high " * 20
    vocab = ingest.build_vocabulary([clean])
    hidden, total = ingest.garbled_stats("theregionalcontextcanhelp operators decide", vocab)
    assert hidden == 5 and total == 7
    assert ingest.garbled_stats(clean, vocab)[0] == 0


def test_bad_files_are_skipped_with_reasons(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_pdf(raw / "good.pdf", [LOREM * 5])
    make_pdf(raw / "locked.pdf", [LOREM * 5], encrypt=True)
    (raw / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    (raw / "empty.pdf").write_bytes(b"")
    (raw / "latin1.txt").write_bytes("caf\xe9 orbit".encode("latin-1"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = ingest.ingest_corpus(raw, [".pdf", ".txt"], [])
    assert [d.doc_id for d in res.documents] == ["good"]
    reasons = {Path(s.source).name: s.reason for s in res.skipped}
    assert set(reasons) == {"locked.pdf", "broken.pdf", "empty.pdf", "latin1.txt"}
    assert "encrypted" in reasons["locked.pdf"]
    assert "UTF-8" in reasons["latin1.txt"]
    # one warning per unusable file, each naming that file
    assert len(w) == 4
    assert sorted(n for x in w for n in reasons if n in str(x.message)) == sorted(reasons)


def test_no_usable_document_is_an_error(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(InputError, match="no usable document"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ingest.ingest_corpus(tmp_path, [".pdf"], [])


def test_readme_is_excluded(tiny_corpus):
    names = [p.name for p in ingest.list_sources(tiny_corpus, [".pdf", ".md", ".txt"], ["README.md"])]
    assert "README.md" not in names and len(names) == 3


def test_stage_writes_outputs_and_skips_when_fresh(tiny_config):
    s1 = ingest_stage.run(tiny_config)
    assert not s1["skipped"] and s1["documents"] == 3
    assert s1["references_dropped_chars"] > 0
    s2 = ingest_stage.run(tiny_config)
    assert s2["skipped"]
    s3 = ingest_stage.run(tiny_config, force=True)
    assert not s3["skipped"]
    import pandas as pd

    table = pd.read_csv(tiny_config.processed_dir / "documents.csv")
    assert {"doc_id", "pages", "words", "garbled_score", "references_dropped_chars"} <= set(table.columns)


def test_compound_hyphen_at_line_break_is_kept_when_seen_elsewhere():
    vocab = ingest.hyphen_vocabulary("A well-known rule. The 25-year rule applies.")
    assert (
        ingest.clean_text("a well-\nknown rule and the 25-\nyear limit", vocab)
        == "a well-known rule and the 25-year limit"
    )
    assert ingest.clean_text("the manoeu-\nvre", vocab) == "the manoeuvre"


def test_truncated_pdf_is_reported_not_half_read_in_silence(tmp_path):
    """A 10-page PDF cut at 60% of its bytes: PyMuPDF repairs it and 4 pages come back empty.
    Ingest warns naming the file and the pages, and the document records both."""
    raw = tmp_path / "raw"
    raw.mkdir()
    whole = make_pdf(tmp_path / "whole.pdf", [f"Page {i} " + LOREM * 3 for i in range(1, 11)])
    data = whole.read_bytes()
    (raw / "cut.pdf").write_bytes(data[: int(len(data) * 0.6)])
    make_pdf(raw / "fine.pdf", [LOREM * 3, LOREM * 3])
    with pytest.warns(
        UserWarning, match=r"cut\.pdf: the PDF is damaged and PyMuPDF repaired it; pages .* of 10 came back empty"
    ):
        res = ingest.ingest_corpus(raw, [".pdf"], [])
    docs = {d.doc_id: d for d in res.documents}
    cut = docs["cut"]
    assert cut.repaired and cut.n_pages == 10 and len(cut.empty_pages) >= 3 and cut.empty_pages[-1] == 10
    assert not docs["fine"].repaired and docs["fine"].empty_pages == []
    table = ingest.documents_table(res.documents).set_index("doc_id")
    assert bool(table.loc["cut", "repaired"]) and table.loc["cut", "empty_pages"] == len(cut.empty_pages)
    assert table.loc["fine", "empty_pages"] == 0


def test_pages_without_text_are_named(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    import pymupdf

    doc = pymupdf.open()
    for text in (LOREM * 3, None, LOREM * 3):  # page 2 holds only a drawing, as a scan holds an image
        page = doc.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(50, 60, 545, 780), text, fontsize=10)
        else:
            page.draw_rect(pymupdf.Rect(100, 100, 400, 400), color=(0, 0, 0), fill=(0.5, 0.5, 0.5))
    doc.save(raw / "scan.pdf")
    with pytest.warns(UserWarning, match=r"scan\.pdf: pages 2 of 3 have no extractable text"):
        res = ingest.ingest_corpus(raw, [".pdf"], [])
    assert res.documents[0].empty_pages == [2] and not res.documents[0].repaired
