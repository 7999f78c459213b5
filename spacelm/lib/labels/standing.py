"""An assessor's standing, measured on the calibration items mixed blind into its batches.

- relevance: its grades of pairs with NIST grades (TREC DL): κ at grade ≥ 2 with a 95% bootstrap
  CI over queries, linear weighted κ, AUC of its grade for NIST ≥ 2, exact agreement;
- screening: golden questions with their passages, whose answerability is known: the share screened
  in the known direction (answerable or not);
- answers: known-answer controls, a good and a damaged answer to one question whose direction is
  known: the share of controls whose good answer scores above the bad on the control's rubric, and
  the mean gap;

and, for every kind, its self-agreement on the items repeated in another batch. `passes` holds when
the figure the floor names reaches it. A batch whose answers are all the same, when its items are
not, is refused whatever the figures (`constant_batches`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from .store import ANSWERS, RELEVANCE, SCREENING


@dataclass(frozen=True)
class Floors:
    """The floors an import must reach (config `labels.floor`)."""

    relevance_kappa: float = 0.40
    controls: float = 0.80
    screening: float = 0.80


@dataclass
class Standing:
    """One assessor's standing on one kind of item."""

    assessor: str
    kind: str
    n_calibration: int
    figure: str  # the figure the floor reads
    value: float | None
    floor: float
    passes: bool
    reason: str = ""
    measures: dict = field(default_factory=dict)
    self_agreement: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _r(x, nd: int = 4):
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), nd)


def relevance_measures(rows: Sequence[dict], n_boot: int = 1000, seed: int = 0) -> dict:
    """`rows`: {qid, truth (0-3), grade (0-3)}. κ per boundary with CIs, weighted κ, AUC, exact."""
    from ..judge.validity import boundary_agreement

    pairs = [{"qid": r["qid"], "label": int(r["truth"]), "grade": int(r["grade"])} for r in rows]
    m = boundary_agreement(pairs, n_boot, seed, graded=True, with_auc=True)
    ge2 = m["boundaries"]["ge2"]
    return {
        "kappa_ge2": ge2["kappa"],
        "kappa_ge2_ci": ge2["kappa_ci"],
        "kappa_ge1": m["boundaries"]["ge1"]["kappa"],
        "kappa_eq3": m["boundaries"]["eq3"]["kappa"],
        "kappa_weighted_linear": m.get("kappa_weighted_linear"),
        "kappa_weighted_linear_ci": m.get("kappa_weighted_linear_ci"),
        "auc": m.get("auc"),
        "auc_ci": m.get("auc_ci"),
        "exact": _r(np.mean([p["label"] == p["grade"] for p in pairs])) if pairs else None,
        "confusion": {
            str(t): {str(g): sum(1 for p in pairs if p["label"] == t and p["grade"] == g) for g in range(4)}
            for t in range(4)
        },
    }


def control_measures(rows: Sequence[dict]) -> dict:
    """`rows`: {control, rubric, good, bad} (the scores the assessor gave each answer on the
    control's rubric). The pass rate (good above bad) with its Wilson CI and the mean gap."""
    from ..stats import wilson_ci

    gaps = [float(r["good"]) - float(r["bad"]) for r in rows]
    passed = sum(g > 0 for g in gaps)
    lo, hi = wilson_ci(passed, len(gaps)) if gaps else (None, None)
    by_rubric: dict = {}
    for r, g in zip(rows, gaps):
        by_rubric.setdefault(r["rubric"], []).append(g)
    return {
        "pass_rate": _r(passed / len(gaps)) if gaps else None,
        "pass_rate_ci": [_r(lo), _r(hi)],
        "mean_gap": _r(np.mean(gaps)) if gaps else None,
        "by_rubric": {
            k: {"n": len(v), "pass_rate": _r(np.mean([g > 0 for g in v]))} for k, v in sorted(by_rubric.items())
        },
    }


def screening_measures(rows: Sequence[dict]) -> dict:
    """`rows`: {truth: bool answerable, screen}. The share screened in the known direction."""
    from ..stats import wilson_ci

    hit = [(r["screen"] == "answerable") == bool(r["truth"]) for r in rows]
    lo, hi = wilson_ci(sum(hit), len(hit)) if hit else (None, None)
    return {
        "agreement": _r(np.mean(hit)) if hit else None,
        "agreement_ci": [_r(lo), _r(hi)],
        "answerable_kept": _r(np.mean([r["screen"] == "answerable" for r in rows if r["truth"]]))
        if any(r["truth"] for r in rows)
        else None,
        "unanswerable_rejected": _r(np.mean([r["screen"] != "answerable" for r in rows if not r["truth"]]))
        if any(not r["truth"] for r in rows)
        else None,
    }


def self_agreement(kind: str, pairs: Sequence[tuple]) -> dict:
    """Agreement of the assessor with itself on repeated items: `pairs` of (first, second) answers
    (grades, screens, or the mean rubric score of an answer)."""
    from ..judge.validity import _kappa

    if not pairs:
        return {"n": 0}
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    out: dict = {"n": len(pairs), "exact": _r(np.mean([x == y for x, y in pairs]))}
    if kind == RELEVANCE:
        out["kappa_ge2"] = _r(_kappa([int(x >= 2) for x in a], [int(y >= 2) for y in b]))
        out["mean_abs_diff"] = _r(np.mean([abs(x - y) for x, y in pairs]))
    elif kind == ANSWERS:
        out["mean_abs_diff"] = _r(np.mean([abs(x - y) for x, y in pairs]))
    return out


def measure(
    assessor: str,
    kind: str,
    calibration: Sequence[dict],
    repeats: Sequence[tuple],
    floors: Floors,
    n_boot: int = 1000,
    seed: int = 0,
) -> Standing:
    """The standing of `assessor` on `kind` from its calibration answers and repeats."""
    if kind == RELEVANCE:
        m = relevance_measures(calibration, n_boot, seed)
        figure, value, floor = "kappa_ge2", m["kappa_ge2"], floors.relevance_kappa
        what = "κ at grade ≥ 2 against NIST"
    elif kind == SCREENING:
        m = screening_measures(calibration)
        figure, value, floor = "agreement", m["agreement"], floors.screening
        what = "share of golden questions screened in the known direction"
    else:
        m = control_measures(calibration)
        figure, value, floor = "pass_rate", m["pass_rate"], floors.controls
        what = "share of answer controls scored in the known direction"
    passes = value is not None and value >= floor
    reason = (
        f"no calibration items answered ({what} cannot be measured)"
        if value is None
        else ("" if passes else f"{what} {value:.2f} is below the floor {floor:.2f}")
    )
    return Standing(
        assessor, kind, len(calibration), figure, value, floor, passes, reason, m, self_agreement(kind, repeats)
    )


def constant_batches(answers_by_batch: dict) -> list[str]:
    """The batches (of 10 or more items) whose answers are all one value: no reader gives every
    passage, question or answer of a shuffled batch the same grade."""
    return sorted(b for b, vals in answers_by_batch.items() if len(vals) >= 10 and len({str(v) for v in vals}) == 1)


# standing is not measured on fewer calibration answers than this
MIN_CALIBRATION = 20
