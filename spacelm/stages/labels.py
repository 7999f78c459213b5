"""Labels of a run: blind batches out (`spacelm label export`), an assessor's answers in
(`spacelm label import`), and the labels Table 1 and Table 2 read (lib/labels/).

Export writes the run's unlabelled items (the holes of the cells its tables read) with calibration
items mixed in blind; import checks every returned batch, measures the assessor's standing on the
calibration items and its repeats, refuses an assessor below the config's floor, and otherwise
merges the labels into the store and writes `results/<run>/labels/standing.json`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import InputError, read_jsonl, sha256_text, write_json, write_jsonl, write_text
from ..lib.labels import batches as lb
from ..lib.labels import standing as ls
from ..lib.labels.store import (
    ANSWER_RUBRICS,
    ANSWERS,
    CALIBRATION,
    RELEVANCE,
    SCREENING,
    STANDING,
    LabelStore,
    Span,
    answer_key,
    relevance_key,
    text_sha,
)

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def standing_path(cfg: Config) -> Path:
    return cfg.run_dir / "labels" / STANDING


def store(cfg: Config) -> LabelStore:
    return LabelStore(cfg.labels_dir)


def brief_text(kind: str) -> str:
    return (TEMPLATES / lb.BRIEF[kind]).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the run's items
def _chunks(cfg: Config) -> dict:
    from ..runner.data import chunks_path, load_chunks

    p = chunks_path(cfg)
    if not p.is_file():
        raise InputError(
            f"{p} not found: the passages' text comes from the run's chunks; rebuild them with "
            f"`spacelm chunk --config {cfg.source or '...'}` (the corpus folder {cfg.corpus.raw_dir} must be there)"
        )
    return {c.chunk_id: c for c in load_chunks(cfg)}


def table1_sets(cfg: Config, chunks: dict | None = None) -> list[tuple[str, list[dict], dict]]:
    """(set name, questions, rankings) of each Table 1 question set the run graded: the run's own
    questions (grading/table1_questions.json; for an older run, those in grades.jsonl) and, when the
    config grades them, the golden samples."""
    from ..runner.data import load_rankings, rankings_path
    from . import gold_check
    from .grade import stored_grades, table1_questions

    if not (cfg.run_dir / names.GRADES).is_file() or not rankings_path(cfg).is_file():
        raise InputError(
            f"{cfg.run_dir / names.GRADES} or {rankings_path(cfg)} not found: Table 1's pairs are those the grade "
            f"stage graded; run `spacelm grade --config {cfg.source or '...'}` first"
        )
    first, _, _ = stored_grades(cfg)
    questions = table1_questions(cfg, first)
    from .question_screen import screened

    out = [("run", screened(cfg, questions)[0], load_rankings(cfg))]
    if gold_check.enabled(cfg) and (cfg.run_dir / names.GOLDEN_GRADES).is_file():
        gs = gold_check.golden_inputs(cfg, list((chunks or _chunks(cfg)).values()), questions)
        if gs is not None:
            out.append(("golden", gs.questions, gs.rankings))
    return out


def table1_pairs(cfg: Config, chunks: dict) -> list[dict]:
    """Every distinct (question, passage) pair in a Table 1 cell of the run, with its span."""
    from .grade import cell_pairs

    seen, out = set(), []
    for set_name, questions, rankings in table1_sets(cfg, chunks):
        qtext = {q["qid"]: q.get("question") for q in questions}
        for qid, cid in (p for cell in cell_pairs(cfg, questions, rankings).values() for p in cell):
            if (qid, cid) in seen or cid not in chunks or not qtext.get(qid):
                continue
            seen.add((qid, cid))
            out.append(pair_row(qid, chunks[cid], set_name, qtext[qid]))
    return out


def pair_row(qid: str, chunk, question_set: str, question: str) -> dict:
    """A (question, passage) item for the relevance brief, with the passage's span as its key."""
    return {
        "qid": qid,
        "chunk_id": chunk.chunk_id,
        "question_set": question_set,
        "question": question,
        "passage": chunk.text,
        "question_sha": text_sha(question),
        **Span.of_chunk(chunk).fields(),
    }


