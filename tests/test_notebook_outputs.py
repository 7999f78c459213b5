"""What a reader sees in the committed executed notebooks (results/<run>/notebooks/): values as words
or formatted numbers, never a Python repr of a dict, never nan/NaN for a missing value, no table cut
with "..." for hidden rows, columns or text, no source called "human" that is not (the suite's
reference labels come from an LLM assessor), and no text of a corpus the project does not ship."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def committed_notebooks() -> list[Path]:
    files = subprocess.run(
        ["git", "ls-files", "results/*/notebooks/*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / f for f in files if not f.endswith(".failed.ipynb")]


NOTEBOOKS = committed_notebooks()


def shown_texts(path: Path):
    """(cell index, kind, text) of every output a reader sees: streams, and each text/* view of a
    displayed value (HTML unescaped, so `{&#x27;` reads as `{'`)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                yield i, f"stream {out.get('name')}", "".join(out.get("text", ""))
            for kind, value in (out.get("data") or {}).items():
                if kind.startswith("text/"):
                    text = "".join(value) if isinstance(value, list) else value
                    yield i, kind, html.unescape(text) if kind == "text/html" else text


# a Python repr of a mapping, and of a list of strings (a table cell holding ['a', 'b'])
REPR = re.compile(r"\{'|\['")
# a missing value shown as nan/NaN/None/<NA> (a word of its own, not part of one: "nano" stays)
MISSING_SHOWN = re.compile(r"(?<![\w-])(?:nan|NaN|<NA>)(?![\w-])|<td>\s*None\s*</td>|=None\b|=nan\b")
# pandas' marks of a table cut short: a "..." row or column, a cell's text cut with "...", the
# "N rows × M columns" line under a truncated frame; and a passage cut with a trailing " ..."
TRUNCATED = re.compile(
    r"<t[dh][^>]*>[^<]*\.\.\.\s*</t[dh]>"  # an HTML cell that is "..." or ends with it
    r"|(?<!\S)\.\.\.(?!\S)"  # a "..." standing alone: a hidden row or column, a cut passage
    r"|\w\.\.\.(?=\s|$)"  # a word cut short with "..." (pandas' max_colwidth)
    r"|\d+ rows × \d+ columns",
    re.M,
)
# the reference labels are an LLM assessor's; only NIST's TREC qrels are people's
HUMAN = re.compile(r"human[- ]labels?\b", re.I)


def _hits(pattern: re.Pattern, text: str, width: int = 60) -> list[str]:
    return [text[max(0, m.start() - width) : m.end() + width].replace("\n", "\\n") for m in pattern.finditer(text)]


def _human_hits(text: str) -> list[str]:
    """'human label(s)' where its sentence does not name TREC/NIST (whose labels people made)."""
    found = []
    for m in HUMAN.finditer(text):
        start = max(text.rfind(". ", 0, m.start()), text.rfind("\n", 0, m.start()), 0)
        end = min((e for e in (text.find(". ", m.end()), text.find("\n", m.end())) if e >= 0), default=len(text))
        sentence = text[start:end]
        if not re.search(r"TREC|NIST", sentence):
            found.append(sentence.strip()[:200])
    return found


def test_there_are_committed_notebooks():
    assert NOTEBOOKS, "no executed notebook committed under results/*/notebooks/"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_a_committed_notebook_shows_values_as_a_reader_should_see_them(nb):
    problems = []
    for i, kind, text in shown_texts(nb):
        for what, hits in (
            ("a Python repr", _hits(REPR, text)),
            ("a missing value as nan/NaN/None", _hits(MISSING_SHOWN, text)),
            ("a table or text cut with '...'", _hits(TRUNCATED, text)),
            ("'human label(s)' for labels no person made", _human_hits(text)),
        ):
            problems += [f"cell {i} ({kind}): {what}: {h!r}" for h in hits[:3]]
    rel = nb.relative_to(ROOT)
    assert not problems, f"{rel}: {len(problems)} problem(s):\n" + "\n".join(problems[:40])


# ------------------------------------------------------------------ text of a corpus not shipped
WINDOW = 12  # words: a sentence-sized run, as tests/test_no_corpus_text.py counts


def _windows(text: str, step: int = 1) -> set[int]:
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {hash(" ".join(w[i : i + WINDOW])) for i in range(0, max(0, len(w) - WINDOW + 1), step)}


