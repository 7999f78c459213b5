"""The suite's shared vocabulary, defined once: task types, retrieval systems, answer
rubrics, and the scale of a run judged from its numbers."""

from __future__ import annotations

# the five synthetic-question task types of the paper
TASKS = ("direct_qa", "abstract_qa", "fact_checking", "summarization", "analysis")
# fact-checking verdicts of golden samples
VERDICTS = ("supported", "refuted", "not_enough_info")
# first-stage retrievers and the systems built on them
FIRST_STAGE = ("bm25", "dense", "hybrid")
SYSTEMS = ("bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid", "hybrid+rerank")
PIPELINES = ("A", "B", "C")
# Table 2 rubrics, scored 1-5
RUBRICS = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")

# below this many questions a table shows that the machinery works, not a finding
FINDINGS_MIN_QUESTIONS = 30


def reranked(system: str) -> str:
    """The name of `system` followed by the reranker."""
    return f"{system}+rerank"


def scale(n_questions: int, min_questions: int = FINDINGS_MIN_QUESTIONS) -> str:
    """'smoke-scale run' when a table rests on too few questions to support a conclusion,
    else 'findings scale' (enough questions for a verdict to be attempted; not the whole question
    set). The one place this is decided."""
    return "findings scale" if n_questions >= min_questions else "smoke-scale run"


# a ranked list of (chunk_id, score), best first: what every retriever returns per query
Ranking = list[tuple[str, float]]
