"""The paper's findings set beside this run's: for each finding, the paper's figure, ours with
its 95% CI, and a verdict the data can carry ("agrees", "contradicts", "cannot tell at this n"),
decided from the Holm-adjusted paired tests of the run's tables; the report adds the verdict
of the judge whose grades produced each figure.

Rules, stated once:
- a directional finding over several cells agrees when every cell's difference is in the
  paper's direction with Holm p < 0.05, contradicts when any cell's is significant the other
  way, and cannot be told otherwise;
- "changes little" agrees when the difference's CI lies within ±`LITTLE` rubric points,
  contradicts when it lies wholly outside, and cannot be told otherwise;
- "high" means a mean of at least `HIGH` on the 1-5 scale (CI wholly above: agrees; wholly
  below: contradicts);
- a level the paper reports with its spread (negative rejection 3.14 ± 1.55) agrees when the
  paper's mean lies inside our CI, and contradicts when it lies outside.
"""
from __future__ import annotations

from typing import Optional

ALPHA = 0.05
LITTLE = 0.25  # rubric points: a change smaller than a quarter point is "little"
HIGH = 4.0
AGREES, CONTRADICTS, CANNOT_TELL, NOT_TESTED = "agrees", "contradicts", "cannot tell at this n", "not tested"
COLUMNS = ["finding", "paper", "this_run", "ci", "verdict", "judge_verdict", "n", "judge", "rule"]


def _num(x) -> Optional[float]:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def direction_verdict(rows: list[dict], signs: list[int]) -> tuple[str, str]:
    """Verdict over cells, each with `diff` and `p_holm`, expected sign +1 / -1 per cell;
    and a count for the reader ("3 of 8 cells significant in the paper's direction")."""
    if not rows:
        return NOT_TESTED, "no cell"
    sig = [(r, s) for r, s in zip(rows, signs) if (_num(r.get("p_holm")) or 1.0) < ALPHA]
    along = sum(1 for r, s in sig if s * r["diff"] > 0)
    against = sum(1 for r, s in sig if s * r["diff"] < 0)
    count = f"{along} of {len(rows)} cells significant in the paper's direction" + \
        (f", {against} against it" if against else "")
    if against:
        return CONTRADICTS, count
    return (AGREES if along == len(rows) else CANNOT_TELL), count


def little_change_verdict(lo: Optional[float], hi: Optional[float], margin: float = LITTLE) -> str:
    if lo is None or hi is None:
        return CANNOT_TELL
    if -margin <= lo and hi <= margin:
        return AGREES
    if lo > margin or hi < -margin:
        return CONTRADICTS
    return CANNOT_TELL


def level_verdict(lo: Optional[float], hi: Optional[float], at_least: Optional[float] = None,
                  inside: Optional[float] = None) -> str:
    if lo is None or hi is None:
        return CANNOT_TELL
    if at_least is not None:
        return AGREES if lo >= at_least else CONTRADICTS if hi < at_least else CANNOT_TELL
    return AGREES if lo <= inside <= hi else CONTRADICTS


def _pm(x, digits: int = 1, unit: str = "") -> str:
    """±x, or a dash when the run's n gives no figure."""
    x = _num(x)
    return "–" if x is None else f"±{x:.{digits}f}{unit}"


def _pp(x: Optional[float]) -> str:
    return "–" if x is None else f"{x:+.1f} pp"


def _ci(lo, hi, unit: str = "") -> str:
    lo, hi = _num(lo), _num(hi)
    return "–" if lo is None or hi is None else f"[{lo:.2f}, {hi:.2f}]{unit}"


def _span(rows: list[dict], fmt: str, unit: str = "") -> str:
    """The cells' 95% CIs in one figure: from the lowest lower bound to the highest upper bound."""
    lows = [v for v in (_num(r.get("ci_low")) for r in rows) if v is not None]
    highs = [v for v in (_num(r.get("ci_high")) for r in rows) if v is not None]
    if not lows or not highs:
        return "–"
    return f"cells' CIs within [{fmt.format(min(lows))}, {fmt.format(max(highs))}]{unit}"


def _range(vals: list[float], fmt: str = "{:+.1f}") -> str:
    vals = [v for v in vals if v is not None]
    return "–" if not vals else fmt.format(min(vals)) + (" to " + fmt.format(max(vals)) if len(vals) > 1 else "")


