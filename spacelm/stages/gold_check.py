"""The grade stage's second question set and its checks against known gold (issue 44): Table 1
on the golden samples' answerable questions (`grading/golden/`), the judge against the in-domain
reference labels pair by pair (`grading/golden/reference_agreement.csv`), and per question set,
system and k the judge's nDCG@k beside the source chunk's and the reference labels'
(`grading/judge_vs_gold.csv`). The report turns the last into one sentence per retriever."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..config import Config
from ..lib import names
from ..lib.io import InputError, read_jsonl, write_dataframe, write_jsonl
from ..lib.judge.known_gold import (
    agreement_rows,
    change,
    judge_qrels,
    labelled_share,
    match_reference_labels,
    mean_ci,
    ndcg_per_question,
    read_reference_spans,
)
from ..lib.judge.relevance import (
    clustering,
    grade_lists,
    paired_tests,
    plan_pairs,
    relevant_shares,
    table1,
    table_systems,
)
from ..runner.data import documents_path, golden_path, golden_rankings_path, golden_set, load_rankings

GOLDEN = "golden"


def enabled(cfg: Config) -> bool:
    return GOLDEN in cfg.grading.question_sets


def outputs(cfg: Config) -> list[Path]:
    """`grading/judge_vs_gold.csv` always; the golden set's files when Table 1 grades it."""
    d = cfg.run_dir
    out = [d / names.JUDGE_VS_GOLD]
    if enabled(cfg):
        out += [
            d / names.GOLDEN_GRADES,
            d / names.GOLDEN_TABLE1,
            d / names.GOLDEN_PAIRED_TESTS,
            d / names.GOLDEN_RELEVANT_SHARES,
            d / names.GOLDEN_REFERENCE_AGREEMENT,
        ]
    return out


def reference_source(cfg: Config):
    """The judge-check source marked `in_domain: true` (its labels are on this corpus), or None."""
    return next((s for s in cfg.judge_check.sources if s.in_domain), None)


def sections(cfg: Config) -> list[str]:
    """The config the golden set's checks read beyond `grading` (its reference labels' source)."""
    return ["judge_check.sources", "corpus.golden_samples"] if enabled(cfg) else []


def reads(cfg: Config) -> list[Path]:
    """The golden samples, their rankings and the in-domain reference labels the golden set's
    checks read."""
    if not enabled(cfg):
        return []
    out = [golden_path(cfg), documents_path(cfg), golden_rankings_path(cfg)]
    src = reference_source(cfg)
    if src is not None:
        from ..lib.retrieval.beir import qrels_file

        folder = cfg.path(src.path)
        out += [p for p in (qrels_file(folder, src.split), folder / "corpus.jsonl") if p.is_file()]
    return out


# --------------------------------------------------------------------------- what is graded
@dataclass
class QuestionSet:
    """One question set's graded questions (of `n_available`), its rankings and its grade rows."""

    questions: list[dict]
    n_available: int
    rankings: dict
    rows: list[dict] | None = None  # first-order grades
    used: list[dict] | None = None  # the grades Table 1 uses


def golden_inputs(cfg: Config, chunks: list, run_questions: list[dict], rankings=None, docs=None):
    """The golden set Table 1 grades beside the run's (its answerable questions the retrieve stage
    ranked, at most `grading.max_golden_questions`), or None when the config does not ask for it
    or the run's questions are the golden samples themselves. `rankings`: the golden rankings
    (default: the retrieve stage's `retrieval/golden/rankings.jsonl`)."""
    from ..lib.judge.relevance import select_questions

    if not enabled(cfg):
        return None
    gold = golden_set(cfg, chunks, run_questions, docs)
    if not gold:
        return None
    if rankings is None:
        p = golden_rankings_path(cfg)
        if not p.is_file():
            raise InputError(
                f"{p} not found: grading.question_sets has 'golden'; run `spacelm retrieve --config "
                f"{cfg.source or '...'}` first (it ranks the golden questions)"
            )
        rankings = load_rankings(cfg, p)
    first = next(s for _, _, s in table_systems(cfg.table_design()))
    ranked = [q for q in gold if q["qid"] in rankings.get(first, {})]
    chosen = select_questions(ranked, cfg.grading.max_golden_questions, cfg.seed)
    return QuestionSet(chosen, len(ranked), rankings)


