"""The cross-encoder the suite trains, and loading any cross-encoder a config names.

:class:`SegmentCosineCrossEncoder` reads query and passage together and scores the pair by the
cosine of the two segments' mean final states; `cross_encoder.py` trains it. :func:`load_cross_encoder`
opens either it (a folder holding `spacelm_head.json`) or a sentence-transformers CrossEncoder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

HEAD_FILE = "spacelm_head.json"  # marks a folder holding a segment-cosine cross-encoder (this module's)


class SegmentCosineCrossEncoder:
    """A cross-encoder scored by the cosine of its two segments: query and passage are read together
    as one sequence (every token attends to both), and the score is `scale` times the cosine between
    the mean final state of the query's tokens and that of the passage's tokens.

    Why not a fresh classifier over [CLS]: started from a sentence-embedding checkpoint (the shipped
    MiniLM), such a head learns nothing for hundreds of CPU steps (measured here: every score
    0.19-0.20 after 272 steps; nDCG@10 0.59 on 40 SciFact test queries after 554 steps, below
    BM25's 0.70), while the checkpoint's mean-pooled states, read jointly, already rank (0.57 with
    no training). Training then moves the encoder, the attention between the two segments included.
    Token types are all 0 (the checkpoint saw only type 0); segments are told apart by the
    tokenizer's pair encoding. `predict` has the signature of sentence-transformers' CrossEncoder."""

    kind = "segment-cosine"

    def __init__(self, model, tokenizer, max_length: int, scale: float = 20.0, bm25_weight: float = 0.0):
        self.model, self.tokenizer, self.max_length, self.scale = model, tokenizer, max_length, scale
        # the first-stage BM25 score's weight when reranking (fitted on training data, 0: none); see
        # `rerankers.mix_scores`
        self.bm25_weight = bm25_weight

    @classmethod
    def from_encoder(cls, path: str, max_length: int, scale: float = 20.0) -> SegmentCosineCrossEncoder:
        """From a (sentence-)transformer encoder folder: its weights, a new scoring rule, nothing new to learn."""
        from transformers import AutoModel, AutoTokenizer

        return cls(AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path), max_length, scale)

    @classmethod
    def load(cls, folder: str | Path, device: str = "cpu") -> SegmentCosineCrossEncoder:
        """A folder :meth:`save` wrote, its weights on `device`."""
        head = json.loads((Path(folder) / HEAD_FILE).read_text(encoding="utf-8"))
        if head.get("score") != cls.kind:
            raise ValueError(f"{Path(folder) / HEAD_FILE}: score {head.get('score')!r}, expected {cls.kind!r}")
        model = cls.from_encoder(str(folder), int(head["max_length"]), float(head["scale"]))
        model.bm25_weight = float(head.get("bm25_weight") or 0.0)
        model.to(device)
        model.model.eval()
        return model

    def to(self, device: str) -> SegmentCosineCrossEncoder:
        """Move the weights to `device` ("cpu" or "cuda"); inputs follow them."""
        self.model.to(device)
        return self

    @property
    def device(self):
        return next(self.model.parameters()).device

    def save(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
        head = {
            "score": self.kind,
            "scale": self.scale,
            "max_length": self.max_length,
            "pooling": "mean per segment",
            "bm25_weight": self.bm25_weight,
        }
        (Path(folder) / HEAD_FILE).write_text(json.dumps(head, indent=2) + "\n", encoding="utf-8")

    def features(self, queries: Sequence[str], passages: Sequence[str]) -> dict:
        """The pairs tokenised as torch tensors: `input_ids`, `attention_mask` and `segment` (0 for the
        query's tokens, 1 for the passage's, from the tokenizer's pair encoding)."""
        feats = self.tokenizer(
            list(queries),
            list(passages),
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="pt",
        )
        segment = feats.pop("token_type_ids", None)
        if segment is None:
            raise ValueError("the cross-encoder's tokenizer gives no token types to tell query from passage")
        return {**feats, "segment": segment}

    def score_states(self, states, mask, segment):
        """`scale` × cosine between the mean final state of the query's tokens and of the passage's."""
        import torch

        def mean(m):
            m = m.unsqueeze(-1).to(states.dtype)
            return (states * m).sum(1) / m.sum(1).clamp(min=1.0)

        return self.scale * torch.nn.functional.cosine_similarity(
            mean(mask * (segment == 0)), mean(mask * (segment == 1))
        )

    def logits(self, queries: Sequence[str], passages: Sequence[str]):
        """`scale` × cosine of each (query, passage) pair, as a torch tensor (with gradients in training)."""
        import torch

        f = {k: v.to(self.device) for k, v in self.features(queries, passages).items()}
        segment = f.pop("segment")
        states = self.model(**f, token_type_ids=torch.zeros_like(segment)).last_hidden_state
        return self.score_states(states, f["attention_mask"], segment)

    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, show_progress_bar: bool = False):
        import numpy as np
        import torch

        self.model.eval()
        out = []
        with torch.inference_mode():
            for i in range(0, len(pairs), batch_size):
                batch = pairs[i : i + batch_size]
                out.append(self.logits([q for q, _ in batch], [d for _, d in batch]).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


def load_cross_encoder(path: str, device: str = "cpu"):
    """The cross-encoder at `path` on `device`: a segment-cosine one (a folder holding
    `spacelm_head.json`, as the suite trains) or any sentence-transformers CrossEncoder (a folder or a
    hub name: `BAAI/bge-reranker-v2-m3` at paper scale)."""
    if (Path(path) / HEAD_FILE).is_file():
        return SegmentCosineCrossEncoder.load(path, device)
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device=device)
