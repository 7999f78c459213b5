"""The labelling sample, the labels file and the prediction-powered Table 1, by hand."""

from __future__ import annotations

import json

import pytest

from spacelm.lib.io import InputError
from spacelm.lib.judge import labelling as L


def test_allocation_is_proportional_with_one_per_stratum():
    # 10 of 100: 60/30/10 -> 6/3/1
    assert L.allocate({"a": 60, "b": 30, "c": 10}, 10) == {"a": 6, "b": 3, "c": 1}
    # 4 of 100 with a stratum of 2: each gets one first, then the largest remainder
    assert L.allocate({"a": 90, "b": 8, "c": 2}, 4) == {"a": 2, "b": 1, "c": 1}
    # fewer than the strata: no floor, the largest first
    assert L.allocate({"a": 90, "b": 8, "c": 2}, 2) == {"a": 2, "b": 0, "c": 0}
    # never more than a stratum holds, never more than all
    assert L.allocate({"a": 1, "b": 3}, 10) == {"a": 1, "b": 3}
    assert sum(L.allocate({"a": 7, "b": 5, "c": 3, "d": 1}, 9).values()) == 9


def _pairs():
    out = []
    for system, n in (("bm25", 6), ("dense", 4)):
        for i in range(n):
            out.append(
                {
                    "pair_id": L.pair_id(f"q{i}", f"{system}-c{i}"),
                    "system": system,
                    "grade": i % 2,
                    "question": f"question {i}",
                    "passage": f"passage {i}",
                }
            )
    return out


def test_stratified_sample_is_seeded_and_weighted():
    pairs = _pairs()  # strata: bm25|0 3, bm25|1 3, dense|0 2, dense|1 2
    s = L.stratified_sample(pairs, 5, seed=1)
    assert len(s) == 5 and s == L.stratified_sample(pairs, 5, seed=1)
    by = {}
    for p in s:
        by.setdefault(p["stratum"], []).append(p)
    assert set(by) == {"bm25|0", "bm25|1", "dense|0", "dense|1"}
    for k, ps in by.items():  # weight = stratum size / drawn from it
        size = 3 if k.startswith("bm25") else 2
        assert all(p["weight"] == pytest.approx(size / len(ps)) for p in ps)


def test_labelling_files_show_no_judge_grade(tmp_path):
    items = [dict(p, qid="q", chunk_id="c", stratum="bm25|3", weight=1.0) for p in _pairs()[:2]]
    files = L.write_labelling_files(tmp_path, items)
    assert [f.name for f in files] == ["to_label.jsonl", "to_label.csv", "label.html"]
    page = (tmp_path / "label.html").read_text()
    assert "question 0" in page and "passage 1" in page and "bm25|3" not in page and '"grade"' not in page
    assert (tmp_path / "to_label.csv").read_text().splitlines()[0] == "pair_id,question,passage,grade"


def test_read_labels_validates_ids_and_grades(tmp_path):
    known = {"q1::a", "q1::b", "q2::c"}
    f = tmp_path / "human_labels.csv"
    f.write_text("pair_id,grade\nq1::a,3\nq1::b,\nq2::c,0\n")
    assert L.read_labels(f, known) == {"q1::a": 3, "q2::c": 0}  # the empty grade is not labelled yet
    f.write_text("pair_id,grade\nq1::a,3\nq9::z,1\n")
    with pytest.raises(InputError, match=r"human_labels.csv:3: unknown pair id 'q9::z'"):
        L.read_labels(f, known)
    f.write_text("pair_id,grade\nq1::a,4\n")
    with pytest.raises(InputError, match=r"human_labels.csv:2: grade '4'"):
        L.read_labels(f, known)
    f.write_text("pair_id,grade\nq1::a,2.5\n")
    with pytest.raises(InputError, match=r":2: grade"):
        L.read_labels(f, known)
    f.write_text("id,grade\n")
    with pytest.raises(InputError, match="missing column"):
        L.read_labels(f, known)
    j = tmp_path / "human_labels.jsonl"
    j.write_text(
        json.dumps({"pair_id": "q1::a", "grade": 2}) + "\n" + json.dumps({"pair_id": "q1::a", "grade": 1}) + "\n"
    )
    with pytest.raises(InputError, match=r"jsonl:2: pair q1::a is labelled twice"):
        L.read_labels(j, known)
    assert L.labels_file(tmp_path) == f