def negative_answers(cfg: Config, items: list[dict] | None = None) -> list[dict]:
    """The answers of the negative setting (of `items`, else of the run's answers.jsonl): those
    scored on negative rejection, whose passages were drawn to hold no answer."""
    from ..lib.answer.answers import RUBRIC_NEGATIVE

    p = cfg.run_dir / names.ANSWERS
    if items is None:
        items = read_jsonl(p) if p.is_file() else []
    return [a for a in items if RUBRIC_NEGATIVE in (a.get("rubrics") or [])]


def negative_pairs(cfg: Config, chunks: dict) -> list[dict]:
    """Every distinct (question, passage) pair the negative setting's answers read, as
    `table1_pairs` writes pairs: graded 0-3 by the assessor, they show whether the passages drawn to
    hold no answer held one (stages.findings.negative_premise)."""
    answers = negative_answers(cfg)
    if not answers:
        raise InputError(
            f"{cfg.run_dir / names.ANSWERS}: no answer of the negative setting (answer.negative_n_wrong > 0 and "
            f"the answer stage run); run `spacelm answer --config {cfg.source or '...'}` first"
        )
    seen, out = set(), []
    for a in answers:
        for cid in a.get("passage_ids") or []:
            if (a["qid"], cid) in seen or cid not in chunks or not a.get("question"):
                continue
            seen.add((a["qid"], cid))
            out.append(pair_row(a["qid"], chunks[cid], "negative", a["question"]))
    return out


def negative_passages(cfg: Config, items: list[dict]) -> dict:
    """{qids, grades, missing}: per answer of the negative setting among `items`, the assessor's
    grade of each passage it read (None: a hole). A label is found by its passage's span, so the
    run's chunks must be here; without them every grade is None and `missing` says so."""
    answers = negative_answers(cfg, items)
    pairs = [(a["qid"], c) for a in answers for c in a.get("passage_ids") or []]
    try:
        chunks = _chunks(cfg) if pairs else {}
    except InputError:
        return {
            "qids": [a["qid"] for a in answers],
            "grades": [[None for _ in a.get("passage_ids") or []] for a in answers],
            "missing": "the run's chunks were not on this machine when its tables were written; after `spacelm "
            "chunk` rebuilds them, `spacelm report --recompute` finds the passages' labels",
        }
    got = store(cfg).relevance_grades(
        pairs,
        {a["qid"]: a.get("question", "") for a in answers},
        {c: Span.of_chunk(chunks[c]) for _, c in pairs if c in chunks},
    )
    grades = [[got[(a["qid"], c)] for c in a.get("passage_ids") or []] for a in answers]
    return {"qids": [a["qid"] for a in answers], "grades": grades, "missing": None}


def screening_items(cfg: Config, chunks: dict) -> list[dict]:
    """Each answerable written question with the passage it was written from: those synth kept, and
    those its content checks dropped (`SCREENED_DROPS`), so the checks are measured against the
    assessor on the same questions; the key keeps the suite's verdict (`suite`: kept or the check)."""
    from ..runner.data import questions_path
    from .question_screen import SCREENED_DROPS, answerable, suite_verdict

    p = questions_path(cfg)
    if not p.is_file():
        raise InputError(f"{p} not found: run `spacelm synth --config {cfg.source or '...'}` first")
    out = []
    for q in read_jsonl(p):
        c = chunks.get(q.get("source_chunk_id"))
        if c is None or not q.get("question") or not answerable(q):
            continue
        suite = suite_verdict(q)
        if suite != "kept" and suite not in SCREENED_DROPS:
            continue
        out.append(
            {
                "qid": q["qid"],
                "chunk_id": c.chunk_id,
                "task": q.get("task"),
                "suite": suite,
                "question": q["question"],
                "passage": c.text,
                "question_sha": text_sha(q["question"]),
                **Span.of_chunk(c).fields(),
            }
        )
    return out


def answer_items(cfg: Config, chunks: dict) -> list[dict]:
    """Each answer of the run's answers.jsonl, with the passages its writer read."""
    p = cfg.run_dir / names.ANSWERS
    if not p.is_file():
        raise InputError(f"{p} not found: run `spacelm answer --config {cfg.source or '...'}` first")
    out = []
    for a in read_jsonl(p):
        if a.get("answer") is None:
            continue
        out.append(
            {
                "qid": a["qid"],
                "setting": a.get("setting"),
                "pipeline": a.get("pipeline"),
                "question": a["question"],
                "passages": [chunks[c].text for c in a.get("passage_ids") or [] if c in chunks],
                "answer": a["answer"],
                "reference": a.get("reference_answer"),
                "rubrics": list(ANSWER_RUBRICS),
                "question_sha": text_sha(a["question"]),
                "answer_sha": text_sha(a["answer"]),
            }
        )
    return out


