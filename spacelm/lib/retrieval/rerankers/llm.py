"""The pointwise LLM reranker: the judge's expected 0-3 grade of each pool passage."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Reranker


class LLMReranker(Reranker):
    """Pointwise LLM reranker: the expected 0–3 relevance grade from the judge's option
    probabilities. Slow on CPU (~0.3 pairs/s with the 1.5B model): for GPU backends."""

    kind = "llm"

    def __init__(self, llm, texts: dict[str, str]):
        self.llm = llm
        self.texts = texts

    def rescore(self, queries: Sequence[str], pools: Sequence[Sequence[str]]) -> list[list[float]]:
        from ...llm.prompting import relevance_messages
        from ...llm.scores import judgement_from, score_choices
        from ...llm.types import Request

        reqs = [
            Request(messages=relevance_messages(q, self.texts[d]), choices=score_choices(0, 3), max_tokens=2)
            for q, pool in zip(queries, pools)
            for d in pool
        ]
        comps = self.llm.chat_many(reqs, progress="LLM reranking")
        out, pos = [], 0
        for pool in pools:
            scores = []
            for c in comps[pos : pos + len(pool)]:
                j = judgement_from(c, 0, 3)
                scores.append(j.expected if j.expected is not None else float(j.value if j.value is not None else -1))
            out.append(scores)
            pos += len(pool)
        return out
