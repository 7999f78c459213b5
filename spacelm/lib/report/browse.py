"""The drill-down of a run as one self-contained HTML page and as terminal text.

The data (stages/browse.py gathers it) is embedded once, as JSON in a
`<script type="application/json">` block whose `<`, `>` and `&` are written as JSON escapes, so
no corpus or model text can close the block or open a tag; the page's own script builds every
element with `textContent` (never `innerHTML` with data), so a passage holding `<script>` or
`<img onerror=...>` is shown as those characters and runs nothing. The page fetches nothing:
CSS and script are inline, and it opens from disk.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "browse.html"
DATA_MARK = "__SPACELM_BROWSE_DATA__"

# a rubric score (1-5) at or below this is a low score
LOW_SCORE = 2
FILTERS = {
    "refused": "an answer refused (the judge or a refusal phrase)",
    "answered_unanswerable": "unanswerable, but an answer did not refuse",
    "grade0_top3": "a passage graded 0 in some system's top 3",
    "low_scores": f"an answer scored {LOW_SCORE} or less on a 1-5 rubric",
}


def _refused(a: dict) -> bool:
    return bool(a.get("refusal")) or bool(a.get("refused_phrase"))


def question_flags(q: dict) -> dict:
    """{filter name: bool} of one drill-down question (its `systems` and `answers` filled)."""
    answers = q.get("answers") or []
    return {
        "refused": any(_refused(a) for a in answers),
        "answered_unanswerable": not q.get("answerable", True) and any(not _refused(a) for a in answers),
        "grade0_top3": any(p.get("grade") == 0 for ps in q["systems"].values() for p in ps[:3]),
        "low_scores": any(
            isinstance(v, int | float) and v <= LOW_SCORE for a in answers for v in (a.get("scores") or {}).values()
        ),
    }


def embed_json(data) -> str:
    """`data` as JSON that is safe inside an HTML <script> block: `<`, `>` and `&` escaped (so no
    `</script>` or `<!--` can appear), every other character as JSON writes it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict) -> str:
    """The self-contained drill-down page of `data` (stages/browse.py: collect)."""
    page = TEMPLATE.read_text(encoding="utf-8")
    return page.replace(DATA_MARK, embed_json(data), 1)


# ----------------------------------------------------------------------------- terminal text
def select(data: dict, qid: str | None = None, filters=()) -> list[dict]:
    """The questions of `data` with id `qid` (when given) that pass every named filter."""
    out = []
    for q in data["questions"]:
        if qid is not None and q["qid"] != qid:
            continue
        if all(q["flags"].get(f) for f in filters):
            out.append(q)
    return out


def _grade(g) -> str:
    return "-" if g is None else str(g)


def _share(x: dict | None, num: str, den: str) -> str:
    if not x:
        return "-"
    return f"{x.get(num)}/{x.get(den)}"


def _clip(text: str | None, width: int) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= width else t[: width - 1] + "…"


def index_lines(data: dict, questions: list[dict]) -> list[str]:
    """One line per question: id, task, answerable, the filters it meets."""
    lines = [f"run '{data['run']}': {len(questions)} of {len(data['questions'])} question(s)"]
    for q in questions:
        flags = ",".join(f for f, on in q["flags"].items() if on) or "-"
        kind = "answerable" if q["answerable"] else "unanswerable"
        lines.append(f"  {q['qid']}  [{q.get('task') or '?'}, {kind}]  flags: {flags}")
    return lines


def question_lines(data: dict, q: dict, width: int = 100, snippet: int = 160) -> list[str]:
    """The drill-down of one question as terminal lines (passages as snippets)."""
    texts = data.get("passages", {})

    def wrap(s, ind="    "):
        return textwrap.wrap(" ".join((s or "").split()), width, initial_indent=ind, subsequent_indent=" " * len(ind))

    kind = "answerable" if q["answerable"] else f"unanswerable ({q.get('unanswerable_kind') or 'kind not recorded'})"
    lines = [
        "=" * width,
        f"{q['qid']}  task {q.get('task') or '?'}, {kind}",
        *wrap(q.get("question") or "(question text not found)", "  Q: "),
    ]
    flags = [f for f, on in q["flags"].items() if on]
    if flags:
        lines.append(f"  flags: {', '.join(flags)}")
    who = data.get("assessors") or []
    if q.get("screening"):
        s = q["screening"]
        lines += wrap(f"{s['screen']} (by {who[s['assessor']]['name']})", "  screened: ")
    pairs = q.get("pairs") or {}

    def label(cid) -> str:
        lab = pairs.get(cid, {}).get("label")
        return "" if lab is None else f", assessor's grade {lab['grade']}"

    if q.get("reference_answer"):
        lines += wrap(q["reference_answer"], "  reference: ")
    src = q.get("source_chunk_id")
    if src:
        lines.append(f"  source chunk: {src} (grade {_grade(q.get('source_grade'))}{label(src)})")
        if src in texts:
            lines.append("    " + _clip(texts[src], snippet))
    if not data.get("text_available") and data.get("text_note"):
        lines += wrap(data["text_note"], "  note: ")
    for system, ps in q["systems"].items():
        lines.append(f"  {system}: top {len(ps)}")
        for rank, p in enumerate(ps, 1):
            mark = "  <- source" if p["chunk_id"] == src else ""
            lines.append(f"    {rank:>2}. grade {_grade(p['grade'])}{label(p['chunk_id'])}  {p['chunk_id']}{mark}")
            if p["chunk_id"] in texts:
                lines.append("        " + _clip(texts[p["chunk_id"]], snippet))
    if not q["answers"]:
        lines.append("  answers: none (the answer stage did not answer this question)")
    for a in q["answers"]:
        expected = a.get("expected_scores") or {}
        scores = ", ".join(
            f"{k} {v}" + (f" (expected {expected[k]:.2f})" if expected.get(k) is not None else "")
            for k, v in (a.get("scores") or {}).items()
        )
        lines.append(f"  answer [{a['setting']}, pipeline {a['pipeline']}]: {scores or 'not scored'}")
        lines += wrap(a.get("answer") or "(empty answer)", "      ")
        leak = a.get("leakage")
        lines.append(
            "      refusal "
            + ("yes" if a.get("refusal") else "no")
            + ", refusal phrase "
            + ("yes" if a.get("refused_phrase") else "no")
            + ", leakage "
            + (f"{leak['share']:.2f}" if leak and leak.get("share") is not None else "-")
            + ", citations supported "
            + _share(a.get("citation_support"), "supported", "n_cited_sentences")
            + ", claims supported "
            + _share(a.get("claim_support"), "supported", "n_claims")
        )
    return lines
