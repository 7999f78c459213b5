"""When Table 1 may be graded at a chunk size (stage chunk-sizes, before any model loads).

Table 1 at a size is graded only when

- the relevance judge reads that size's longest chunk whole: every judge prompt (the grade's
  own, a calibrated grade's prompt features, the diagnostic features) must fit the judge's context
  (`n_ctx` for llama.cpp, `max_model_len` for vLLM) with the longest chunk and question in it and
  the answer tokens after it, counted with the judge's own tokenizer; and an embedding feature of
  a calibrated grade must read the longest chunk within its encoder's window (a longer one is cut);
- `chunk_study.grade_questions` reaches `chunk_study.min_grade_questions` (when set).

Otherwise the size is left ungraded and the reason is recorded in the stage's summary and the
report: an instrument that reads the start of a chunk grades the start, not the chunk.
`spacelm check` and `spacelm plan` report the same gate."""

from __future__ import annotations

from ..config import Config

ENCODER_SPECIAL_TOKENS = 2  # [CLS] and [SEP] take two places of a BERT-style encoder's window


def judge_prompts(cfg: Config) -> list[tuple[str, list[dict], int]]:
    """(name, chat messages with an empty question and passage, answer tokens) of every prompt
    the relevance judge sends for one pair."""
    from ..lib.judge.calibrated import feature_requests, load_calibration
    from ..lib.llm.prompting import render

    judging = cfg.grading.judging(cfg.root)
    extra = list(judging.diagnostic)
    out = []
    if judging.method == "calibrated":
        extra = list(load_calibration(judging.calibration).features) + extra
    else:
        out.append((judging.prompt, render(judging.prompt, question="", passage=""), 2))
    out += [(f, r.messages, r.max_tokens or 0) for f, r in feature_requests(extra, "", "")]
    return out


def context_limit(llm) -> tuple[int | None, str]:
    """(the judge's context in tokens, its config key); None when the backend sets none here."""
    if llm.backend == "llamacpp":
        return llm.n_ctx, "n_ctx"
    if llm.backend.startswith("vllm"):
        return llm.max_model_len, "max_model_len"
    return None, ""


def judge_counter(cfg: Config):
    """A token counter of the judge's own tokenizer (`lib.llm.dry_run`), None when it is not on
    this machine (an embedded GGUF not installed, a hosted model)."""
    from pathlib import Path

    from ..lib.llm.dry_run import gguf_counter, hf_counter
    from ..lib.llm.models import EMBEDDED, ModelNotFound, model_path

    spec = cfg.models.judge.model
    m = EMBEDDED.get(spec.removeprefix("embedded:")) if spec.startswith("embedded:") else None
    try:
        p = model_path(m.name, assemble=False) if m else Path(spec)
    except ModelNotFound:
        return None
    if p.suffix == ".gguf" and p.is_file():
        return gguf_counter(p)
    if (p / "tokenizer.json").is_file():
        return hf_counter(p / "tokenizer.json")
    return None


def _context_reason(cfg: Config, counter, chunks: list, question_tokens: int) -> str | None:
    llm = cfg.models.judge
    limit, key = context_limit(llm)
    if limit is None:
        return None
    if counter is None:
        return f"the judge {llm.model}'s tokenizer is not on this machine: whether it reads the whole chunk is unknown"
    fixed = max(counter.messages(m)[0] + n for _, m, n in judge_prompts(cfg))
    room = limit - fixed - question_tokens
    longest = max((counter.text(c.text) for c in chunks), default=0)
    if longest <= room:
        return None
    return (
        f"the longest chunk is {longest:,} tokens for the judge {llm.model}, but models.judge.{key} = {limit:,} leaves "
        f"{room:,} after the prompt's fixed part and answer ({fixed:,}) and the longest question ({question_tokens:,}):"
        f" the judge would not read the whole chunk (raise models.judge.{key})"
    )


def _encoder_reason(cfg: Config, chunks: list) -> str | None:
    from ..lib.judge.calibrated import load_calibration
    from ..lib.llm.models import encoder_window, load_tokenizer

    judging = cfg.grading.judging(cfg.root)
    if judging.method != "calibrated":
        return None
    cal = load_calibration(judging.calibration)
    window = encoder_window(cal.embedding_model) if cal.uses_embedding() else None
    if not window:
        return None
    tok = load_tokenizer(cal.embedding_model)
    longest = max((len(tok.encode(c.text, add_special_tokens=False).ids) for c in chunks), default=0)
    if longest + ENCODER_SPECIAL_TOKENS <= window:
        return None
    return (
        f"the grade's cosine feature ({cal.embedding_model}) reads at most {window} word pieces and the longest chunk "
        f"is {longest:,}: it would grade the start of the chunk (use a grader without an embedding feature)"
    )


def min_questions(cfg: Config) -> int | None:
    """The questions Table 1 at a chunk size needs: chunk_study.min_grade_questions, else the
    largest n_needed of the analysis plan's chunk-size findings (None: no requirement)."""
    if cfg.chunk_study.min_grade_questions is not None:
        return cfg.chunk_study.min_grade_questions
    needs = [e.n_needed for e in cfg.analysis_plan.entries() if e.id.startswith("chunks_") and e.n_needed]
    return max(needs) if needs else None


def table1_gate(cfg: Config, chunks_by_size: dict, questions: list[str] = (), counter=None) -> dict:
    """{size: {"graded": bool, "reason": str}} for Table 1 at each chunk size (see the module's
    doc). `questions`: the texts that would be graded (the longest takes room in the prompt);
    `counter`: the judge's token counter (default: :func:`judge_counter`)."""
    cs = cfg.chunk_study
    need = min_questions(cfg)
    few = need is not None and cs.grade_questions < need
    counter = counter if counter is not None else judge_counter(cfg)
    q_tokens = max((counter.text(q) for q in questions), default=0) if counter is not None else 0
    out = {}
    for size, chunks in chunks_by_size.items():
        reasons = [
            f"chunk_study.grade_questions = {cs.grade_questions} is below the {need} questions the analysis "
            "needs (chunk_study.min_grade_questions, or the analysis plan's chunk-size findings' n_needed)"
        ] * few
        reasons += [r for r in (_context_reason(cfg, counter, chunks, q_tokens), _encoder_reason(cfg, chunks)) if r]
        out[size] = {"graded": not reasons, "reason": "; ".join(reasons) or "the judge reads every chunk whole"}
    return out


def gate_before_run(cfg: Config) -> dict:
    """The gate as a run would meet it, with no model: the documents (ingest's file, or ingested
    in memory) chunked at every size; {} when the study grades nothing."""
    from ..lib.ingest.chunking import chunk_documents
    from ..runner.data import documents_path, load_documents

    cs = cfg.chunk_study
    if not cs.sizes or not cs.grade_questions:
        return {}
    if documents_path(cfg).is_file():
        docs = load_documents(cfg)
    else:
        from .ingest import ingest_configured

        docs = ingest_configured(cfg).documents
    tok = cs.tokenizer or cfg.chunking.tokenizer
    return table1_gate(cfg, {s: chunk_documents(docs, s, tok, cfg.chunking.overlap) for s in cs.sizes})
