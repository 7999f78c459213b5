"""Reading evaluation questions: answerable ones by default, unanswerable ones on request."""

import json

from spacelm.runner.data import load_chunks, load_questions, questions_path
from spacelm.stages import chunk, ingest


def test_load_questions_splits_answerable_and_unanswerable(tiny_config):
    ingest.run(tiny_config)
    chunk.run(tiny_config)
    c = load_chunks(tiny_config)[0]
    rows = [
        {
            "qid": "syn-1",
            "task": "direct_qa",
            "question": "What is drag?",
            "source_chunk_id": c.chunk_id,
            "kept": True,
            "answerable": True,
        },
        {
            "qid": "syn-2",
            "task": "direct_qa",
            "question": "Dropped?",
            "source_chunk_id": c.chunk_id,
            "kept": False,
            "answerable": True,
        },
        {
            "qid": "una-1",
            "task": "direct_qa",
            "question": "Who licensed Tiangong?",
            "source_chunk_id": c.chunk_id,
            "kept": True,
            "answerable": False,
            "unanswerable_kind": "out_of_corpus",
        },
        {
            "qid": "g-1",
            "task": "analysis",
            "question": "Is there proof of X?",
            "source_chunk_id": None,
            "kept": True,
            "answerable": False,
            "unanswerable_kind": "golden",
            "origin": "golden",
        },
    ]
    p = questions_path(tiny_config)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [q["qid"] for q in load_questions(tiny_config)] == ["syn-1"]
    una = load_questions(tiny_config, answerable=False)
    assert [(q["qid"], q["unanswerable_kind"], q["doc_id"]) for q in una] == [
        ("g-1", "golden", None),
        ("una-1", "out_of_corpus", c.doc_id),
    ]
    assert len(load_questions(tiny_config, answerable=None)) == 3


def test_load_questions_carries_a_fact_check_label_and_reads_files_without_one(tiny_config):
    ingest.run(tiny_config)
    chunk.run(tiny_config)
    c = load_chunks(tiny_config)[0]
    base = {"source_chunk_id": c.chunk_id, "kept": True, "answerable": True, "question": "Drag lowers orbits."}
    rows = [
        dict(base, qid="f-1", task="fact_checking", label="refuted"),
        dict(base, qid="f-2", task="fact_checking"),  # written before labels
        dict(base, qid="d-1", task="direct_qa"),
    ]
    p = questions_path(tiny_config)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert {q["qid"]: q["label"] for q in load_questions(tiny_config)} == {"d-1": None, "f-1": "refuted", "f-2": None}