def planned_pairs(cfg: Config, gs: QuestionSet | None, chunks_by_id: dict) -> list[dict]:
    """The golden set's distinct (question, chunk) pairs of its Table 1 lists (the run set's
    validity pairs are not repeated for it)."""
    if gs is None:
        return []
    pairs = plan_pairs(cfg.table_design(), gs.questions, gs.rankings, chunks_by_id)
    return [dict(p, purpose=["table"]) for p in pairs if "table" in p["purpose"]]


def split(result, golden: QuestionSet | None):
    """The grade stage's result (`grade.Grades`) with the golden set's rows moved to `golden`
    (its first-order rows, passage-first rows and the grades its tables use)."""
    if golden is None:
        return result
    run_q = result.questions
    golden.rows = of_questions(result.rows, golden.questions) + of_questions(result.swapped_all, golden.questions)
    golden.used = of_questions(result.used, golden.questions)
    result.rows = of_questions(result.rows, run_q)
    result.swapped_all = of_questions(result.swapped_all, run_q)
    result.used = of_questions(result.used, run_q)
    if result.swapped is not None:
        result.swapped = of_questions(result.swapped, run_q)
    result.golden = golden
    return result


def merge_pairs(*sets: list[dict]) -> list[dict]:
    """The distinct pairs of several sets, each once (purposes joined), in first-seen order: a
    pair two sets share is graded once."""
    out: dict = {}
    for pairs in sets:
        for p in pairs:
            key = (p["qid"], p["chunk_id"])
            if key in out:
                out[key] = dict(out[key], purpose=sorted(set(out[key]["purpose"]) | set(p["purpose"])))
            else:
                out[key] = p
    return list(out.values())


def judged(questions: list[dict], rows: list[dict] | None) -> list[dict]:
    """The questions among `questions` the judge graded (a row for at least one of their pairs)."""
    qids = {r["qid"] for r in rows or []}
    return [q for q in questions if q["qid"] in qids]


def of_questions(rows: list[dict] | None, questions: list[dict]) -> list[dict]:
    """The rows of `questions`' pairs."""
    qids = {q["qid"] for q in questions}
    return [r for r in rows or [] if r["qid"] in qids]


