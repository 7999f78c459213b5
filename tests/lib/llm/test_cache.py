"""The persistent call cache when its file is damaged (issue 26, defect #5): a raw
`sqlite3.DatabaseError` used to break every command, `cache clear` included."""

from __future__ import annotations

import sqlite3

import pytest

from spacelm.lib.llm.cache import CallCache, EmbeddingCache

GARBAGE = b"this is not a database, just bytes where the cache used to be\n" * 100


def test_a_damaged_call_cache_is_moved_aside_and_the_run_goes_on(tmp_path, caplog):
    path = tmp_path / "llm_calls.sqlite"
    path.write_bytes(GARBAGE)
    cache = CallCache(path)  # used to raise sqlite3.DatabaseError: file is not a database
    (aside,) = cache.moved_aside
    assert aside.parent == tmp_path and aside.name.startswith("llm_calls.sqlite.damaged-")
    assert aside.read_bytes() == GARBAGE  # kept for inspection, untouched
    assert aside.name in caplog.text and "damaged" in caplog.text
    cache.put("k", {"text": "four"}, model="m")
    assert cache.get("k") == {"text": "four"} and cache.summary()["entries"] == 1


def test_damage_found_while_reading_is_recovered(tmp_path):
    """The file goes bad after it was opened (overwritten by something else): the next read
    moves it aside and answers from an empty cache instead of raising."""
    path = tmp_path / "llm_calls.sqlite"
    cache = CallCache(path)
    cache.put("k", {"text": "x"})
    cache._conn().close()
    cache._local.conn = None
    for side in ("-wal", "-shm"):
        (tmp_path / f"llm_calls.sqlite{side}").unlink(missing_ok=True)
    path.write_bytes(GARBAGE)
    assert cache.get("k") is None and len(cache.moved_aside) == 1


def test_cache_clear_works_on_a_damaged_cache(tmp_path, capsys):
    from spacelm.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"paths:\n  cache_dir: {tmp_path / 'cache'}\n")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "llm_calls.sqlite").write_bytes(GARBAGE)
    assert main(["cache", "clear", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "removed 0 cached call(s)" in out and "moved aside to llm_calls.sqlite.damaged-" in out
    assert main(["cache", "stats", "--config", str(cfg)]) == 0


def test_a_damaged_embedding_cache_is_moved_aside(tmp_path):
    import numpy as np

    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(GARBAGE)
    cache = EmbeddingCache(path)
    cache.put_many("m", [("sha", np.ones(3, dtype="float32"))])
    assert list(cache.get_many("m", ["sha"])) == ["sha"]
    assert len(list(tmp_path.glob("embeddings.sqlite.damaged-*"))) == 1


def test_a_locked_database_is_not_called_damaged():
    from spacelm.lib.llm.cache import is_damage

    assert is_damage(sqlite3.DatabaseError("file is not a database"))
    assert is_damage(sqlite3.DatabaseError("database disk image is malformed"))
    assert not is_damage(sqlite3.OperationalError("database is locked"))
    assert not is_damage(sqlite3.OperationalError("attempt to write a readonly database"))
    with pytest.raises(AssertionError):
        assert is_damage(ValueError("file is not a database"))


# ---------------------------------------------------------------- damaged rows (issue 43)
def _llm_with_cache(tmp_path, answers):
    from spacelm.config import LLMConfig
    from spacelm.lib.llm import LLM
    from spacelm.lib.llm.types import Completion

    class Scripted:
        name = "scripted"

        def complete(self, req):
            answers.append(req)
            return Completion(text="fresh")

        def complete_many(self, reqs, on_done):
            for i, r in enumerate(reqs):
                on_done(i, self.complete(r))

    cfg = LLMConfig(backend="openai", model="m", base_url="http://test/v1")
    return LLM(cfg, CallCache(tmp_path / "llm_calls.sqlite"), backend=Scripted())


@pytest.mark.parametrize("value", ["{not json", "[1, 2]", '{"txt": "typo"}', '{"text": 4}', '"just a string"'])
def test_a_damaged_call_row_is_a_miss_that_is_replaced(tmp_path, caplog, value):
    from spacelm.lib.llm import Request

    sent: list = []
    llm = _llm_with_cache(tmp_path, sent)
    req = Request(messages=[{"role": "user", "content": "q"}])
    assert llm.chat_many([req])[0].text == "fresh" and len(sent) == 1
    conn = sqlite3.connect(tmp_path / "llm_calls.sqlite")
    conn.execute("UPDATE calls SET value = ?", (value,))
    conn.commit()
    conn.close()
    caplog.clear()
    out = llm.chat_many([req])[0]  # used to raise JSONDecodeError / TypeError
    assert out.text == "fresh" and not out.cached and len(sent) == 2
    assert "damaged entry" in caplog.text and "made again" in caplog.text
    again = llm.chat_many([req])[0]  # the row was replaced: a hit now
    assert again.cached and len(sent) == 2


@pytest.mark.parametrize(
    "damage",
    [
        ("UPDATE emb SET vec = ? WHERE text_sha = 'b'", b"\x00\x01\x02"),  # bytes cut short
        ("UPDATE emb SET vec = ?, dim = 5 WHERE text_sha = 'b'", b"\x00" * 20),  # a size the others do not have
        ("UPDATE emb SET vec = ? WHERE text_sha = 'b'", "three floats, as text"),
        ("UPDATE emb SET vec = ? WHERE text_sha = 'b'", b"\x00\x00\xc0\x7f" * 3),  # NaN
    ],
)
def test_a_damaged_embedding_row_is_a_miss_that_is_replaced(tmp_path, caplog, damage):
    import numpy as np

    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", [("a", np.ones(3, dtype="float32")), ("b", np.full(3, 2.0, dtype="float32"))])
    cache._conn.execute(*damage[:1], (damage[1],))
    got = cache.get_many("m", ["a", "b"])  # used to raise, or hand back a vector of the wrong size
    assert sorted(got) == ["a"] and "damaged entr" in caplog.text and "encoded again" in caplog.text
    cache.put_many("m", [("b", np.full(3, 2.0, dtype="float32"))])
    assert sorted(cache.get_many("m", ["a", "b"])) == ["a", "b"]


def test_cache_clear_embeddings(tmp_path, capsys):
    import numpy as np

    from spacelm.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"paths:\n  cache_dir: {tmp_path / 'cache'}\n")
    (tmp_path / "cache").mkdir()
    emb = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")
    emb.put_many("m", [("a", np.ones(3, dtype="float32")), ("b", np.ones(3, dtype="float32"))])
    emb.close()
    assert main(["cache", "stats", "--embeddings", "--config", str(cfg)]) == 0
    assert '"entries": 2' in capsys.readouterr().out
    assert main(["cache", "clear", "--embeddings", "--config", str(cfg)]) == 0
    assert "removed 2 cached embedding(s)" in capsys.readouterr().out
    assert EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite").get_many("m", ["a", "b"]) == {}
