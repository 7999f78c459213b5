"""Stage 2, synth: few-shot questions for every selected chunk × task, optional reference
answers, the retrieval filter, and the exports. Model calls are cached, so an interrupted
run resumes without repeating them."""
from __future__ import annotations

from ..config import Config
from ..lib.golden import load_golden, locate_samples
from ..lib.io import write_dataframe, write_jsonl
from ..lib.questions import (add_reference_answers, export_beir, export_hf, generate_questions, plan_generation,
                             retention_table, retrieval_filter)
from .base import Stage, execute
from .data import chunks_path, golden_path, load_chunks, questions_path


def outputs(cfg: Config):
    d = cfg.synthetic_dir
    return [questions_path(cfg), d / "retention.csv", d / "retention.md", d / "beir", d / "hf_dataset"]


def build(cfg: Config, out) -> dict:
    from ..lib.llm import open_llm

    chunks = load_chunks(cfg)
    golden = load_golden(golden_path(cfg), min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    _, not_found = locate_samples(golden, chunks, golden_path(cfg))
    llm = open_llm(cfg.models.question_writer, cfg.cache_dir)
    llm.stage = "synth"
    plan = plan_generation(cfg, chunks, golden)
    records = generate_questions(cfg, llm, plan)
    if cfg.synth.with_reference_answer:
        add_reference_answers(cfg, llm, records, {c.chunk_id: c for c in chunks})
    llm.release()
    retrieval_filter(cfg, chunks, records)
    retention = retention_table(records)
    q, ret_csv, ret_md, beir, hf = outputs(cfg)
    write_jsonl(out(q), records)
    write_dataframe(retention, out(ret_csv))
    write_dataframe(retention, out(ret_md))
    export_beir(chunks, records, out(beir))
    export_hf(chunks, records, out(hf))
    reasons: dict = {}
    for r in records:
        if r["drop_reason"]:
            reasons[r["drop_reason"]] = reasons.get(r["drop_reason"], 0) + 1
    return {"chunks_used": len({r["source_chunk_id"] for r in records}), "generated": len(records),
            "kept": sum(r["kept"] for r in records), "drop_reasons": reasons,
            "fewshot_sampling": cfg.synth.fewshot_sampling, "n_fewshot": cfg.synth.n_fewshot,
            "filter": f"{cfg.synth.filter_retriever} top-{cfg.synth.filter_top_n}",
            "golden_samples": len(golden), "golden_not_found": [f"{s.id} (line {s.line})" for s in not_found],
            "llm": llm.stats.to_dict(), "model_identity": llm.identity}


def _prompts(cfg: Config) -> list[str]:
    return [f"synth_{t}" for t in cfg.synth.tasks] + (["reference_answer"] if cfg.synth.with_reference_answer else [])


def _sections(cfg: Config) -> list[str]:
    # reference answers are written with the question writer, capped at the generator's max_tokens
    extra = ["models.generator.max_tokens"] if cfg.synth.with_reference_answer else []
    return ["synth", "seed", "models.question_writer", "retrieval.bm25", "retrieval.dense", *extra]


STAGE = Stage(
    name="synth", doc="write synthetic questions and apply the retrieval filter",
    home=lambda cfg: cfg.synthetic_dir, outputs=outputs, build=build, after=("chunk",),
    sections=_sections,
    reads=lambda cfg: [chunks_path(cfg), golden_path(cfg)],
    prompts=_prompts,
    models=lambda cfg: {"question_writer": cfg.models.question_writer.model, "dense": cfg.retrieval.dense.model},
    code=("spacelm.lib.llm.frontend", "spacelm.lib.questions", "spacelm.lib.golden", "spacelm.lib.retrieval", "spacelm.lib.beir",
          "spacelm.stages.synth"),
)


def run(cfg: Config, force: bool = False) -> dict:
    return execute(STAGE, cfg, force)