# --------------------------------------------------------------------------- the golden set's files
def write_golden(cfg: Config, gs: QuestionSet, reference: tuple, out, label_tables=None) -> dict:
    """`grading/golden/`: its grades, Table 1, paired tests and relevant shares (the functions of
    the run set's tables) and the judge's agreement with the reference labels (`reference`:
    :func:`reference_labels`)."""
    import pandas as pd

    design = cfg.table_design()
    questions = judged(gs.questions, gs.used)  # the judge's sample (grading.judge_questions), or all
    cluster_of = clustering(questions, cfg.grading.cluster)
    grades = {(r["qid"], r["chunk_id"]): r["grade"] for r in gs.used}
    cells = grade_lists(design, questions, gs.rankings, grades)
    d = cfg.run_dir
    if label_tables is not None:  # the golden set's Table 1 through the assessor's labels, on every question
        label_tables(gs, out)
    write_jsonl(out(d / names.GOLDEN_GRADES), gs.rows)
    write_dataframe(table1(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(d / names.GOLDEN_TABLE1))
    write_dataframe(paired_tests(cells, design, cluster_of), out(d / names.GOLDEN_PAIRED_TESTS))
    write_dataframe(
        relevant_shares(cells, cfg.grading.n_bootstrap, cfg.seed, cluster_of), out(d / names.GOLDEN_RELEVANT_SHARES)
    )
    agreement = reference_agreement(cfg, gs.used, *reference)
    write_dataframe(pd.DataFrame([agreement]), out(d / names.GOLDEN_REFERENCE_AGREEMENT))
    return {"golden_questions": len(gs.questions), "golden_reference_pairs": agreement["n_pairs"]}


def write_not_graded(cfg: Config, why: str, out) -> None:
    """The golden set's files when it is asked for but not graded, each saying why."""
    import pandas as pd

    for f in outputs(cfg)[1:]:
        if f.suffix == ".jsonl":
            write_jsonl(out(f), [])
        else:
            write_dataframe(pd.DataFrame([{"note": why}]), out(f))


def write_all(cfg: Config, run: QuestionSet, golden: QuestionSet | None, out, label_tables=None) -> dict:
    """Every file of this module: the golden set's (when asked for) and judge_vs_gold.csv."""
    from ..runner.data import load_chunks

    reference, summary = None, {}
    if golden is not None:
        reference = reference_labels(cfg, load_chunks(cfg))
        summary = write_golden(cfg, golden, reference, out, label_tables)
    elif enabled(cfg):
        write_not_graded(cfg, "the run's own questions are the golden samples: the run set's tables are theirs", out)
    # the judge against the span gold and the reference labels on the questions it graded
    pairs = (("run", run), (GOLDEN, golden))
    sets = {name: replace(gs, questions=judged(gs.questions, gs.used)) for name, gs in pairs if gs is not None}
    table = judge_vs_gold(cfg, sets, reference[0] if reference else None)
    write_dataframe(table, out(cfg.run_dir / names.JUDGE_VS_GOLD))
    return summary


def reference_labels(cfg: Config, chunks: list) -> tuple[dict | None, str]:
    """({(qid, run chunk id): label}, where from) of the in-domain judge-check source placed on
    the run's chunks by id or span overlap; (None, why) when there is no such source or folder."""
    from ..lib.retrieval.beir import load_beir
    from ..lib.retrieval.span_gold import ChunkSpan

    src = reference_source(cfg)
    if src is None:
        return None, "no reference labels: no judge_check.sources entry has in_domain: true"
    folder = cfg.path(src.path)
    if not folder.is_dir():
        return None, f"no reference labels: {src.path} not found (judge_check.sources {src.name})"
    data = load_beir(folder, src.split)
    labels = {(q, d): g for q, docs in data.qrels.items() for d, g in docs.items()}
    spans = [ChunkSpan(c.chunk_id, c.doc_id, c.char_start, c.char_end) for c in chunks]
    return match_reference_labels(labels, read_reference_spans(folder), spans), f"{src.name} ({src.path})"


def reference_agreement(cfg: Config, used: list[dict], matched: dict | None, source: str) -> dict:
    """One row: the judge's grades against the reference labels `matched` ({(qid, chunk id):
    label}, None when there are none; `source` says where from) on the graded golden pairs they
    label (`validity.agreement`: weighted kappas, kappa at each boundary, 95% bootstrap CIs over
    questions, confusion counts label × grade)."""
    from ..lib.judge.validity import agreement

    rows = agreement_rows(used, matched or {})
    base = {"reference": source, "graded_pairs": sum(r.get("grade") is not None for r in used), "n_pairs": len(rows)}
    if not rows:
        note = source if matched is None else "no graded golden pair carries a reference label"
        return {**base, "n_queries": 0, "note": note}
    a = agreement(rows, cfg.grading.n_bootstrap, cfg.seed, graded=True)
    out = {**base, "n_queries": a["n_queries"], "note": "clustered by question (bootstrap over questions)"}
    for key in ("kappa_weighted", "kappa_weighted_linear", "exact_accuracy"):
        out[key] = a.get(key)
        lo, hi = a.get(f"{key}_ci") or (None, None)
        out[f"{key}_ci_low"], out[f"{key}_ci_high"] = lo, hi
    for b, m in (a.get("boundaries") or {}).items():
        out[f"{b}_kappa"] = m["kappa"]
        out[f"{b}_kappa_ci_low"], out[f"{b}_kappa_ci_high"] = m["kappa_ci"]
    for label, by_grade in a["confusion"].items():
        for grade, n in by_grade.items():
            out[f"label{label}_grade{grade}"] = n
    return out


# --------------------------------------------------------------------------- judge vs known gold
PER_QUERY = {"run": names.RETRIEVAL_PER_QUERY, GOLDEN: names.GOLDEN_PER_QUERY}
UNJUDGED = {
    "judge": "a retrieved chunk the judge did not grade counts as gain 0",
    "known_gold": "the span rule judges every chunk (relevant: shares the evidence span)",
    "reference": "a retrieved chunk the reference labels do not cover counts as gain 0 (a lower bound)",
}


def known_gold_ndcg(cfg: Config, set_name: str, k: int) -> dict:
    """{system: {qid: nDCG@k}} as the retrieve stage scored it against the source chunk/span
    (its per_query.jsonl), {} when it holds no nDCG at that k."""
    p = cfg.run_dir / PER_QUERY[set_name]
    out: dict = {}
    for r in read_jsonl(p) if p.is_file() else []:
        if f"ndcg@{k}" in r:
            out.setdefault(r["system"], {})[r["qid"]] = float(r[f"ndcg@{k}"])
    return out


def _instrument_qrels(set_name: str, gs: QuestionSet, reference: dict | None) -> dict:
    """{instrument: qrels or None (known gold: read from per_query)} for one question set."""
    qids = {q["qid"] for q in gs.questions}
    out = {"known_gold": None, "judge": judge_qrels(gs.used, qids)}
    if set_name == GOLDEN and reference:
        ref: dict = {}
        for (q, c), g in reference.items():
            if q in qids:
                ref.setdefault(q, {})[c] = g
        out["reference"] = ref
    return out


def _per_question(cfg: Config, set_name: str, qrels, ranking: dict, system: str, k: int, qids: set) -> dict:
    if qrels is None:
        return {q: v for q, v in known_gold_ndcg(cfg, set_name, k).get(system, {}).items() if q in qids}
    return ndcg_per_question(qrels, {q: ranking[q] for q in qids if q in ranking}, k)


def instrument_row(cfg: Config, set_name: str, gs: QuestionSet, instrument: str, qrels, retriever: str, k: int) -> dict:
    """One row of judge_vs_gold.csv: an instrument's nDCG@k for a retriever before and after
    reranking and the change, each with its 95% CI clustered by document."""
    n_boot, seed = cfg.grading.n_bootstrap, cfg.seed
    doc_of = {q["qid"]: q.get("doc_id") or q["qid"] for q in gs.questions}
    qids = set(doc_of)
    systems = {stage: s for r, stage, s in table_systems(cfg.table_design()) if r == retriever}
    row = {"question_set": set_name, "retriever": retriever, "top_k": k, "instrument": instrument}
    values = {}
    for stage, system in systems.items():
        values[stage] = _per_question(cfg, set_name, qrels, gs.rankings.get(system, {}), system, k, qids)
        m = mean_ci(values[stage], doc_of, n_boot, seed)
        row.update({f"{stage}_system": system, stage: m["mean"], f"{stage}_ci_low": m["ci_low"]})
        row.update({f"{stage}_ci_high": m["ci_high"], f"{stage}_n": m["n_questions"]})
        share = None if qrels is None else labelled_share(qrels, gs.rankings.get(system, {}), sorted(qids), k)
        row[f"{stage}_labelled_share"] = share
    c = change(values["reranked"], values["retrieved"], doc_of, n_boot, seed)
    row.update(change=c["mean"], change_ci_low=c["ci_low"], change_ci_high=c["ci_high"])
    row.update(n_questions=c["n_questions"], n_documents=c["n_documents"], unjudged=UNJUDGED[instrument])
    return row


def judge_vs_gold(cfg: Config, sets: dict, reference: dict | None):
    """`grading/judge_vs_gold.csv`'s rows for every question set in `sets` ({name: QuestionSet}),
    Table 1 retriever, top-k and instrument (the reference labels on the golden set only)."""
    import pandas as pd

    rows = []
    for set_name, gs in sets.items():
        for instrument, qrels in _instrument_qrels(set_name, gs, reference).items():
            for retriever in cfg.grading.retrievers:
                for k in cfg.grading.top_k:
                    rows.append(instrument_row(cfg, set_name, gs, instrument, qrels, retriever, k))
    return pd.DataFrame(rows).round(4)


def recompute(cfg: Config, run: QuestionSet, label: str, label_tables=None) -> dict:
    """:func:`write_all` from the stored grades (no model): the golden set's from
    `grading/golden/grades.jsonl` (the rows Table 1 uses, read as the run set's are: `label` is
    the `prompt` field of the first-order rows)."""
    from ..runner.data import load_chunks

    golden = None
    p = cfg.run_dir / names.GOLDEN_GRADES
    if enabled(cfg) and p.is_file():
        from ..lib.judge.validity import mean_of_orders

        golden = golden_inputs(cfg, load_chunks(cfg), run.questions)
        rows = read_jsonl(p)
        first = [r for r in rows if r.get("prompt") == label]
        second = [r for r in rows if r.get("prompt") == cfg.grading.prompt + "_swapped"]
        if golden is not None:
            golden.rows = rows
            golden.used = mean_of_orders(first, second) if cfg.grading.debias == "both_orders" and second else first
    return write_all(cfg, run, golden, lambda q: q, label_tables)


# --------------------------------------------------------------------------- the report's section
SOURCE_CHUNK_VALIDITY = (
    "known but incomplete: another chunk may answer too, and a reranker that ranks it first is counted a loss"
)


def judge_validity_text(relevance: list | None) -> str:
    """What the judge has shown on the in-domain labels (judge_check/relevance.json): each
    boundary's verdict, and whether all of them (which nDCG's graded gains read) are valid."""
    ind = next((m for m in relevance or [] if m.get("run") and m.get("in_domain")), None)
    if ind is None:
        return "not checked in domain (no judge-check source with in_domain: true has run)"
    verdicts = {b: v.get("verdict") for b, v in (ind.get("boundary_verdicts") or {}).items()}
    cuts = {"ge1": "≥1", "ge2": "≥2", "eq3": "=3"}
    listed = ", ".join(f"{cuts.get(b, b)} {v}" for b, v in verdicts.items())
    shown = verdicts and all(v == "valid" for v in verdicts.values())
    head = "valid at every boundary nDCG reads" if shown else "validity not shown at every boundary nDCG reads"
    return f"{head} on {ind.get('source')} ({listed})"


def _cell(row, stage: str) -> str:
    from ..lib.judge.known_gold import fmt

    return fmt(row[stage], row[f"{stage}_ci_low"], row[f"{stage}_ci_high"], signed=stage == "change")


def _changes(rows) -> dict:
    return {
        r["instrument"]: {
            "mean": r["change"],
            "ci_low": r["change_ci_low"],
            "ci_high": r["change_ci_high"],
            "n_questions": int(r["n_questions"]),
        }
        for _, r in rows.iterrows()
    }


def sentences(table, relevance: list | None, k: int) -> list[str]:
    """One sentence per question set and retriever at top-`k` (lib/judge/known_gold.py)."""
    from ..lib.judge.known_gold import disagreement_sentence

    validity = {"known_gold": SOURCE_CHUNK_VALIDITY, "judge": judge_validity_text(relevance)}
    out = []
    for (qset, retriever), rows in table[table.top_k == k].groupby(["question_set", "retriever"], sort=False):
        ref = rows[rows.instrument == "reference"]
        share = ref["reranked_labelled_share"].min() if len(ref) else None
        v = dict(validity)
        if share is not None:
            v["reference"] = f"a large LLM's labels, not people's, labelling a share of {share:.2f} of the top-{k}"
        out.append(f"- *{qset} questions* — " + disagreement_sentence(retriever, k, _changes(rows), v))
    return out


def _golden_beside_run(cfg: Config) -> list[str]:
    """The golden set's Table 1 beside the run set's, as shares graded 2-3 with their CIs."""
    import pandas as pd

    from ..lib.tables import markdown_table

    run_p, gold_p = cfg.run_dir / names.RELEVANT_SHARES, cfg.run_dir / names.GOLDEN_RELEVANT_SHARES
    if not (run_p.is_file() and gold_p.is_file()) or "percent_2_3" not in pd.read_csv(gold_p).columns:
        return []
    keys = ["retriever", "stage", "top_k"]
    cell = lambda d: d.assign(
        v=[
            f"{p:.1f} [{lo:.1f}, {hi:.1f}] (n {n})"
            for p, lo, hi, n in zip(d.percent_2_3, d.ci_low, d.ci_high, d.n_questions)
        ]
    )[keys + ["v"]]
    both = cell(pd.read_csv(run_p)).merge(cell(pd.read_csv(gold_p)), on=keys, suffixes=("_run", "_golden"))
    both.columns = keys + ["run questions: % graded 2-3", "golden questions: % graded 2-3"]
    return [
        "Table 1 on both question sets (% of graded passages the judge grades 2 or 3, 95% two-stage cluster "
        f"bootstrap CI, n questions; the golden set's full tables are in `{names.GOLDEN_GRADING}/`):",
        "",
        markdown_table(both),
        "",
    ]


def _agreement_line(cfg: Config) -> list[str]:
    import pandas as pd

    from ..lib.judge.known_gold import fmt

    p = cfg.run_dir / names.GOLDEN_REFERENCE_AGREEMENT
    if not p.is_file():
        return []
    a = pd.read_csv(p).iloc[0]
    if not a.get("n_pairs"):
        return [f"Pair by pair against the reference labels: {a.get('note')}.", ""]
    k = lambda key: fmt(a[key], a[f"{key}_ci_low"], a[f"{key}_ci_high"])
    cuts = ", ".join(f"{c} {k(f'{b}_kappa')}" for b, c in (("ge1", "≥1"), ("ge2", "≥2"), ("eq3", "=3")))
    return [
        f"Pair by pair against the reference labels ({a['reference']}; an LLM's labels, not people's): "
        f"{int(a['n_pairs'])} graded golden pairs of {int(a['n_queries'])} questions; weighted κ (quadratic) "
        f"{k('kappa_weighted')}, κ at {cuts} (95% bootstrap CIs over questions; counts per label and grade in "
        f"`{names.GOLDEN_REFERENCE_AGREEMENT}`).",
        "",
    ]


def report_lines(cfg: Config) -> list[str]:
    """The report's "The judge against known gold" section: the golden set's Table 1 beside the
    run set's, the judge against the reference labels, the nDCG@k table at the largest k and one
    sentence per question set and retriever; nothing before the grade stage wrote the file."""
    import json

    import pandas as pd

    from ..lib.tables import markdown_table

    p = cfg.run_dir / names.JUDGE_VS_GOLD
    if not p.is_file():
        return []
    table = pd.read_csv(p)
    if table.empty:
        return []
    k = max(table.top_k)
    rel_p = cfg.run_dir / names.JUDGE_RELEVANCE
    relevance = json.loads(rel_p.read_text()) if rel_p.is_file() else None
    shown = table[table.top_k == k].copy()
    for stage in ("retrieved", "reranked", "change"):
        shown[stage] = [_cell(r, stage) for _, r in shown.iterrows()]
    shown["labelled"] = [_share(r) for _, r in shown.iterrows()]
    shown = shown[
        ["question_set", "retriever", "instrument", "retrieved", "reranked", "change", "n_questions"]
        + ["n_documents", "labelled"]
    ]
    return [
        "### The judge against known gold",
        "",
        *_golden_beside_run(cfg),
        *_agreement_line(cfg),
        f"nDCG@{k} of each retriever before and after reranking under three instruments: the judge's grades as "
        "graded qrels, the source chunk (or evidence span) as the retrieval stage scored it, and on the golden "
        "questions the in-domain reference labels. A chunk an instrument did not label counts as gain 0; "
        "`labelled` is the share of the reranked top-k it labels. 95% bootstrap CIs clustered by document; "
        f"every k is in `{names.JUDGE_VS_GOLD}`.",
        "",
        markdown_table(shown),
        "",
        *sentences(table, relevance, k),
        "",
    ]


def _share(row) -> str:
    v = row.get("reranked_labelled_share")
    return "–" if v is None or v != v else f"{v:.2f}"