def table1_findings(tests: list[dict], shares: list[dict], chunk_tokens: int) -> list[dict]:
    """The paper's Table 1 findings from grading/paired_tests.csv and relevant_shares.csv rows."""
    rr = [t for t in tests if t["comparison"] == "reranked - retrieved"]
    out = []

    def cells(measure: str) -> list[dict]:
        return sorted((t for t in rr if t["measure"] == measure), key=lambda t: (t["retriever"], t["top_k"]))

    def row(finding, paper, rows, signs, what, rule):
        verdict, count = direction_verdict(rows, signs)
        out.append({"finding": finding, "paper": paper,
                    "this_run": f"{what} {_range([r['diff'] for r in rows])} pp across {len(rows)} cells; {count}",
                    "ci": _span(rows, "{:+.1f}", " pp"), "verdict": verdict, "n": _n(rows), "judge": "grader", "rule": rule})

    low = cells("share_0_1")
    row("Reranking lowers the share of grades 0 and 1 at every top-k",
        "lower after reranking at every top-k", low, [-1] * len(low), "reranked − retrieved:",
        "every cell lower, Holm p < 0.05")
    top3 = [t for t in cells("share_3") if t["retriever"] == "bm25" and t["top_k"] == 3]
    if top3:
        t = top3[0]
        verdict, _ = direction_verdict([t], [1])
        out.append({"finding": "Reranking raises the share of grade 3 (BM25, top-3)", "paper": "39.66% → 44.76%",
                    "this_run": f"{t['value_a']:.2f}% → {t['value_b']:.2f}% ({_pp(t['diff'])}; Holm p "
                                f"{_fmt_p(t['p_holm'])}; detectable at this n: {_pm(t['mde'], 1, ' pp')})",
                    "ci": _ci(t["ci_low"], t["ci_high"], " pp"), "verdict": verdict, "n": t["n_questions"],
                    "judge": "grader", "rule": "higher, Holm p < 0.05"})
    high = cells("share_3")
    row("Reranking raises the share of grade 3 (every retriever and top-k)", "higher after reranking", high,
        [1] * len(high), "reranked − retrieved:", "every cell higher, Holm p < 0.05")
    two = cells("share_2")
    row("Retrieved lists hold more grade 2 than reranked ones, except at top-10",
        "more grade 2 before reranking at top-3/5/7, not at top-10", two,
        [1 if t["top_k"] >= 10 else -1 for t in two], "reranked − retrieved:",
        "lower at top-k < 10 and higher at top-10, each Holm p < 0.05")
    dense = sorted((t for t in tests if t["comparison"] == "dense - bm25"), key=lambda t: t["top_k"])
    verdict, count = direction_verdict(dense, [1] * len(dense))
    out.append({"finding": "The judge prefers the dense retriever to BM25", "paper": "dense graded higher",
                "this_run": f"mean grade dense − bm25: {_range([t['diff'] for t in dense], '{:+.2f}')} across "
                            f"top-k {', '.join(str(t['top_k']) for t in dense)}; {count}" if dense else "not compared",
                "ci": _span(dense, "{:+.2f}"),
                "verdict": verdict, "n": _n(dense), "judge": "grader",
                "rule": "dense higher at every top-k, Holm p < 0.05"})
    above = [s for s in shares if (_num(s["ci_low"]) or 0) > 90]
    below = [s for s in shares if (_num(s["ci_high"]) or 100) < 90]
    half = len(shares) / 2
    verdict = NOT_TESTED if not shares else AGREES if len(above) > half else CONTRADICTS if len(below) > half \
        else CANNOT_TELL
    out.append({"finding": "Grades 2-3 exceed 90% in most cells", "paper": "above 90% in most cells",
                "this_run": f"{_range([s['percent_2_3'] for s in shares], '{:.1f}')}% across {len(shares)} cells; "
                            f"{len(above)} wholly above 90%, {len(below)} wholly below",
                "ci": f"lowest CI bound {_range([_num(s['ci_low']) for s in shares], '{:.1f}').split(' to ')[0]}%, "
                      f"highest {_range([_num(s['ci_high']) for s in shares], '{:.1f}').split(' to ')[-1]}%"
                if shares else "–", "verdict": verdict, "n": _n(shares), "judge": "grader",
                "rule": "more than half of the cells with the CI above 90% (below: contradicts)"})
    if chunk_tokens >= 512:
        row("512-token chunks: reranking raises top-3 grade 3", "42.54% → 48.37%",
            [t for t in high if t["top_k"] == 3], [1] * sum(t["top_k"] == 3 for t in high), "reranked − retrieved at top-3:",
            "higher, Holm p < 0.05")
    else:
        out.append({"finding": "512-token chunks: reranking raises top-3 grade 3", "paper": "42.54% → 48.37%",
                    "this_run": f"not run: chunks here are {chunk_tokens} tokens (the embedded dense model reads at most "
                                "256 word pieces)", "ci": "–", "verdict": NOT_TESTED, "n": 0, "judge": "grader",
                    "rule": "needs chunking.max_tokens ≥ 512 and a dense model that reads them"})
    return out


