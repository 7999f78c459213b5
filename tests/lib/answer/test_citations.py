"""Numbered citations: every accepted form maps back to its chunk id; the rest are invalid."""

import pytest

from spacelm.lib.answer import citations as C

IDS = ["a:1", "b:2", "c:3"]


@pytest.mark.parametrize(
    "text,cited",
    [
        ("Drag lowers the orbit [1].", ["a:1"]),
        ("Both agree [1, 3].", ["a:1", "c:3"]),
        ("Both agree [1][3].", ["a:1", "c:3"]),
        ("All three [1-3].", ["a:1", "b:2", "c:3"]),
        ("Two of them [2 and 3].", ["b:2", "c:3"]),
        ("See [Passage 2] and (Source 1).", ["b:2", "a:1"]),
        ("See [Doc 3].", ["c:3"]),
        ("By id [b:2].", ["b:2"]),
        ("A list item (1) is not a citation.", []),
    ],
)
def test_accepted_forms(text, cited):
    assert C.cited_markers(text, IDS) == cited


def test_out_of_range_and_foreign_ids_are_invalid_not_dropped():
    assert C.cited_markers("x [4] y [z:9] z [0]", IDS) == ["invalid:4", "invalid:z:9", "invalid:0"]
    c = C.citation_check("A [1]. B [4]. C [z:9].", IDS, {"a:1", "b:2", "c:3", "z:9"})
    assert c["cited"] == ["a:1"] and c["invalid"] == ["4", "z:9"] and c["n_cited"] == 3 and c["n_valid"] == 1
    assert c["citation_accuracy"] == pytest.approx(1 / 3)
    assert not c["citations_exist"] and not c["citations_in_context"]  # "4" names nothing
    assert C.citation_check("no citation", IDS, set())["citation_accuracy"] is None


def test_context_formats_and_marker_removal():
    text_of = {"a:1": "first", "b:2": "second"}
    assert C.format_context(["a:1", "b:2"], text_of) == "[1]\nfirst\n\n[2]\nsecond"
    assert C.format_context(["a:1"], text_of, "ids") == "[a:1]\nfirst"
    assert C.strip_markers("Drag lowers perigee [1][2], fast [Passage 3].") == "Drag lowers perigee, fast."
