"""What a run found, as facts: the figures a reader meets first (templates/found.md words them).

Each fact comes from an instrument that needs no judge or has measured standing: retrieval against
each question's source chunk (span gold), Table 1 read through the assessor's labels, the
assessor's screening of the written questions, the embedded judge measured against the labels, and
the count of the paper's findings per verdict. A fact whose file the run lacks is None; nothing here
words a sentence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import names
from ..answer.answers import RUBRIC_NEGATIVE, RUBRIC_NOISE, RUBRICS_WITH_RELEVANT
from .findings import _num as _f


@dataclass(frozen=True)
class Difference:
    """b − a of one measure over the same questions, with its 95% interval."""

    a: str
    b: str
    measure: str
    value_a: float
    value_b: float
    diff: float
    ci_low: float
    ci_high: float
    n: int
    n_clusters: int
    cluster: str  # what the interval resamples: documents, source chunks


@dataclass(frozen=True)
class Level:
    """One measure's mean in one setting, with its 95% interval (Table 2's cells)."""

    measure: str
    setting: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass(frozen=True)
class Found:
    """The opening section's facts (templates/found.md)."""

    run: str
    retrieval: list[Difference] = field(default_factory=list)  # nDCG@10 against the source chunk
    reranker: dict | None = None  # what reranked the lists: model, checkpoint sha256, BM25's weight
    table1: list[Difference] = field(default_factory=list)  # reranked − retrieved through labels, top-k
    table1_top_k: int | None = None
    golden_table1: list[Difference] = field(default_factory=list)  # the same on the golden samples' questions
    screening: dict | None = None  # grading/question_screening.json
    judge: dict | None = None  # the embedded judge against the labels at grade >= 2
    table2: list[Level] = field(default_factory=list)  # the assessor's rubric scores per setting
    table2_changes: list[Difference] = field(default_factory=list)  # setting b − standard, per rubric
    negative_premise: dict | None = None  # the assessor's verdicts on the negative setting's answers
    answer_measures: list[Level] = field(default_factory=list)  # no judge: refusals, leakage, citations
    answer_judge: dict = field(default_factory=dict)  # {rubric: the embedded judge against the labels}
    verdicts: dict = field(default_factory=dict)  # {verdict: findings} of the paper's findings
    underpowered: int = 0  # findings whose verdict waits on n the run lacks


def retrieval_differences(run: Path, pairs=(("bm25", "dense"), ("bm25", "bm25+rerank"), ("dense", "dense+rerank"))):
    """nDCG@10 against each question's source chunk, per pair of systems: b − a over the questions
    both ranked, with a cluster-robust interval over documents (retrieval/per_query.jsonl)."""
    from ..stats import paired_difference

    p = run / names.RETRIEVAL_PER_QUERY
    if not p.is_file():
        return []
    score: dict = {}
    doc: dict = {}  # a question's cluster: the document of its source chunk (`doc:index`)
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("ndcg@10") is not None:
                score.setdefault(r["system"], {})[r["qid"]] = float(r["ndcg@10"])
                doc[r["qid"]] = str(r.get("source_chunk_id") or r["qid"]).rsplit(":", 1)[0]
    out = []
    for a, b in pairs:
        if a not in score or b not in score:
            continue
        qids = sorted(set(score[a]) & set(score[b]))
        if len(qids) < 2:
            continue
        docs = [doc[q] for q in qids]
        d = paired_difference([score[a][q] for q in qids], [score[b][q] for q in qids], docs)
        out.append(
            Difference(
                a,
                b,
                "ndcg@10",
                sum(score[a][q] for q in qids) / len(qids),
                sum(score[b][q] for q in qids) / len(qids),
                d["diff"],
                d["ci_low"],
                d["ci_high"],
                len(qids),
                d["n_clusters"],
                "documents",
            )
        )
    return out