def table2_findings(long: list[dict], tests: list[dict]) -> list[dict]:
    """The paper's Table 2 findings from table2_answer_quality.csv and table2_tests.csv rows."""
    out = []
    paper_change = {"faithfulness": "4.42 → 4.41", "relevance": "4.44 → 4.39"}
    for metric, paper in paper_change.items():
        t = next((t for t in tests if t["metric"] == metric and t["setting_b"].endswith("_wrong")
                  and not t["setting_b"].endswith("only")), None)
        if t is None:
            continue
        lo, hi = _num(t["ci_low"]), _num(t["ci_high"])
        out.append({"finding": f"{metric.capitalize()} changes little from standard to {t['setting_b'].replace('_', ' ')}",
                    "paper": paper, "this_run": f"{t['mean_a']:.2f} → {t['mean_b']:.2f} ({t['diff']:+.2f}; Holm p "
                                                f"{_fmt_p(t['p_holm'])}; detectable at this n: "
                                                f"{_pm(t['mde'], 2)})",
                    "ci": _ci(lo, hi), "verdict": little_change_verdict(lo, hi), "n": t["n_questions"], "judge": metric,
                    "rule": f"difference's CI within ±{LITTLE} points agrees, wholly outside contradicts"})

    def level(metric: str):
        rows = [r for r in long if r["metric"] == metric and _num(r.get("mean")) is not None]
        return rows[0] if rows else None

    nr = level("noise_robustness")
    if nr:
        lo, hi = _num(nr["ci_low"]), _num(nr["ci_high"])
        out.append({"finding": "Noise robustness is high", "paper": "4.87", "this_run": f"{nr['mean']:.2f}",
                    "ci": _ci(lo, hi), "verdict": level_verdict(lo, hi, at_least=HIGH), "n": nr["n"],
                    "judge": "noise_robustness", "rule": f"'high' = mean ≥ {HIGH:g} of 5: CI wholly above agrees"})
    neg = level("negative_rejection")
    if neg:
        lo, hi = _num(neg["ci_low"]), _num(neg["ci_high"])
        out.append({"finding": "Negative rejection", "paper": "3.14 ± 1.55",
                    "this_run": f"{neg['mean']:.2f} {_pm(neg.get('std'), 2)} (SD)", "ci": _ci(lo, hi),
                    "verdict": level_verdict(lo, hi, inside=3.14), "n": neg["n"], "judge": "negative_rejection",
                    "rule": "the paper's mean inside our CI agrees, outside contradicts"})
    return out


def _n(rows: list[dict]) -> str:
    ns = sorted({int(r["n_questions"]) for r in rows if _num(r.get("n_questions")) is not None})
    return "–" if not ns else f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"


def _fmt_p(p) -> str:
    p = _num(p)
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def judge_verdicts(relevance: Optional[list], controls: Optional[list]) -> dict:
    """{judge: verdict text}: "grader" (the 0-3 relevance judge) from the labelled sources, each
    answer rubric and binary judge from its controls."""
    out = {}
    if relevance:
        ran = [m for m in relevance if m.get("run")]
        out["grader"] = "; ".join(f"{m['source']}: {m['verdict']}" for m in ran) or "unchecked"
    for r in controls or []:
        out[r["rubric"]] = r["verdict"]
    return out


def paper_vs_run(rows: list[dict], verdicts: dict) -> list[dict]:
    """The finding rows with the verdict of the judge behind each, unchecked where none ran."""
    return [dict(r, judge_verdict=verdicts.get(r["judge"], "unchecked")) for r in rows]
