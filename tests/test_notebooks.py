"""Execute each notebook top to bottom against a tiny corpus (nbclient)."""
from pathlib import Path

import pytest
import yaml

from spacelm.notebooks import execute_notebook

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny_config_file(tmp_path, tiny_corpus):
    p = tmp_path / "test.yaml"
    p.write_text(yaml.safe_dump({
        "run_name": "nbtest",
        "corpus": {"raw_dir": str(tiny_corpus)},
        "paths": {"processed_dir": str(tmp_path / "processed"), "results_dir": str(tmp_path / "results"),
                  "synthetic_dir": str(tmp_path / "synthetic"), "cache_dir": str(tmp_path / "cache")},
        "chunking": {"max_tokens": 64},
    }))
    return p


def test_ingest_notebook_runs_top_to_bottom(tmp_path, tiny_config_file):
    src = ROOT / "notebooks" / "01_ingest_and_chunk.ipynb"
    out = execute_notebook(src, tmp_path / "out.ipynb", str(tiny_config_file), cwd=src.parent, timeout=600)
    import nbformat

    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert (tmp_path / "results" / "nbtest" / "plots" / "chunk_lengths.png").is_file()


def test_committed_notebooks_have_no_outputs():
    import nbformat

    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(p, as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in nb.cells if c.cell_type == "code"), p.name
