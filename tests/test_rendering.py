"""What a reader sees renders: no Python repr in report.md or in the notebooks' markdown outputs,
every image link of report.md resolves from the report's folder, no CSV without its header."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNS = [p for p in (ROOT / "results" / "quick", ROOT / "results" / "standard") if (p / "report.md").is_file()]
REPRS = ("{'", "None.", "[np.", "np.float", "nan |", "': ")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def _markdown_outputs(nb: Path) -> str:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    out = []
    for c in cells:
        for o in c.get("outputs", []):
            md = (o.get("data") or {}).get("text/markdown")
            if md:
                out.append("".join(md) if isinstance(md, list) else md)
    return "\n".join(out)


def test_quick_report_has_no_python_repr():
    text = (ROOT / "results" / "quick" / "report.md").read_text(encoding="utf-8")
    found = [r for r in REPRS if r in text]
    assert not found, [line for line in text.splitlines() if any(r in line for r in found)][:5]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_report_images_resolve(run):
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in (run / "report.md", run / "report_details.md") if p.is_file()
    )
    links = IMAGE.findall(text)
    assert links
    missing = [u for u in links if not (run / u).is_file()]
    assert not missing, missing


def test_notebook_markdown_outputs_have_no_python_repr():
    nbs = sorted((ROOT / "results" / "quick" / "notebooks").glob("*.ipynb"))
    for nb in nbs:
        text = _markdown_outputs(nb)
        found = [r for r in ("{'", "None.", "[np.") if r in text]
        assert not found, (nb.name, found)


def test_report_writer_renders_values_as_words():
    from spacelm.lib.tables import as_words

    assert as_words(None) == "–" and as_words(float("nan")) == "–"
    assert as_words({"standard": 0.5, "3_wrong": None}) == "standard 0.5, 3_wrong –"
    assert as_words(["a", "b"]) == "a, b" and as_words([]) == "none" and as_words(True) == "yes"


def test_empty_claims_table_keeps_its_header(tmp_path):
    import pandas as pd

    from spacelm.lib.io import write_dataframe
    from spacelm.stages.answer import CLAIM_COLUMNS

    p = tmp_path / "claims.csv"
    write_dataframe(pd.DataFrame(columns=CLAIM_COLUMNS), p)
    assert list(pd.read_csv(p).columns) == CLAIM_COLUMNS
