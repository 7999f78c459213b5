"""Fact-check answers scored against the question's label: the verdict an answer begins with, the
prompt that asks for it, and the table of verdicts per setting, pipeline and label."""

import re
from types import SimpleNamespace as C

import pytest

from spacelm.config import from_dict
from spacelm.lib.answer import answers as answer
from spacelm.lib.llm.prompting import render, template
from spacelm.lib.llm.types import Completion


@pytest.mark.parametrize(
    "text,verdict",
    [
        ("Supported. The passages give 790 km [1].", "supported"),
        ("Refuted: the fragments came mostly from Cosmos 2251 [2].", "refuted"),
        ("Unverifiable. No passage gives the mass [1].", "unverifiable"),
        ("**Refuted.** Passage [1] says 12 km/s.", "refuted"),
        ("  refuted - the altitude was 790 km [1]", "refuted"),
        ("SUPPORTED", "supported"),
        ("**Verdict:** Supported [1]", "supported"),
        ("Verdict - unverifiable", "unverifiable"),
        ("The statement is supported by [1].", "supported"),
        ("Not enough information in the passages.", "unverifiable"),
        ("not enough info", "unverifiable"),
        ("Cannot be verified from these passages.", "unverifiable"),
        ("The claim cannot be verified.", "unverifiable"),
        ("Not verifiable: the passages do not give a date.", "unverifiable"),
        # no verdict first: None, never a guess
        ("Not supported by the passages.", None),
        ("The statement is not supported [1].", None),
        ("Unsupported.", None),
        ("The collision produced roughly 2,000 fragments [1]. It was supported by radar.", None),
        ("Supportedly so.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(text, verdict):
    assert answer.parse_verdict(text) == verdict


def test_the_no_evidence_reply_is_a_verdict_and_a_refusal():
    """Each fact-check prompt's exact reply where no passage concerns the statement is the
    canonical refusal after "Unverifiable.": it reads as that verdict and as a refusal (is_refusal),
    as the refusal checks expect."""
    from spacelm.lib.answer.gate import REFUSAL_TEXT

    for name in ("answer_fact_check", "answer_fact_check_ids"):
        (reply,) = re.findall(r'"(Unverifiable\.[^"]*)"', " ".join(template(name)[0].split()))
        assert reply == f"Unverifiable. {REFUSAL_TEXT}"
        assert answer.parse_verdict(reply) == "unverifiable" and answer.is_refusal(reply)


@pytest.mark.parametrize(
    "q,label",
    [
        ({"task": "fact_checking", "label": "refuted"}, "refuted"),
        ({"task": "fact_checking", "label": "Unverifiable"}, "unverifiable"),
        ({"task": "fact_checking", "verdict": "not_enough_info"}, "unverifiable"),  # a golden sample
        ({"task": "fact_checking", "verdict": "supported"}, "supported"),
        ({"task": "fact_checking", "label": None, "verdict": None}, None),  # written before labels
        ({"task": "fact_checking"}, None),
        ({"task": "fact_checking", "label": "maybe"}, None),
        ({"task": "direct_qa", "label": "supported"}, None),
    ],
)
def test_fact_check_label(q, label):
    assert answer.fact_check_label(q) == label


def _fc(answer_text, label, setting="standard", pipeline="table2", rubrics=("faithfulness",), source="a:1", ids=None):
    it = {
        "task": "fact_checking",
        "label": label,
        "answer": answer_text,
        "setting": setting,
        "pipeline": pipeline,
        "rubrics": list(rubrics),
        "source_chunk_id": source,
        "passage_ids": [source] if ids is None else ids,
    }
    answer.score_verdict(it)
    return it


def test_verdict_correct_against_the_label():
    right, wrong = _fc("Refuted. [1]", "refuted"), _fc("Supported. [1]", "refuted")
    assert (right["verdict"], right["expected_verdict"], right["verdict_correct"]) == ("refuted", "refuted", True)
    assert (wrong["verdict"], wrong["verdict_correct"]) == ("supported", False)
    assert _fc("It says 790 km [1].", "refuted")["verdict_correct"] is None  # no verdict parsed
    unlabelled = _fc("Supported. [1]", None)
    assert unlabelled["verdict"] == "supported" and unlabelled["verdict_correct"] is None
    # wrong passages only: the source chunk is absent, so Unverifiable is the right verdict whatever the label
    neg = dict(rubrics=("negative_rejection",), setting="5_wrong", ids=["b:0"])
    assert _fc("Unverifiable. [1]", "supported", **neg)["verdict_correct"] is True
    assert _fc("Supported. [1]", "supported", **neg)["expected_verdict"] == "unverifiable"


def _chunks():
    return [C(chunk_id=f"{d}:{i}", doc_id=d, text=f"{d} text {i}") for d in "abc" for i in range(3)]


def test_items_carry_the_label_and_fact_checks_get_their_own_prompt():
    cfg = from_dict({"answer": {"n_wrong_values": [0], "negative_n_wrong": 2, "pipelines": ["A", "B"]}})
    design = cfg.answer_design()
    qs = [
        {"qid": "f1", "task": "fact_checking", "question": "Iridium 33 was active.", "label": "supported"},
        {"qid": "g1", "task": "fact_checking", "question": "Mir re-entered.", "verdict": "not_enough_info"},
        {"qid": "d1", "task": "direct_qa", "question": "What collided?"},
    ]
    qs = [dict(q, source_chunk_id="a:1", doc_id="a") for q in qs]
    items = answer.build_items(design, qs, _chunks(), {q["qid"]: ["a:1", "b:0"] for q in qs})
    assert {it["qid"]: it["label"] for it in items} == {"f1": "supported", "g1": "unverifiable", "d1": None}

    class Recorder:
        def chat_many(self, reqs, progress=None):
            self.reqs = list(reqs)
            return [Completion(text=" Supported. [1] ") for _ in self.reqs]

    gen = Recorder()
    text_of = {c.chunk_id: c.text for c in _chunks()}
    answer.generate(gen, items, text_of, design)
    sent = {(it["qid"], it["pipeline"], it["setting"]): r.messages for it, r in zip(items, gen.reqs)}
    system = {name: template(name)[0] for name in ("answer", "answer_fact_check", "answer_closed_book")}
    assert sent[("f1", "B", "retrieved")][0]["content"] == system["answer_fact_check"]
    assert sent[("f1", "table2", "standard")][0]["content"] == system["answer_fact_check"]
    assert sent[("f1", "A", "closed_book")][0]["content"] == system["answer_closed_book"]  # no passages to check
    assert sent[("d1", "B", "retrieved")][0]["content"] == system["answer"]
    assert sent[("d1", "table2", "standard")][0]["content"] == system["answer"]
    assert 'Statement:\n"""\nIridium 33 was active.\n"""' in sent[("f1", "B", "retrieved")][1]["content"]
    assert "Supported" in system["answer_fact_check"] and "Refuted" in system["answer_fact_check"]
    assert items[0]["answer"] == "Supported. [1]"
    # passages shown by chunk id: the _ids variant of each
    assert answer.answer_prompt(items[0], "ids") == "answer_fact_check_ids"
    assert answer.answer_prompt([it for it in items if it["qid"] == "d1"][0], "ids") == "answer_ids"
    ids_msgs = render("answer_fact_check_ids", question="S.", context="[a:1] a text 1")
    assert "[a:1] a text 1" in ids_msgs[1]["content"] and 'Statement:\n"""\nS.\n"""' in ids_msgs[1]["content"]


def test_the_fact_check_prompts_are_part_of_the_stage_fingerprint():
    from spacelm.stages.answer import _prompts

    numbered = _prompts(from_dict({"answer": {"citations": "numbered"}}))
    by_id = _prompts(from_dict({"answer": {"citations": "ids"}}))
    assert "answer_fact_check" in numbered and "answer" in numbered and "answer_fact_check_ids" not in numbered
    assert "answer_fact_check_ids" in by_id and "answer_ids" in by_id and "answer_fact_check" not in by_id


def test_fact_check_table_per_setting_pipeline_and_label():
    items = [
        _fc("Supported. [1]", "supported", source="a:1"),
        _fc("Refuted. [1]", "supported", source="a:2"),
        _fc("Refuted. [1]", "refuted", source="a:3"),
        _fc("It says 790 km [1].", "refuted", source="a:4"),  # no verdict
        _fc("Unverifiable. [1]", "unverifiable", source="a:5"),
        _fc("Supported. [1]", "supported", pipeline="B", setting="retrieved", ids=["b:0"]),
        _fc("Refuted. [1]", None),  # no label: not in the table
        _fc("Supported.", "supported", pipeline="A", setting="closed_book"),  # closed book: asked for no verdict
        {"task": "direct_qa", "setting": "standard", "pipeline": "table2", "answer": "Supported."},
    ]
    t = answer.fact_check_table(items)
    assert list(t.columns) == answer.FACT_CHECK_COLUMNS
    assert list(zip(t.setting, t.pipeline, t.label)) == [
        ("standard", "table2", "supported"),
        ("standard", "table2", "refuted"),
        ("standard", "table2", "unverifiable"),
        ("standard", "table2", "all"),
        ("retrieved", "B", "supported"),
        ("retrieved", "B", "all"),
    ]
    row = {(r["setting"], r["label"]): r for r in t.to_dict("records")}
    sup, ref, every = row[("standard", "supported")], row[("standard", "refuted")], row[("standard", "all")]
    assert (sup["n"], sup["n_verdict"], sup["n_correct"], sup["accuracy"]) == (2, 2, 1, 0.5)
    # the confusion: label supported, verdicts supported 1, refuted 1, unverifiable 0, none 0
    assert [sup[f"verdict_{v}"] for v in ("supported", "refuted", "unverifiable", "none")] == [1, 1, 0, 0]
    assert (ref["n"], ref["n_verdict"], ref["accuracy"], ref["verdict_none"]) == (2, 1, 1.0, 1)
    assert (every["n"], every["n_verdict"], every["n_correct"], every["accuracy"]) == (5, 4, 3, 0.75)
    assert every["ci_low"] < 0.75 < every["ci_high"] and 0 <= every["ci_low"] and every["ci_high"] <= 1
    assert every["n_source_chunks"] == 5 and every["n_source_in_context"] == 5
    assert row[("retrieved", "all")]["n_source_in_context"] == 0
    assert answer.fact_check_summary(t) == {
        "labelled_answers": 6,
        "with_verdict": 5,
        "accuracy": {"standard": 0.75, "B retrieved": 1.0},
    }


def test_fact_check_table_without_labels_is_empty_with_its_columns(tmp_path):
    import pandas as pd

    from spacelm.lib.io import write_dataframe

    items = [_fc("Refuted. [1]", None), {"task": "direct_qa", "setting": "standard", "pipeline": "table2"}]
    for its in (items, []):
        t = answer.fact_check_table(its)
        assert len(t) == 0 and list(t.columns) == answer.FACT_CHECK_COLUMNS
        assert answer.fact_check_summary(t) == {"labelled_answers": 0, "with_verdict": 0, "accuracy": {}}
    write_dataframe(answer.fact_check_table(items), tmp_path / "v.csv")
    assert list(pd.read_csv(tmp_path / "v.csv").columns) == answer.FACT_CHECK_COLUMNS
