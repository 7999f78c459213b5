"""The paper's setup beside a run's, component by component, and whether they match: the table
at the top of every report (`setup_vs_paper.csv`, companion of `paper_vs_run.csv`), and the
`comparable` column of the findings (an absolute level is compared with the paper's only when
judge and chunk size match).

The paper's values are read from its text (Belo, Soares & Guimaraes, IAC-25: sections 3-6 and
appendices B-C) and written here once."""

from __future__ import annotations

from dataclasses import dataclass

from ..retrieval.rerankers.settings import second_stage_name

COLUMNS = ["component", "paper", "this_run", "match"]
# component -> the paper's value, in words
PAPER = {
    "corpus": "39 documents (ESA reports, peer-reviewed papers on space debris), text PDFs",
    "chunking": "semchunk, at most 2,000 tokens",
    "dense retriever": "Alibaba-NLP/gte-Qwen2-1.5B-instruct",
    "reranker and its pool": "BAAI/bge-m3 over each retriever's top-100",
    "judge": "Llama 3.3 70B",
    "generator": "Llama 3 8B",
    "question writer": "Llama 3.3 70B (8-bit), 5 few-shot golden samples per chunk and task",
    "questions": "7,036 kept (1,506 written per task, 5 tasks)",
    "question filter": "source chunk in the BGE-M3 top-50",
    "Table 1 questions": "all kept questions (not stated otherwise)",
    "Table 2 questions": "not stated",
    "Table 2 wrong passages": "unrelated in-domain passages (3 or 5 added; 5 in the negative setting)",
    "prompts": "Figs. A1-A5 (relevance 0-3; four rubrics 1-5)",
}
# what must match for an absolute level to be compared with the paper's
LEVEL_COMPONENTS = ("judge", "chunking")


@dataclass(frozen=True)
class RunSetup:
    """The settings of a run the setup table compares with the paper's (from its config)."""

    corpus_dir: str
    chunk_tokens: int
    tokenizer: str
    dense_model: str
    reranker_kind: str
    reranker_model: str
    pool: int | float  # the reranker's pool as configured (a count or a share of the corpus)
    judge_model: str
    generator_model: str
    question_writer_model: str
    n_fewshot: int
    fewshot_sampling: str
    filter_retriever: str
    filter_top_n: int
    judge_prompt: str
    wrong_sampling: str = "random"  # answer.wrong_sampling: the noise settings' wrong passages
    negative_sampling: str = "random"  # the negative setting's (answer.negative_sampling, else as the noise)


# how each way of drawing wrong passages reads (answer.wrong_sampling, lib/answer/answers.wrong_passages)
SAMPLING_WORDS = {
    "random": "chunks of other documents at random",
    "hard": "BM25's top chunks of other documents",
    "same_document": "other chunks of the source's document",
    "bm25": "BM25's top chunks of any document, less the source and its neighbours",
}


def _has(text: str, *needles: str) -> bool:
    t = str(text).lower().replace("-", "").replace("_", "").replace(" ", "")
    return all(n.lower().replace("-", "").replace(" ", "") in t for n in needles)


def trained_on(stage: dict | None) -> str:
    """ "; trained on ..." for a run whose reranker the suite trained (its train-reranker manifest
    record): each source's questions or queries, and what was held out; "" otherwise."""
    if not stage or not stage.get("sources"):
        return ""
    parts = []
    for src in stage["sources"]:
        if src.get("name") == "synthetic":
            parts.append(
                f"{src.get('questions_kept', '?')} of {src.get('questions_written', '?')} synthetic questions by "
                f"{src.get('writer', '?')} over {src.get('training_chunks', '?')} chunks"
            )
        elif src.get("skipped"):
            parts.append(f"not {src.get('name')} ({src.get('dir')}: {src['skipped']})")
        else:
            parts.append(f"{src.get('name')} {src.get('split', '')} ({src.get('queries', '?')} queries)")
    held = stage.get("held_out") or {}
    weight = stage.get("bm25_weight")
    mix = (
        f"; scored as cross-encoder + BM25 score, weight {weight:g}"
        + (f" (fitted on {stage['bm25_weight_fitted_on']})" if stage.get("bm25_weight_fitted_on") else "")
        if weight
        else ""
    )
    sha = (stage.get("model_identity") or {}).get("sha256")
    return (
        f"; trained on {' + '.join(parts)} ({stage.get('pairs', '?')} pairs), "
        f"{held.get('chunks', '?')} chunks of the {held.get('questions', '?')} evaluation questions held out"
        + mix
        + (f"; checkpoint sha256 {sha[:12]}" if sha else "")
    )


