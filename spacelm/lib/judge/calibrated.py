"""A relevance grade for small judges: several signals of one model, combined and calibrated on
human labels, instead of the model's own 0-3 digit.

A 1.5B model asked for a digit 0-3 spreads its probability almost evenly over the four digits,
so its grade barely separates relevant from related passages. Asked in other ways (graded
examples in a fixed system message, a yes/no question on the same prompt) and read beside a
retriever's cosine, its signals separate them better. This module turns those signals into a
score with a logistic model fitted on human labels (grade >= 2 = relevant), and the score into
0-3 with cut points fitted on the same labels. The result is a *calibrated score*, not "the
LLM's grade": reports say so, and the calibration file records what it was fitted on, for
which model, and which labelled queries it used (so a judge check can hold them out).

The fit is `fit_calibration`; `bench/judge_formulations.py` runs the study that chose the
features and writes the calibration shipped in `spacelm/data/judges/`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

FEWSHOT_DIGIT = "Grade the passage for this question. Reply with one digit: 0, 1, 2 or 3."
FEWSHOT_YESNO = "Does the passage answer the question, completely or in good part? Reply yes or no."
# the same question with its meaning reversed: a judge that leans to "yes" whatever it reads
# raises P(yes) here as much as above, so the mean of P(yes) above and P(no) here cancels the lean
FEWSHOT_MIRROR = (
    "Does the passage leave the question unanswered, so that a reader would still need another source? Reply yes or no."
)
# feature name -> (template, instruction or None, options); "cosine" comes from the embedding model
PROMPT_FEATURES = {
    "digit_expected": ("relevance", None, ("0", "1", "2", "3")),
    "yesno_p": ("relevance_yesno", None, ("yes", "no")),
    "fewshot_expected": ("relevance_fewshot", FEWSHOT_DIGIT, ("0", "1", "2", "3")),
    "fewshot_yes": ("relevance_fewshot", FEWSHOT_YESNO, ("yes", "no")),
    "fewshot_mirror": ("relevance_fewshot", FEWSHOT_MIRROR, ("yes", "no")),
}
EMBEDDING_FEATURES = ("cosine",)
# features computed from other features: name -> (the features it reads, how)
DERIVED_FEATURES = {
    # P(relevant) asked both ways: the mean of P(yes) to "does it answer?" and P(no) to "does it
    # leave the question unanswered?"
    "fewshot_both": (("fewshot_yes", "fewshot_mirror"), lambda yes, mirror: (yes + 1.0 - mirror) / 2),
}
PROBABILITY_FEATURES = ("yesno_p", "fewshot_yes", "fewshot_mirror", "fewshot_both")  # entered as log-odds


def base_features(features: Sequence[str]) -> list[str]:
    """The features that are measured (prompt and embedding ones) for a list that may hold derived ones."""
    out: list[str] = []
    for f in features:
        for g in DERIVED_FEATURES[f][0] if f in DERIVED_FEATURES else (f,):
            if g not in out:
                out.append(g)
    return out


def add_derived(raw: dict) -> dict:
    """`raw` with every derived feature whose inputs it holds (None when an input is None)."""
    out = dict(raw)
    for name, (inputs, fn) in DERIVED_FEATURES.items():
        if all(i in raw for i in inputs):
            vals = [raw[i] for i in inputs]
            out[name] = None if any(v is None for v in vals) else fn(*vals)
    return out


def feature_scorers(features: Sequence[str], judge_model: str, embedding_model: str) -> dict:
    """{feature: the model whose score it is}: prompt features are the judge model's, the cosine
    the embedding model's. What the independence rule compares with the systems a judge grades."""
    return {f: (embedding_model if f in EMBEDDING_FEATURES else judge_model) for f in base_features(features)}


@dataclass
class Calibration:
    """A fitted combination: standardised features -> logistic score -> cut points into 0-3."""

    name: str
    features: list
    mean: list
    scale: list
    coef: list
    intercept: float
    cut_points: list  # c1 < c2 < c3: grade = number of cut points at or below the score
    judge_model: str  # the model spec whose signals were fitted (e.g. embedded:qwen2.5-coder-1.5b)
    judge_sha256: str | None = None
    embedding_model: str | None = "embedded:minilm"  # the model of an embedding feature (None: none read)
    fitted_on: dict = field(default_factory=dict)  # source -> list of query ids used in the fit
    description: str = ""
    measured: dict = field(default_factory=dict)  # held-out figures from the study, for the report

    def score(self, x: Sequence[float]) -> float:
        z = [(v - m) / s for v, m, s in zip(x, self.mean, self.scale)]
        return float(self.intercept + sum(c * v for c, v in zip(self.coef, z)))

    def grade(self, score: float) -> int:
        return int(sum(score >= c for c in self.cut_points))

    def templates(self) -> list[str]:
        return sorted({PROMPT_FEATURES[f][0] for f in base_features(self.features) if f in PROMPT_FEATURES})

    def scorers(self) -> dict:
        """{feature: model spec whose score it is} (see :func:`feature_scorers`)."""
        return feature_scorers(self.features, self.judge_model, self.embedding_model)

    def uses_embedding(self) -> bool:
        return any(f in EMBEDDING_FEATURES for f in base_features(self.features))

    def to_dict(self) -> dict:
        return asdict(self)