def table1_differences(
    run: Path, measures=("mean_grade", "share_0_1", "share_3"), tests: str = names.LABEL_PAIRED_TESTS
) -> tuple[list, int | None]:
    """Reranked − retrieved at the smallest top-k through the assessor's labels, per retriever and
    measure (`tests`: the run set's grading/labels/paired_tests.csv, or the golden set's), only
    where no passage of the cells lacks a label."""
    import pandas as pd

    p = run / tests
    if not p.is_file():
        return [], None
    t = pd.read_csv(p)
    t = t[t["comparison"] == "reranked - retrieved"]
    if t.empty:
        return [], None
    k = int(t["top_k"].min())
    out = []
    for r in t[(t["top_k"] == k) & t["measure"].isin(measures)].to_dict("records"):
        if r.get("holes", 0) or pd.isna(r.get("ci_low")):
            continue
        out.append(
            Difference(
                f"{r['retriever']}",
                f"{r['retriever']}+rerank",
                r["measure"],
                float(r["value_a"]),
                float(r["value_b"]),
                float(r["diff"]),
                float(r["ci_low"]),
                float(r["ci_high"]),
                int(r["n_questions"]),
                int(r["n_clusters"]),
                str(r.get("cluster", "document")) + "s",
            )
        )
    order = {m: i for i, m in enumerate(measures)}
    return sorted(out, key=lambda d: (d.a, order[d.measure])), k


RUBRICS = (*RUBRICS_WITH_RELEVANT, RUBRIC_NOISE, RUBRIC_NEGATIVE)  # the paper's Table 2 order
SETTINGS = ("standard", "3_wrong", "5_wrong", "5_wrong_only")


def _rows(path: Path) -> list[dict]:
    import pandas as pd

    return pd.read_csv(path).to_dict("records") if path.is_file() else []


def table2_levels(run: Path) -> list[Level]:
    """The assessor's mean score per rubric and setting (table2_answer_quality.csv, rows whose
    instrument is the labels and that no answer lacks), in rubric then setting order."""
    out = []
    for r in _rows(run / names.TABLE2):
        if r.get("instrument") != "labels" or r.get("holes", 0) or _f(r.get("mean")) is None:
            continue
        out.append(Level(r["metric"], r["setting"], _f(r["mean"]), _f(r["ci_low"]), _f(r["ci_high"]), int(r["n"])))
    order = lambda x: (
        RUBRICS.index(x.measure) if x.measure in RUBRICS else 9,
        SETTINGS.index(x.setting) if x.setting in SETTINGS else 9,
    )
    return sorted(out, key=order)


def table2_changes(run: Path) -> list[Difference]:
    """Each setting against the standard one through the labels (answer_labels/table2_tests.csv),
    where no answer of the pair lacks a label."""
    out = []
    for r in _rows(run / names.LABEL_TABLE2_TESTS):
        if r.get("holes", 0) or _f(r.get("ci_low")) is None:
            continue
        out.append(
            Difference(
                r["setting_a"],
                r["setting_b"],
                r["metric"],
                _f(r["mean_a"]),
                _f(r["mean_b"]),
                _f(r["diff"]),
                _f(r["ci_low"]),
                _f(r["ci_high"]),
                int(r["n_questions"]),
                int(r["n_clusters"]),
                str(r.get("cluster", "document")) + "s",
            )
        )
    return out


def answer_measures(run: Path) -> list[Level]:
    """Measures that need no judge, per setting of Table 2 (answer_measures.csv): the share of
    answers that refuse (by phrase) and of answers holding a word trigram of an injected passage
    that the source lacks (leakage)."""
    out = []
    for r in _rows(run / names.ANSWER_MEASURES):
        if r.get("pipeline", "table2") != "table2":
            continue
        # (measure, its interval's column prefix, its denominator)
        for m, ci, n in (("refused_phrase", "refused_phrase", "n"), ("leakage_answers", "leakage", "n_with_noise")):
            if _f(r.get(m)) is not None and _f(r.get(n)):
                low, high = _f(r.get(f"{ci}_ci_low")), _f(r.get(f"{ci}_ci_high"))
                out.append(Level(m, r["setting"], _f(r[m]), low, high, int(r[n])))
    order = lambda x: (x.measure, SETTINGS.index(x.setting) if x.setting in SETTINGS else 9)
    return sorted(out, key=order)


