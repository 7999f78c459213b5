"""Stage 5, answer: answers under injected noise judged 1–5 (the paper's Table 2), citations,
refusals, binary judges, and pipelines A/B/C. The generator's phase (answers, then the
verification rewrites) runs and releases its model before the judge's phase starts, so one
model is in memory at a time."""
from __future__ import annotations

import time

import numpy as np

from ..config import Config
from ..lib.answers import (build_items, citation_check, generate, is_refusal, judge_binary, judge_rubrics,
                           pipelines_table, settings, table2, table2_wide, verify)
from ..lib.io import write_dataframe, write_json, write_jsonl, write_text
from ..lib.names import scale
from ..lib.relevance import select_questions
from .base import Stage, execute
from .data import chunks_path, load_chunks, load_questions, load_rankings, questions_path, rankings_path


def outputs(cfg: Config):
    d = cfg.run_dir
    return [d / "table2_answer_quality.csv", d / "table2_answer_quality.md", d / "table2_answer_quality.tex",
            d / "answers.jsonl", d / "pipelines.csv", d / "answer_checks.json", d / "plots" / "answer_scores.png",
            d / "plots" / "noise_curve.png"]


def build(cfg: Config, out) -> dict:
    from ..lib.llm import open_llm
    from ..lib.plots import noise_curve, score_distributions

    t0 = time.perf_counter()
    chunks = load_chunks(cfg)
    text_of = {c.chunk_id: c.text for c in chunks}
    all_q = load_questions(cfg, chunks)
    questions = select_questions(all_q, cfg.answer.max_questions, cfg.seed)
    rankings = load_rankings(cfg).get(cfg.answer.retriever)
    if rankings is None and any(p != "A" for p in cfg.answer.pipelines):
        raise ValueError(f"answer.retriever {cfg.answer.retriever!r} is not among retrieval.systems")
    items = build_items(cfg, questions, chunks, rankings)
    # phase 1: the generator
    gen = open_llm(cfg.models.generator, cfg.cache_dir)
    gen.stage = "answer"
    generate(gen, items, text_of, cfg)
    c_items = [it for it in items if it["pipeline"] == "C"]
    for it in c_items:
        it["draft_answer"] = it["answer"]
    if c_items:
        verify(gen, c_items, text_of, cfg)
    gen.release()
    known = set(text_of)
    for it in items:
        it["citation"] = citation_check(it["answer"], it["passage_ids"], known)
        it["refusal"] = is_refusal(it["answer"])
    # phase 2: the judge
    judge = open_llm(cfg.models.judge, cfg.cache_dir)
    judge.stage = "answer"
    judge_rubrics(judge, items, text_of)
    if cfg.answer.binary_judges:
        judge_binary(judge, [it for it in items if it["pipeline"] != "table2"], text_of)
    judge.release()
    names = [s["name"] for s in settings(cfg)]
    long = table2(items, names, cfg.answer.n_bootstrap, cfg.seed)
    csv, md, tex, answers_file, pipelines_file, checks_file, scores_plot, noise_plot = outputs(cfg)
    write_dataframe(long, out(csv))
    run_scale = scale(len(questions))
    write_text(out(md), table2_wide(long, names, "md") +
               f"\n{len(questions)} of {len(all_q)} questions ({run_scale}); generator {gen.identity.get('name')}, "
               f"judge {judge.identity.get('name')}; 95% bootstrap CIs in table2_answer_quality.csv.\n")
    write_text(out(tex), table2_wide(long, names, "tex"))
    write_jsonl(out(answers_file), items)
    write_dataframe(pipelines_table(items), out(pipelines_file))
    neg = [it for it in items if it["pipeline"] == "table2" and "negative_rejection" in it["rubrics"]
           and it["scores"].get("negative_rejection") is not None]
    agree = [(it["scores"]["negative_rejection"] >= 4) == it["refusal"] for it in neg]
    t2 = [it for it in items if it["pipeline"] == "table2"]

    def cite_acc(s):
        v = [it["citation"]["citation_accuracy"] for it in t2
             if it["setting"] == s and it["citation"]["citation_accuracy"] is not None]
        return round(float(np.mean(v)), 3) if v else None

    checks = {
        "refusal_rate_by_setting": {s: round(float(np.mean([it["refusal"] for it in t2 if it["setting"] == s])), 3)
                                    for s in names if any(it["setting"] == s for it in t2)},
        "citation_accuracy_by_setting": {s: cite_acc(s) for s in names},
        "judge_vs_regex_refusal_agreement": round(float(np.mean(agree)), 3) if agree else None,
        "judge_vs_regex_refusal_pairs": len(agree),
        "missing_scores": sum(1 for it in items for r in it["rubrics"] if it["scores"].get(r) is None),
    }
    write_json(out(checks_file), checks)
    score_distributions(long, items, out(scores_plot))
    noise_curve(items, settings(cfg), out(noise_plot))
    return {"questions": len(questions), "answers": len(items), "scale": run_scale, **checks,
            "llm_generator": gen.stats.to_dict(), "llm_judge": judge.stats.to_dict(),
            "model_identity": {"generator": gen.identity, "judge": judge.identity},
            "wall_seconds_answer": round(time.perf_counter() - t0, 2)}


def _prompts(cfg: Config) -> list[str]:
    p = []
    if "A" in cfg.answer.pipelines:
        p.append("answer_closed_book")
    p.append("answer")
    if "C" in cfg.answer.pipelines:
        p.append("verify_rewrite")
    p += ["judge_faithfulness", "judge_relevance", "judge_noise_robustness", "judge_negative_rejection"]
    if cfg.answer.binary_judges:
        p.append("judge_binary")
    return p


STAGE = Stage(
    name="answer", doc="answer quality under noise (Table 2) and pipelines A/B/C",
    home=lambda cfg: cfg.run_dir, outputs=outputs, build=build, after=("retrieve",),
    sections=lambda cfg: ["answer", "seed", "models.generator", "models.judge"],
    reads=lambda cfg: [rankings_path(cfg), chunks_path(cfg), questions_path(cfg)],
    prompts=_prompts,
    models=lambda cfg: {"generator": cfg.models.generator.model, "judge": cfg.models.judge.model},
    code=("spacelm.lib.llm.frontend", "spacelm.lib.answers", "spacelm.lib.judging", "spacelm.lib.stats", "spacelm.lib.tables",
          "spacelm.stages.answer", "spacelm.stages.data"),
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
