"""Human labels for a run's graded pairs, and the prediction-powered Table 1 they allow.

`spacelm label` draws a sample of the pairs the judge graded for Table 1, stratified by system
and judge grade (seeded), and writes it for a person to grade 0-3 seeing only the question and
the passage; the grades come back as `labels/human_labels.csv` (or .jsonl) and the grade stage
turns them into prediction-powered estimates (lib/judge/ppi.py) beside each Table 1 share.

A pair's stratum is (the first Table 1 system, in table order, whose top-k list holds it, its
judge grade); each stratum gets a share of the sample proportional to its size, at least one
pair when the sample is large enough to give every stratum one (largest remainders). A labelled
pair carries the weight N_h / n_h of its stratum, so estimates stay unbiased when the
allocation is not exactly proportional.
"""

from __future__ import annotations

import csv
import html
import io
import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..io import InputError, decode_text
from ..names import HUMAN_LABELS, HUMAN_LABELS_JSONL, TO_LABEL, TO_LABEL_CSV

SEP = "::"
LABEL_COLUMNS = ["pair_id", "grade"]

# A spreadsheet reads a cell that starts with one of these as a formula (`=HYPERLINK(...)` in
# LLM-written text would become a live link): such a cell of to_label.csv is written with a
# leading ' (which spreadsheets show as text), and a cell that itself starts with ' gets one more,
# so reading back (`from_cell`) strips exactly one and gives the text as it was.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# how to save a labels file that cannot be read, as spreadsheets name it
RESAVE = "save it as UTF-8 (in a spreadsheet: Save As, file type 'CSV UTF-8 (comma delimited)')"


def to_cell(text) -> str:
    """`text` as a CSV cell a spreadsheet shows as text, never runs as a formula."""
    text = "" if text is None else str(text)
    return "'" + text if text.startswith((*FORMULA_START, "'")) else text


def from_cell(text) -> str:
    """The text a `to_cell` cell holds (a cell typed by hand without the mark is read as it is)."""
    text = "" if text is None else str(text)
    return text[1:] if text.startswith("'") and text[1:].startswith((*FORMULA_START, "'")) else text


def pair_id(qid: str, chunk_id: str) -> str:
    return f"{qid}{SEP}{chunk_id}"


def allocate(sizes: dict, n: int) -> dict:
    """{stratum: sample size}: proportional to `sizes`, at least 1 per non-empty stratum when
    n reaches their number, largest remainders first, never more than a stratum holds."""
    strata = sorted(k for k, v in sizes.items() if v > 0)
    total = sum(sizes[k] for k in strata)
    n = min(n, total)
    if n <= 0 or not strata:
        return {k: 0 for k in sizes}
    floor = 1 if n >= len(strata) else 0
    alloc = {k: max(floor, int(n * sizes[k] / total)) for k in strata}
    while sum(alloc.values()) > n:  # the floor of 1 may overshoot: take back from the largest
        k = max((k for k in strata if alloc[k] > floor), key=lambda k: alloc[k] - n * sizes[k] / total)
        alloc[k] -= 1
    rema = sorted(strata, key=lambda k: (-(n * sizes[k] / total - alloc[k]), k))
    i = 0
    while sum(alloc.values()) < n:
        k = rema[i % len(rema)]
        if alloc[k] < sizes[k]:
            alloc[k] += 1
        i += 1
    return {k: alloc.get(k, 0) for k in sizes}