def setup_rows(setup: RunSetup, stages: dict | None = None, sizes: dict | None = None) -> list[dict]:
    """[{component, paper, this_run, match}] for a run's `setup` and, when given, the run's
    manifest stages (question counts, the resolved reranker pool) and `sizes` {"grade" |
    "answer": (questions, source chunks)} read from the run's tables, which take precedence."""
    stages = stages or {}
    sizes = sizes or {}
    ing, syn = stages.get("ingest", {}), stages.get("synth", {})
    pool = stages.get("retrieve", {}).get("rerank_pool", setup.pool)
    pool_text = f"top-{pool}" if isinstance(pool, int) or float(pool) >= 1 else f"top {float(pool):.0%} of the chunks"

    def n_of(name: str) -> str:
        stage = stages.get(name, {})
        q, c = sizes.get(name) or (stage.get("questions"), (stage.get("sample") or {}).get("source_chunks"))
        return "–" if q is None else f"{q} questions / {'?' if c is None else c} source chunks"

    rows = [
        ("corpus", f"{ing.get('documents', '?')} documents from {setup.corpus_dir}", "no"),
        (
            "chunking",
            f"at most {setup.chunk_tokens} tokens ({setup.tokenizer})",
            "yes" if setup.chunk_tokens == 2000 else "no",
        ),
        ("dense retriever", setup.dense_model, "yes" if _has(setup.dense_model, "gte-Qwen2-1.5B") else "no"),
        (
            "reranker and its pool",
            f"{second_stage_name(setup.reranker_kind)} {setup.reranker_model} over {pool_text}"
            + trained_on(stages.get("train-reranker")),
            "yes" if _has(setup.reranker_model, "bge-m3") and pool == 100 else "no",
        ),
        ("judge", setup.judge_model, "yes" if _has(setup.judge_model, "llama-3.3-70b") else "no"),
        (
            "generator",
            setup.generator_model,
            "yes" if _has(setup.generator_model, "llama-3-8b") or _has(setup.generator_model, "llama-3.1-8b") else "no",
        ),
        (
            "question writer",
            f"{setup.question_writer_model}, {setup.n_fewshot} few-shot ({setup.fewshot_sampling})",
            "yes" if _has(setup.question_writer_model, "llama-3.3-70b") and setup.n_fewshot == 5 else "no",
        ),
        ("questions", f"{syn.get('kept', '?')} kept of {syn.get('generated', '?')} written", "no"),
        (
            "question filter",
            f"source chunk in the {setup.filter_retriever} top-{setup.filter_top_n}",
            "yes" if setup.filter_top_n == 50 else "no",
        ),
        ("Table 1 questions", n_of("grade"), "no"),
        ("Table 2 questions", n_of("answer"), "no"),
        (
            "Table 2 wrong passages",
            (
                f"noise: {SAMPLING_WORDS.get(setup.wrong_sampling, setup.wrong_sampling)}; negative setting: "
                f"{SAMPLING_WORDS.get(setup.negative_sampling, setup.negative_sampling)}"
            )
            if "answer" in stages or "answer" in sizes
            else "– (no answer stage)",
            "yes" if setup.wrong_sampling == setup.negative_sampling == "random" else "no",
        ),
        ("prompts", f"spacelm's own wording of the paper's scales ({setup.judge_prompt}; judge_* rubrics)", "no"),
    ]
    short = {
        "chunking": f"chunks of {setup.chunk_tokens} vs 2,000 tokens",
        "judge": f"judge {setup.judge_model} vs Llama 3.3 70B",
    }
    return [
        {
            "component": c,
            "paper": PAPER[c],
            "this_run": ours,
            "match": match,
            "differs": short.get(c, f"{c}: {ours} vs {PAPER[c]}"),
        }
        for c, ours, match in rows
    ]


def comparability(rows: list[dict], components=LEVEL_COMPONENTS) -> str:
    """ "yes" when every one of `components` matches the paper's, else "no: " and what differs."""
    differ = [
        r.get("differs") or f"{r['component']}: {r['this_run']} vs {r['paper']}"
        for r in rows
        if r["component"] in components and r["match"] != "yes"
    ]
    return "yes" if not differ else "no: " + "; ".join(differ)
