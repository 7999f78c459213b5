"""A run's drill-down: per question, its passages, their grades and its answers, gathered from the
files the run committed (no model is called). `results/<run>/browse.html` shows it in a browser
(lib/report/browse.py renders it), `spacelm show` in the terminal.

What is read: `retrieval/rankings.jsonl` (each system's top-k), `grades.jsonl` (the judge's grades
Table 1 used, with what the judge replied and the score it made of the reply), `answers.jsonl` (each
setting's answer with its scores and flags), the questions (`questions.jsonl` of the synthetic folder
and the golden samples), the label store (`labels/`: the assessor's relevance labels, screening
verdicts and answer labels, with the assessors' standing from `labels/standing.json`) and the chunks.
The judge's prompts are rebuilt from the prompt files as the grade stage builds them. The chunks come
from the processed folder (`chunks.jsonl`) or, when it is not on this machine, from ingest and chunk
of the corpus folder in memory (no model; nothing written). Labels are keyed by passage span, so
they show only where the chunks are here. Whether passage text goes into the page is a licence
question (see `text_policy`)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import InputError, read_jsonl
from ..lib.report.browse import FILTERS, question_flags

# how many passages of each system's ranking the drill-down shows when not told (Table 1's deepest cut)
DEFAULT_K = 5
# passages of a licence in this set may be quoted in a committed page; any other licence, or a corpus
# list naming none, leaves passage text out of the committed page (it can still be built locally)
QUOTABLE_LICENCES = {"CC-BY-4.0", "CC0-1.0", "public-domain-US-gov"}


def _rows(path: Path) -> list[dict]:
    return read_jsonl(path) if path.is_file() else []


def _questions(cfg: Config) -> dict:
    """{qid: question row} from the synthetic folder's questions.jsonl and the golden samples,
    read without the chunks (answers.jsonl, read later, fills in what these lack)."""
    out: dict = {}
    golden = cfg.path(cfg.corpus.golden_samples) if cfg.corpus.golden_samples else None
    if golden is not None and golden.is_file():
        for r in _rows(golden):
            if r.get("id"):
                out[r["id"]] = {
                    "qid": r["id"],
                    "task": r.get("task"),
                    "question": r.get("question"),
                    "answerable": r.get("answerable", True),
                    "origin": "golden",
                    "reference_answer": r.get("answer"),
                }
    for r in _rows(cfg.synthetic_dir / names.QUESTIONS):
        out[r["qid"]] = {
            "qid": r["qid"],
            "task": r.get("task"),
            "question": r.get("question"),
            "answerable": r.get("answerable", True),
            "unanswerable_kind": r.get("unanswerable_kind"),
            "source_chunk_id": r.get("source_chunk_id"),
            "origin": r.get("origin", "synthetic"),
            "reference_answer": r.get("answer"),
        }
    return out


def _table_grades(rows: list[dict]) -> dict:
    """{(qid, chunk_id): grades.jsonl row} of the grades Table 1 read: rows marked for the table, of
    the prompt most of them used (a run grades with one; order-swap rows carry another)."""
    table = [r for r in rows if "table" in (r.get("purpose") or [])]
    if not table:
        return {}
    prompt = Counter(r.get("prompt") for r in table).most_common(1)[0][0]
    return {(r["qid"], r["chunk_id"]): r for r in table if r.get("prompt") == prompt}


# what a grades.jsonl row holds of the judge's reply and the score made of it (the rest is bookkeeping)
JUDGED_FIELDS = ("grade", "score", "features", "probs", "raw", "expected_grade")
# the markers the judge's prompt is rendered with, to be cut where a pair's question and passage go
FIELD_MARKS = {"question": "\x00question\x00", "passage": "\x00passage\x00"}


def _parts(content: str) -> list:
    """A rendered message cut at the field marks: text, or {"field": name} where that field goes."""
    out: list = []
    for piece in re.split("(" + "|".join(map(re.escape, FIELD_MARKS.values())) + ")", content):
        field = next((f for f, m in FIELD_MARKS.items() if m == piece), None)
        if field:
            out.append({"field": field})
        elif piece:
            out.append(piece)
    return out


def _grade_inputs(run_dir: Path) -> dict:
    """The inputs the grade stage recorded in the run's manifest ({} when none)."""
    try:
        inputs = json.loads((run_dir / names.MANIFEST).read_text(encoding="utf-8"))["stages"]["grade"]["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return inputs if isinstance(inputs, dict) else {}


def judge_prompts(cfg: Config, prompt: str | None, measured: set, run_dir: Path) -> dict:
    """How the judge graded a pair under `prompt` (a grades.jsonl row's `prompt`: a template name, or
    `calibrated:<name>`), rebuilt from the prompt files as the grade stage builds it: the calls it
    makes on one pair (`measured`: the features the rows recorded), each message cut into parts
    (`_parts`), the options each call is constrained to and what is read from them; for a calibrated
    judge the features its grade uses, those derived from others and the cut points; per prompt and
    calibration file, whether today's file hashes as the grade stage recorded it (`files_match_run`)."""
    from ..lib.io import sha256_file
    from ..lib.judge.calibrated import (
        DERIVED_FEATURES,
        PROMPT_FEATURES,
        calibration_path,
        feature_requests,
        load_calibration,
    )
    from ..lib.llm.prompting import render, template_hash
    from ..lib.llm.scores import score_choices

    out: dict = {"prompt": prompt, "calls": []}
    if not prompt:
        return out
    try:
        if prompt.startswith("calibrated:"):
            name = prompt.split(":", 1)[1]
            judging = cfg.grading.judging(cfg.root)
            spec = judging.calibration if judging.method == "calibrated" else name
            if load_calibration(spec).name != name:
                spec = name
            cal, cal_file = load_calibration(spec), calibration_path(spec)
            asked = [f for f in PROMPT_FEATURES if f in measured or f in cal.features]
            calls = [
                (f, r.messages, r.choices, "expected" if f.endswith("_expected") else "share")
                for f, r in feature_requests(asked, FIELD_MARKS["question"], FIELD_MARKS["passage"])
            ]
            templates = sorted({PROMPT_FEATURES[f][0] for f, *_ in calls})
            out.update(
                method="calibrated",
                calibration=cal.name,
                judge_model=cal.judge_model,
                grade_features=list(cal.features),
                derived={
                    d: list(DERIVED_FEATURES[d][0]) for d in DERIVED_FEATURES if d in measured or d in cal.features
                },
                cut_points=[round(c, 4) for c in cal.cut_points],
            )
        else:
            calls = [(None, render(prompt, **FIELD_MARKS), score_choices(0, 3), "digit")]
            templates = [prompt]
            out["method"] = "prompt"
    except (FileNotFoundError, ValueError, KeyError) as e:
        return {**out, "error": f"the judge's prompt could not be rebuilt ({e})"}
    out["calls"] = [
        {
            "feature": f,
            "options": list(options),
            "reads": reads,
            "messages": [{"role": m["role"], "parts": _parts(m["content"])} for m in messages],
        }
        for f, messages, options, reads in calls
    ]
    # whether the files the prompt and the grade are made from are the ones the run graded with
    recorded = _grade_inputs(run_dir)
    files = [(f"prompt:{t}", f"spacelm/prompts/{t}.txt", template_hash(t)) for t in templates]
    if out["method"] == "calibrated":
        key = next((k for k in recorded if k.startswith("file:") and k.endswith("/" + cal_file.name)), "")
        files.append((key, key.removeprefix("file:") or cal_file.name, sha256_file(cal_file)))
    out["files_match_run"] = [
        {"file": shown, "matches": None if key not in recorded else str(now).startswith(str(recorded[key]))}
        for key, shown, now in files
    ]
    return out


def restore_hint(cfg: Config) -> str:
    """The one command that puts the run's corpus back where the config reads it, writing nothing
    the repository tracks: `spacelm data fetch NAME` when a registered data set lives there, else the
    corpus list's fetch; "" for a corpus of one's own (its files go back in corpus.raw_dir)."""
    from ..lib import datasets

    raw = Path(str(cfg.corpus.raw_dir)).as_posix()
    for ds in datasets.registry().values():
        if Path(ds.dir).as_posix() == raw:
            return f"spacelm data fetch {ds.name}"
    if cfg.corpus.file_list:
        return f"spacelm corpus fetch {cfg.corpus.file_list} --to {cfg.corpus.raw_dir}"
    return ""


def browse_command(cfg: Config, run_dir: Path, with_text: bool) -> str:
    """The command that builds the page again (with text where `with_text`: on a listed corpus it is
    written to browse.local.html, which git ignores)."""
    return f"spacelm browse --run {_shown(run_dir, cfg)}" + (" --text yes" if with_text else "")


def _run_chunks(cfg: Config, run_dir: Path) -> tuple[dict, str, dict]:
    """({chunk_id: Chunk}, how, check) of the run's chunks: read from the processed folder ("read") or
    made again by ingest and chunk of the corpus folder in memory ("rebuilt": no model, nothing
    written), with how they compare with what the run recorded (`beir_export.check_against_run`);
    ({}, "missing", {}) when neither the chunks nor the corpus folder is on this machine."""
    from ..runner.data import chunks_path
    from .beir_export import check_against_run, chunks_for_export, corpus_missing_error

    if not chunks_path(cfg).is_file() and not cfg.path(cfg.corpus.raw_dir).is_dir():
        return {}, "missing", {"why": str(corpus_missing_error(cfg))}
    chunks, how = chunks_for_export(cfg)
    return {c.chunk_id: c for c in chunks}, how, check_against_run(cfg, chunks, run_dir)


def _assessors(run_dir: Path) -> list[dict]:
    """The assessors the label store's standing names (`labels/standing.json`), each with its kind
    and the figure it stands on: name, kind, figure, value, floor, passes, n_calibration."""
    from ..lib.labels.store import STANDING

    p = run_dir / "labels" / STANDING
    try:
        standing = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    except ValueError as e:
        raise InputError(f"{p}: not JSON ({e}); `spacelm label import` writes it again") from e
    keep = ("kind", "figure", "value", "floor", "passes", "n_calibration")
    return [{"name": a["assessor"], **{k: a.get(k) for k in keep}} for a in standing.get("assessors", [])]


class _AssessorIndex:
    """Each label's assessor as an index into one list: the standing's entry for (name, kind), or a
    new entry with no standing for an assessor the standing does not name."""

    def __init__(self, standing: list[dict]):
        self.items = list(standing)

    def __call__(self, name: str | None, kind: str) -> int:
        for i, a in enumerate(self.items):
            if (a["name"], a["kind"]) == (name, kind):
                return i
        self.items.append({"name": name or "(not recorded)", "kind": kind, "figure": None, "passes": None})
        return len(self.items) - 1


def text_policy(cfg: Config) -> tuple[bool, str]:
    """(may passage text go into the committed page, why). A corpus without a corpus list is the
    project's or the team's own documents (the sample corpus of configs/quick.yaml is the
    project's, MIT): yes. A corpus with a list: only when every listed licence is one that allows
    quoting (QUOTABLE_LICENCES); otherwise the committed page shows ids, grades and scores, and a
    page with text is built locally (`spacelm browse --text yes`, written to browse.local.html,
    which git ignores)."""
    if not cfg.corpus.file_list:
        return True, "the corpus has no corpus list: its documents are the project's or the team's own"
    from ..lib.ingest.corpus_list import load_corpus_list

    try:
        lst = load_corpus_list(str(cfg.corpus.file_list))
    except Exception as e:  # noqa: BLE001 - a list that cannot be read is treated as restrictive
        return False, f"the corpus list {cfg.corpus.file_list} could not be read ({e})"
    other = sorted({str(getattr(e, "licence", "") or "unknown") for e in lst.entries} - QUOTABLE_LICENCES)
    if other:
        return False, (
            f"the corpus list '{lst.name}' holds documents under licences that do not clearly allow "
            f"redistributing their text ({', '.join(other)})"
        )
    return True, f"every document of the corpus list '{lst.name}' is under a licence that allows quoting"


def collect(cfg: Config, run_dir: Path | None = None, k: int | None = None, text: bool | None = None) -> dict:
    """Everything the drill-down shows, as plain data (JSON-ready).

    `k`: passages per system (default: the deepest Table 1 cut, else 5). `text`: put passage text
    in (True), leave it out (False) or follow `text_policy` (None). Without the chunks and the corpus
    on this machine the text is left out whatever `text` says, and the result says how to get it.
    Per question, `pairs`: {chunk_id: {judge, label}} of its shown passages, `judge` the judge's reply
    and score (grades.jsonl), `label` the assessor's relevance label ({grade, assessor}); `screening`
    the assessor's verdict on the question; `assessors` lists who labelled, as the label store's
    standing names them (a label's `assessor` is an index into it)."""
    from ..lib.labels.store import ANSWERS, RELEVANCE, SCREENING, LabelStore, Span, answer_key, relevance_key
    from ..lib.llm.prompting import as_data
    from .question_screen import screen_of

    run_dir = Path(run_dir or cfg.run_dir)
    k = k or max(cfg.grading.top_k or [DEFAULT_K])
    rankings: dict = {}
    for r in _rows(run_dir / names.RANKINGS):
        rankings.setdefault(r["system"], {})[r["qid"]] = [d for d, _ in r["ranking"]]
    graded = _table_grades(_rows(run_dir / names.GRADES))
    answers = _rows(run_dir / names.ANSWERS)
    known = _questions(cfg)

    allowed, why = text_policy(cfg) if text is None else (text, "asked for" if text else "left out as asked")
    chunks, how, check = _run_chunks(cfg, run_dir)
    note = ""
    restore = restore_hint(cfg)
    get_corpus = (
        f"get the corpus back with `{restore}`" if restore else f"put the corpus files back in {cfg.corpus.raw_dir}"
    )
    if how == "missing":
        note = (
            f"Passage text is not on this machine: neither {cfg.paths.processed_dir}/{names.CHUNKS} nor the corpus "
            f"folder {cfg.corpus.raw_dir} is here, so this page shows ids, grades and scores but no passage text, "
            f"assessor labels or screening verdicts (those are keyed by passage span). To see them, {get_corpus} "
            "(it writes nothing under results/ or data/ that git tracks), then build this page again with "
            f"`{browse_command(cfg, run_dir, with_text=bool(cfg.corpus.file_list))}`; no model is needed."
        )
    elif text is False:
        note = "Passage text was left out when this page was built (--text no)."
    elif not allowed:
        note = (
            f"Passage text is left out of this page: {why}. Build a page with text on your machine with "
            f"`{browse_command(cfg, run_dir, with_text=True)}` (written to browse.local.html, not committed); "
            f"if the corpus is not on your machine, first {get_corpus}."
        )
    elif check.get("missing") or check.get("matches") is False:
        src = f"{cfg.paths.processed_dir}/{names.CHUNKS}" if how == "read" else f"the corpus in {cfg.corpus.raw_dir}"
        note = (
            f"The chunks on this machine (from {src}) are not the ones this run recorded in its manifest: "
            "passages may not be the ones it ranked."
        )
    texts = {c: ch.text for c, ch in chunks.items()} if allowed and how != "missing" else {}

    store_dir = cfg.path(cfg.labels.store) if cfg.labels.store else run_dir / "labels"
    store = LabelStore(store_dir)
    assessor = _AssessorIndex(_assessors(run_dir))
    relevance, screens, answer_labels = store.labels(RELEVANCE), store.labels(SCREENING), store.labels(ANSWERS)
    spans = {c: Span.of_chunk(ch) for c, ch in chunks.items()}

    qids = sorted({q for by in rankings.values() for q in by} | {a["qid"] for a in answers} | {q for q, _ in graded})
    by_qid: dict = {}
    for a in answers:
        by_qid.setdefault(a["qid"], []).append(a)
    by_pair: dict = {}  # {qid: {chunk_id: grades.jsonl row}}
    for (qid, c), r in graded.items():
        by_pair.setdefault(qid, {})[c] = r
    systems = list(rankings)
    used: set = set()
    questions = []
    for qid in qids:
        q = dict(known.get(qid, {"qid": qid}))
        for a in by_qid.get(qid, []):  # answers.jsonl carries what the answer stage read
            for key in ("task", "question", "answerable", "unanswerable_kind", "source_chunk_id", "reference_answer"):
                if a.get(key) is not None and q.get(key) is None:
                    q[key] = a[key]
        q.setdefault("answerable", True)
        src = q.get("source_chunk_id")
        rows = by_pair.get(qid, {})
        lists = {}
        for s in systems:
            ids = rankings[s].get(qid, [])[:k]
            lists[s] = [{"chunk_id": c, "grade": rows.get(c, {}).get("grade")} for c in ids]
            used.update(ids)
        shown = {p["chunk_id"] for ps in lists.values() for p in ps} | ({src} if src else set())
        used |= shown
        question = q.get("question") or ""
        row = {
            "qid": qid,
            "task": q.get("task"),
            "question": q.get("question"),
            "answerable": bool(q.get("answerable")),
            "unanswerable_kind": q.get("unanswerable_kind"),
            "origin": q.get("origin"),
            "reference_answer": q.get("reference_answer"),
            "source_chunk_id": src,
            "source_grade": rows.get(src, {}).get("grade") if src else None,
            "systems": lists,
            "pairs": {},
            "answers": [],
        }
        if question and as_data(question) != question:
            row["judge_question"] = as_data(question)  # the question as the judge's prompt quotes it
        for c in sorted(shown):  # per shown passage: the judge's reply and score, the assessor's label
            pair = {}
            if c in rows:
                pair["judge"] = {f: rows[c][f] for f in JUDGED_FIELDS if rows[c].get(f) not in (None, "", {})}
            lab = relevance.get(relevance_key(question, spans[c])) if question and c in spans else None
            if lab is not None:
                pair["label"] = {"grade": int(lab["grade"]), "assessor": assessor(lab.get("assessor"), RELEVANCE)}
            if pair:
                row["pairs"][c] = pair
        scr = screen_of(screens, q, chunks) if question else None
        if scr is not None:
            row["screening"] = {"screen": scr["screen"], "assessor": assessor(scr.get("assessor"), SCREENING)}
        if not allowed:  # the reference answer is written from the passage: it quotes the corpus as the passage does
            row["reference_answer"] = None
        for a in by_qid.get(qid, []):
            out = _answer(a, allowed)
            lab = answer_labels.get(answer_key(question, a.get("setting"), a.get("answer") or "")) if question else None
            if lab is not None:
                out["label"] = {
                    "scores": lab.get("scores") or {},
                    "correct": lab.get("correct"),
                    "assessor": assessor(lab.get("assessor"), ANSWERS),
                }
            row["answers"].append(out)
        row["flags"] = question_flags(row)
        questions.append(row)
    # the page opens on something to see: answerable questions (not screened out) with graded passages first
    questions.sort(key=lambda r: (not r["answerable"], screened_out(r), not any_graded(r), r["qid"]))
    measured = {f for r in graded.values() for f in (r.get("features") or {})}
    prompt = Counter(r.get("prompt") for r in graded.values()).most_common(1)[0][0] if graded else None
    passages = {c: texts[c] for c in sorted(used) if c in texts}
    return {
        "run": cfg.run_name,
        "k": k,
        "systems": systems,
        "filters": FILTERS,
        "text_available": bool(passages),
        "text_note": note,
        "text_policy": why,
        "chunks_match_manifest": check.get("matches"),
        "restore": restore,
        "judge": judge_prompts(cfg, prompt, measured, run_dir),
        "assessors": assessor.items,
        "questions": questions,
        "passages": passages,
        # a passage as the judge's prompt quotes it, where that differs from its text (`as_data`)
        "judge_passages": {c: as_data(t) for c, t in passages.items() if as_data(t) != t},
    }


def screened_out(row: dict) -> bool:
    """Whether the assessor screened a question's page row other than answerable."""
    return row.get("screening", {}).get("screen", "answerable") != "answerable"


def any_graded(row: dict) -> bool:
    """Whether a question's page row holds a graded passage in any system's list."""
    return any(p["grade"] is not None for ranked in row["systems"].values() for p in ranked)


def _shown(run_dir: Path, cfg: Config) -> str:
    try:
        return Path(run_dir).resolve().relative_to(Path(cfg.root or ".").resolve()).as_posix()
    except ValueError:
        return Path(run_dir).as_posix()


ANSWER_FIELDS = (
    "setting",
    "pipeline",
    "answer",
    "scores",
    "expected_scores",
    "refusal",
    "refused_phrase",
    "leakage",
    "citation_support",
    "claim_support",
    "passage_ids",
    "wrong_ids",
)


def _answer(a: dict, with_text: bool = True) -> dict:
    """An answer's fields for the page; without text (the corpus's licence), its word count in place
    of the answer: a generator copies its passages, so an answer quotes the corpus."""
    out = {f: a.get(f) for f in ANSWER_FIELDS}
    if not with_text:
        out["answer"], out["answer_words"] = None, len((a.get("answer") or "").split())
    return out


def write_browse(cfg: Config, path: Path, run_dir: Path | None = None, **kw) -> dict:
    """Write the drill-down page to `path` (one self-contained file); returns the data it shows."""
    from ..lib.io import write_text
    from ..lib.report.browse import render_page

    data = collect(cfg, run_dir, **kw)
    write_text(path, render_page(data))
    return data
