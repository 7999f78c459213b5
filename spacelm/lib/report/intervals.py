"""How each run table's intervals (and tests) are computed, in words, for the manifest
(`interval_methods`, recorded by spacelm/runner/manifest.py beside the files)."""

from __future__ import annotations

from pathlib import Path

from .. import names

INTERVAL_METHODS = {  # file -> how its intervals (and tests) are computed; recorded in the manifest
    names.TABLE1: "pooled share",
    names.RELEVANT_SHARES: "pooled share",
    names.PAIRED_TESTS: "mean",
    names.TABLE2: "mean",
    names.TABLE2_TESTS: "mean",
    names.PIPELINES_TABLE: "proportion",
    names.ANSWERABILITY: "proportion",
    names.CLAIMS: "pooled share",
    names.PLOT_RECALL: "mean",
    names.PLOT_REFUSAL_SWEEP: "proportion",
}


def interval_methods(run: Path | None = None) -> dict:
    """{run file: interval method in words} (spacelm.lib.stats.INTERVALS); F1 in
    answerability.csv is a pooled ratio and uses the cluster bootstrap."""
    from ..stats import INTERVALS

    out = {f: INTERVALS[k] for f, k in INTERVAL_METHODS.items()}
    for f in (names.PAIRED_TESTS, names.TABLE2_TESTS):
        out[f] += "; test: cluster-robust t, Holm within each `family`"
    out[names.ANSWERABILITY] += "; refusal_f1: " + INTERVALS["pooled share"]
    if run is None or (run / names.FACT_CHECK_VERDICTS).is_file():  # not in a run made before the table
        out[names.FACT_CHECK_VERDICTS] = INTERVALS["proportion"]
    if run is None or (run / names.ANSWER_MEASURES).is_file():
        out[names.ANSWER_MEASURES] = INTERVALS["proportion"]
    out[names.JUDGE_CONTROLS] = "Wilson score interval (each control its own pair)"
    out[names.PLOT_NOISE] = f"faithfulness: {INTERVALS['mean']}; refusal share: {INTERVALS['proportion']}"
    out[names.JUDGE_RELEVANCE] = "percentile bootstrap over queries (the pairs of one query move together)"
    sig = run / names.RETRIEVAL_SIGNIFICANCE if run is not None else None
    clustered = sig is None or not sig.is_file() or "cluster" in sig.read_text(encoding="utf-8")
    out[names.RETRIEVAL_SIGNIFICANCE] = (
        "cluster-robust paired t over source chunks (p-value and mde; means and wins from ranx)"
        if clustered
        else "ranx paired Student t over queries, not clustered by source chunk (a run made before the clustered test)"
    )
    return out
