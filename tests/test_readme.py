"""The README and docs/ quote no figure by hand: generated blocks match the committed run files and
bench outputs, figures quoted in prose match theirs, verdicts and question counts written in prose
are quoted or explained (`test_a_verdict_or_count_written_by_hand_is_caught` states the rule), and
the README stays a short front door."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# written by bench/probe_inputs.py --write, a table of probe cases whose rows quote whole inputs
BENCH_WRITTEN = {"probe_inputs.md"}


def _tables():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import readme_tables
    finally:
        sys.path.pop(0)
    return readme_tables


@pytest.mark.skipif(not (ROOT / "results" / "standard" / "manifest.json").is_file(), reason="no committed standard run")
def test_generated_blocks_and_quoted_figures_match_their_files():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme_tables.py"), "--check"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_changed_figure_in_a_generated_block_is_caught():
    rt = _tables()
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- generated:standard-table1 -->\n(.*?)<!-- /generated -->", text, re.S)
    figure = re.search(r"\d\.\d\d", m.group(1)).group(0) if m else None
    assert figure, "the README's Table 1 block holds no figure"
    other = "1.11" if figure != "1.11" else "2.22"
    changed = text.replace(m.group(1), m.group(1).replace(figure, other))
    assert rt.fill(text)[0] == text
    assert rt.fill(changed)[0] == text


def test_a_block_naming_no_generator_is_reported():
    rt = _tables()
    new, unknown = rt.fill("x\n<!-- generated:no-such-table -->\nold\n<!-- /generated -->\n")
    assert unknown == ["no-such-table"] and "old" in new


def _quoted(rt, rel: str, what: str) -> tuple[str, str]:
    """The text a quoted figure must appear in, as the run file gives it and with another figure."""
    template, read = next((t, r) for f, w, t, r in rt.QUOTED if f == rel and w == what)
    figure = read(ROOT)
    other = str(int(figure) + 1) if str(figure).isdigit() else ("valid" if figure != "valid" else "weak")
    return template.format(figure), template.format(other)


def test_a_changed_quoted_figure_is_caught():
    rt = _tables()
    texts = {str(p.relative_to(ROOT)): " ".join(p.read_text().split()) for p in DOCS}
    assert rt.quoted_mismatches(texts) == []
    for rel, what in (
        ("docs/measured.md", "standard cold seconds"),
        ("docs/stages.md", "standard cold minutes"),
    ):
        right, wrong_text = _quoted(rt, rel, what)
        assert right in texts[rel], (rel, right)
        wrong = dict(texts, **{rel: texts[rel].replace(right, wrong_text)})
        assert any(what in b for b in rt.quoted_mismatches(wrong)), (rel, what)


def _problems(rt, texts: dict) -> list[str]:
    return rt.quoted_mismatches(texts) + rt.unchecked_claims(texts)


@pytest.mark.parametrize(
    "rel, right, wrong",
    [
        # a verdict next to a judge's name that no file backs
        ("README.md", "directions within this run.", "directions within this run; the refusal judge is valid."),
        ("docs/judges.md", "A *weak* rubric's", "The refusal judge is *valid*. A *weak* rubric's"),
        # a count of questions in prose, next to the generated blocks that hold the real ones
        ("README.md", "Table 2 is a study of its own", "Table 1's 92 questions. Table 2 is a study of its own"),
        # the same counts written anew, where no template binds them
        ("README.md", "directions within this run.", "directions within this run, on 21 unanswerable questions."),
        ("docs/stages.md", "## ", "Table 1's 61 graded questions.\n\n## "),
    ],
)
def test_a_verdict_or_count_written_by_hand_is_caught(rel, right, wrong):
    """The rule for prose (README.md and docs/*.md, outside generated blocks and code fences): a
    verdict word next to a judge's name (faithfulness, relevance, noise robustness, negative
    rejection, refusal, grader, judge, rubric, then within the same clause the verdict in emphasis,
    "*weak*", or after a copula, "is valid") and a count of questions ("N questions", "N golden
    unanswerable", "Table 1's N") must have its figure inside a QUOTED template, which checks it
    against its run file, or inside a NOT_RUN_FIGURES phrase that says why it is no run figure (a
    rule, a past run, a bench's fixed setting). So a changed figure fails its template, and a new
    one written by hand fails for being unchecked."""
    rt = _tables()
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in DOCS}
    assert _problems(rt, texts) == []
    # the phrase may wrap across lines in the file: match it with any whitespace between its words
    changed, n = re.subn(r"\s+".join(map(re.escape, right.split())), lambda _: wrong, texts[rel], count=1)
    assert n == 1, (rel, right)
    assert _problems(rt, dict(texts, **{rel: changed})), (rel, wrong)
    # flattened (line breaks as spaces, as the quoted-figure check reads it) the same holds
    flat = {k: " ".join(v.split()) for k, v in texts.items()}
    assert _problems(rt, flat) == []
    assert _problems(rt, dict(flat, **{rel: " ".join(changed.split())})), (rel, wrong)


def test_prose_that_states_no_run_figure_is_not_flagged():
    """Verdict words and numbers that are no claim about a run pass: words that are not verdicts
    of a judge, a verdict far from any judge's name, numbers of other things, and anything inside a
    generated block or a code fence."""
    rt = _tables()
    fine = (
        "A value that is not valid YAML is refused. The run fails only if nothing is usable. A judge that "
        "rewards word overlap looks valid on it. Verdicts: *valid*, *weak*, *fails*. It reads 27 documents "
        "in 2 hours at 256 tokens.\n\n```\nthe refusal judge is valid on 21 unanswerable questions\n```\n\n"
        "<!-- generated:standard-summary -->\nTable 1's 61 questions; relevance *valid*\n<!-- /generated -->\n"
    )
    assert rt.unchecked_claims({"docs/extending.md": fine}) == []
    assert rt.unchecked_claims({"docs/extending.md": "Here the grader is *valid* on 12 questions."}) != []


def test_every_block_of_the_docs_is_generated_and_filled():
    rt = _tables()
    for path in DOCS:
        for name, body in re.findall(r"<!-- generated:([\w.-]+) -->\n(.*?)<!-- /generated -->", path.read_text(), re.S):
            assert name in rt.GENERATORS, f"{path.name}: {name}"
            assert body.strip(), f"{path.name}: block {name} is empty"


def test_the_readme_is_a_short_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    # prose wraps at 120; a generated table row cannot wrap, so it gets a little more room
    assert max(len(line) for line in text.splitlines() if not line.startswith("|")) <= 120
    assert max(len(line) for line in text.splitlines()) <= 130
    # a newcomer finds from the README alone where Table 1 is computed: the module and the notebook
    for where in ("spacelm/lib/judge/relevance.py", "spacelm/stages/grade.py", "notebooks/04_relevance_grading.ipynb"):
        assert where in text, where
        assert (ROOT / where).is_file(), where
    assert "bash scripts/setup.sh && .venv/bin/spacelm run --config configs/quick.yaml" in text
    assert "bash scripts/test.sh" in text


def test_docs_have_no_very_long_rows():
    for path in DOCS:
        if path.name in BENCH_WRITTEN:
            continue
        long = [i for i, line in enumerate(path.read_text().splitlines(), 1) if len(line) >= 300]
        assert not long, f"{path.name}: lines {long}"


def test_every_relative_link_resolves_and_every_page_is_indexed():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name} links to {target}"
    index = (ROOT / "docs" / "README.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, page.name
