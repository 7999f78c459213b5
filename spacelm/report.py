"""`results/<run>/report.md`: the one page a reviewer reads first — every stage's tables and
plots, the models used, the scale, and the run time, gathered from the run folder."""
from __future__ import annotations

import json
from pathlib import Path

from .io import write_text


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8").strip() if p.is_file() else "_(not produced in this run)_"


def _csv_md(p: Path, cols=None, round_to: int = 3) -> str:
    if not p.is_file():
        return "_(not produced in this run)_"
    import pandas as pd

    df = pd.read_csv(p)
    if cols:
        df = df[[c for c in cols if c in df.columns]]
    return df.round(round_to).to_markdown(index=False)


def _img(run: Path, name: str, alt: str) -> str:
    return f"![{alt}](plots/{name})" if (run / "plots" / name).is_file() else ""


def build_report(cfg) -> Path:
    run = cfg.run_dir
    manifest = json.loads((run / "manifest.json").read_text()) if (run / "manifest.json").is_file() else {}
    stages = manifest.get("stages", {})
    smoke = cfg.run_name == "quick" or any(s.get("scale") == "smoke-scale run" for s in stages.values())
    lines = [f"# spacelm report — run `{cfg.run_name}`", ""]
    if smoke:
        lines += ["> **Smoke-scale run** on the embedded CPU models: a handful of questions, meant to show that the "
                  "pipeline works end to end, not to support conclusions. Use `configs/paper.yaml` on a GPU backend "
                  "for the paper's scale.", ""]
    lines += [f"Config `{manifest.get('config_file')}`, git `{manifest.get('git_commit')}`, "
              f"started {manifest.get('started')}, finished {manifest.get('finished', '(running)')}.", ""]
    lines += ["## Run time", "", "| stage | seconds this run | skipped (up to date) | seconds when computed |",
              "|---|---:|---|---:|"]
    for name, s in stages.items():
        computed = s.get("computed_seconds")
        lines.append(f"| {name} | {s.get('wall_seconds', s.get('seconds', 0)):.1f} | {s.get('skipped', False)} | "
                     f"{'' if computed is None else f'{computed:.1f}'} |")
    lines += ["", "## Models", ""]
    for role, ident in manifest.get("models", {}).items():
        for sub, m in (ident.items() if "name" not in ident else [("", ident)]):
            lines.append(f"- {role}{' ' + sub if sub else ''}: `{m.get('name')}` ({m.get('backend', '')}) "
                         f"sha256 `{(m.get('sha256') or '-')[:16]}…`")
    r = cfg.retrieval
    lines += [f"- retrieval: BM25 (bm25s {r.bm25.method}, k1={r.bm25.k1}, b={r.bm25.b}); dense `{r.dense.model}`; "
              f"reranker {r.reranker.kind} `{r.reranker.model}` over the top-{r.pool}", ""]
    ing = stages.get("ingest", {})
    lines += ["## Corpus", "", f"{ing.get('documents', '?')} documents, {ing.get('pages', '?')} pages, "
              f"{ing.get('words', '?')} words; {stages.get('chunk', {}).get('chunks', '?')} chunks of at most "
              f"{cfg.chunking.max_tokens} tokens; garbled-text flags: {ing.get('garbled_flagged', [])}; "
              f"reference sections dropped: {ing.get('references_dropped_chars', '?')} characters.", "",
              _img(run, "chunk_lengths.png", "chunk lengths"), ""]
    syn = stages.get("synth", {})
    lines += ["## Synthetic questions", "", f"{syn.get('generated', '?')} generated, {syn.get('kept', '?')} kept "
              f"(filter: {syn.get('filter', '?')}; few-shot {syn.get('n_fewshot', '?')}, {syn.get('fewshot_sampling', '?')}).", "",
              _csv_md(cfg.synthetic_dir / "retention.csv"), "", _img(run, "synth_generated_kept.png", "questions"), ""]
    ks = r.k_values
    lines += ["## Retrieval (gold = source chunk)", "",
              _csv_md(run / "retrieval" / "summary.csv", ["system", "n_queries"] + [f"{m}@{k}" for k in ks for m in ("recall", "ndcg")]),
              "", _img(run, "recall_at_k.png", "recall at k"), ""]
    lines += ["## Table 1 — LLM relevance grades (%)", "", _read(run / "table1_relevance.md"), "",
              _img(run, "grade_distribution.png", "grade distribution"), "", "Paired test, reranked vs retrieved:", "",
              _csv_md(run / "grading" / "paired_tests.csv"), "", "Judge-graded metrics beside source-chunk metrics:", "",
              _csv_md(run / "grading" / "graded_metrics.csv"), ""]
    if (run / "judge_validity.json").is_file():
        v = json.loads((run / "judge_validity.json").read_text())
        lines += ["### Judge validity", "", f"**{v['verdict']}**", "",
                  f"AUC {v.get('auc')} over {v.get('n_pairs')} pairs (source vs random chunk); "
                  f"source grades {v.get('source_grades')}, random grades {v.get('random_grades')}; "
                  f"order-swap agreement {v.get('order_swap_agreement')}.", ""]
    lines += ["## Table 2 — answer quality under noise (1–5)", "", _read(run / "table2_answer_quality.md"), "",
              _img(run, "answer_scores.png", "answer scores"), _img(run, "noise_curve.png", "noise curve"), ""]
    if (run / "answer_checks.json").is_file():
        c = json.loads((run / "answer_checks.json").read_text())
        lines += [f"Refusal rate by setting: {c['refusal_rate_by_setting']}; citation accuracy by setting: "
                  f"{c['citation_accuracy_by_setting']}; judge vs phrase-based refusal agreement: "
                  f"{c['judge_vs_regex_refusal_agreement']} over {c['judge_vs_regex_refusal_pairs']} answers.", ""]
    lines += ["## Pipelines A / B / C", "", "A = closed book, B = retrieve + generate, C = B + verify and rewrite.", "",
              _csv_md(run / "pipelines.csv"), ""]
    path = run / "report.md"
    write_text(path, "\n".join(lines) + "\n")
    return path
