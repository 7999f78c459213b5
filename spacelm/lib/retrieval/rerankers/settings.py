"""The second stage's settings: which reranker, and how the suite trains its own cross-encoder
(`retrieval.reranker` and `retrieval.reranker.train` in a config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class LabelledSet:
    """A labelled retrieval set a team has, in BEIR layout (`corpus.jsonl`, `queries.jsonl`,
    `qrels/<split>.tsv` or `qrels.tsv`), whose `split` queries train the cross-encoder: a passage
    graded `min_grade` or more is a positive (at most `max_positives` per query), one graded lower (or
    a BM25 neighbour left ungraded) a negative. Its queries must never be the ones a study evaluates on;
    `split` "test" is refused (a folder with a single `qrels.tsv` is read whatever the split)."""

    name: str = ""
    path: str = ""
    split: str = "train"
    min_grade: int = 1
    max_queries: int | None = None  # a seeded sample of the split's queries (None: all)
    max_positives: int = 2  # per query, the highest graded first (TREC DL grades dozens per query)
    # a set a clone may lack (evaluation data kept outside the repository): when its folder is missing
    # the model trains without it, and `check`, the stage's summary and the report say so
    optional: bool = False


@dataclass
class RerankerTraining:
    """How the suite trains the cross-encoder named `trained:<name>` (stage `train-reranker`): the
    question writer writes `questions` synthetic questions over corpus chunks that no evaluation
    question comes from (`split`: hold out each evaluation question's source chunk and `neighbours`
    chunks either side, or whole documents), a question is kept when BM25 ranks its source chunk
    in its top `filter_top_n` (round-trip filter, as UDAPDR/InPars filter), and each kept question
    gets its chunk as the positive and `negatives` BM25 neighbours (top `negative_depth`) that hold
    no part of the source span; plus the `labelled` sets. Fine-tuned from `base_model` on CPU."""

    base_model: str = "embedded:minilm"
    questions: int = 200
    writer: Literal["question_writer", "generator", "judge"] = "question_writer"
    # "writer": the writer writes `questions` new questions; "synth_copies": the questions synth wrote
    # and rejected as copies of their chunk (no evaluation question comes from their chunks; a copy is
    # unfit to evaluate retrieval, not to teach which chunk answers it), at most `questions` of them,
    # with no model call
    questions_from: Literal["writer", "synth_copies"] = "writer"
    # pseudo-queries cut from the training chunks with no model call: a sentence of 8-30 words is the
    # query, its chunk without that sentence the positive, BM25 neighbours outside the chunk and the
    # chunks either side the negatives (not used to fit BM25's weight: the chunk still holds the sentence)
    pseudo_queries: int = 0
    split: Literal["chunk", "document"] = "chunk"
    neighbours: int = 1
    filter_top_n: int = 20
    negatives: int = 4
    negative_depth: int = 30
    labelled: list[LabelledSet] = field(default_factory=list)
    epochs: int = 1
    batch_size: int = 16  # pairs per step at least: whole query groups are added until it is reached
    learning_rate: float = 2e-5
    warmup_share: float = 0.1
    max_length: int = 256
    # the weight of BM25's score mixed into the trained cross-encoder's when it reranks (see
    # `mix_scores`): "fit" picks it from 0, 0.1, ..., 1 on `dev_share` of the training queries held
    # back from training (their positive's nDCG@10 among its negatives), or a number in [0, 1]
    bm25_weight: Literal["fit"] | float = "fit"
    dev_share: float = 0.15

    def problems(self) -> list[tuple[str, str]]:
        """(key under `retrieval.reranker.train`, what is wrong and the fix) for every bad value."""
        out = []
        for key, value, low in (
            ("questions", self.questions, 0),
            ("pseudo_queries", self.pseudo_queries, 0),
            ("neighbours", self.neighbours, 0),
            ("filter_top_n", self.filter_top_n, 0),
            ("negatives", self.negatives, 1),
            ("negative_depth", self.negative_depth, 1),
            ("epochs", self.epochs, 1),
            ("batch_size", self.batch_size, 1),
            ("max_length", self.max_length, 16),
        ):
            if value < low:
                out.append((key, f"must be >= {low}, got {value!r}"))
        if self.negative_depth < self.negatives:
            out.append(("negative_depth", f"must be >= negatives ({self.negatives}), got {self.negative_depth}"))
        if not 0 < self.learning_rate < 1:
            out.append(("learning_rate", f"must be between 0 and 1, got {self.learning_rate!r}"))
        if self.bm25_weight != "fit" and not 0 <= self.bm25_weight <= 1:
            out.append(("bm25_weight", f"must be 'fit' or a number in [0, 1], got {self.bm25_weight!r}"))
        if not 0 < self.dev_share < 0.5:
            out.append(("dev_share", f"must be in (0, 0.5), got {self.dev_share!r}"))
        if not 0 <= self.warmup_share < 1:
            out.append(("warmup_share", f"must be in [0, 1), got {self.warmup_share!r}"))
        names = [s.name for s in self.labelled]
        for i, s in enumerate(self.labelled):
            if not s.name or not s.path:
                out.append((f"labelled[{i}]", "needs a name and a path (a BEIR-format folder)"))
            if s.max_positives < 1:
                out.append((f"labelled[{i}].max_positives", f"must be >= 1, got {s.max_positives!r}"))
            if s.split == "test":
                out.append((f"labelled[{i}].split", "is 'test', the split studies evaluate on; train on 'train'"))
        if len(set(names)) != len(names):
            out.append(("labelled", f"names must be unique, got {names}"))
        if self.questions == 0 and not self.labelled and not self.pseudo_queries:
            out.append(
                (
                    "questions",
                    "is 0, pseudo_queries is 0 and no labelled set is named: the reranker would have nothing to learn",
                )
            )
        return out


@dataclass
class RerankerConfig:
    """The second stage. `kind`: "cross-encoder" (query and passage read together, one score per
    pair; `model` is `trained:<name>` for the one the suite trains, see :class:`RerankerTraining`),
    "biencoder" (bi-encoder rescoring: the cosine of a second embedding model, not a reranker in
    the paper's sense), "llm" (the judge's expected grade) or "none". `precision` "int8" runs a
    cross-encoder's linear layers in dynamic int8 (faster on CPU; measure its scores)."""

    kind: Literal["biencoder", "cross-encoder", "llm", "none"] = "biencoder"
    model: str = "embedded:mpnet"
    batch_size: int = 16
    query_prefix: str = ""
    passage_prefix: str = ""
    precision: Literal["fp32", "int8"] = "fp32"
    train: RerankerTraining = field(default_factory=RerankerTraining)


# what a report calls each second stage: cosine rescoring is not a reranker in the paper's sense
SECOND_STAGE_NAMES = {
    "cross-encoder": "cross-encoder reranker",
    "biencoder": "bi-encoder rescoring",
    "llm": "LLM pointwise reranker",
    "none": "none",
}


def second_stage_name(kind: str) -> str:
    """The honest name of a second stage for reports ("bi-encoder rescoring", "cross-encoder reranker")."""
    return SECOND_STAGE_NAMES.get(kind, kind)
