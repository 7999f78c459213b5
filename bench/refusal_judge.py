"""The refusal judge asked one way ("does the reply decline?") and both ways (also "does the reply
give an answer?", the mean of P(yes) to the first and P(no) to the second): which one passes its
known-answer controls, and which one agrees with the phrase check on a run's answers.

    python bench/refusal_judge.py [--run results/standard] [--extra-seeds 2]
                                  [--out results/bench/refusal_judge.json]

Reads a finished run's config, chunks, questions and answers; loads the run's judge.

- Controls: the run's own refusal controls (`build_controls` at the run's seed, the ones its
  judge_check scored) and, as held-out sets no design choice was looked at on, the controls at
  the next `--extra-seeds` seeds (other questions, other hedged refusals, other kinds first),
  duplicates of an earlier set dropped. Each control pairs a (hedged) refusal with a confident,
  nudged or hedged fabrication; it passes when the refusal is judged to decline and the
  fabrication is not. Pass rate with its 95% Wilson interval and the suite's verdict
  (`controls_table`), per reading.
- Answers: every answer of the run, judged both ways, against the phrase check (`is_refusal`):
  agreement, Cohen's κ, and how many each calls a refusal.

One code path: the judge is `judge_refusal`, as in the answer stage and judge_check; "asked one
way" is its first question alone (`p_yes_declines`, the verdict the suite gave before both ways).
Model calls go through the run's LLM cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.answer.answerability import agreement  # noqa: E402
from spacelm.lib.answer.answers import judge_refusal  # noqa: E402
from spacelm.lib.io import read_jsonl, write_json  # noqa: E402
from spacelm.lib.judge.validity import REFUSAL_JUDGE, build_controls, controls_table  # noqa: E402
from spacelm.lib.llm.frontend import open_llm  # noqa: E402
from spacelm.lib.llm.scores import verdict_of  # noqa: E402
from spacelm.runner.data import load_chunks, load_questions  # noqa: E402

READINGS = {
    "asked one way (declines?)": "p_yes_declines",
    "asked both ways (declines? and answers?)": "p_yes",
}


def control_sets(cfg, extra_seeds: int) -> dict[str, list[dict]]:
    """{name: refusal controls}: the run's own, then one held-out set per extra seed."""
    chunks = load_chunks(cfg)
    questions = load_questions(cfg, chunks)
    text_of = {c.chunk_id: c.text for c in chunks}
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    n = cfg.judge_check.n_controls
    seen: set = set()
    sets = {}
    for k in range(extra_seeds + 1):
        seed = cfg.seed + k
        got = build_controls(questions, text_of, doc_of, n, seed, [REFUSAL_JUDGE])
        fresh = [c for c in got if (c["qid"], c["kind"], c["good"], c["bad"]) not in seen]
        seen |= {(c["qid"], c["kind"], c["good"], c["bad"]) for c in got}
        sets[f"run's own (seed {seed})" if k == 0 else f"held out (seed {seed})"] = fresh
    return sets


def score_both_ways(judge, controls: list[dict]) -> list[dict]:
    """Each control's good and bad answer through `judge_refusal`; one result row per control and
    reading, in the shape `controls_table` reads."""
    items = [{"question": c["question"], "answer": c[w], "_c": c, "_w": w} for c in controls for w in ("good", "bad")]
    judge_refusal(judge, items)
    rows: dict = {}
    for it in items:
        b = it["binary"]["refusal"]
        for reading, key in READINGS.items():
            v = verdict_of(b[key])
            row = rows.setdefault((id(it["_c"]), reading), dict(it["_c"], reading=reading))
            row[f"{it['_w']}_score"] = None if v is None else float(v)
            row[f"{it['_w']}_expected"] = b[key]
    return list(rows.values())


def against_phrases(judge, answers: list[dict]) -> list[dict]:
    """Every answer judged both ways, against the phrase check."""
    items = [{"question": a["question"], "answer": a["answer"], "phrase": bool(a["refusal"])} for a in answers]
    judge_refusal(judge, items)
    out = []
    for reading, key in READINGS.items():
        pairs = [(verdict_of(it["binary"]["refusal"][key]), it["phrase"]) for it in items]
        decided = [(j, p) for j, p in pairs if j is not None]
        ag = agreement([j for j, _ in pairs], [p for _, p in pairs])
        out.append(
            {
                "reading": reading,
                "answers": len(items),
                "undecided": len(pairs) - len(decided),
                "refusals_by_judge": sum(j for j, _ in decided),
                "refusals_by_phrase": sum(p for _, p in decided),
                "agreement": ag["agreement"],
                "kappa": ag["kappa"],
                "judge_yes_phrase_no": sum(j and not p for j, p in decided),
                "judge_no_phrase_yes": sum(p and not j for j, p in decided),
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=str(ROOT / "results" / "standard"))
    ap.add_argument("--extra-seeds", type=int, default=2, help="held-out control sets at the next seeds")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "spacelm"))
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "refusal_judge.json"))
    args = ap.parse_args(argv)

    run = Path(args.run)
    cfg = load_config(run / "config.resolved.yaml")
    sets = control_sets(cfg, args.extra_seeds)  # bad input fails here, before the model loads
    answers = list(read_jsonl(run / "answers.jsonl"))
    judge = open_llm(cfg.models.judge, Path(args.cache_dir))
    out: dict = {
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run),
        "judge": cfg.models.judge.model,
        "controls": [],
        "answers_against_phrase_check": against_phrases(judge, answers),
    }
    every: list[dict] = []
    for name, controls in sets.items():
        rows = score_both_ways(judge, controls)
        every += rows
        for reading in READINGS:
            t = controls_table([r for r in rows if r["reading"] == reading], cfg.judge_check)
            out["controls"].append({"set": name, "reading": reading, **t.iloc[0].to_dict()})
    for reading in READINGS:
        t = controls_table([r for r in every if r["reading"] == reading], cfg.judge_check)
        out["controls"].append({"set": "all sets", "reading": reading, **t.iloc[0].to_dict()})
    own = run / "judge_check" / "controls.jsonl"
    if own.is_file():  # the run's own set, rebuilt here, is the one its judge_check scored
        key = lambda c: (c["qid"], c["kind"], c["good"], c["bad"])  # noqa: E731
        scored = {key(c) for c in read_jsonl(own) if c["rubric"] == REFUSAL_JUDGE}
        out["own_set_matches_the_runs_judge_check"] = scored == {key(c) for c in next(iter(sets.values()))}
    for r in out["controls"]:
        print(
            f"{r['set']:<22} {r['reading']:<42} n {r['n']:>3}  pass {r['pass_rate']:.2f} "
            f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]  {r['verdict']}"
        )
    for r in out["answers_against_phrase_check"]:
        print(
            f"answers: {r['reading']:<42} judge {r['refusals_by_judge']}, phrase {r['refusals_by_phrase']} "
            f"of {r['answers']}; agreement {r['agreement']}, κ {r['kappa']}"
        )
    write_json(Path(args.out), out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