# --------------------------------------------------------------------------- calibration items
def nist_pairs(cfg: Config, draw: int = 0) -> list[dict]:
    """`labels.calibration_per_grade` NIST-graded pairs per grade from the TREC DL folder
    `labels.calibration_pairs` (queries.jsonl, corpus.jsonl, qrels.tsv): block `draw` of each
    grade's pairs in a seeded order, so draws 0, 1, 2... are disjoint (a new labelling pass, after
    a refused one, is measured on pairs its assessor has not seen)."""
    folder = cfg.path(cfg.labels.calibration_pairs)
    files = [folder / f for f in ("queries.jsonl", "corpus.jsonl", "qrels.tsv")]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        from ..lib.datasets import fetch_hint

        raise InputError(
            f"labels.calibration_pairs: {folder} lacks {', '.join(missing)}; relevance batches mix in NIST-graded "
            "TREC DL pairs to measure the assessor: point the key at a folder in BEIR layout (TREC DL 2020: "
            f"queries.jsonl, corpus.jsonl, qrels.tsv); {fetch_hint(folder)}"
        )
    queries = {str(r["_id"]): r["text"] for r in read_jsonl(files[0])}
    qrels = []
    for i, line in enumerate(files[2].read_text(encoding="utf-8").splitlines()):
        parts = line.split("\t")
        if i == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue
        if len(parts) == 3:
            qrels.append((parts[0], parts[1], int(parts[2])))
    rng = random.Random(f"{cfg.seed}|nist")
    chosen, n = [], cfg.labels.calibration_per_grade
    for g in range(4):
        pool = sorted(p for p in qrels if p[2] == g and p[0] in queries)
        rng.shuffle(pool)
        block = pool[draw * n : (draw + 1) * n]
        if len(block) < n:
            raise InputError(
                f"labels.calibration_pairs: {folder} has {len(pool)} pairs of NIST grade {g}, too few for draw "
                f"{draw} of {n} (--draw {max(0, len(pool) // n - 1)} is the last full one)"
            )
        chosen += block
    need = {d for _, d, _ in chosen}
    text = {str(r["_id"]): r["text"] for r in read_jsonl(files[1]) if str(r["_id"]) in need}
    return [
        {"qid": f"nist:{q}", "docno": d, "truth": g, "question": queries[q], "passage": text[d]}
        for q, d, g in chosen
        if d in text
    ]


