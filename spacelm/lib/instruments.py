"""Instruments and the systems they measure, declared by the models whose scores they read, so
that independence is checked by code: an instrument never shares a model, a feature or a score
with a system whose outputs it grades.

- :class:`Instrument`: a judge (or any measuring component) as the features it reads, each named
  with the model whose score it is (a prompt feature is the judge model's; a cosine the embedding
  model's).
- :func:`system_scorers`: {system: the models whose scores rank its lists} (BM25 reads no model,
  `dense` its encoder, `X+rerank` X's and the reranker's, `hybrid` BM25's and the encoder's).
- :func:`shared_scorers`: which systems a grader shares a scorer with, and through which feature.

Models are compared by identity: an embedded model's spec (`embedded:minilm`), its upstream hub
name (`sentence-transformers/all-MiniLM-L6-v2`) and a bare hub name name the same model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Instrument(NamedTuple):
    """A measuring component: `name` (e.g. "relevance grader"), `kind` (what it outputs), and
    `features`: {feature: model spec whose score it is, or "" for a rule with no model}."""

    name: str
    kind: str
    features: dict
    description: str = ""

    def models(self) -> set[str]:
        return {model_key(m) for m in self.features.values() if m}


def model_key(spec: str | None) -> str:
    """One name per model, whichever way a config writes it: embedded specs and their upstream hub
    names both become the embedded name; other specs are lower-cased with a trailing slash dropped."""
    if not spec:
        return ""
    from .llm.models import EMBEDDED

    s = str(spec).strip()
    if s.startswith("embedded:"):
        return s.removeprefix("embedded:")
    for m in EMBEDDED.values():
        up = m.upstream.split(" ")[0]
        if s.lower() in (up.lower(), up.split("/")[-1].lower()):
            return m.name
    return s.rstrip("/").lower()


def system_scorers(systems: Sequence[str], retrieval, judge_model: str | None = None) -> dict[str, set[str]]:
    """{system: model keys whose scores decide its ranked list}. `retrieval`: the run's
    retrieval settings (dense.model, reranker.kind/model); an LLM reranker reads the judge model
    (`judge_model`)."""
    dense = {model_key(retrieval.dense.model)}
    rr = retrieval.reranker
    rerank = {model_key(judge_model)} if rr.kind == "llm" else set() if rr.kind == "none" else {model_key(rr.model)}
    train = getattr(rr, "train", None)
    if rr.kind == "cross-encoder" and str(rr.model).startswith("trained:") and train is not None:
        rerank.add(model_key(train.base_model))  # fine-tuned from it: the same lineage counts as shared
    out = {}
    for s in systems:
        first = s.split("+")[0]
        base = dense if first == "dense" else set(dense) if first == "hybrid" else set()
        out[s] = (base | rerank) if s.endswith("+rerank") else set(base)
        out[s].discard("")
    return out


def shared_scorers(instrument: Instrument, scorers: dict[str, set[str]]) -> dict[str, list[str]]:
    """{system: ["feature (model)", ...]} for every system whose ranking reads a model that
    `instrument` reads too; systems it shares nothing with are left out."""
    out = {}
    for system, models in scorers.items():
        hits = [f"{f} ({m})" for f, m in instrument.features.items() if m and model_key(m) in models]
        if hits:
            out[system] = hits
    return out


def grader_instrument(grading, judge_model: str, base=None) -> Instrument:
    """The relevance grader of a run as an :class:`Instrument`: the prompt method reads the judge's
    digit; a calibrated grader the features of its calibration (its cosine is the embedding
    model's). `grading`: the config's grading section; `base`: where a calibration path is relative to."""
    if grading.method != "calibrated":
        return Instrument(
            "relevance grader",
            "0-3 digit",
            {f"{grading.prompt} digit": judge_model},
            f"{judge_model}'s own 0-3 digit (prompt {grading.prompt})",
        )
    from .judge.calibrated import load_calibration

    cal = load_calibration(grading.judging(base).calibration)
    return Instrument(
        "relevance grader",
        "calibrated score cut into 0-3",
        cal.scorers(),
        f"calibration {cal.name}: {', '.join(cal.features)}",
    )


def describe_sharing(shared: dict[str, list[str]]) -> dict[str, str]:
    """{system: "the judge shares the scorer of <system>: <feature (model)>"} for reports and verdicts."""
    return {s: f"the judge shares the scorer of {s}: {', '.join(v)}" for s, v in shared.items()}
