"""The chunk-size study at equal reading budget (part of stage chunk-sizes).

At equal k a large chunk hands the reader more text than a small one, so recall and nDCG at k
favour large chunks by construction. Here every ranking is cut the way a reader with a fixed
number of tokens would read it (`lib/retrieval/budget.py` states the rule), and the same
measures are given at equal k beside it, each row labelled by `budget_kind` (`tokens` or `k`).

Writes `chunk_sizes/equal_budget.csv` (per size, question set, system and cut: hit rate and
coverage of the evidence span with 95% cluster-bootstrap intervals over documents, chunks and
tokens read), `chunk_sizes/equal_budget_differences.csv` (each size against the reference size,
paired over questions, clustered by document) and the plot `plots/chunk_sizes_budget.png`."""

from __future__ import annotations

from ..config import Config
from ..lib import names
from ..lib.io import write_dataframe


def reference_size(sizes) -> int:
    """The size the others are compared with: the follow-up study's 512 tokens when the study has
    it, else the smallest size."""
    return 512 if 512 in sizes else min(sizes)


def deep_rankings(systems: dict, questions: list[dict], chunks: list, budget: int, rankings: dict) -> dict:
    """{system: {qid: [chunk_id, ...]}} long enough for a reader of `budget` tokens: a first-stage
    system is searched again as deep as the budget can need (`budget_depth`); a reranked system keeps
    its reranked pool and continues with its first stage's order beyond it (when the study runs that
    first stage), since a reader who finishes the pool reads on down the first-stage list."""
    from ..lib.retrieval.budget import budget_depth

    depth = budget_depth([c.n_tokens for c in chunks], budget)
    texts = [q["question"] for q in questions]
    out = {}
    for name, ranked in rankings.items():
        have = {q: [c for c, _ in r] for q, r in ranked.items()}
        short = any(len(v) < depth for v in have.values())
        if short and not name.endswith("+rerank") and name in systems:
            have = {q["qid"]: [c for c, _ in r] for q, r in zip(questions, systems[name].search(texts, depth))}
        out[name] = have
    for name in [n for n in out if n.endswith("+rerank")]:
        first = out.get(name.removesuffix("+rerank"), {})
        out[name] = {q: _continued(v, first.get(q, [])) for q, v in out[name].items()}
    return out


def _continued(ranked: list, after: list) -> list:
    seen = set(ranked)
    return ranked + [c for c in after if c not in seen]


def _cuts(k_values, budgets) -> list[tuple[str, int]]:
    return [("tokens", b) for b in sorted(budgets)] + [("k", k) for k in sorted(k_values)]


def question_rows(r, k_values, budgets) -> list[dict]:
    """Per question, system and cut of one size and question set (`chunk_sizes.SizeRetrieval` with
    its `reading` rankings): hit, coverage, chunks and tokens read, and the question's document."""
    from ..lib.retrieval.budget import read_top_k, read_within_budget, reading
    from ..lib.retrieval.span_gold import ChunkSpan
    from ..runner.data import question_spans

    spans = question_spans(r.questions)
    by_id = {c.chunk_id: ChunkSpan(c.chunk_id, c.doc_id, c.char_start, c.char_end) for c in r.chunks}
    tokens = {c.chunk_id: c.n_tokens for c in r.chunks}
    rows = []
    for system, per_q in (r.reading or {}).items():
        for q in (q for q in r.questions if q["qid"] in spans):
            ranked = per_q.get(q["qid"], [])
            for kind, b in _cuts(k_values, budgets):
                read = read_within_budget(ranked, tokens, b) if kind == "tokens" else read_top_k(ranked, b)
                ended = len(read) == len(ranked) if kind == "tokens" else len(ranked) < b
                seen = reading(spans[q["qid"]], read, by_id, tokens, ended)
                key = {"chunk_size": r.size, "questions": r.question_set, "system": system}
                rows.append({**key, "budget_kind": kind, "budget": b, "qid": q["qid"], "doc_id": q["doc_id"]})
                rows[-1].update(seen._asdict())
    return rows


_CELL = ["chunk_size", "questions", "system", "budget_kind", "budget"]


def budget_table(rows: list[dict], n_boot: int, seed: int):
    """One row per size, question set, system and cut (`lib.retrieval.budget.summarise`), with the
    rule that cut the ranking."""
    import pandas as pd

    from ..lib.retrieval.budget import RULES, summarise

    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[c] for c in _CELL), []).append(r)
    out = [{**dict(zip(_CELL, key)), **summarise(g, n_boot, seed), "rule": RULES[key[3]]} for key, g in groups.items()]
    return pd.DataFrame(out)


def budget_differences(rows: list[dict], sizes, n_boot: int, seed: int):
    """Each size against the reference size (:func:`reference_size`) per question set, system and
    cut, over the questions placed at both: differences in hit rate and coverage (size_b − size_a),
    their 95% cluster-bootstrap intervals over documents, cluster-robust t p-values, Holm-adjusted
    within each question set, cut kind and measure."""
    import pandas as pd

    from ..lib.retrieval.budget import paired_differences
    from ..lib.stats import holm

    ref = reference_size(sizes)
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["chunk_size"], r["questions"], r["system"], r["budget_kind"], r["budget"]), {})[
            r["qid"]
        ] = r
    out = []
    for (size, qs, system, kind, b), per_q in cells.items():
        base = cells.get((ref, qs, system, kind, b))
        if size == ref or base is None:
            continue
        for d in paired_differences(base, per_q, n_boot, seed):
            cell = {"questions": qs, "system": system, "budget_kind": kind, "budget": b}
            out.append({**cell, "size_a": ref, "size_b": size, **d})
    table = pd.DataFrame(out)
    if not table.empty:
        table["p_holm"] = float("nan")
        for _, idx in table.groupby(["questions", "budget_kind", "measure"]).groups.items():
            table.loc[idx, "p_holm"] = [float("nan") if p is None else p for p in holm(list(table.loc[idx, "p_value"]))]
    return table


def compute(cfg: Config, retrieval: list) -> tuple:
    """(the equal-budget table, the differences) of the study's evaluations."""
    cs, n_boot = cfg.chunk_study, cfg.grading.n_bootstrap
    rows = [row for r in retrieval for row in question_rows(r, cfg.retrieval.k_values, cs.budgets)]
    return budget_table(rows, n_boot, cfg.seed), budget_differences(rows, cs.sizes, n_boot, cfg.seed)


def write(cfg: Config, table, differences, out) -> None:
    from ..lib.report.plots import chunk_budget_plot

    write_dataframe(table.round(4), out(cfg.run_dir / names.CHUNK_SIZES_EQUAL_BUDGET))
    if differences is not None and not differences.empty:
        write_dataframe(differences.round(4), out(cfg.run_dir / names.CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES))
    if not table.empty:
        chunk_budget_plot(table, plot_system(cfg), out(cfg.run_dir / names.PLOT_CHUNK_BUDGET))


def plot_system(cfg: Config) -> str:
    """The system the plot shows: the first of the study's systems."""
    return cfg.chunk_study.systems[0]


def outputs(cfg: Config) -> list:
    r = cfg.run_dir
    out = [r / names.CHUNK_SIZES_EQUAL_BUDGET, r / names.PLOT_CHUNK_BUDGET]
    if len(cfg.chunk_study.sizes) > 1:
        out.append(r / names.CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES)
    return out
