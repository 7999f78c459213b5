"""The report's reading of the chunk-size study at equal reading budget (chunk_sizes/equal_budget.csv,
equal_budget_differences.csv, written by stage chunk-sizes) and of its Table 1 gate."""

from __future__ import annotations

from pathlib import Path

from .. import names
from ..tables import markdown_table


def _cell(row, measure: str, with_tokens: bool) -> str:
    lo, hi = row[f"{measure}_ci_low"], row[f"{measure}_ci_high"]
    ci = "" if lo != lo or hi != hi else f" [{lo:.2f}, {hi:.2f}]"
    return f"{row[measure]:.3f}{ci}" + (f", {row['mean_tokens_read']:,.0f} tokens" if with_tokens else "")


def _cut_label(kind: str, b: int) -> str:
    return f"{b:,} reader tokens" if kind == "tokens" else f"top-{b} (equal k)"


def measure_table(sub, measure: str):
    """Rows: the cuts (reader budgets, then k, labelled); columns: the sizes; cells "0.727 [0.62,
    0.82]", with the mean tokens read where k is equal (so the unequal reading shows)."""
    import pandas as pd

    sizes = sorted(set(sub["chunk_size"]))
    rows = []
    for (kind, b), g in sub.groupby(["budget_kind", "budget"], sort=False):
        by = {r["chunk_size"]: r for r in g.to_dict("records")}
        cells = {f"{s}-token chunks": _cell(by[s], measure, kind == "k") if s in by else "–" for s in sizes}
        rows.append({"reading": _cut_label(kind, b), **cells})
    return pd.DataFrame(rows)


def _best(sub, kind: str) -> dict:
    """{cut: the size with the highest hit rate} at cuts of kind `kind`."""
    s = sub[sub["budget_kind"] == kind]
    return {b: int(g.loc[g["hit_rate"].idxmax(), "chunk_size"]) for b, g in s.groupby("budget")}


def _where(best: dict, unit: str) -> str:
    by_size: dict = {}
    for b, size in best.items():
        by_size.setdefault(size, []).append(f"{b:,}")
    return "; ".join(f"{size}-token chunks ({unit} {', '.join(bs)})" for size, bs in by_size.items())


def agreement_line(sub) -> str:
    """Where the highest hit rate lies at equal reader tokens and at equal k, and whether the two
    readings agree (point estimates; the differences table says which gaps their intervals support)."""
    tokens, k = _best(sub, "tokens"), _best(sub, "k")
    if not tokens or not k:
        return ""
    text = (
        f"Highest hit rate (point estimates) at equal reader tokens: {_where(tokens, 'budget')}; at equal k: "
        f"{_where(k, 'k')}. "
    )
    a, b = set(tokens.values()), set(k.values())
    if a.isdisjoint(b):
        return text + (
            "**The two readings disagree**: which size reads best depends on whether the reader's tokens or the "
            "number of chunks is held equal, and only the equal-budget reading compares the same amount of text."
        )
    if a == b == {next(iter(a))}:
        return text + "The two readings agree on the best size."
    return text + "The two readings agree only in part: the best size moves with the budget or with k."


def _difference_table(d):
    import pandas as pd

    d = d[d["budget_kind"] == "tokens"]
    return pd.DataFrame(
        {
            "reader tokens": d["budget"].map(lambda b: f"{b:,}"),
            "measure": d["measure"].str.replace("_", " "),
            "sizes": [f"{b} − {a}" for a, b in zip(d["size_a"], d["size_b"])],
            "n (questions / documents)": [f"{n} / {m}" for n, m in zip(d["n_questions"], d["n_documents"])],
            "difference [95% CI]": [
                f"{x:+.3f}" + ("" if lo != lo else f" [{lo:+.2f}, {hi:+.2f}]")
                for x, lo, hi in zip(d["diff"], d["ci_low"], d["ci_high"])
            ],
            "p (Holm)": d["p_holm"].map(lambda p: "–" if p != p else "< 0.0001" if p < 1e-4 else f"{p:.2g}"),
        }
    )


def _set_lines(table, diffs, qs: str, system: str) -> list[str]:
    sub = table[(table["questions"] == qs) & (table["system"] == system)]
    n = f"n = {int(sub['n_questions'].max())} questions from {int(sub['n_documents'].max())} documents"
    lines = []
    for measure in ("hit_rate", "coverage"):
        lines += [f"{measure.replace('_', ' ').capitalize()}, {qs} questions, `{system}` ({n}):", ""]
        lines += [markdown_table(measure_table(sub, measure)), ""]
    lines += [agreement_line(sub), ""]
    d = diffs[(diffs["questions"] == qs) & (diffs["system"] == system)] if not diffs.empty else diffs
    if not d.empty:
        lines += [
            f"Each size against {int(d['size_a'].iloc[0])} tokens at equal reader tokens ({qs} questions, `{system}`; "
            "paired over questions; interval: cluster bootstrap over documents; p: cluster-robust t over documents, "
            "Holm within the question set and measure):",
            "",
            markdown_table(_difference_table(d)),
            "",
        ]
    return lines


def report_lines(run: Path) -> list[str]:
    """The report's equal-budget part of "Chunk sizes" from the run folder `run`: per question set
    and system, hit rate and coverage at each reader budget and at equal k (labelled), whether the
    two readings agree, the differences against the reference size, and the plot."""
    import pandas as pd

    path = run / names.CHUNK_SIZES_EQUAL_BUDGET
    if not path.is_file():
        return []
    table = pd.read_csv(path)
    dpath = run / names.CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES
    diffs = pd.read_csv(dpath) if dpath.is_file() else pd.DataFrame()
    rules = table.loc[table["budget_kind"] == "tokens", "rule"]
    rule = rules.iloc[0] if len(rules) else ""
    lines = [
        "### At equal reading budget",
        "",
        f"Each ranking read as a reader holding a fixed number of tokens reads it: {rule}. Beside it, "
        "the same measures at equal k (the top-k chunks; larger chunks then give the reader more text: the mean "
        "tokens read are shown in those rows). Hit rate: share of questions for which a read chunk shares at "
        "least one character with the evidence span; coverage: share of the span's characters read. 95% "
        "intervals: two-stage cluster bootstrap over documents (`chunk_sizes/equal_budget.csv`, column "
        "`budget_kind` = `tokens` or `k`).",
        "",
    ]
    for qs in dict.fromkeys(table["questions"]):
        for system in dict.fromkeys(table.loc[table["questions"] == qs, "system"]):
            lines += _set_lines(table, diffs, qs, system)
    if (run / names.PLOT_CHUNK_BUDGET).is_file():
        lines += [f"![hit rate and coverage at equal reader tokens and at equal k]({names.PLOT_CHUNK_BUDGET})", ""]
    return lines


def gate_lines(gate: dict) -> list[str]:
    """One line per chunk size whose Table 1 was left ungraded (the stage's `table1_gate`), with the reason."""
    return [
        f"Table 1 at {size} tokens was not graded: {g['reason']}.\n" for size, g in gate.items() if not g.get("graded")
    ]
