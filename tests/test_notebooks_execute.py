"""Every notebook executed headless against the committed quick run, its parameters cell pointing
at results/quick, reuse-only (no model call), with every figure resolving."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "results" / "quick"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
BAD_CELL = re.compile(r"<td>\s*(NaN|nan|None|&lt;NA&gt;)\s*</td>")


def test_each_notebook_opens_with_one_parameters_cell():
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        tagged = [i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert tagged == [1], nb.name  # right after the title
        assert "CONFIG = None" in "".join(cells[1]["source"]), nb.name
        assert "notebook_config(CONFIG)" in "".join("".join(c["source"]) for c in cells), nb.name
        assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code"), f"{nb.name} has outputs"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_quick_run_without_a_model(nb, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    from spacelm.config import load_config
    from spacelm.runner.base import execute
    from spacelm.runner.data import chunks_path
    from spacelm.stages import BY_NAME

    cfg = load_config(QUICK / "config.resolved.yaml")
    if not chunks_path(cfg).is_file() and not cfg.path(cfg.corpus.raw_dir).is_dir():
        pytest.skip(f"{chunks_path(cfg)} is not here (chunk text is not committed) and no corpus to rebuild it from")
    for stage in ("ingest", "chunk"):  # the git-ignored chunk text, rebuilt without a model (reused when current)
        execute(BY_NAME[stage], cfg)
    for var in ("SPACELM_CONFIG", "SPACELM_RECOMPUTE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    book = nbformat.read(nb, as_version=4)
    book.cells[1].source = f"CONFIG = {str(QUICK)!r}"
    dest = tmp_path / "notebooks"  # executed away from the run: no figure may depend on where it sits
    dest.mkdir()
    from nbclient.exceptions import CellExecutionError

    try:  # a stage the code has moved past is shown as committed, saying so: never a StaleStage
        NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(dest)}}).execute()
    except CellExecutionError as e:
        raise AssertionError(f"{nb.name}: {str(e)[-600:]}") from None
    for cell in book.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", (nb.name, out.get("ename"), out.get("evalue"))
            md = (out.get("data") or {}).get("text/markdown", "")
            for link in LINK.findall(md):
                assert (dest / link).is_file(), (nb.name, link)
            if "image/png" in (out.get("data") or {}):
                assert len(out["data"]["image/png"]) > 100
            text = "".join(out.get("text", "")) if out.get("output_type") == "stream" else ""
            assert not (out.get("name") == "stderr" and "spacelm: config" in text), nb.name  # no red box
            html = "".join((out.get("data") or {}).get("text/html", ""))
            assert not BAD_CELL.search(html), (nb.name, BAD_CELL.search(html).group(0))  # a missing cell is –
    said = [o for c in book.cells for o in c.get("outputs", []) if "spacelm: config" in "".join(o.get("text", ""))]
    assert said and all(o.get("name") == "stdout" for o in said), nb.name
