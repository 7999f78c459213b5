"""Ingest, chunk and retrieve are written as `compute` (a typed result, no file touched) and
`write` (files from that result). Built by hand: compute runs first with nothing on disk but
its inputs, then `write` into a folder of its own must give the very bytes the stage writes."""

from pathlib import Path

from spacelm.runner.data import load_chunks, load_documents
from spacelm.stages import chunk, ingest, retrieve


def _question(qid: str, c, answerable: bool) -> dict:
    """A question whose words are its source chunk's first ones (BM25 finds it)."""
    words = " ".join(c.text.split()[:12])
    base = {"qid": qid, "question": words, "answerable": answerable, "task": "direct_qa", "origin": "golden"}
    if not answerable:
        return {**base, "question": "What colour is the launch director's car?", "source_chunk_id": None}
    return {
        **base,
        "source_chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "span_start": c.char_start,
        "span_end": c.char_end,
    }


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _write_into(folder: Path, final_root: Path):
    """An `out` function that stages every output under `folder`, mirroring its final place."""

    def out(final: Path) -> Path:
        p = folder / Path(final).relative_to(final_root)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    return out


def test_ingest_and_chunk_compute_touch_no_file_and_write_matches_the_stage(tiny_config, tmp_path):
    processed = tiny_config.processed_dir
    got = ingest.compute(tiny_config)
    assert not processed.exists()  # compute wrote nothing
    assert [d.doc_id for d in got.documents] and len(got.table) == len(got.documents)
    chunks = chunk.compute(tiny_config, got.documents)
    assert not processed.exists()
    assert all(0 < c.n_tokens <= tiny_config.chunking.max_tokens for c in chunks)

    mine = tmp_path / "mine"
    ingest.write(tiny_config, got, _write_into(mine, processed))
    summary = chunk.write(tiny_config, chunks, _write_into(mine, processed))
    assert summary["chunks"] == len(chunks)

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    staged = {k: v for k, v in _files(processed).items() if not Path(k).name.startswith(".")}  # stamps aside
    assert _files(mine) == staged


def test_retrieve_compute_ranks_every_question_and_scores_only_the_answerable(tiny_config, tmp_path):
    tiny_config.retrieval.systems = ["bm25"]  # no encoder to load: the split is what is tested
    ingest.run(tiny_config)
    chunk.run(tiny_config)
    chunks = load_chunks(tiny_config)
    questions = [_question(f"q{i}", c, True) for i, c in enumerate(chunks[:3])]
    questions.append(_question("u0", chunks[0], False))
    res = retrieve.compute(tiny_config, chunks, questions)
    assert not tiny_config.run_dir.exists()  # nothing written yet
    answerable = [q for q in questions if q["answerable"]]
    assert [q["qid"] for q in res.questions] == [q["qid"] for q in answerable]
    assert {r["qid"] for r in res.evaluation.per_query} == {q["qid"] for q in answerable}
    assert len(res.evaluation.rankings_rows) == len(questions)  # unanswerable ones ranked too
    assert res.systems == ["bm25"] and res.significance.empty  # one system: nothing to compare
    assert all(r["source_rank"] is not None for r in res.evaluation.per_query)  # its own chunk is ranked

    summary = retrieve.write(tiny_config, res, _write_into(tmp_path / "mine", tiny_config.run_dir))
    assert summary["questions"] == len(answerable) and summary["systems"] == ["bm25"]
    assert load_documents(tiny_config)  # the inputs stayed where they were
