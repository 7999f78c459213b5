"""The golden samples of the real corpus: the format, the spread the study needs, and every
passage found verbatim in the cleaned text of its document (needs ../shared/space_corpus; the file is
built from the committed spans by `spacelm data fetch space-corpus-golden`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from spacelm.lib.names import TASKS
from spacelm.lib.synth.golden import load_golden

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "data" / "space_corpus" / "golden_samples.jsonl"
SHARED = ROOT.parent / "shared" / "space_corpus"
pytestmark = pytest.mark.skipif(
    not GOLDEN.is_file(), reason="built from the corpus by `spacelm data fetch space-corpus-golden` (needs ../shared)"
)
FIELDS = {"id", "task", "question", "passage", "doc_id", "answer", "verdict", "answerable"}


def test_golden_format_and_spread():
    rows = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    assert all(FIELDS <= set(r) and set(r) - FIELDS <= {"unanswerable_reason"} for r in rows)
    samples = load_golden(GOLDEN, min_per_task=3)
    answerable = [s for s in samples if s.answerable]
    per_task = Counter(s.task for s in answerable)
    assert len(answerable) >= 60 and all(per_task[t] >= 12 for t in TASKS), per_task
    assert len({s.doc_id for s in answerable}) >= 18
    una = [s for s in samples if not s.answerable]
    assert len(una) >= 12 and {s.task for s in una} == set(TASKS)
    assert all(s.unanswerable_reason for s in una)  # why the corpus cannot answer it


def test_fact_checking_claims_do_not_copy_their_passage():
    import re

    words = lambda t: re.findall(r"[a-z0-9]+", t.lower())
    for s in load_golden(GOLDEN):
        if s.task == "fact_checking" and s.answerable:
            claim, passage = words(s.question), set(words(s.passage))
            assert sum(w in passage for w in claim) / len(claim) < 0.8, s.id


@pytest.mark.slow  # ingests all 1,007 pages of the real corpus
@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/space_corpus not beside the checkout")
def test_every_passage_is_verbatim_in_the_cleaned_corpus(tmp_path):
    """The suite's own ingest, then each passage located as a span of its document."""
    from spacelm.config import load_config
    from spacelm.lib.retrieval.span_gold import locate_passage
    from spacelm.runner.data import load_documents
    from spacelm.stages import ingest

    cfg = load_config(
        ROOT / "configs" / "standard.yaml",
        {"paths": {"processed_dir": str(tmp_path / "p"), "results_dir": str(tmp_path / "r")}},
    )
    ingest.run(cfg)
    docs = {d.doc_id: d for d in load_documents(cfg)}
    missing = [
        s.id
        for s in load_golden(GOLDEN)
        if s.answerable and (s.doc_id not in docs or locate_passage(s.passage, docs[s.doc_id].text) is None)
    ]
    assert missing == []