def calibration_path(spec: str) -> Path:
    """The file of a calibration given by name (`spacelm/data/judges/<name>.json`) or path."""
    path = Path(spec)
    if path.suffix == ".json":
        return path
    return Path(str(resources.files("spacelm").joinpath("data", "judges", f"{spec}.json")))


def load_calibration(spec: str) -> Calibration:
    """A calibration by name (`spacelm/data/judges/<name>.json`) or by path to a JSON file."""
    path = calibration_path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"no judge calibration {spec!r} ({path} does not exist)")
    try:
        return Calibration(**json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError) as e:
        raise ValueError(f"{path}: not a judge calibration ({e})") from e


def _logit(p: float, eps: float = 1e-4) -> float:
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))


def feature_value(name: str, raw: dict) -> float:
    """A feature as it enters the model: probabilities as log-odds, the rest unchanged."""
    v = float(raw[name] if name in raw else add_derived(raw)[name])
    return _logit(v) if name in PROBABILITY_FEATURES else v


def feature_requests(features: Sequence[str], question: str, passage: str) -> list:
    """The judge calls one pair needs, as (feature, Request)."""
    from ..llm.prompting import render
    from ..llm.types import Request

    out = []
    for f in base_features(features):
        if f not in PROMPT_FEATURES:
            continue
        template, instruction, options = PROMPT_FEATURES[f]
        fields = {"question": question, "passage": passage}
        if instruction:
            fields["instruction"] = instruction
        out.append((f, Request(messages=render(template, **fields), choices=list(options), max_tokens=2)))
    return out


def read_feature(name: str, comp) -> float | None:
    """A prompt feature from a completion's option probabilities (None when the backend gave none)."""
    probs = comp.choice_probs
    if not probs:
        return None
    if name.endswith("_expected"):
        total = sum(probs.values())
        return sum(int(k) * v for k, v in probs.items()) / total if total else None
    return float(probs.get("yes", 0.0)) / max(1e-12, sum(probs.values()))


def cosine_features(encoder, pairs: list[dict], passages: dict) -> dict:
    """(qid, chunk_id) -> cosine of question and passage embeddings (normalised vectors)."""
    qs = sorted({p["question"] for p in pairs})
    ds = sorted({p["chunk_id"] for p in pairs})
    if not qs:
        return {}
    qv = dict(zip(qs, encoder.encode_queries(qs)))
    dv = dict(zip(ds, encoder.encode_passages([passages[d] for d in ds])))
    return {(p["qid"], p["chunk_id"]): float(np.dot(qv[p["question"]], dv[p["chunk_id"]])) for p in pairs}


def measure_features(llm, pairs: list[dict], passages: dict, features: Sequence[str], progress: str | None = None):
    """The judge's prompt features of every pair (one batch, so calls on one pair share their
    prompt's beginning): ([{feature: value or None}] per pair, prompt tokens per pair, whether
    every call of a pair came from the cache)."""
    reqs = [
        (i, f, r)
        for i, p in enumerate(pairs)
        for f, r in feature_requests(features, p["question"], passages[p["chunk_id"]])
    ]
    comps = llm.chat_many([r for _, _, r in reqs], progress=progress) if reqs else []
    raw: list[dict] = [{} for _ in pairs]
    tokens = [0] * len(pairs)
    cached = [True] * len(pairs)
    for (i, f, _), c in zip(reqs, comps):
        raw[i][f] = read_feature(f, c)
        tokens[i] += c.prompt_tokens
        cached[i] = cached[i] and c.cached
    return raw, tokens, cached


