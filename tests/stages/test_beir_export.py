"""`spacelm export-beir`: the BEIR corpus.jsonl of a run rebuilt without a model (ingest + chunk in
memory) when the processed chunks are not there, checked against the run before it is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spacelm.config import load_config
from spacelm.lib.io import InputError

ROOT = Path(__file__).resolve().parents[2]
BEIR = ROOT / "data" / "synthetic" / "beir"


@pytest.fixture
def project(tmp_path):
    """A copy of what the quick run needs, without data/processed and without corpus.jsonl."""
    if not (ROOT / "data" / "raw").is_dir() or not (BEIR / "corpus.jsonl").is_file():
        pytest.skip("the sample corpus or the quick run's BEIR export is not in this checkout")
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / "configs" / "quick.yaml", tmp_path / "configs")
    shutil.copytree(ROOT / "data" / "raw", tmp_path / "data" / "raw")
    syn = tmp_path / "data" / "synthetic"
    shutil.copytree(BEIR, syn / "beir", ignore=shutil.ignore_patterns("corpus.jsonl"))
    shutil.copy(ROOT / "data" / "synthetic" / "questions.jsonl", syn)
    run = tmp_path / "results" / "quick"
    (run / "retrieval").mkdir(parents=True)
    shutil.copy(ROOT / "results" / "quick" / "manifest.json", run)
    shutil.copy(ROOT / "results" / "quick" / "retrieval" / "rankings.jsonl", run / "retrieval")
    return tmp_path


def _cfg(project: Path, *sets: str):
    return load_config(project / "configs" / "quick.yaml", sets=list(sets))


def test_rebuilt_corpus_is_the_committed_one(project):
    from spacelm.stages.beir_export import export_beir_corpus

    res = export_beir_corpus(_cfg(project))
    assert res["how"] == "rebuilt" and res["matches"] is True and not res["missing"]
    written = project / "data" / "synthetic" / "beir" / "corpus.jsonl"
    assert written.read_bytes() == (BEIR / "corpus.jsonl").read_bytes()
    assert not (project / "data" / "processed").exists()  # rebuilt in memory: no stage output written


def test_without_the_corpus_the_error_names_raw_dir_and_the_fetch(project):
    from spacelm.stages.beir_export import export_beir_corpus

    shutil.rmtree(project / "data" / "raw")
    with pytest.raises(InputError, match=r"corpus\.raw_dir: data/raw.*put the corpus files back"):
        export_beir_corpus(_cfg(project))
    from spacelm.stages.beir_export import corpus_missing_error

    listed = _cfg(project, "corpus.file_list=space_corpus")
    assert "spacelm corpus fetch space_corpus --to data/raw" in str(corpus_missing_error(listed))


def test_other_chunks_than_the_runs_are_refused(project):
    from spacelm.stages.beir_export import export_beir_corpus

    written = project / "data" / "synthetic" / "beir" / "corpus.jsonl"
    with pytest.raises(InputError, match="hash otherwise than the chunks.jsonl its manifest recorded"):
        export_beir_corpus(_cfg(project, "chunking.max_tokens=128"))
    assert not written.exists()
    res = export_beir_corpus(_cfg(project, "chunking.max_tokens=128"), accept_different=True)
    assert res["matches"] is False and written.is_file()


def test_a_chunk_id_the_run_ranks_but_the_chunks_lack_is_refused(project):
    from spacelm.stages.beir_export import export_beir_corpus

    rankings = project / "results" / "quick" / "retrieval" / "rankings.jsonl"
    rows = [json.loads(x) for x in rankings.read_text().splitlines()]
    rows[0]["ranking"].append(["no-such-document:0", 0.1])
    rankings.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"lack 1 chunk ids .*no-such-document:0"):
        export_beir_corpus(_cfg(project))
    assert not (project / "data" / "synthetic" / "beir" / "corpus.jsonl").exists()
