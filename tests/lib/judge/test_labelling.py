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