def grade_pairs_calibrated(
    llm, pairs: list[dict], passages: dict, cal: Calibration, encoder=None, extra: tuple = ()
) -> list[dict]:
    """Grade every pair with a calibration: the judge calls its features need (one batch, so
    calls on one pair share their prompt's beginning), the embedding cosine when the calibration
    reads one, then score and grade. Rows carry the same fields as `relevance.grade_pairs` plus
    `score` and `features`; a pair whose features could not be read gets grade None (never a
    silent 0). `extra`: prompt features measured beside (kept in `features`, never in the grade)."""
    wanted = [*cal.features, *[f for f in extra if f not in cal.features]]
    raw, tokens, cached = measure_features(llm, pairs, passages, wanted, f"grading (calibrated: {cal.name})")
    if cal.uses_embedding():
        if encoder is None:
            from ..retrieval.dense import make_encoder

            encoder = make_encoder(cal.embedding_model)
        cos = cosine_features(encoder, pairs, passages)
        for i, p in enumerate(pairs):
            raw[i]["cosine"] = cos[(p["qid"], p["chunk_id"])]
    rows = []
    for p, measured, n_tok, was_cached in zip(pairs, raw, tokens, cached):
        feats = add_derived(measured)
        ok = all(feats.get(f) is not None for f in cal.features)
        s = cal.score([feature_value(f, feats) for f in cal.features]) if ok else None
        rows.append(
            {
                "qid": p["qid"],
                "chunk_id": p["chunk_id"],
                "purpose": p["purpose"],
                "prompt": f"calibrated:{cal.name}",
                "grade": None if s is None else cal.grade(s),
                "expected_grade": None,
                "score": None if s is None else round(s, 4),
                "p_relevant": None if s is None else round(1 / (1 + math.exp(-s)), 4),
                "features": {k: None if v is None else round(v, 5) for k, v in feats.items()},
                "probs": None,
                "raw": "",
                "prompt_tokens": n_tok,
                "cached": was_cached,
            }
        )
    return rows


# --------------------------------------------------------------------------- fitting
def kappa(a: np.ndarray, b: np.ndarray, n_classes: int, quadratic: bool = False) -> float:
    """Cohen's kappa of two integer label arrays over classes 0..n_classes-1 (quadratic
    weights when asked), from the confusion matrix: the same figure as scikit-learn's
    `cohen_kappa_score`, fast enough to search cut points with."""
    conf = np.zeros((n_classes, n_classes))
    np.add.at(conf, (a, b), 1)
    n = conf.sum()
    if n == 0:
        return float("nan")
    i, j = np.indices(conf.shape)
    w = ((i - j) ** 2) if quadratic else (i != j).astype(float)
    expected = np.outer(conf.sum(axis=1), conf.sum(axis=0)) / n
    denom = (w * expected).sum()
    return float(1 - (w * conf).sum() / denom) if denom else 0.0


def cut_points(score: np.ndarray, labels: np.ndarray, graded: np.ndarray) -> list[float]:
    """Cut points c1 < c2 < c3 for a score, each fitted at the boundary of the 0-3 scale it
    draws, as the judge check validates them: c2 maximises Cohen's kappa of (score >= c2)
    against relevant (grade >= 2 on 0-3 labels, >= 1 on binary ones); on the graded pairs, c1
    maximises kappa of (score >= c1) against label >= 1 among candidates below c2, and c3 that of
    (score >= c3) against label = 3 among candidates above c2. Candidates are the score's
    quantiles, so cut points sit between observed scores. With fewer than 20 graded pairs (or no
    candidate on a side) c1 and c3 are the medians of the scores below and above c2."""
    score, labels, graded = np.asarray(score, float), np.asarray(labels, int), np.asarray(graded, bool)
    y = np.where(graded, labels >= 2, labels >= 1).astype(int)
    cands = np.unique(np.quantile(score, np.linspace(0.02, 0.98, 49)))
    c2 = float(max(cands, key=lambda c: kappa(y, (score >= c).astype(int), 2)))
    s, h = score[graded], labels[graded]
    lo, hi = cands[cands < c2], cands[cands > c2]
    below, above = score[score < c2], score[score >= c2]
    fallback = (
        float(np.median(below)) if len(below) else c2 - 1.0,
        float(np.median(above)) if len(above) else c2 + 1.0,
    )
    if len(s) < 20:
        return [fallback[0], c2, fallback[1]]

    def best(cands_side, target, default):
        if not len(cands_side) or target.min() == target.max():
            return default
        return float(max(cands_side, key=lambda c: kappa(target, (s >= c).astype(int), 2)))

    c1 = best(lo, (h >= 1).astype(int), fallback[0])
    c3 = best(hi, (h >= 3).astype(int), fallback[1])
    return [c1, c2, c3]


def fit_calibration(rows: list[dict], features: Sequence[str], name: str, judge_model: str, **meta) -> Calibration:
    """Fit the logistic combination and its cut points on labelled rows (each with the raw
    features, `label` and `graded`)."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([[feature_value(f, r) for f in features] for r in rows], dtype=float)
    labels = np.array([r["label"] for r in rows])
    graded = np.array([bool(r["graded"]) for r in rows])
    y = np.where(graded, labels >= 2, labels >= 1).astype(int)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    lr = LogisticRegression(C=1.0, max_iter=1000).fit((x - mean) / scale, y)
    score = lr.decision_function((x - mean) / scale)
    return Calibration(
        name=name,
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=lr.coef_[0].tolist(),
        intercept=float(lr.intercept_[0]),
        cut_points=cut_points(score, labels, graded),
        judge_model=judge_model,
        **meta,
    )
