"""No passage text of a corpus the project does not ship in the datasets it commits (HF, BEIR exports)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT.parent / "shared" / "judge" / "space-corpus" / "corpus.jsonl"  # 372 passages of the real corpus


def _windows(text: str, n: int = 12, step: int = 1) -> set[str]:
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {" ".join(w[i : i + n]) for i in range(0, max(0, len(w) - n + 1), step)}


@pytest.mark.skipif(not SAMPLE.is_file(), reason="needs ../shared/judge/space-corpus (passages of the real corpus)")
def test_committed_question_datasets_hold_no_passage_of_the_real_corpus():
    passages = [json.loads(x)["text"] for x in SAMPLE.read_text(encoding="utf-8").splitlines() if x.strip()]
    shingles = set().union(*(_windows(p, step=4) for p in passages))
    files = subprocess.run(
        ["git", "ls-files", "data/synthetic"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    # the runs over the real corpus keep theirs in a folder of their own (data/synthetic/<run>/); the
    # quick config's, at the top, are of the sample corpus the project wrote (and may quote)
    datasets = [f for f in files if f.split("/")[3:4] in (["hf_dataset"], ["beir"])]
    assert datasets
    found = {}
    for f in datasets:
        text = (ROOT / f).read_bytes().decode("utf-8", "ignore")
        hits = len(_windows(text) & shingles)
        if hits > 1:  # one window can be a question's own wording
            found[f] = hits
    assert not found, f"passage text of the real corpus in committed datasets: {found}"


@pytest.mark.skipif(not SAMPLE.is_file(), reason="needs ../shared/judge/space-corpus (passages of the real corpus)")
def test_committed_drill_down_pages_hold_no_passage_of_the_real_corpus():
    """A run over the real corpus commits its browse.html without passage text, and without the
    answers and reference answers that copy it (only their word counts)."""
    passages = [json.loads(x)["text"] for x in SAMPLE.read_text(encoding="utf-8").splitlines() if x.strip()]
    shingles = set().union(*(_windows(p, step=4) for p in passages))
    files = subprocess.run(
        ["git", "ls-files", "results/*/browse.html"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    pages = [f for f in files if not f.startswith("results/quick/")]  # the sample corpus is the project's
    assert pages
    found = {f: n for f in pages if (n := len(_windows((ROOT / f).read_text(encoding="utf-8")) & shingles)) > 1}
    assert not found, f"passage text of the real corpus in committed pages: {found}"


GOLDEN_BUILT = ROOT / "data" / "space_corpus" / "golden_samples.jsonl"  # rebuilt from the corpus, not committed


@pytest.mark.skipif(
    not (SAMPLE.is_file() and GOLDEN_BUILT.is_file()),
    reason="needs ../shared/judge/space-corpus and `spacelm data fetch space-corpus-golden`",
)
def test_the_real_corpus_files_the_project_commits_hold_no_passage_of_it():
    """data/space_corpus/ commits the golden samples and the in-domain labels as spans: none of
    their files copies more than 20 words in a row of a golden or a labelled passage (a reference
    answer may quote a phrase of its passage: one quotes 15 words), and the built file is not tracked."""
    rows = [json.loads(x) for x in GOLDEN_BUILT.read_text(encoding="utf-8").splitlines() if x.strip()]
    passages = [r["passage"] for r in rows if r.get("passage")]
    passages += [json.loads(x)["text"] for x in SAMPLE.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert len(passages) > 400
    runs = set().union(*(_windows(p, n=21) for p in passages))
    files = subprocess.run(
        ["git", "ls-files", "data/space_corpus"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert files and "data/space_corpus/golden_samples.jsonl" not in files
    found = {f: n for f in files if (n := len(_windows((ROOT / f).read_text(encoding="utf-8"), n=21) & runs))}
    assert not found, f"passage text of the real corpus in committed files: {found}"
    assert _windows(GOLDEN_BUILT.read_text(encoding="utf-8"), n=21) & runs  # the check sees a copied passage