def answer_judge_against_labels(run: Path) -> dict:
    """{rubric: n, bias (judge − labels) with its interval, Spearman} of the embedded answer judge
    on the answers both scored (answer_labels/judges_vs_labels.json)."""
    p = run / names.ANSWER_JUDGES_VS_LABELS
    if not p.is_file():
        return {}
    d = json.loads(p.read_text(encoding="utf-8"))
    return {r: d[r] for r in RUBRICS if isinstance(d.get(r), dict) and d[r].get("n")}


def judge_against_labels(run: Path) -> dict | None:
    p = run / names.JUDGE_VS_LABELS
    if not p.is_file():
        return None
    d = json.loads(p.read_text(encoding="utf-8"))
    agree = d.get("agreement") or {}
    ge2 = (agree.get("boundaries") or {}).get("ge2") or {}
    if ge2.get("kappa") is None:
        return None
    return {
        "n_pairs": agree.get("n_pairs"),
        "kappa": ge2.get("kappa"),
        "kappa_ci": ge2.get("kappa_ci"),
        "auc": agree.get("auc"),
        "auc_ci": agree.get("auc_ci"),
        "judge_relevant": ge2.get("n_judge"),
        "labels_relevant": ge2.get("n_label"),
    }


def verdict_counts(rows: list[dict]) -> tuple[dict, int]:
    """{verdict: findings} over the paper's findings (one per finding: its whole-scope row), and
    how many wait on questions the run lacks (reason "underpowered")."""
    by_id: dict = {}
    for r in rows:
        if r.get("question_set", "run") != "run":
            continue
        by_id.setdefault(r["id"], []).append(r)
    counts: dict = {}
    under = 0
    for rs in by_id.values():
        whole = next((r for r in rs if r.get("scope") in ("all cells", "all top-k")), rs[-1])
        counts[whole["verdict"]] = counts.get(whole["verdict"], 0) + 1
        under += str(whole.get("verdict_reason") or "").startswith("underpowered")
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])), under


def reranker_of(manifest: dict, model: str) -> dict:
    """The reranker a run used: its model, and for one the suite trained, the checkpoint's sha256 and
    the weight of BM25's score mixed into its own (0: the cross-encoder's score alone)."""
    stage = (manifest.get("stages") or {}).get("train-reranker") or {}
    return {
        "model": model,
        "sha256": (stage.get("model_identity") or {}).get("sha256"),
        "bm25_weight": stage.get("bm25_weight", 0.0) if stage else None,
    }


def found(run: Path, run_name: str, reranker_model: str | None = None) -> Found:
    """The facts of `run`'s opening section."""
    run = Path(run)
    man_p = run / names.MANIFEST
    manifest = json.loads(man_p.read_text(encoding="utf-8")) if man_p.is_file() else {}
    t1, k = table1_differences(run)
    screen_p = run / names.QUESTION_SCREENING
    screening = json.loads(screen_p.read_text(encoding="utf-8")) if screen_p.is_file() else None
    rows_p = run / names.FINDINGS
    rows = json.loads(rows_p.read_text(encoding="utf-8")) if rows_p.is_file() else []
    rows = rows if isinstance(rows, list) else []
    counts, under = verdict_counts(rows)
    premise = next((r["premise"] for r in rows if isinstance(r.get("premise"), dict)), None)
    return Found(
        run=run_name,
        retrieval=retrieval_differences(run),
        reranker=reranker_of(manifest, reranker_model) if reranker_model else None,
        table1=t1,
        table1_top_k=k,
        golden_table1=table1_differences(run, tests=names.GOLDEN_LABEL_PAIRED_TESTS)[0],
        screening=screening if screening and screening.get("screened") else None,
        judge=judge_against_labels(run),
        table2=table2_levels(run),
        table2_changes=table2_changes(run),
        negative_premise=premise,
        answer_measures=answer_measures(run),
        answer_judge=answer_judge_against_labels(run),
        verdicts=counts,
        underpowered=under,
    )
