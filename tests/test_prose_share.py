"""Words live in Jinja2 templates (spacelm/templates/), not in a module's string literals: in each file
listed, string literals holding a space make up less than THRESHOLD of its characters."""

import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD = 0.10
FILES = ["scripts/readme_tables.py", "spacelm/stages/report.py"]


def prose_share(path) -> float:
    """Characters of the string-literal tokens that contain a space (f-string parts count) over the sum
    of the lengths of the file's lines, each stripped."""
    src = Path(path).read_text()
    code = sum(len(line.strip()) for line in src.splitlines())
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    tokens = tokenize.generate_tokens(io.StringIO(src).readline)
    prose = sum(len(t.string) for t in tokens if t.type in kinds and " " in t.string)
    return prose / code if code else 0.0


@pytest.mark.parametrize("rel", FILES)
def test_the_words_of_a_file_live_in_templates(rel):
    share = prose_share(ROOT / rel)
    assert share < THRESHOLD, f"{rel}: {share:.3f} of it is prose in string literals; word it in spacelm/templates/"


def test_prose_share_counts_the_literals_that_hold_a_space(tmp_path):
    path = tmp_path / "example.py"
    path.write_text('a = "two words"\nb = "one"\n\n    c = 1  \n')
    assert prose_share(path) == len('"two words"') / len('a = "two words"b = "one"c = 1')