def stratified_sample(pairs: Sequence[dict], n: int, seed: int) -> list[dict]:
    """`pairs`: {pair_id, system, grade, ...}; a seeded sample of n stratified by (system,
    grade), each drawn pair with `stratum` and `weight` (= stratum size / its sample size)."""
    by: dict = {}
    for p in sorted(pairs, key=lambda p: p["pair_id"]):
        by.setdefault((p["system"], p["grade"]), []).append(p)
    alloc = allocate({k: len(v) for k, v in by.items()}, n)
    rng = random.Random(f"{seed}|label")
    out = []
    for k in sorted(by, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
        take = alloc[k]
        for p in rng.sample(by[k], take):
            out.append(dict(p, stratum=f"{k[0]}|{k[1]}", weight=len(by[k]) / take))
    return sorted(out, key=lambda p: p["pair_id"])


def write_labelling_files(folder: Path, items: Sequence[dict]) -> list[Path]:
    """`to_label.jsonl` (pair_id, qid, chunk_id, question, passage, stratum, weight), a CSV to fill
    in (`to_label.csv`: pair_id, question, passage, grade empty; a cell that a spreadsheet would
    run as a formula starts with ', see `to_cell`) and `label.html`, a page that
    shows question and passage only (never the judge's grade) and saves the grades as
    human_labels.csv."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    keep = ("pair_id", "qid", "chunk_id", "question", "passage", "stratum", "weight")
    (folder / TO_LABEL).write_text("".join(json.dumps({k: it[k] for k in keep}) + "\n" for it in items))
    with open(folder / TO_LABEL_CSV, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pair_id", "question", "passage", "grade"])
        for it in items:
            w.writerow([to_cell(it["pair_id"]), to_cell(it["question"]), to_cell(it["passage"]), ""])
    (folder / "label.html").write_text(labelling_page(items), encoding="utf-8")
    return [folder / TO_LABEL, folder / TO_LABEL_CSV, folder / "label.html"]


GRADE_HELP = (
    "0 = not relevant: the passage has nothing to do with the question; 1 = related: on the topic but it "
    "does not answer; 2 = relevant: it partly answers or answers with other material needed; "
    "3 = perfectly relevant: it answers the question on its own."
)


def labelling_page(items: Sequence[dict]) -> str:
    """A self-contained HTML page: per pair the question, the passage and four grade buttons; a
    button saves the grades given so far as human_labels.csv (pair_id,grade). No judge grade."""
    rows = []
    for i, it in enumerate(items):
        radios = "".join(f'<label><input type="radio" name="g{i}" value="{g}"> {g}</label> ' for g in range(4))
        rows.append(
            f'<div class="pair" data-id="{html.escape(it["pair_id"])}"><p class="n">{i + 1} / {len(items)}</p>'
            f"<p><b>Question:</b> {html.escape(it['question'])}</p>"
            f"<blockquote>{html.escape(it['passage'])}</blockquote><p>{radios}</p></div>"
        )
    return f"""<!doctype html><meta charset="utf-8"><title>spacelm: relevance labels</title>
<style>body{{font-family:sans-serif;max-width:50em;margin:auto}} .pair{{border-bottom:1px solid #ccc;padding:1em 0}}
blockquote{{background:#f6f6f6;padding:.5em}} .n{{color:#888}}</style>
<h1>Grade each passage for its question</h1><p>{html.escape(GRADE_HELP)}</p>
<p>Save as you go; unanswered pairs are left out of the file.</p>
<button onclick="save()">Save human_labels.csv</button>
{"".join(rows)}
<button onclick="save()">Save human_labels.csv</button>
<script>
function save() {{
  let out = "pair_id,grade\\n";
  document.querySelectorAll(".pair").forEach((d, i) => {{
    const c = d.querySelector("input:checked");
    if (c) out += '"' + d.dataset.id.replace(/"/g, '""') + '",' + c.value + "\\n";
  }});
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([out], {{type: "text/csv"}}));
  a.download = "human_labels.csv";
  a.click();
}}
</script>
"""


def labels_file(folder: Path) -> Path | None:
    """`human_labels.csv`, else `human_labels.jsonl`, in `folder`; None when neither exists."""
    for name in (HUMAN_LABELS, HUMAN_LABELS_JSONL):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def read_labels(path: Path, known: set) -> dict:
    """{pair_id: grade 0-3} from a CSV (columns pair_id, grade; other columns ignored; UTF-8 with
    or without a BOM, UTF-16 with one, or Windows-1252, as spreadsheets save it) or JSONL file.
    A row with an empty grade is not labelled yet and is skipped. An unknown pair id, a
    grade outside 0-3 or a pair labelled twice is an error naming the file and line."""
    path = Path(path)
    rows: list[tuple[int, dict]] = []
    try:  # UTF-8 with or without a BOM ("CSV UTF-8"), UTF-16 ("Unicode text"), else Windows-1252
        text = decode_text(path.read_bytes(), path, fallback=None if path.suffix == ".jsonl" else "cp1252")
    except InputError as e:
        raise InputError(f"{e}; {RESAVE}") from None
    if path.suffix == ".jsonl":
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((i, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise InputError(
                        f'{path}:{i}: not a JSON object ({e.msg}); each line needs {{"pair_id": ..., "grade": 0-3}}'
                    ) from None
    else:
        rows = _csv_rows(path, text)
    out: dict = {}
    for i, r in rows:
        pid, g = from_cell(str(r.get("pair_id", "")).strip()), r.get("grade")
        g = None if g is None else from_cell(str(g).strip())
        if g is None or str(g).strip() == "":
            continue
        if pid not in known:
            raise InputError(
                f"{path}:{i}: unknown pair id {pid!r}: use the ids of labels/to_label.csv (spacelm label writes them)"
            )
        try:
            gi = int(str(g).strip())
        except ValueError:
            gi = None
        if gi is None or not 0 <= gi <= 3 or str(g).strip() not in {"0", "1", "2", "3"}:
            raise InputError(f"{path}:{i}: grade {g!r} for {pid} is not one of 0, 1, 2, 3")
        if pid in out:
            raise InputError(f"{path}:{i}: pair {pid} is labelled twice; keep one line per pair")
        out[pid] = gi
    return out


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict]]:
    """(line where each record starts, its row) of a labels CSV. A quote left open (the rest of
    the file swallowed into one cell) is an error naming the line where the quote opened."""
    header = text.split("\n", 1)[0]
    tabs = "\t" in header and "," not in header  # a spreadsheet's "Unicode text" is tab-separated
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if tabs else ",", strict=True)
    rows, start = [], 1
    try:
        missing = [c for c in LABEL_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}:1: missing column(s) {missing}; the header needs pair_id and grade")
        start = reader.line_num + 1
        for r in reader:
            if any("\n" in str(v) or "\r" in str(v) for k, v in r.items() if k in LABEL_COLUMNS):
                raise InputError(
                    f"{path}:{start}: a quote opened on this line is closed only on line {reader.line_num}, so "
                    "the lines between became one cell; close the quote (or remove it) and save again"
                )
            rows.append((start, r))
            start = reader.line_num + 1
    except csv.Error as e:
        raise InputError(
            f"{path}:{start}: not valid CSV ({e}); a quote opened on this line is never closed, or a cell holds "
            "a stray quote: close or remove it and save again"
        ) from None
    return rows


def ppi_table1(cell_pairs: dict, grades: dict, human: dict, weights: dict, level: float = 0.95) -> list[dict]:
    """Per Table 1 cell (retriever, stage, top-k) and grade g, the prediction-powered estimate of
    the share (%) of its pairs with grade g: the judge's grades on every pair of the cell, the
    human grades of the labelled pairs in it. `cell_pairs`: {cell: [(qid, chunk_id), ...]};
    `grades`: {(qid, chunk_id): judge grade}; `human`: {(qid, chunk_id): grade};
    `weights`: {(qid, chunk_id): 1/π}. Rows: retriever, stage, top_k, grade, ppi_estimate,
    ppi_ci_low, ppi_ci_high, n_human (classic PPI; pairs as the units)."""
    from .ppi import ppi_mean

    rows = []
    for (retriever, stage, k), pairs in cell_pairs.items():
        graded = [p for p in pairs if grades.get(p) is not None]
        lab = [p for p in graded if p in human]
        for g in range(4):
            f = [float(grades[p] == g) for p in graded]
            r = ppi_mean(
                f,
                [float(grades[p] == g) for p in lab],
                [float(human[p] == g) for p in lab],
                [weights.get(p, 1.0) for p in lab],
                level=level,
            )
            pct = lambda x: None if x is None or np.isnan(x) else round(100 * float(np.clip(x, 0, 1)), 2)
            rows.append(
                {
                    "retriever": retriever,
                    "stage": stage,
                    "top_k": k,
                    "grade": g,
                    "ppi_estimate": pct(r["estimate"]) if lab else None,
                    "ppi_ci_low": pct(r["ci_low"]),
                    "ppi_ci_high": pct(r["ci_high"]),
                    "n_human": len(lab),
                }
            )
    return rows


def ppi_differences(cell_pairs: dict, grades: dict, human: dict, weights: dict, level: float = 0.95) -> list[dict]:
    """Reranked minus retrieved, per retriever and top-k, in the share (%) of pairs graded 2-3:
    the judge-only difference and the prediction-powered one with its CI (lib/judge/ppi.py)."""
    from .ppi import ppi_difference

    rows = []
    for (retriever, stage, k), a_pairs in cell_pairs.items():
        if stage != "retrieved" or (retriever, "reranked", k) not in cell_pairs:
            continue
        a = {p for p in a_pairs if grades.get(p) is not None}
        b = {p for p in cell_pairs[(retriever, "reranked", k)] if grades.get(p) is not None}
        union = sorted(a | b)
        if not a or not b:
            continue
        f = [float(grades[p] >= 2) for p in union]
        lab = [i for i, p in enumerate(union) if p in human]
        r = ppi_difference(
            f,
            [p in a for p in union],
            [p in b for p in union],
            lab,
            [float(human[union[i]] >= 2) for i in lab],
            [weights.get(union[i], 1.0) for i in lab],
            level,
        )
        pp = lambda x: None if x is None or np.isnan(x) else round(100 * float(x), 2)
        rows.append(
            {
                "retriever": retriever,
                "top_k": k,
                "measure": "share graded 2-3 (pp), reranked - retrieved",
                "judge_only": pp(r["judge_only"]),
                "ppi_estimate": pp(r["estimate"]) if lab else None,
                "ppi_ci_low": pp(r["ci_low"]),
                "ppi_ci_high": pp(r["ci_high"]),
                "n_human": len(lab),
                "n_pairs": len(union),
            }
        )
    return rows
