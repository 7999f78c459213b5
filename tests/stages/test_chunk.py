import json

from spacelm.runner.data import load_chunks, load_documents
from spacelm.stages import chunk, ingest


def _chunks(cfg):
    ingest.run(cfg)
    chunk.run(cfg)
    return load_chunks(cfg), load_documents(cfg)


def test_chunks_respect_budget_and_offsets(tiny_config):
    chunks, docs = _chunks(tiny_config)
    by_id = {d.doc_id: d for d in docs}
    assert chunks
    for c in chunks:
        assert 0 < c.n_tokens <= tiny_config.chunking.max_tokens
        assert by_id[c.doc_id].text[c.char_start : c.char_end] == c.text
        assert 1 <= c.page_start <= c.page_end <= by_id[c.doc_id].n_pages


def test_chunk_ids_are_stable_and_sequential(tiny_config):
    chunks, _ = _chunks(tiny_config)
    by_doc = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(int(c.chunk_id.split(":")[1]))
        assert c.chunk_id.startswith(c.doc_id + ":")
    assert all(ns == list(range(len(ns))) for ns in by_doc.values())


def test_pages_follow_the_pdf(tiny_config):
    chunks, _ = _chunks(tiny_config)
    pdf_chunks = [c for c in chunks if c.doc_id == "ops-note"]
    assert pdf_chunks[0].page_start == 1 and pdf_chunks[-1].page_end == 3
    assert [c.page_start for c in pdf_chunks] == sorted(c.page_start for c in pdf_chunks)


def test_byte_identical_rerun(tiny_config):
    _chunks(tiny_config)
    out = tiny_config.processed_dir / "chunks.jsonl"
    first = out.read_bytes()
    chunk.run(tiny_config, force=True)
    assert out.read_bytes() == first
    row = json.loads(first.splitlines()[0])
    assert list(row) == ["chunk_id", "doc_id", "text", "page_start", "page_end", "char_start", "char_end", "n_tokens"]


def test_config_change_makes_stage_stale(tiny_config):
    _chunks(tiny_config)
    tiny_config.chunking.max_tokens = 40
    s = chunk.run(tiny_config)
    assert not s["skipped"] and s["tokens_max"] <= 40


def test_overlap_produces_overlapping_spans(tiny_config):
    tiny_config.chunking.overlap = 0.25
    chunks, _ = _chunks(tiny_config)
    notes = [c for c in chunks if c.doc_id == "notes"]
    assert any(b.char_start < a.char_end for a, b in zip(notes, notes[1:]))