def _unshipped_texts(notebooks: list[Path]) -> list[str]:
    """Text the project does not ship, as far as this machine holds it: the judge-check sets of
    ../shared/judge (the real corpus's passages, TREC DL 2020's), and the processed documents and
    removed spans of each run whose corpus may not be quoted (`text_policy`, as the HF dataset
    writer and browse.html decide)."""
    from spacelm.config import load_config
    from spacelm.notebooks import readable_config
    from spacelm.stages.browse import text_policy

    texts = []
    for f in sorted(SHARED.glob("judge/*/corpus.jsonl")):
        texts += [json.loads(x)["text"] for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    for run in sorted({nb.parent.parent for nb in notebooks}):
        cfg = load_config(readable_config(run / "config.resolved.yaml"))
        if text_policy(cfg)[0]:
            continue
        for name, key in (("documents.jsonl", "text"), ("ingest_dropped.jsonl", "preview")):
            p = cfg.processed_dir / name
            if p.is_file():
                texts += [json.loads(x).get(key) or "" for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    return texts


def test_no_committed_notebook_shows_text_of_a_corpus_the_project_does_not_ship():
    texts = _unshipped_texts(NOTEBOOKS)
    if not texts:
        pytest.skip("no text of the unshipped corpora on this machine (../shared/judge, data/processed/<run>)")
    shingles = set().union(*(_windows(t, step=4) for t in texts))
    found = []
    for nb in NOTEBOOKS:
        for i, kind, text in shown_texts(nb):
            if kind == "text/html":
                text = re.sub(r"<[^>]+>", " ", text)
            hits = len(_windows(text) & shingles)
            if hits > 1:  # one window can be a question's own wording
                found.append(f"{nb.relative_to(ROOT)} cell {i} ({kind}): {hits} {WINDOW}-word runs of corpus text")
    assert not found, "text of a corpus the project does not ship:\n" + "\n".join(found)


def test_notebook_01_prints_a_skipped_file_by_its_shown_name(capsys):
    """A skipped file's name goes through `shown_name`: a newline or an escape code in it is shown
    as an escape, never acted on."""
    import pandas as pd

    from spacelm.lib.redact import shown_name

    src = json.loads((ROOT / "notebooks" / "01_ingest_and_chunk.ipynb").read_text(encoding="utf-8"))
    cell = next("".join(c["source"]) for c in src["cells"] if "skipped_files" in "".join(c["source"]))
    name = "../corpus/odd\nname\x1b[31m.pdf"
    scope = {
        "summary": {"ingest": {"skipped_files": [{"source": name, "reason": "no text layer"}]}},
        "docs_table": pd.DataFrame({"words": [10], "pages": [1]}),
        "shown_name": shown_name,
    }
    exec(cell, scope)  # noqa: S102 - the notebook's own cell, with its inputs stubbed
    out = capsys.readouterr().out
    assert shown_name(name) in out and "\x1b" not in out and "odd\nname" not in out, out


# ------------------------------------------------------------------ the display helpers behind them
@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


def test_a_table_shows_mappings_as_words_every_column_and_says_where_it_is_cut(shell):
    import pandas as pd

    from spacelm.notebooks import ROWS_SHOWN, show_missing_as_dash

    assert show_missing_as_dash()
    long_text = "a question long enough that pandas would cut it short " * 3
    wide = pd.DataFrame({f"column_{i}": [{"bm25": 1, "dense": None}, ["c:1", "c:2"], long_text] for i in range(30)})
    tall = pd.DataFrame({"n": range(ROWS_SHOWN + 5)})
    for kind in ("text/html", "text/plain"):
        shown = shell.display_formatter.format(wide)[0][kind]
        shown = html.unescape(shown)
        assert "bm25 1, dense –" in shown and "c:1, c:2" in shown and long_text.strip() in shown, kind
        assert "column_29" in shown and not REPR.search(shown) and not TRUNCATED.search(shown), kind
        cut = shell.display_formatter.format(tall)[0][kind]
        assert f"first {ROWS_SHOWN} of {ROWS_SHOWN + 5} rows" in cut and not TRUNCATED.search(cut), kind
        assert str(ROWS_SHOWN - 1) in cut and str(ROWS_SHOWN + 4) not in cut, kind
    styled = shell.display_formatter.format(wide.head(1).style)[0]["text/plain"]
    assert "Styler" not in styled and "bm25 1, dense –" in styled


def test_a_passage_is_named_by_its_span_where_the_corpus_may_not_be_quoted():
    from spacelm.lib.ingest.chunking import Chunk
    from spacelm.notebooks import excerpt, passage_shown

    text = "The relative velocity at closest approach was about 14.3 km/s. " * 20
    chunk = Chunk("doc-a:3", "doc-a", text, 4, 5, 1200, 1200 + len(text), 250)
    shown = passage_shown(chunk, quotable=False, limit=300)
    assert "relative velocity" not in shown and "doc-a" in shown and "1,200-2,460" in shown and "pages 4-5" in shown
    quoted = passage_shown(chunk, quotable=True, limit=300)
    assert quoted.startswith("The relative velocity") and quoted.endswith(
        f"[first 300 of {len(text.strip()):,} characters]"
    )
    assert (
        excerpt("short\ntext", 300) == "short text"
        and excerpt("a\nb" * 10, 4, one_line=False) == "a\nba\n[first 4 of 30 characters]"
    )
    assert passage_shown(None, quotable=True) == "(no source passage)"
