from pathlib import Path

import pytest

from spacelm.config import ConfigError, from_dict, load_config, parse_override

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["quick.yaml", "paper.yaml"])
def test_shipped_configs_load(name):
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.root == str(ROOT)
    assert cfg.retrieval.pool >= max(cfg.retrieval.k_values)


def test_paper_config_holds_the_papers_settings():
    cfg = load_config(ROOT / "configs" / "paper.yaml")
    assert cfg.chunking.max_tokens == 2000
    assert cfg.synth.filter_top_n == 50
    assert cfg.retrieval.pool == 100
    assert cfg.retrieval.k_values == [3, 5, 7, 10]


def test_unknown_key_names_key_and_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("chunking:\n  max_tokns: 10\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert "chunking.max_tokns" in str(e.value) and str(p) in str(e.value)


def test_wrong_type_names_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("retrieval:\n  pool: lots\n")
    with pytest.raises(ConfigError, match=r"retrieval\.pool.*integer"):
        load_config(p)


def test_bool_is_not_an_int():
    with pytest.raises(ConfigError, match="chunking.max_tokens"):
        from_dict({"chunking": {"max_tokens": True}})


def test_literal_choices_are_checked():
    with pytest.raises(ConfigError, match="reranker.kind"):
        from_dict({"retrieval": {"reranker": {"kind": "magic"}}})


def test_cross_field_validation():
    with pytest.raises(ConfigError, match="retrieval.pool"):
        from_dict({"retrieval": {"pool": 5, "k_values": [3, 10]}})


def test_invalid_yaml_and_missing_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_override_parsing_and_merge(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("chunking:\n  max_tokens: 100\n")
    cfg = load_config(p, parse_override("chunking.max_tokens=300"))
    assert cfg.chunking.max_tokens == 300


def test_section_hash_changes_with_section_only():
    a = from_dict({"chunking": {"max_tokens": 100}})
    b = from_dict({"chunking": {"max_tokens": 100}, "retrieval": {"pool": 200}})
    c = from_dict({"chunking": {"max_tokens": 101}})
    assert a.section_hash("chunking") == b.section_hash("chunking")
    assert a.section_hash("chunking") != c.section_hash("chunking")