def test_ppi_table1_by_hand():
    """One cell of 4 pairs: judge grades 2,2,0,1; people labelled two: (a: judge 2, human 1),
    (c: judge 0, human 0). Grade 2: judge-only 2/4 = 50%; rectifiers 0-1, 0-0 -> mean -0.5:
    estimate 0%. Grade 1: judge-only 25%; rectifiers 1-0, 0-0 -> +0.5: 75%."""
    cells = {("bm25", "retrieved", 4): [("q", "a"), ("q", "b"), ("q", "c"), ("q", "d")]}
    grades = {("q", "a"): 2, ("q", "b"): 2, ("q", "c"): 0, ("q", "d"): 1}
    human = {("q", "a"): 1, ("q", "c"): 0}
    rows = {r["grade"]: r for r in L.ppi_table1(cells, grades, human, {})}
    assert rows[2]["ppi_estimate"] == 0.0 and rows[1]["ppi_estimate"] == 75.0 and rows[2]["n_human"] == 2
    assert rows[0]["ppi_estimate"] == 25.0  # 25% + mean(0, 0)
    none = L.ppi_table1(cells, grades, {}, {})
    assert all(r["ppi_estimate"] is None and r["n_human"] == 0 for r in none)


def test_ppi_differences_by_hand():
    """Retrieved {a, b}, reranked {b, c}; judge 2-3 on a and b only; people: a 0, b 3, c 3.
    Judge-only: reranked 50% - retrieved 100% = -50 pp; with every pair labelled the estimate is
    the human difference: 100% - 50% = +50 pp."""
    cells = {("bm25", "retrieved", 2): [("q", "a"), ("q", "b")], ("bm25", "reranked", 2): [("q", "b"), ("q", "c")]}
    grades = {("q", "a"): 2, ("q", "b"): 3, ("q", "c"): 0}
    human = {("q", "a"): 0, ("q", "b"): 3, ("q", "c"): 3}
    (r,) = L.ppi_differences(cells, grades, human, {})
    assert r["judge_only"] == -50.0 and r["ppi_estimate"] == pytest.approx(50.0) and r["n_human"] == 3


# ---------------------------------------------------------------- spreadsheets (issue 43)
FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-3", "@SUM(A1)", "\tx", "\rx", "'quoted", "plain - text"]


def test_cells_that_a_spreadsheet_would_run_are_neutralised_and_read_back(tmp_path):
    import csv

    items = [
        dict(pair_id=f"q{i}::c", qid=f"q{i}", chunk_id="c", question=t, passage=t, stratum="s", weight=1)
        for i, t in enumerate(FORMULAS)
    ]
    L.write_labelling_files(tmp_path, items)
    with open(tmp_path / "to_label.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row, text in zip(rows, FORMULAS):
        for cell in (row["question"], row["passage"]):
            assert not cell.startswith(L.FORMULA_START), cell
            assert L.from_cell(cell) == text
    assert [r["question"] for r in rows][-2:] == ["''quoted", "plain - text"]
    # filled in and saved back as the labels file, the ids read back as written
    (tmp_path / "human_labels.csv").write_text("pair_id,grade\n'-q1::c,2\nq2::c,3\n")
    assert L.read_labels(tmp_path / "human_labels.csv", {"-q1::c", "q2::c"}) == {"-q1::c": 2, "q2::c": 3}


@pytest.mark.parametrize(
    "encoding,prefix,sep",
    [("utf-8", b"\xef\xbb\xbf", ","), ("cp1252", b"", ","), ("utf-16", b"", "\t"), ("utf-16", b"", ",")],
)
def test_labels_saved_by_a_spreadsheet_are_read(tmp_path, encoding, prefix, sep):
    f = tmp_path / "human_labels.csv"
    text = f"pair_id{sep}grade{sep}note\r\nq1::a{sep}3{sep}Café – très bien\r\nq1::b{sep}1{sep}\r\n"
    f.write_bytes(prefix + text.encode(encoding))
    assert L.read_labels(f, {"q1::a", "q1::b"}) == {"q1::a": 3, "q1::b": 1}


def test_a_labels_file_in_an_unknown_encoding_says_how_to_resave(tmp_path):
    f = tmp_path / "human_labels.csv"
    f.write_bytes(b"pair_id,grade\nq1::a,3\n" + "é".encode("utf-16-le") * 3 + b"\x81\x8d\n")
    with pytest.raises(InputError, match=r"human_labels.csv.*CSV UTF-8"):
        L.read_labels(f, {"q1::a"})


def test_an_unclosed_quote_is_an_error_naming_the_file_and_line(tmp_path):
    f = tmp_path / "human_labels.csv"
    f.write_text('pair_id,grade\nq1::a,3\n"q1::b,2\nq2::c,1\n')
    with pytest.raises(InputError, match=r"human_labels.csv:3: not valid CSV .*quote opened on this line"):
        L.read_labels(f, {"q1::a", "q1::b", "q2::c"})
    f.write_text('pair_id,grade\n"q1::b,2\nq2::c",1\nq1::a,3\n')
    with pytest.raises(InputError, match=r"human_labels.csv:2: a quote opened on this line is closed only on line 3"):
        L.read_labels(f, {"q1::a", "q1::b", "q2::c"})
