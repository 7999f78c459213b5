import json

import pytest

from spacelm.lib.io import InputError
from spacelm.lib.synth.golden import GoldenSample, load_golden, locate_chunk

GOOD = {"id": "g1", "task": "direct_qa", "question": "What is the 25-year rule?", "passage": "The rule says ..."}


def write(tmp_path, rows):
    p = tmp_path / "golden.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def test_shipped_golden_samples_are_valid():
    from pathlib import Path

    samples = load_golden(Path(__file__).resolve().parents[3] / "data" / "raw" / "golden_samples.jsonl", min_per_task=6)
    assert len(samples) >= 30
    assert {s.verdict for s in samples if s.task == "fact_checking"} == {"supported", "refuted", "not_enough_info"}


@pytest.mark.parametrize(
    "bad,message",
    [
        ("{not json", r"golden.jsonl:2: not valid JSON"),
        (dict(GOOD, id="g2", task="trivia"), r"golden.jsonl:2: unknown task 'trivia'"),
        (dict(GOOD, id="g2", question="  "), r"golden.jsonl:2: empty 'question'"),
        (dict(GOOD), r"golden.jsonl:2: duplicate id 'g1' \(first used on line 1\)"),
        (dict(GOOD, id="g2", task="fact_checking"), r"golden.jsonl:2: fact_checking needs 'verdict'"),
        (dict(GOOD, id="g2", colour="red"), r"golden.jsonl:2: unknown field"),
        (dict(GOOD, id="g2", passage=""), r"golden.jsonl:2: needs a 'passage'"),
        (dict(GOOD, id="g2", answerable="no"), r"golden.jsonl:2: 'answerable' must be true or false"),
        # issue 43: an id must be a string or an integer; a question has a length limit
        (dict(GOOD, id=["g2"]), r"golden.jsonl:2: field 'id' must be a string or an integer, got list"),
        (dict(GOOD, id={"n": 2}), r"golden.jsonl:2: field 'id' must be a string or an integer, got dict"),
        (dict(GOOD, id=True), r"golden.jsonl:2: field 'id' must be a string or an integer, got bool"),
        (dict(GOOD, id=2.5), r"golden.jsonl:2: field 'id' must be a string or an integer, got float"),
        (
            dict(GOOD, id="g2", answerable=False, passage="", question="Why? " * 40_000),
            r"golden.jsonl:2: 'question' is 200,000 characters long, above the limit of 2,000",
        ),
    ],
)
def test_errors_name_file_line_and_fix(tmp_path, bad, message):
    with pytest.raises(InputError, match=message):
        load_golden(write(tmp_path, [GOOD, bad]))


def test_fewer_samples_than_fewshot_count(tmp_path):
    with pytest.raises(InputError, match=r"fewer golden samples than the few-shot count \(2\).*analysis has 0"):
        load_golden(write(tmp_path, [GOOD, dict(GOOD, id="g2")]), min_per_task=2)


def test_the_per_task_minimum_is_shown_beside_line_errors(tmp_path):
    from spacelm.lib.synth.golden import read_golden

    path = write(tmp_path, [GOOD, dict(GOOD, id="g2"), {"id": "g3"}])
    samples, problems = read_golden(path, min_per_task=2, tasks=("direct_qa", "analysis"))
    assert len(samples) == 2 and len(problems) == 2  # the bad line, and the count: one check shows both
    assert "golden.jsonl:3" in problems[0]
    assert "among its 2 valid lines" in problems[1] and "analysis has 0" in problems[1]


def test_locate_chunk_by_word_overlap():
    from types import SimpleNamespace as C

    chunks = {
        "d": [C(chunk_id="d:0", text="alpha beta gamma"), C(chunk_id="d:1", text="drag rises during storms today")]
    }
    s = GoldenSample(id="x", task="direct_qa", question="q", passage="drag rises during storms", doc_id="d")
    assert locate_chunk(s, chunks) == "d:1"
    s.passage = "nothing in common here"
    assert locate_chunk(s, chunks) is None


def test_byte_order_mark_is_accepted(tmp_path):
    p = tmp_path / "g.jsonl"
    row = {"id": "a", "task": "direct_qa", "question": "What is a conjunction?", "passage": "A close approach."}
    p.write_bytes("\ufeff".encode("utf-8") + (json.dumps(row) + "\n").encode("utf-8"))
    (s,) = load_golden(p)
    assert s.id == "a" and s.line == 1


def test_a_passage_found_nowhere_is_warned_about_with_its_line(tmp_path):
    from types import SimpleNamespace as C

    from spacelm.lib.synth.golden import locate_samples

    p = tmp_path / "g.jsonl"
    rows = [
        {"id": "here", "task": "direct_qa", "question": "Q one?", "passage": "operators plan a manoeuvre"},
        {"id": "gone", "task": "direct_qa", "question": "Q two?", "passage": "lunar regolith sintering"},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    chunks = [C(chunk_id="d:0", doc_id="d", text="The operators plan a manoeuvre when the risk is high.")]
    with pytest.warns(UserWarning, match=r"g\.jsonl:2: golden sample 'gone'.*not found"):
        found, missing = locate_samples(load_golden(p), chunks, p)
    assert found == {"here": "d:0"} and [s.id for s in missing] == ["gone"]


def test_unanswerable_samples_need_no_passage_and_are_never_few_shot(tmp_path):
    from types import SimpleNamespace as C

    from spacelm.lib.synth.golden import locate_samples

    una = {"id": "u1", "task": "direct_qa", "question": "Who licensed the Tiangong station?", "answerable": False}
    samples = load_golden(write(tmp_path, [GOOD, una]), min_per_task=1, tasks=("direct_qa",))
    assert [s.answerable for s in samples] == [True, False]
    # the few-shot count looks at answerable samples only
    with pytest.raises(InputError, match="direct_qa has 1"):
        load_golden(write(tmp_path, [GOOD, una]), min_per_task=2, tasks=("direct_qa",))
    chunks = [C(chunk_id="d:0", doc_id="d", text="The rule says the 25-year limit applies.")]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unanswerable sample has nothing to locate: no warning
        found, missing = locate_samples(samples, chunks, tmp_path / "golden.jsonl")
    assert "u1" not in found and missing == []


def test_an_integer_id_is_accepted_as_its_digits(tmp_path):
    (sample,) = load_golden(write(tmp_path, [dict(GOOD, id=7)]))
    assert sample.id == "7"