def golden_screening(cfg: Config, chunks: dict) -> list[dict]:
    """Golden questions with a passage, whose answerability is known, shown as the run's questions
    are (a chunk): an answerable one with the chunk holding its evidence passage (the passage alone
    where no chunk holds it); an unanswerable one with the run's chunk sharing the most content words
    with it (a plausible passage that does not answer, chosen by word overlap, not graded)."""
    from ..lib.synth.golden import load_golden, locate_samples
    from ..runner.data import golden_path

    p = golden_path(cfg)
    if not p.is_file():
        return []
    rows = read_jsonl(p)
    found, _ = locate_samples(load_golden(p), list(chunks.values()), p)
    rng = random.Random(f"{cfg.seed}|golden-screening")
    rng.shuffle(rows)
    n = cfg.labels.calibration_questions
    words = lambda t: {w for w in re.findall(r"[a-z]{4,}", str(t).lower())}
    texts = sorted(chunks.values(), key=lambda c: c.chunk_id)
    out = []
    for r in [r for r in rows if r.get("answerable", True) and r.get("passage")][: n - n // 3]:
        c = chunks.get(found.get(r["id"]))
        passage = c.text if c is not None else r["passage"]
        out.append({"qid": f"golden:{r['id']}", "question": r["question"], "passage": passage, "truth": True})
    for r in [r for r in rows if not r.get("answerable", True)][: n // 3]:
        q = words(r["question"])
        best = max(texts, key=lambda c: (len(q & words(c.text)), c.chunk_id), default=None)
        if best is not None:
            out.append({"qid": f"golden:{r['id']}", "question": r["question"], "passage": best.text, "truth": False})
    return out


def _calibration_mix(controls: list[dict], rubrics: Sequence[str], n: int, finding_kinds: dict) -> list[dict]:
    """`n` of `controls` (build_controls' order), shared out evenly among `rubrics`; of a rubric whose
    "changes little" verdict reads the assessor's gap on certain kinds (findings.control_kinds), half
    of its share are of those kinds, so that the gap the margin needs rests on more than a couple of
    controls, and the other half keep the standing measured over every kind."""
    picked = []
    for j, rubric in enumerate(rubrics):
        share = n // len(rubrics) + (j < n % len(rubrics))
        mine = [c for c in controls if c["rubric"] == rubric]
        kinds = set(finding_kinds.get(rubric) or ())
        first = [c for c in mine if c["kind"] in kinds][: share // 2] if kinds else []
        rest = [c for c in mine if c not in first][: share - len(first)]
        picked += first + rest
    return picked


def answer_controls(cfg: Config, chunks: dict) -> list[dict]:
    """Known-answer controls as assessor items: per control a good and a damaged answer to one
    question over the same passages (lib/judge/validity.build_controls), each an item on its own."""
    from ..lib.judge.validity import build_controls
    from ..runner.data import load_questions

    questions = [q for q in load_questions(cfg, list(chunks.values())) if q.get("source_chunk_id")]
    text_of = {cid: c.text for cid, c in chunks.items()}
    doc_of = {cid: c.doc_id for cid, c in chunks.items()}
    rubrics = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")
    n = cfg.labels.calibration_controls
    controls = build_controls(questions, text_of, doc_of, n, cfg.seed, rubrics)
    out = []
    for i, c in enumerate(_calibration_mix(controls, rubrics, n, asdict(cfg.findings.control_kinds))):
        passages = [text_of[x] for x in c["context_ids"] if x in text_of]
        for side in ("good", "bad"):
            out.append(
                {
                    "qid": c["qid"],
                    "control": i,
                    "control_rubric": c["rubric"],
                    "control_kind": c["kind"],
                    "side": side,
                    "truth": side,
                    "question": c["question"],
                    "passages": passages,
                    "answer": c[side],
                    "reference": c.get("reference"),
                    "rubrics": list(ANSWER_RUBRICS),
                }
            )
    return out


# --------------------------------------------------------------------------- export
def export(
    cfg: Config, what: str, n_batches: int, out_dir: Path, draw: int = 0, pairs: list[dict] | None = None
) -> dict:
    """Write the run's unlabelled items of `what` (pairs, questions, answers) as blind batches in
    `out_dir` (see lib/labels/batches.py), with calibration items and repeats mixed in. `pairs`
    (relevance only) replaces the run's Table 1 pairs with the caller's: rows as `table1_pairs`
    writes them (qid, chunk_id, question, passage, question_sha and the chunk's span), e.g. the
    holes of a bench's ranked lists (bench/reranker_eval.py)."""
    if what not in lb.WHAT:
        raise InputError(f"--what {what!r}: use {', '.join(lb.WHAT)}")
    kind = lb.WHAT[what]
    out_dir = Path(out_dir)
    if (out_dir / "key.jsonl").exists():
        raise InputError(
            f"{out_dir} already holds an export (key.jsonl): import its labels first, or export into a new folder"
        )
    if pairs is not None and kind != RELEVANCE:
        raise ValueError("export: explicit pairs are relevance items")
    chunks = _chunks(cfg)
    if what == "negative" and pairs is None:
        pairs = negative_pairs(cfg, chunks)
    st = store(cfg)
    if kind == RELEVANCE:
        have = st.labels(RELEVANCE)
        wanted = table1_pairs(cfg, chunks) if pairs is None else pairs
        items = [p for p in wanted if relevance_key(p["question"], Span.of(p)) not in have]
        calibration = nist_pairs(cfg, draw)
    elif kind == SCREENING:
        have = st.labels(SCREENING)
        items = [p for p in screening_items(cfg, chunks) if relevance_key(p["question"], Span.of(p)) not in have]
        calibration = golden_screening(cfg, chunks)
    else:
        have = st.labels(ANSWERS)
        items = [
            a for a in answer_items(cfg, chunks) if answer_key(a["question"], a["setting"], a["answer"]) not in have
        ]
        calibration = answer_controls(cfg, chunks)
    if not items:
        what_of = {"negative": "passages of the negative setting"}
        raise InputError(
            f"run '{cfg.run_name}' has no unlabelled {what_of.get(what, what)}: "
            "every item is in the label store already"
        )
    ex = lb.blind_batches(kind, items, calibration, n_batches, cfg.seed, cfg.labels.repeat_share)
    brief = brief_text(kind)
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    export_id = sha256_text(f"{cfg.run_name}|{kind}|{created}|{len(ex.key)}")[:12]
    for name, lines in ex.batches.items():
        write_jsonl(out_dir / "batches" / f"{name}.jsonl", lines)
    write_text(out_dir / "brief.md", brief)
    write_jsonl(out_dir / "key.jsonl", ex.key)
    (out_dir / "labels").mkdir(parents=True, exist_ok=True)
    roles = [r["role"] for r in ex.key]
    meta = {
        "export": export_id,
        "run": cfg.run_name,
        "config": cfg.source,
        "what": what,
        "kind": kind,
        "created": created,
        "brief": "brief.md",
        "brief_sha256": sha256_text(brief),
        "batches": {name: len(lines) for name, lines in ex.batches.items()},
        "items": roles.count("item"),
        "calibration": roles.count("calibration"),
        "repeats": roles.count("repeat"),
        "calibration_draw": draw,
        "answers_go_to": "labels/<batch name>.labels.jsonl",
    }
    write_json(out_dir / "export.json", meta)
    note = lb.batch_size_note(ex)
    return {**meta, **({"note": note} if note else {})}


# --------------------------------------------------------------------------- import
def import_labels(cfg: Config, src: Path, assessor: str) -> dict:
    """Read the returned batches of the export in `src`, measure the assessor's standing and,
    when it reaches the floor, merge the labels into the store; InputError (exit 2) on a malformed
    batch or a standing below the floor (nothing is written to the store then)."""
    src = Path(src)
    meta_p, key_p = src / "export.json", src / "key.jsonl"
    for p in (meta_p, key_p):
        if not p.is_file():
            raise InputError(f"{p} not found: --from must be a folder written by `spacelm label export`")
    meta = json.loads(meta_p.read_text(encoding="utf-8"))
    kind = meta["kind"]
    if meta.get("run") != cfg.run_name:
        raise InputError(
            f"{meta_p}: the export is of run '{meta.get('run')}', not '{cfg.run_name}'; "
            "import it with that run's config"
        )
    if not assessor or not assessor.strip():
        raise InputError("--assessor: name who graded (a person, or the model and its version)")
    keys = read_jsonl(key_p)
    by_batch: dict = {}
    for r in keys:
        by_batch.setdefault(r["batch"], {})[r["key"]] = r
    returned, missing = {}, []
    for name in sorted(by_batch):
        f = src / "labels" / f"{name}.labels.jsonl"
        if not f.is_file():
            missing.append(name)
            continue
        returned[name] = (f, lb.read_answers(f, kind, set(by_batch[name])))
    if not returned:
        raise InputError(
            f"{src / 'labels'} holds no labels file: the assessor's answers go to labels/<batch>.labels.jsonl"
        )
    constant = ls.constant_batches(
        {b: [_comparable(kind, v) for v in ans.values()] for b, (_, ans) in returned.items()}
    )
    if constant:
        raise InputError(
            f"{returned[constant[0]][0]}: every item of the batch has the same answer; grades that do not vary "
            "across a shuffled batch were not made by reading it: not imported"
        )
    date = datetime.now(timezone.utc).date().isoformat()
    common = {
        "assessor": assessor.strip(),
        "brief_sha256": meta["brief_sha256"],
        "export": meta["export"],
        "date": date,
    }
    labelled, calib_rows, first_answer = [], [], {}
    for name, (_, ans) in returned.items():
        for key, value in ans.items():
            row = by_batch[name][key]
            first_answer[key] = value
            if row["role"] == "calibration":
                calib_rows.append({**_calibration_record(kind, row, value), **common, "batch": name, "key": key})
            elif "truth" in row:  # a calibration item's repeat: read for self-agreement only
                continue
            else:
                labelled.append(_label_record(kind, row, value, {**common, "batch": name, "key": key}))
    repeats = []
    for name, (_, ans) in returned.items():
        for key, value in ans.items():
            row = by_batch[name][key]
            if row["role"] == "repeat" and row.get("of") in first_answer:
                repeats.append((_comparable(kind, first_answer[row["of"]]), _comparable(kind, value)))
    st = store(cfg)
    earlier = [
        r
        for r in _read_calibration(st)
        if r["assessor"] == common["assessor"] and r["kind"] == kind and r["export"] != meta["export"]
    ]
    floors = ls.Floors(**vars(cfg.labels.floor))
    result = ls.measure(
        common["assessor"],
        kind,
        _calibration_inputs(kind, once_per_item(kind, earlier + calib_rows)),
        repeats,
        floors,
        seed=cfg.seed,
    )
    summary = {
        "export": meta["export"],
        "kind": kind,
        "assessor": common["assessor"],
        "batches_imported": sorted(returned),
        "batches_not_returned": missing,
        "standing": result.to_dict(),
    }
    if not result.passes or result.n_calibration < ls.MIN_CALIBRATION:
        why = result.reason or (
            f"{result.n_calibration} calibration items answered, fewer than the {ls.MIN_CALIBRATION} standing needs; "
            "return more batches"
        )
        write_json(src / "standing.refused.json", summary)
        raise InputError(
            f"{src}: the assessor's standing on {kind} is below the floor ({why}); nothing imported "
            f"(figures in {src / 'standing.refused.json'}; the floor is labels.floor in the config)"
        )
    from ..runner.lock import folder_lock

    with folder_lock(cfg.labels_dir):
        added = st.add(kind, labelled)
        _write_calibration(st, calib_rows)
        if kind == RELEVANCE:
            st.write_qrels({})
        record = {**summary, "labels_added": added, "store_sha256": st.sha256(), "imported": common["date"]}
        _write_standing(cfg, result, record)
    return record


def _comparable(kind: str, value):
    """One value per answer for self-agreement and the constant check: a grade, a screen, or the
    mean rubric score of an answer."""
    if kind == ANSWERS:
        s = value["scores"]
        return round(sum(s.values()) / len(s), 2)
    return value


def _label_record(kind: str, row: dict, value, common: dict) -> dict:
    base = {"kind": kind, "qid": row.get("qid"), "question": row.get("question"), "question_sha": row["question_sha"]}
    if kind == ANSWERS:
        return {
            **base,
            "setting": row.get("setting"),
            "pipeline": row.get("pipeline"),
            "answer_sha": row["answer_sha"],
            "scores": value["scores"],
            "correct": value["correct"],
            **common,
        }
    span = {k: row[k] for k in ("doc_id", "char_start", "char_end", "text_sha")}
    field_ = {"grade": value} if kind == RELEVANCE else {"screen": value}
    return {**base, "chunk_id": row.get("chunk_id"), **span, **field_, **common}


def _calibration_record(kind: str, row: dict, value) -> dict:
    rec = {"kind": kind, "qid": row.get("qid"), "truth": row.get("truth")}
    if kind == ANSWERS:
        rec.update(
            control=row["control"],
            rubric=row["control_rubric"],
            control_kind=row.get("control_kind"),
            side=row["side"],
            scores=value["scores"],
        )
    else:
        rec["value"] = value
    return rec


def once_per_item(kind: str, rows: list[dict]) -> list[dict]:
    """Stored calibration answers with an item a later pass showed again counted once, at its latest
    answer: every screening pass mixes in the same golden questions, and answer controls repeat too.
    Relevance passes draw disjoint NIST pairs (`--draw`), and a stored row names only the NIST query,
    so relevance rows are kept as they are."""
    if kind == RELEVANCE:
        return rows
    latest = {(r.get("qid"), r.get("control"), r.get("side"), r.get("rubric")): r for r in rows}
    return list(latest.values())


def _calibration_inputs(kind: str, rows: list[dict]) -> list[dict]:
    """The rows lib/labels/standing.measure takes, from stored calibration answers."""
    if kind == RELEVANCE:
        return [{"qid": r["qid"], "truth": int(r["truth"]), "grade": int(r["value"])} for r in rows]
    if kind == SCREENING:
        return [{"truth": bool(r["truth"]), "screen": r["value"]} for r in rows]
    pairs: dict = {}
    for r in rows:
        pairs.setdefault((r["export"], r["control"]), {})[r["side"]] = r
    out = []
    for (_, _), sides in sorted(pairs.items()):
        if "good" in sides and "bad" in sides:
            rubric = sides["good"]["rubric"]
            g, b = sides["good"]["scores"].get(rubric), sides["bad"]["scores"].get(rubric)
            if g is not None and b is not None:
                out.append({"rubric": rubric, "good": g, "bad": b})
    return out


def _read_calibration(st: LabelStore) -> list[dict]:
    p = st.folder / CALIBRATION
    return read_jsonl(p) if p.is_file() else []


def _write_calibration(st: LabelStore, rows: list[dict]) -> None:
    have = _read_calibration(st)
    seen = {(r["export"], r["batch"], r["key"]) for r in have}
    new = [r for r in rows if (r["export"], r["batch"], r["key"]) not in seen]
    if new:
        st.folder.mkdir(parents=True, exist_ok=True)
        write_jsonl(st.folder / CALIBRATION, have + new)


def _write_standing(cfg: Config, result, record: dict) -> None:
    p = standing_path(cfg)
    data = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {"assessors": [], "imports": []}
    data["assessors"] = [
        a for a in data["assessors"] if (a["assessor"], a["kind"]) != (result.assessor, result.kind)
    ] + [result.to_dict()]
    data["assessors"].sort(key=lambda a: (a["kind"], a["assessor"]))
    data["imports"].append({k: v for k, v in record.items() if k != "standing"})
    write_json(p, data)


def read_standing(cfg: Config) -> dict:
    """standing.json of the run ({} when nothing was imported)."""
    p = standing_path(cfg)
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}


def standing_of(cfg: Config, kind: str) -> dict | None:
    """The standing the store's labels of `kind` rest on: every assessor whose labels are read must
    pass; the first one that does not (or the only one) is returned."""
    rows = [a for a in read_standing(cfg).get("assessors", []) if a["kind"] == kind]
    if not rows:
        return None
    failing = [a for a in rows if not a["passes"]]
    return failing[0] if failing else rows[0]


def answer_label_items(cfg: Config, items: list[dict]) -> list[dict]:
    """The answer items with the assessor's rubric scores in place of the judges' (`scores` holds
    the item's own rubrics the assessor scored; {} for an answer without a label: a hole)."""
    got = store(cfg).answer_labels()
    out = []
    for it in items:
        lab = got.get(answer_key(it.get("question", ""), it.get("setting"), it.get("answer") or ""))
        scores = {r: v for r, v in (lab or {}).get("scores", {}).items() if r in (it.get("rubrics") or [])}
        out.append(dict(it, scores=scores, label_correct=(lab or {}).get("correct")))
    return out


def _finite(x, nd: int = 3):
    """`x` rounded, None when it is not a finite number (JSON has no NaN)."""
    return None if x is None or x != x else round(float(x), nd)


def answer_control_rows(cfg: Config) -> list[dict]:
    """The assessor's scores of the answer controls, as judge_check/controls.jsonl rows (rubric,
    kind, qid, good_score, bad_score): what its control gap is read from."""
    pairs: dict = {}
    for r in _read_calibration(store(cfg)):
        if r.get("kind") == ANSWERS:
            pairs.setdefault((r["export"], r["control"]), {})[r["side"]] = r
    out = []
    for sides in pairs.values():
        if "good" in sides and "bad" in sides:
            rubric = sides["good"]["rubric"]
            out.append(
                {
                    "rubric": rubric,
                    "kind": sides["good"].get("control_kind"),
                    "qid": sides["good"].get("qid"),
                    "good_score": sides["good"]["scores"].get(rubric),
                    "bad_score": sides["bad"]["scores"].get(rubric),
                }
            )
    return out


def judges_vs_labels(items: list[dict], labelled: list[dict]) -> dict:
    """Each answer rubric's embedded judge against the assessor on the same answers: n, both means,
    the judge's bias (judge − assessor) with its 95% t interval, Spearman's ρ and linear weighted κ."""
    import numpy as np
    from scipy.stats import spearmanr

    from ..lib.judge.validity import _kappa
    from ..lib.stats import cluster_t

    out = {}
    for rubric in ANSWER_RUBRICS:
        both = [
            (float(a["scores"][rubric]), float(b["scores"][rubric]), a.get("source_chunk_id") or a["qid"])
            for a, b in zip(items, labelled)
            if a.get("scores", {}).get(rubric) is not None and b["scores"].get(rubric) is not None
        ]
        if not both:
            continue
        j, lab = [x for x, _, _ in both], [y for _, y, _ in both]
        d = cluster_t([x - y for x, y, _ in both], [c for _, _, c in both])
        rho = spearmanr(j, lab).statistic if len(set(j)) > 1 and len(set(lab)) > 1 else float("nan")
        out[rubric] = {
            "n": len(both),
            "judge_mean": round(float(np.mean(j)), 3),
            "labels_mean": round(float(np.mean(lab)), 3),
            "bias": round(float(d["mean"]), 3),
            "bias_ci": [round(float(d["ci_low"]), 3), round(float(d["ci_high"]), 3)]
            if d["ci_low"] == d["ci_low"]
            else None,
            "spearman": None if rho != rho else round(float(rho), 3),
            "kappa_weighted_linear": _finite(
                _kappa([round(x) for x in j], [round(y) for y in lab], "linear", [1, 2, 3, 4, 5])
            ),
        }
    return out


# --------------------------------------------------------------------------- the report's section
@dataclass(frozen=True)
class LabelsSection:
    """The facts the report's labels section words (templates/labels_section.md)."""

    table1_instrument: str
    table2_instrument: str
    store: str
    store_sha256: str | None
    standing: list
    labelled_pairs: int
    pairs_in_cells: int
    holes: int
    judge_agreement: dict | None
    judge_bias: list
    screening: dict | None  # question_screen.screening_facts of the run's questions, when any was screened


def section(cfg: Config) -> LabelsSection | None:
    """The labels section's facts, or None when the run reads no labels and has none."""
    reads = cfg.grading.instrument != "judge" or cfg.answer.instrument != "judge"
    data = read_standing(cfg)
    if not reads and not data:
        return None
    screen_p = cfg.run_dir / names.QUESTION_SCREENING
    screening = json.loads(screen_p.read_text(encoding="utf-8")) if screen_p.is_file() else None
    agree_p = cfg.run_dir / names.JUDGE_VS_LABELS
    agree = json.loads(agree_p.read_text(encoding="utf-8")) if agree_p.is_file() else {}
    bias = []
    compared = {"bm25 - bm25+rerank", "dense - dense+rerank", "bm25 - dense", "bm25+rerank - dense+rerank"}
    for pair, by in ((agree.get("system_bias") or {}).get("differences") or {}).items():
        if pair not in compared:
            continue
        for m in ("ge2", "eq3"):
            f = by.get(m) or {}
            if f.get("diff") is not None:
                pp = {k: None if f.get(k) is None else 100 * f[k] for k in ("diff", "ci_low", "ci_high")}
            bias.append({"systems": pair, "boundary": m, **pp})
    holes = 0
    t1 = cfg.run_dir / names.TABLE1
    if t1.is_file() and cfg.grading.instrument != "judge":
        import pandas as pd

        t = pd.read_csv(t1)
        if "instrument" in t:
            lab = t[(t["instrument"] == "labels") & (t["grade"] == 0)]
            holes = int(lab["holes"].sum())
    st = store(cfg)
    return LabelsSection(
        table1_instrument=cfg.grading.instrument,
        table2_instrument=cfg.answer.instrument,
        store=cfg.labels.store or "labels/ (the run's own)",
        store_sha256=st.sha256(),
        standing=data.get("assessors", []),
        labelled_pairs=int(agree.get("n_labelled") or 0),
        pairs_in_cells=int(agree.get("n_pairs_in_cells") or 0),
        holes=holes,
        judge_agreement=agree.get("agreement"),
        judge_bias=bias,
        screening=screening if screening and screening.get("screened") else None,
    )
