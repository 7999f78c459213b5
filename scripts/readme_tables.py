"""Fill the generated blocks of README.md and docs/*.md from committed run files and bench outputs,
so no figure or verdict in them is typed by hand.

A block is two marker lines with the generator's name; everything between them is rewritten:

    <!-- generated:NAME -->
    ...
    <!-- /generated -->

    python scripts/readme_tables.py            # rewrite every block
    python scripts/readme_tables.py --check    # exit 1 when a block is out of date, a block names no
                                               # generator, a figure quoted in prose (QUOTED)
                                               # differs from its run file, or prose states a
                                               # verdict or a count of questions by hand
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's spacelm, for the generators that compute with it
from spacelm.lib import names  # noqa: E402  (every run-folder file name, defined once)

BLOCK = re.compile(r"(<!-- generated:([\w.-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)
WIDTH = 118  # wrapped prose stays under the 120-character line limit


# --------------------------------------------------------------------------- helpers
def _cell(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return str(v).replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict], cols: list[str], right: tuple[str, ...] = ()) -> list[str]:
    """A Markdown table without padding (rows stay short), columns in `right` right-aligned."""
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if c in right else "---" for c in cols) + "|"]
    return out + ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |" for r in rows]


def compact(md: str) -> list[str]:
    """A padded Markdown table (as pandas writes it) with its padding removed."""
    out = []
    for line in md.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= set(":-") and c for c in cells):
            cells = ["---:" if c.endswith(":") and not c.startswith(":") else "---" for c in cells]
        out.append("| " + " | ".join(cells) + " |" if not cells[0].startswith("---") else "|" + "|".join(cells) + "|")
    return out


def wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=" " * len(indent)) or [""]


def _json(root: Path, rel: str):
    return json.loads((root / rel).read_text())


def _csv(root: Path, rel: str) -> list[dict]:
    import pandas as pd

    return pd.read_csv(root / rel).to_dict("records")


def ci(lo_hi, fmt: str = "{:.2f}") -> str:
    if not lo_hi or lo_hi[0] is None:
        return "–"
    return "[" + ", ".join(fmt.format(x) for x in lo_hi) + "]"


def source_line(*paths: str) -> str:
    return "(generated from " + ", ".join(f"`{p}`" for p in paths) + ")"


# the Table 2 study of the reference config (configs/standard.yaml holds Table 1 only)
ANSWERS_RUN = "standard_answers"


def answers_in(m: dict) -> bool:
    """Whether the run a manifest describes has an answer stage (Table 2, answerability)."""
    return bool(((m.get("config") or {}).get("answer") or {}).get("enabled", True))


def no_table2(run: str) -> str:
    """A sentence for a run whose config leaves Table 2 out, naming where it is made."""
    return (
        f"Run `{run}` has no Table 2: its config leaves the answer stage out (`answer.enabled: false`). Table 2 is "
        f"the study of `configs/{ANSWERS_RUN}.yaml`, written to `results/{ANSWERS_RUN}/`"
    )


def table2_elsewhere(root: Path, run: str) -> str:
    made = (root / "results" / ANSWERS_RUN / names.MANIFEST).is_file()
    return no_table2(run) + ("." if made else ", which has no committed run yet.")


# --------------------------------------------------------------------------- reference runs
def run_summary(root: Path, run: str = "standard") -> list[str]:
    """One paragraph: which config and commit made the run, its time, and the scale of its tables."""
    m = _json(root, f"results/{run}/{names.MANIFEST}")
    mt = m.get("model_time", {})
    z = m.get("sizes", {})
    if m.get("cold"):  # one process from empty caches: its wall time is measured, not estimated
        when = (
            f"It ran cold, in one process from empty caches, in {m['total_seconds'] / 60:.0f} min "
            f"({(mt.get('model_share_of_wall') or 0):.0%} of it in model calls). "
        )
    else:
        when = (
            f"Its results cost about {mt.get('cold_seconds_estimate', 0) / 60:.0f} min cold "
            f"({(mt.get('model_share_cold_estimate') or 0):.0%} of it in model calls). "
        )
    text = (
        f"Run `{run}` came from `{m.get('config_file')}` at git `{str(m.get('git_commit'))[:7]}`. "
        + when
        + f"Table 1 grades {z.get('table1_questions')} questions from {z.get('table1_source_chunks')} source "
        + (
            f"chunks; Table 2 answers {z.get('table2_questions_per_setting')} per setting. "
            if answers_in(m)
            else f"chunks; it has no Table 2 (`configs/{ANSWERS_RUN}.yaml` is that study). "
        )
        + screening_note(root, run)
        + grading_method(m, _json_or_empty(root, f"results/{run}/labels/standing.json"))
    )
    return wrap(text) + ["", source_line(f"results/{run}/{names.MANIFEST}")]


def _json_or_empty(root: Path, rel: str) -> dict:
    return _json(root, rel) if (root / rel).is_file() else {}


def screening_note(root: Path, run: str) -> str:
    """The questions the assessor screened out of Table 1 (grading/question_screening.json)."""
    f = _json_or_empty(root, f"results/{run}/{names.QUESTION_SCREENING}")
    if not f.get("screened"):
        return ""
    return (
        f"The assessor screened {f['screened']} of them against their passages and rejected {f['rejected']} "
        f"({100 * f['rejected_share']:.0f}%, unanswerable or on a false premise), so Table 1 reads "
        f"{f['kept_for_table1']}. "
    )


def grading_method(m: dict, standing: dict | None = None) -> str:
    """How the run's Table 1 grades were made, from its manifest (a run older than the option has none)
    and its labels' standing (labels/standing.json: the relevance assessor)."""
    method = m["stages"].get("grade", {}).get("grading_method")
    instrument = (m.get("config") or {}).get("grading", {}).get("instrument", "judge")
    for u in m.get("updates") or []:  # a report recomputed under a later config reads what that config says
        instrument = (u.get("config_changes") or {}).get("grading.instrument", instrument)
    if method and instrument != "judge":
        store = m["stages"].get("labels", {})
        rel = [a for a in (standing or {}).get("assessors", []) if a.get("kind") == "relevance" and a.get("passes")]
        who = rel[-1]["assessor"] if rel else store.get("assessor", "see labels/standing.json")
        return (
            f"Table 1's verdicts read an assessor's labels ({who}, "
            f"label store sha256 `{str(store.get('store_sha256'))[:12]}`); the embedded judge ({method}) is "
            "measured against them on the same pairs."
        )
    if method:
        return f"Table 1 grades: {method}."
    return "Its manifest records no grading method (it predates the option): Table 1 grades are the judge's own digit."


def run_sizes(root: Path, run: str = "standard") -> list[str]:
    m = _json(root, f"results/{run}/{names.MANIFEST}")
    z = m.get("sizes", {})
    rows = [
        {
            "table": "synthetic questions",
            "questions": f"{z.get('synthetic_questions_kept')} kept of {z.get('synthetic_questions_written')}",
            "what": unanswerable_text(root / "results" / run, z, m),
        },
        {
            "table": "Table 1",
            "questions": z.get("table1_questions"),
            "what": f"{z.get('table1_pairs_graded')} distinct pairs graded",
        },
    ]
    if answers_in(m):
        rows += [
            {
                "table": "Table 2",
                "questions": f"{z.get('table2_questions_per_setting')} per setting",
                "what": f"{z.get('answers')} answers, pipelines {'/'.join(m['config']['answer']['pipelines'])} "
                "included",
            },
            {
                "table": "answerability",
                "questions": f"{z.get('answerability_answerable')} + {z.get('answerability_unanswerable')}",
                "what": "answerable + unanswerable, gate off and on",
            },
        ]
    rows.append(
        {
            "table": "judge checks",
            "questions": f"{z.get('judge_check_labelled_pairs')} pairs",
            "what": f"labelled (each source's own labels, docs/judges.md), + {z.get('judge_check_control_pairs')} "
            "control pairs",
        }
    )
    return table(rows, ["table", "questions", "what"]) + ["", source_line(f"results/{run}/{names.MANIFEST}")]


def unanswerable_text(run_dir: Path, z: dict, m: dict) -> str:
    """The unanswerable set as the run kept it: synthetic kept of written, and the human-labelled
    (golden) ones kept as labelled, counted from answers.jsonl when it names their kind."""
    written = z.get("unanswerable_written", m["stages"].get("synth", {}).get("unanswerable_generated"))
    kept = z.get("unanswerable_kept")
    ans = run_dir / names.ANSWERS
    kinds = []
    if ans.is_file():
        rows = map(json.loads, ans.read_text().splitlines())
        kinds = [r.get("unanswerable_kind") for r in rows if r.get("answerable") is False]
    golden = sum(k == "golden" for k in kinds)
    if not written:
        return f"+ {kept} unanswerable, all human-written (golden samples); none synthetic"
    if kinds and kept is not None and golden:
        return f"+ {kept} unanswerable ({kept - golden} synthetic of {written} written, {golden} golden)"
    return f"+ {kept} unanswerable kept of {written}"


def findings(root: Path, run: str = "standard") -> list[str]:
    """The paper's findings with this run's verdict (and why, where the run gives a reason), short enough for the
    README."""
    rows = _csv(root, f"results/{run}/{names.PAPER_VS_RUN}")
    why: dict = {}
    for r in rows:
        reason = r.get("verdict_reason")
        if str(reason).strip().lower() not in ("", "nan", "none"):
            why.setdefault((r["verdict"], str(reason)), []).append(r["finding"])
    reasons = [
        line
        for (verdict, reason), fs in why.items()
        for line in wrap(f"*{verdict}* for {len(fs)} finding{'s' if len(fs) > 1 else ''}: {reason}.", "- ")
    ]
    return (
        table(rows, ["finding", "verdict", "n"])
        + ([""] + reasons if reasons else [])
        + ["", source_line(f"results/{run}/{names.PAPER_VS_RUN}")]
    )


def primary(root: Path, run: str = "standard") -> list[str]:
    """The analysis plan's primary finding: the paper's figure, the run's with its CI, the verdict and why,
    the grader's validity at the finding's boundary and its measured bias between the compared systems."""
    rows = [r for r in _csv(root, f"results/{run}/{names.PAPER_VS_RUN}") if r.get("role") == "primary"]
    out = []
    for r in rows:
        why = str(r.get("verdict_reason") or "")
        if r.get("instrument") == "labels":
            holes = int(float(r.get("holes") or 0))
            instrument = (
                f"Read through the assessor's labels ({r['judge_verdict']}); {holes} unlabelled passages in its cells."
            )
        else:
            instrument = (
                f"The grader at the finding's boundary: {r['boundary']}. Its bias between the compared systems, "
                f"measured on the in-domain labels: {r['judge_bias']}."
            )
        text = (
            f"**Primary finding** (plan entry `{r['plan_entry']}`, {int(float(r['n_needed']))} questions needed): "
            f"{r['finding']}. Paper: {r['paper']}. This run: {r['this_run']}, 95% CI {r['ci']}; n {r['n']}. "
            f"Verdict *{r['verdict']}*" + (f" ({why})" if why and why != "nan" else "") + ". " + instrument
        )
        out += wrap(text) + [""]
    if not out:
        return wrap(f"Run `{run}`'s findings name no primary finding.")
    return out + [source_line(f"results/{run}/{names.PAPER_VS_RUN}")]


def findings_detail(root: Path, run: str = "standard") -> list[str]:
    """Every finding as a wrapped bullet: the paper's figure, this run's, its CI, the verdicts."""
    out = []
    for r in _csv(root, f"results/{run}/{names.PAPER_VS_RUN}"):
        text = (
            f"**{r['finding']}** — *{r['verdict']}*. Paper: {_cell(r['paper'])}. This run: {_cell(r['this_run'])}; "
            f"CI {_cell(r['ci'])}; n {_cell(r['n'])}. Judge: {_cell(r['judge_verdict'])}. "
            f"Smallest detectable: {_cell(r.get('mde_rule'))}."
        )
        out += wrap(text, "- ")
    return out + ["", source_line(f"results/{run}/{names.PAPER_VS_RUN}")]


def rules(root: Path, run: str = "standard") -> list[str]:
    """Each finding with the rule its verdict applies, as the run wrote it."""
    out = []
    for r in _csv(root, f"results/{run}/{names.PAPER_VS_RUN}"):
        out += wrap(f"**{r['finding']}** ({_cell(r.get('judge'))} judge): {_cell(r.get('rule'))}.", "- ")
    return out + ["", source_line(f"results/{run}/{names.PAPER_VS_RUN}")]


def setup(root: Path, run: str = "standard", width: int = 150) -> list[str]:
    """The run's setup beside the paper's; a `this_run` cell longer than `width` keeps its first clause in the
    table and gives the rest as a numbered note under it (a table row cannot wrap)."""
    rows, notes = [], []
    for r in _csv(root, f"results/{run}/{names.SETUP_VS_PAPER}"):
        head, _, rest = str(r["this_run"]).partition("; ")
        if len(str(r["this_run"])) > width and rest:
            notes.append(f"{len(notes) + 1}. {r['component']}: {rest}")
            r = dict(r, this_run=f"{head} (note {len(notes)})")
        rows.append(r)
    return (
        table(rows, ["component", "paper", "this_run", "match"])
        + ([""] + [line for n in notes for line in wrap(n)] if notes else [])
        + ["", source_line(f"results/{run}/{names.SETUP_VS_PAPER}")]
    )


def model_time(root: Path, run: str = "standard") -> list[str]:
    mt = _json(root, f"results/{run}/{names.MANIFEST}").get("model_time", {})
    rows = [
        {
            "stage": u["stage"],
            "unit": u["unit"],
            "n": u["n"],
            "s/unit": f"{u['seconds_per_unit']:.2f}",
            "calls/unit": f"{u['calls_per_unit']:.2f}",
        }
        for u in mt.get("per_unit", [])
    ]
    return table(rows, ["stage", "unit", "n", "s/unit", "calls/unit"], ("n", "s/unit", "calls/unit")) + [
        "",
        source_line(f"results/{run}/{names.MANIFEST}"),
    ]


def stage_seconds(root: Path, run: str = "quick") -> list[str]:
    m = _json(root, f"results/{run}/{names.MANIFEST}")
    rows = [
        {"stage": s, "seconds": f"{v['seconds']:.1f}"}
        for s, v in m["stages"].items()
        if v.get("seconds") and s != "report"  # written after the run's wall time ends
    ]
    rows.append({"stage": "whole run (wall)", "seconds": f"{m['total_seconds']:.1f}"})
    lead = (
        f"Run `{run}`, `{m.get('config_file')}` at git `{str(m.get('git_commit'))[:7]}`, caches as the run found them:"
    )
    return (
        wrap(lead)
        + [""]
        + table(rows, ["stage", "seconds"], ("seconds",))
        + [
            "",
            source_line(f"results/{run}/{names.MANIFEST}"),
        ]
    )


def md_file(name: str, plain: bool = False):
    """A run's markdown table; `plain`: without the run's best/second marks (bold, underline), for a
    page that shows cells no finding reads at its n."""

    def gen(root: Path, run: str = "standard") -> list[str]:
        if name == names.TABLE2_MD and not (root / "results" / run / name).is_file():
            if not (root / "results" / ANSWERS_RUN / name).is_file():
                return wrap(table2_elsewhere(root, run))
            run = ANSWERS_RUN  # the reference config's Table 2 study
        text = (root / "results" / run / name).read_text().split("\n\n")[0]
        if plain:
            text = re.sub(r"\*\*|</?u>", "", text)
        return compact(text) + ["", source_line(f"results/{run}/{name}")]

    return gen


def note_of(name: str):
    """The note a run writes under its table (sample and judge), wrapped."""

    def gen(root: Path, run: str = "standard") -> list[str]:
        if not (root / "results" / run / name).is_file():
            run = ANSWERS_RUN
        if not (root / "results" / run / name).is_file():
            return []
        parts = (root / "results" / run / name).read_text().strip().split("\n\n")
        return wrap(" ".join(parts[1:])) if len(parts) > 1 else []

    return gen


# --------------------------------------------------------------------------- judges
def relevance_rows(root: Path, run: str) -> list[dict]:
    rows = []
    for r in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}"):
        if not r.get("run"):
            continue
        rows.append(
            {
                "source": r["source"],
                "pairs": r["n_pairs"],
                "AUC": f"{r['auc']:.2f} {ci(r.get('auc_ci'))}",
                "κ (grade ≥ 2)": f"{r['kappa_binary']:.2f} {ci(r.get('kappa_binary_ci'))}",
                "weighted κ": "–" if r.get("kappa_weighted") is None else f"{r['kappa_weighted']:.2f}",
                "verdict": f"**{r['verdict']}**",
            }
        )
    return rows


def judges_relevance(run: str):
    def gen(root: Path) -> list[str]:
        cols = ["source", "pairs", "AUC", "κ (grade ≥ 2)", "weighted κ", "verdict"]
        return table(relevance_rows(root, run), cols, ("pairs",)) + [
            "",
            source_line(f"results/{run}/{names.JUDGE_RELEVANCE}"),
        ]

    return gen


def no_controls(root: Path, run: str) -> list[str] | None:
    """The lines for a run that scored no known-answer controls (None when it did)."""
    p = root / "results" / run / names.JUDGE_CONTROLS
    if p.is_file() and len(p.read_text().strip().splitlines()) > 1:  # a header and at least one judge
        return None
    if not (root / "results" / run / names.MANIFEST).is_file():
        return wrap(f"`results/{run}/` has no committed run yet.")
    return wrap(
        f"Run `{run}` scored no known-answer controls (`judge_check.controls: false`): they check the answer judges, "
        f"and {table2_elsewhere(root, run).split(': ', 1)[1]}"
    )


def judges_controls(run: str):
    def gen(root: Path) -> list[str]:
        if (absent := no_controls(root, run)) is not None:
            return absent
        rows = [
            {
                "judge": r["rubric"].replace("_", " "),
                "controls": r["n"],
                "pass rate": f"{r['pass_rate']:.2f} [{r['pass_rate_ci_low']:.2f}, {r['pass_rate_ci_high']:.2f}]",
                "verdict": f"**{r['verdict']}**",
            }
            for r in _csv(root, f"results/{run}/{names.JUDGE_CONTROLS}")
        ]
        return table(rows, ["judge", "controls", "pass rate", "verdict"], ("controls",)) + [
            "",
            source_line(f"results/{run}/{names.JUDGE_CONTROLS}"),
        ]

    return gen


def control_gaps_by_kind(root: Path) -> list[str]:
    """bench/control_gaps.py's controls per judge and kind for each generator (their bad answers
    differ where they are the generator's own): n, pass rate at the stated minimum gap, mean gap and
    its lower 95% bound; then the judges' verdicts and the judge's self-preference."""
    d = _json(root, "results/control_gaps.json")
    gens = list(d["generators"])
    short = {g: g.split(":")[-1].replace("qwen2.5-coder-", "") for g in gens}
    out = []
    for g in gens:
        for r in d["generators"][g]["by_kind"]:
            out.append(
                {
                    "answers of": short[g],
                    "judge": r["rubric"],
                    "kind": r["kind"] + (" (own)" if r["origin"] == "output" else ""),
                    "n": r["n"],
                    "pass rate [95% CI]": f"{r['pass_rate']:.2f} " + ci((r["ci_low"], r["ci_high"])),
                    "mean gap": f"{r['mean_gap']:.3f}",
                    "gap, lower 95%": "–" if r["gap_ci_low"] is None else f"{r['gap_ci_low']:.3f}",
                }
            )
    cols = ["answers of", "judge", "kind", "n", "pass rate [95% CI]", "mean gap", "gap, lower 95%"]
    lines = table(out, cols, ("n", "mean gap", "gap, lower 95%"))
    verdicts = [
        f"- answers of the {short[g]}: "
        + ", ".join(
            f"{c['rubric']} {c['verdict']} ({c['pass_rate']:.2f} of {c['n']})" for c in d["generators"][g]["controls"]
        )
        for g in gens
    ]
    sp = d.get("self_preference") or {}
    lines += [
        "",
        f"Verdicts at the minimum gap ({d['min_control_gap']:g} of the scale, {d['min_control_gap'] * 4:g} points on "
        f"1–5); {d['questions']} questions, {d['n_controls']} controls per judge, judge `{d['judge']}`:",
        "",
        *verdicts,
    ]
    if sp.get("cells"):
        lines += [
            "",
            f"Self-preference of `{sp['judge']}` (gap on its own flagged answers − gap on the other generator's, as a "
            f"share of the scale, over {sp['cells']} judge × kind cells, {sp['controls_own']} vs "
            f"{sp['controls_other']} controls): {sp['mean_gap_difference']:+.3f} " + ci(sp["ci"], "{:+.3f}") + ".",
        ]
    return lines + ["", "(generated from `results/control_gaps.json`)"]


def judge_injection(root: Path) -> list[str]:
    """bench/judge_injection.py: per judge, the mean change of its score when a forged section is
    appended to the passage (or a note to the grader to the answer) beside the change an ordinary
    sentence makes (the judge's noise for this comparison), with 95% CIs."""
    d = _json(root, "results/judge_injection.json")
    out = []
    for judge, res in d["by_judge"].items():
        noise = res.get("neutral")
        for v, label in (("forged", "forged passage section"), ("forged_answer", "note in the answer")):
            r = res.get(v)
            if not r:
                continue
            out.append(
                {
                    "judge": judge,
                    "injection": label,
                    "n": r["n"],
                    "change [95% CI]": f"{r['mean']:+.3f} " + ci(r["ci"], "{:+.3f}"),
                    "ordinary sentence [95% CI]": "–"
                    if not noise
                    else f"{noise['mean']:+.3f} " + ci(noise["ci"], "{:+.3f}"),
                    "beyond noise": "yes" if r.get("beyond_noise") else "no",
                }
            )
    cols = ["judge", "injection", "n", "change [95% CI]", "ordinary sentence [95% CI]", "beyond noise"]
    moved = sorted({r["judge"] for r in out if r["beyond noise"] == "yes"})
    return table(out, cols, ("n",)) + [
        "",
        f"{d['questions']} questions, judge `{d['judge']}`; scores as the tables read them (1–5 expected scores, "
        "P(yes), the share of supported claims, the relevance grader's calibrated score). Moved beyond noise: "
        + (", ".join(moved) if moved else "none")
        + ".",
        "",
        "(generated from `results/judge_injection.json`)",
    ]


def control_gaps(run: str, config: str):
    """The judge's good - bad control gap (mean, 95% cluster-robust t interval) per kind for each rubric
    a "changes little" finding reads, and over the kinds the config names for it, beside twice the
    config's margin: what the findings' resolution rule (spacelm/lib/report/findings.py) reads."""

    def gen(root: Path) -> list[str]:
        import dataclasses

        import yaml

        if (absent := no_controls(root, run)) is not None:
            return absent

        from spacelm.config.schema import FindingsConfig
        from spacelm.lib.io import read_jsonl
        from spacelm.lib.report.findings import RESOLUTION, control_gap

        rows = read_jsonl(root / "results" / run / names.JUDGE_CONTROLS_ROWS)
        declared = (yaml.safe_load((root / config).read_text()) or {}).get("findings") or {}
        default = dataclasses.asdict(FindingsConfig())
        margins = {**default["margins"], **(declared.get("margins") or {})}
        kinds = {**default["control_kinds"], **(declared.get("control_kinds") or {})}

        def line(rubric, what, gap, need=None):
            lo, hi = gap["low"], gap["high"]
            return {
                "rubric": rubric,
                "controls": what,
                "n": gap["n"],
                "mean gap": "–" if gap["mean"] is None else f"{gap['mean']:.3f}",
                "95% CI": ci((lo, hi), "{:.3f}") if lo is not None else "–",
                "2 × margin": "" if need is None else f"{need:g}",
                "resolves": "" if need is None else "**yes**" if lo is not None and lo >= need else "**no**",
            }

        out = []
        for rubric, margin in margins.items():
            mine = sorted({r.get("kind") for r in rows if r.get("rubric") == rubric and r.get("kind")})
            out += [line(rubric, k, control_gap(rows, rubric, [k])) for k in mine]
            named = ", ".join(kinds[rubric]) or "all"
            gap = control_gap(rows, rubric, kinds[rubric])
            out.append(line(rubric, f"**read: {named}**", gap, RESOLUTION * margin))
        cols = ["rubric", "controls", "n", "mean gap", "95% CI", "2 × margin", "resolves"]
        return table(out, cols, ("n", "mean gap")) + [
            "",
            source_line(f"results/{run}/{names.JUDGE_CONTROLS_ROWS}", f"{config} (findings)"),
        ]

    return gen


def controls_vintage(run: str):
    """Whether a run's control verdicts were written under today's rules, and what today's rule
    makes of that many controls: a Wilson interval for all of them passing."""

    def gen(root: Path) -> list[str]:
        import pandas as pd

        from spacelm.config import JudgeCheckConfig
        from spacelm.lib.stats import wilson_ci

        if (absent := no_controls(root, run)) is not None:
            return absent
        c = pd.read_csv(root / "results" / run / names.JUDGE_CONTROLS)
        bar = JudgeCheckConfig().valid_pass_rate
        manifest = root / "results" / run / names.MANIFEST
        git = str(json.loads(manifest.read_text()).get("git_commit", ""))[:7] if manifest.is_file() else ""
        if c.empty:
            return wrap(f"Run `{run}` ran no known-answer controls: its answer judges are *unchecked*.")
        n = int(c["n"].max())
        lo, hi = wilson_ci(n, n)
        if "passed" in c.columns:
            text = f"Run `{run}`'s control verdicts follow today's rules (Wilson intervals, `passed` column)."
        else:
            text = (
                f"Run `{run}`'s control verdicts were written" + (f" at git `{git}`" if git else "") + ", before "
                f"today's rules: its "
                f"`controls.csv` has no `passed` column and its intervals are bootstrap ones. Under today's rule "
                f"a judge is *valid* when the Wilson lower bound of its pass rate reaches {bar}; {n} of {n} "
                f"controls passed gives [{lo:.2f}, {hi:.2f}]"
                + (", so no judge can be *valid* on " + str(n) + " controls." if lo < bar else ".")
                + " Read these verdicts as the rules of that time gave them; a new judge check replaces them."
            )
        return wrap(text) + ["", source_line(f"results/{run}/{names.JUDGE_CONTROLS}", "spacelm/lib/stats.py")]

    return gen


def position_bias(run: str):
    def gen(root: Path) -> list[str]:
        rows = []
        for r in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}"):
            pb = r.get("position_bias")
            if not pb:
                continue
            q, b = pb["question_first"], pb["both_orders"]
            rows.append(
                {
                    "source": r["source"],
                    "pairs": pb["n_pairs"],
                    "same grade both orders": f"{pb['agreement']:.0%}",
                    "mean shift (passage first)": f"{pb['mean_shift']:+.2f}",
                    "AUC one order → both": f"{q['auc']:.2f} → {b['auc']:.2f}",
                    "κ one order → both": f"{q['kappa_binary']:.2f} → {b['kappa_binary']:.2f}",
                }
            )
        cols = ["source", "pairs", "same grade both orders", "mean shift (passage first)"]
        cols += ["AUC one order → both", "κ one order → both"]
        return table(rows, cols, ("pairs",)) + ["", source_line(f"results/{run}/{names.JUDGE_RELEVANCE}")]

    return gen


def judge_variants(root: Path) -> list[str]:
    rows = []
    for v in _json(root, "results/judge_variants.json"):
        e, a, c = v["expected_grade"], v["argmax_grade"], v["cost"]
        rows.append(
            {
                "judge": v["model"].split(":")[-1].replace("qwen2.5-coder-", ""),
                "prompt": v["prompt"],
                "source": v["source"],
                "pairs": e["n_pairs"],
                "AUC expected": f"{e['auc']:.2f} {ci(e['auc_ci'])}",
                "AUC argmax": f"{a['auc']:.2f}",
                "κ": f"{e['kappa_binary']:.2f} {ci(e['kappa_binary_ci'])}",
                "s/pair": f"{c['seconds_per_pair']:.2f}",
                "tokens/pair": f"{c['prompt_tokens_evaluated_per_pair']:.0f}",
            }
        )
    cols = ["judge", "prompt", "source", "pairs", "AUC expected", "AUC argmax", "κ", "s/pair", "tokens/pair"]
    return table(rows, cols, ("pairs", "AUC argmax", "s/pair", "tokens/pair")) + [
        "",
        source_line("results/judge_variants.json"),
    ]


def ppi_coverage(root: Path) -> list[str]:
    rows, all_rows = [], _json(root, "results/ppi_coverage.json")["rows"]
    strat = {(r["judge"], r["run"], r["n_human"]): r for r in all_rows if r.get("sampler") == "stratified"}
    for r in all_rows:
        if r.get("sampler") != "uniform":
            continue
        st = strat.get((r["judge"], r["run"], r["n_human"]))
        rows.append(
            {
                "judge": r["judge"],
                "run": r["run"],
                "N": r["n_pairs"],
                "true": f"{r['true_share']:.3f}",
                "judge error": f"{r['judge_only_error']:+.3f}",
                "n": r["n_human"],
                "PPI": f"{r['coverage_classic']:.3f} ({r['mean_width_classic']:.3f})",
                "fpc": f"{r['coverage_finite_population']:.3f}",
                "PPI++": f"{r['coverage_ppi_plus_plus']:.3f} ({r['mean_width_ppi_plus_plus']:.3f})",
                "labels only": f"{r['coverage_labels_only']:.3f} ({r['mean_width_labels_only']:.3f})",
                "stratified PPI": "–"
                if st is None
                else f"{st['coverage_classic']:.3f} ({st['mean_width_classic']:.3f})",
            }
        )
    cols = ["judge", "run", "N", "true", "judge error", "n", "PPI", "fpc", "PPI++", "labels only", "stratified PPI"]
    return table(rows, cols, ("N", "true", "judge error", "n")) + ["", source_line("results/ppi_coverage.json")]


# --------------------------------------------------------------------------- bench outputs
def reranker_ablation(root: Path) -> list[str]:
    """bench/reranker_ablation.py's table: each cross-encoder variant against BM25 on the in-domain labels."""
    rel = "results/bench/reranker_ablation.json"
    d = _json(root, rel)
    rows = [
        {
            "reranker": "BM25 (first stage)",
            "nDCG@10": f"{d['bm25']['ndcg@10']:.3f}",
            "vs BM25 [95% CI]": "–",
            "top-3 < 400 chars": f"{100 * d['bm25']['short_top3']:.1f}%",
            "loss first → last": "–",
            "train s": "–",
        }
    ]
    for name, r in d.items():
        if not isinstance(r, dict) or "vs_bm25" not in r:
            continue
        v = r["vs_bm25"]
        rows.append(
            {
                "reranker": name,
                "nDCG@10": f"{r['ndcg@10']:.3f}",
                "vs BM25 [95% CI]": f"{v['diff']:+.3f} [{v['ci'][0]:+.3f}, {v['ci'][1]:+.3f}]",
                "top-3 < 400 chars": f"{100 * r['short_top3']:.1f}%",
                "loss first → last": "no training"
                if r.get("loss_first") is None
                else f"{r['loss_first']} → {r['loss_last']}",
                "train s": f"{r['seconds']:.0f}",
            }
        )
    lead = (
        f"{d['eval_queries']} in-domain queries (BM25 top-100 reranked; nDCG@10 over judged passages only, "
        f"BM25's top-10 {100 * d['pool_coverage_top10']:.0f}% judged); {d['train_groups']} pseudo-query groups "
        f"for training, {d['held_out_chunks']} chunks of the labelled pool and their neighbours held out."
    )
    return wrap(lead) + [""] + table(rows, list(rows[0]), ()) + ["", source_line(rel)]


def beir_anchor(root: Path) -> list[str]:
    d = _json(root, "results/beir_anchor.json")
    rows = []
    for name in ("bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid"):
        r = d.get(name)
        if not r:
            continue
        pub = r.get("published_ndcg@10")
        rows.append(
            {
                "system": name,
                "nDCG@10": f"{r['ndcg@10']:.4f}",
                "R@100": f"{r['recall@100']:.4f}",
                "published": "–" if pub is None else f"{pub} ({r.get('published_source')})",
                "gap": "–" if r.get("gap") is None else f"{r['gap']:+.4f}",
            }
        )
    ds = d["dataset"]
    lead = f"SciFact test: {ds['queries']} queries, {ds['passages']:,} passages; reranker pool {d['models']['pool']}."
    return (
        wrap(lead)
        + [""]
        + table(rows, ["system", "nDCG@10", "R@100", "published", "gap"], ("nDCG@10", "R@100", "gap"))
        + ["", source_line("results/beir_anchor.json")]
    )


def retrieval_scale(root: Path) -> list[str]:
    d = _json(root, "results/retrieval_scale.json")
    rows = [
        {
            "corpus": k,
            "chunks": f"{v['chunks']:,}",
            "BM25 search s": f"{v['bm25_search_s']:.1f}",
            "dense search s": f"{v['dense_search_s']:.1f}",
            "both s": f"{v['both_s']:.1f}",
        }
        for k, v in d["scales"].items()
    ]
    lead = f"{d['queries']:,} queries, top-{d['k']}; encoding excluded."
    cols = ["corpus", "chunks", "BM25 search s", "dense search s", "both s"]
    return wrap(lead) + [""] + table(rows, cols, tuple(cols[1:])) + ["", source_line("results/retrieval_scale.json")]


def left_out_costs(root: Path) -> list[str]:
    """What the 2-hour standard run leaves out and the minutes each part would add (bench/left_out_costs.py)."""
    d = _json(root, "results/left_out_costs.json")
    rows = [{"part": p["part"], "adds (min)": f"{p['seconds'] / 60:.0f}"} for p in d["parts"]]
    rows += [{"part": f"{r['part']} ({r['what']})", "adds (min)": f"{r['seconds'] / 60:.0f}"} for r in d["sizes"]]
    tail = (
        f"Priced at the rates run `{d['run']}` measured ({d['run_total_seconds'] / 60:.0f} min cold): the judge "
        f"evaluates {d['judge_tokens_per_second']:.0f} prompt tokens/s; an answer written takes "
        f"{d['seconds_per_unit']['answer written']:.1f} s, a question written "
        f"{d['seconds_per_unit']['question written']:.1f} s, a graded pair "
        f"{d['seconds_per_unit']['graded pair']:.1f} s."
    )
    return (
        table(rows, ["part", "adds (min)"], ("adds (min)",))
        + [""]
        + wrap(tail)
        + [
            "",
            source_line("results/left_out_costs.json"),
        ]
    )


def unit_costs(root: Path) -> list[str]:
    d = _json(root, "results/unit_costs.json")
    labels = {
        "graded_pair": "graded pair",
        "question_written": "question written",
        "answer_written": "answer written",
        "answer_judged": "answer judged",
    }
    rows = [
        {
            "unit": labels.get(k, k),
            "n": str(u["n_units"]),
            "calls": f"{u['calls_per_unit']:g}",
            "prompt tokens": f"{u['prompt_tokens']:,.0f}",
            "tokens evaluated": f"{u['tokens_evaluated']:,.0f}",
            "seconds": f"{u['seconds']:.2f}",
            "raw llama.cpp s": f"{u['raw_llamacpp_seconds']:.2f}",
            "ratio": f"{u['ratio']:.2f}",
        }
        for k, u in d["units"].items()
    ]
    cols = ["unit", "n", "calls", "prompt tokens", "tokens evaluated", "seconds", "raw llama.cpp s", "ratio"]
    tail = (
        f"Per unit, {d['config']}: judge and writer {d['models']['judge']}, generator {d['models']['generator']}, "
        f"{d['threads']} threads, no cache. Tokens evaluated: prompt tokens left after prefix reuse plus tokens "
        "generated. ratio = raw llama.cpp seconds / spacelm seconds on the same token sequences (goal >= 0.9)."
    )
    return (
        table(rows, cols, ("n", "calls", "prompt tokens", "tokens evaluated", "seconds", "raw llama.cpp s", "ratio"))
        + [""]
        + wrap(tail)
        + ["", source_line("results/unit_costs.json")]
    )


def llm_throughput(root: Path) -> list[str]:
    d = _json(root, "results/llm_throughput.json")
    rows = []
    for key, label in (
        ("raw", "raw llama-cpp-python"),
        ("ours_ordered", "spacelm, question-major order"),
        ("ours_interleaved", "spacelm, interleaved order"),
    ):
        r = d[key]
        rows.append(
            {
                "path": label,
                "seconds": f"{r['seconds']:.2f}",
                "calls/s": f"{r['calls_per_s']:.3f}",
                "prompt tok/s": f"{r['prompt_tok_per_s']:.1f}",
                "evaluated / reused": f"{r['tokens_evaluated']:,} / {r['tokens_reused']:,}"
                if "tokens_evaluated" in r
                else "–",
            }
        )
    g = d["generation"]
    tail = (
        f"{d['prompts']} prompts, {d['model']}, {d['threads']} threads, no cache. spacelm / raw calls per second: "
        f"{d['ratio_ours_over_raw_calls_per_s']:.2f}; question-major over interleaved: "
        f"{d['speedup_ordered_over_interleaved']:.3f}x. Free generation: {g['generated_tok_per_s']:.1f} tokens/s."
    )
    cols = ["path", "seconds", "calls/s", "prompt tok/s", "evaluated / reused"]
    return (
        table(rows, cols, ("seconds", "calls/s", "prompt tok/s"))
        + [""]
        + wrap(tail)
        + [
            "",
            source_line("results/llm_throughput.json"),
        ]
    )


def citations(root: Path) -> list[str]:
    d = _json(root, "results/citations_bench.json")
    rows = []
    for style, r in d["styles"].items():
        rows.append(
            {
                "passages shown as": style,
                "answers": r["n_answers"],
                "with a valid citation": f"{r['answers_with_valid_citation']:.1%} {ci(r['ci'], '{:.1%}')}",
                "citation on a sentence": f"{r['answers_with_cited_claim']:.1%}",
                "markers naming a passage": f"{r['citation_accuracy']:.0%} (n={r['n_with_markers']})",
            }
        )
    cols = [
        "passages shown as",
        "answers",
        "with a valid citation",
        "citation on a sentence",
        "markers naming a passage",
    ]
    return table(rows, cols, ("answers",)) + ["", source_line("results/citations_bench.json")]


def gate(root: Path) -> list[str]:
    d = _json(root, "results/gate_calibration.json")
    c = d["configured"]
    text = (
        f"{d['n_answerable']} answerable and {d['n_unanswerable']} unanswerable questions, {d['retriever']} "
        f"top-{d['top_k']}: the gate score separates them with AUC {d['auc']:.2f} {ci(d['auc_ci'])}. At the "
        f"configured thresholds ({c['threshold']}, strong claims {c['strong_threshold']}): refusal recall "
        f"{c['refusal_recall']:.2f}, refusal precision {c['refusal_precision']:.2f}, false-refusal rate "
        f"{c['false_refusal_rate']:.2f}."
    )
    return wrap(text) + ["", source_line("results/gate_calibration.json")]


def unanswerable(root: Path, rel: str = f"data/synthetic/standard/{names.UNANSWERABLE}") -> list[str]:
    """The unanswerable candidates per kind: written, well formed, passing the judge's check, kept."""
    import pandas as pd

    d = pd.read_csv(root / rel).groupby("kind", sort=False)[["generated", "well_formed", "check_passed", "kept"]].sum()
    rows = [{"kind": k, **{c: int(v) for c, v in r.items()}} for k, r in d.iterrows()]
    cols = ["kind", "generated", "well_formed", "check_passed", "kept"]
    return table(rows, cols, tuple(cols[1:])) + ["", source_line(rel)]


def rerank_pool(root: Path, run: str = "standard") -> list[str]:
    """The reranker's resolved pool and whether the two reranked systems returned the same lists."""
    r = _json(root, f"results/{run}/{names.MANIFEST}")["stages"]["retrieve"]
    text = (
        f"In run `{run}` the pool resolved to {r['rerank_pool']} of the {r['corpus_chunks']} chunks, and the share of "
        f"questions for which `bm25+rerank` and `dense+rerank` return the same top-10 was "
        f"{r['reranked_lists_identical']:.2f}."
    )
    return wrap(text) + ["", source_line(f"results/{run}/{names.MANIFEST}")]


def chunk_sizes(root: Path, run: str = "standard") -> list[str]:
    """The chunk-size comparison of a run: retrieval against span gold per size and question set,
    and what each size holds (chunks, mean tokens)."""
    rel, crel = f"results/{run}/{names.CHUNK_SIZES_SUMMARY}", f"results/{run}/{names.CHUNK_SIZES_COSTS}"
    costs = {r["chunk_size"]: r for r in _csv(root, crel)}
    rows = []
    for r in _csv(root, rel):
        c = costs.get(r["chunk_size"], {})
        rows.append(
            {
                "size": r["chunk_size"],
                "questions": f"{r['questions']} ({r['n_questions']} from {r['n_source_chunks']} chunks)",
                "system": r["system"],
                "chunks": c.get("chunks"),
                "nDCG@10": f"{float(r['ndcg@10']):.3f}" + _ci_of(r, "ndcg@10"),
                "recall@10": f"{float(r['recall@10']):.3f}" + _ci_of(r, "recall@10"),
                "coverage@3": f"{float(r['coverage@3']):.3f}",
            }
        )
    cols = ["size", "questions", "system", "chunks", "nDCG@10", "recall@10", "coverage@3"]
    return table(rows, cols, ("chunks", "nDCG@10", "recall@10", "coverage@3")) + ["", source_line(rel, crel)]


def _ci_of(row: dict, metric: str) -> str:
    """ " [lo, hi]" from a row's `<metric>_ci_low/high` columns, or "" when the run has none."""
    lo, hi = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    if lo in (None, "") or hi in (None, ""):
        return ""
    return f" [{float(lo):.2f}, {float(hi):.2f}]"


def size_differences(root: Path, run: str = "standard") -> list[str]:
    """Each chunk size against the smallest on the same questions (paired, clustered, Holm)."""
    rel = f"results/{run}/{names.CHUNK_SIZES_DIFFERENCES}"
    rows = [
        {
            "questions": r["questions"],
            "system": r["system"],
            "metric": r["metric"],
            "sizes": f"{r['size_b']} − {r['size_a']}",
            "n": f"{r['n_questions']} / {r['n_source_chunks']}",
            "difference [95% CI]": f"{float(r['diff']):+.3f} [{float(r['ci_low']):+.3f}, {float(r['ci_high']):+.3f}]",
            "p (Holm)": f"{float(r['p_holm']):.2g}" if r["p_holm"] not in ("", None) else "–",
        }
        for r in _csv(root, rel)
    ]
    cols = ["questions", "system", "metric", "sizes", "n", "difference [95% CI]", "p (Holm)"]
    return table(rows, cols, ("difference [95% CI]", "p (Holm)")) + ["", source_line(rel)]


def _csv_number(row: dict, key: str, fmt: str) -> str | None:
    """A CSV cell formatted with `fmt`, or None when it is empty."""
    return None if row[key] in ("", None) else format(float(row[key]), fmt)


def table1_by_size(root: Path, run: str = "paper-chunks") -> list[str]:
    """Table 1's reranking comparison at each chunk size of a run's chunk-size study: the share of
    grade 3 before and after reranking, the paired difference with its CI, p and the detectable
    difference, and the mean grade."""
    base = root / "results" / run / names.CHUNK_SIZES
    paths = sorted(base.glob(f"*/{names.CHUNK_SIZE_TESTS}"), key=lambda p: int(p.parent.name))
    rows, sources = [], []
    for p in paths:
        rel = str(p.relative_to(root))
        sources.append(rel)
        for r in _csv(root, rel):
            if r["comparison"] != "reranked - retrieved" or r["measure"] not in ("share_3", "mean_grade"):
                continue
            pp = r["measure"] == "share_3"
            spec, unit, pct = (".1f", " pp", "%") if pp else (".2f", "", "")
            signed = ("diff", "ci_low", "ci_high")
            v = {
                k: _csv_number(r, k, "+" + spec if k in signed else spec)
                for k in ("value_a", "value_b", "mde_cell", *signed)
            }
            rows.append(
                {
                    "size": p.parent.name,
                    "retriever": f"{r['retriever']} top-{r['top_k']}",
                    "measure": "grade 3" if pp else "mean grade",
                    "n": f"{r['n_questions']} / {r['n_source_chunks']}",
                    "retrieved → reranked": f"{v['value_a']}{pct} → {v['value_b']}{pct}",
                    "difference [95% CI]": f"{v['diff']}{unit}"
                    + (f" [{v['ci_low']}, {v['ci_high']}]" if v["ci_low"] else ""),
                    "p": _csv_number(r, "p_value", ".2g") or "–",
                    "detectable": f"±{v['mde_cell']}" if v["mde_cell"] else "–",
                }
            )
    cols = ["size", "retriever", "measure", "n", "retrieved → reranked", "difference [95% CI]", "p", "detectable"]
    return table(rows, cols, ("difference [95% CI]", "p", "detectable")) + ["", source_line(*sources)]


def _kappa_at(m: dict, b: str) -> str:
    f = (m.get("boundaries") or {}).get(b)
    return "–" if not f or f.get("kappa") is None else f"{f['kappa']:.2f} {ci(f.get('kappa_ci'))}"


def judges_boundaries(run: str):
    """A run's relevance grader at each boundary a Table 1 finding reads, per checked source: κ with its
    95% CI and the boundary's own verdict (what the findings' gate reads)."""

    def gen(root: Path) -> list[str]:
        rows = []
        for m in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}"):
            if not m.get("run"):
                continue
            bv = m.get("boundary_verdicts") or {}
            row = {"source": m["source"] + (" (in domain)" if m.get("in_domain") else ""), "pairs": m["n_pairs"]}
            for b, label in (("ge1", "≥ 1"), ("ge2", "≥ 2"), ("eq3", "= 3")):
                v = (bv.get(b) or {}).get("verdict")
                row[f"κ ({label})"] = _kappa_at(m, b) + (f" *{v}*" if v else "")
            rows.append(row)
        cols = ["source", "pairs", "κ (≥ 1)", "κ (≥ 2)", "κ (= 3)"]
        return table(rows, cols, ("pairs",)) + ["", source_line(f"results/{run}/{names.JUDGE_RELEVANCE}")]

    return gen


def _signed(d: dict) -> str:
    """A paired difference with its CI, signed: "+0.47 [+0.14, +0.75]"."""
    return f"{d['diff']:+.2f} {ci([d['ci_low'], d['ci_high']], '{:+.2f}')}"


def judges_bias(run: str):
    """A run's system-bias audit per source that ran one: each system's judge - label residual on the labelled
    passages it retrieved, and the paired differences between systems at the boundaries."""

    def gen(root: Path) -> list[str]:
        out = []
        for m in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}"):
            sb = m.get("system_bias")
            if not (m.get("run") and sb):
                continue
            rows = [
                {
                    "system": name,
                    "pairs": v["n_pairs"],
                    "judge − label (grade)": f"{v['mean_residual']:+.2f} {ci([v['ci_low'], v['ci_high']], '{:+.2f}')}",
                    "mean grade": f"{v['mean_grade']:.2f}",
                    "mean label": f"{v['mean_label']:.2f}",
                }
                for name, v in sb["systems"].items()
            ]
            diffs = [
                {"pair": pair, "grade": _signed(d["grade"]), "at ≥ 2 (share)": _signed(d["ge2"])}
                | {"at = 3 (share)": _signed(d["eq3"])}
                for pair, d in (sb.get("differences") or {}).items()
            ]
            out += [f"**{m['source']}** ({sb.get('n_queries', m.get('n_queries'))} queries):", ""]
            out += table(rows, ["system", "pairs", "judge − label (grade)", "mean grade", "mean label"], ("pairs",))
            if diffs:
                out += [""] + table(diffs, ["pair", "grade", "at ≥ 2 (share)", "at = 3 (share)"])
            out += ["", f"Kendall τ of the systems' ranking by judge and by labels: {sb.get('kendall_tau')}.", ""]
        if not out:
            return wrap(f"Run `{run}` ran no system-bias audit.")
        return out + [source_line(f"results/{run}/{names.JUDGE_RELEVANCE}")]

    return gen


def judge_independent(root: Path) -> list[str]:
    """The shipped embedded grader (no retriever's score) on every labelled pair it was not fitted
    on, at each boundary, beside the reference judges on the same TREC pairs
    (bench/judge_independent.py)."""
    d = _json(root, "results/judge_independent.json")
    rows = []

    def add(name, m):
        rows.append(
            {
                "judge, labels": name,
                "pairs": m.get("n_pairs"),
                "AUC": "–" if m.get("auc") is None else f"{m['auc']:.2f} {ci(m.get('auc_ci'))}",
                "κ (≥ 1)": _kappa_at(m, "ge1"),
                "κ (≥ 2)": _kappa_at(m, "ge2"),
                "κ (= 3)": _kappa_at(m, "eq3"),
            }
        )

    for name, m in d["shipped"].items():
        if isinstance(m, list):  # reference judges on the pairs of the row above
            for r in m:
                add(f"↳ reference {r['name']}", r)
        else:
            add(f"**{Path(d['exported']).stem}**: {name}", m)
    return table(rows, ["judge, labels", "pairs", "AUC", "κ (≥ 1)", "κ (≥ 2)", "κ (= 3)"], ("pairs",)) + [
        "",
        source_line("results/judge_independent.json"),
    ]


def judge_independent_audit(root: Path) -> list[str]:
    """The shipped grader's system-bias audit on the in-domain labels (bench/judge_independent.py audit)."""
    a = _json(root, "results/judge_independent.json")["audit"]
    sb = a["system_bias"]
    rows = [
        {
            "system": name,
            "pairs": v["n_pairs"],
            "judge − label (grade)": f"{v['mean_residual']:+.2f} {ci([v['ci_low'], v['ci_high']], '{:+.2f}')}",
            "at = 3 (share)": "{:+.2f} {}".format(
                v["by_boundary"]["eq3"]["mean_residual"],
                ci([v["by_boundary"]["eq3"]["ci_low"], v["by_boundary"]["eq3"]["ci_high"]], "{:+.2f}"),
            ),
            "mean grade": f"{v['mean_grade']:.2f}",
            "mean label": f"{v['mean_label']:.2f}",
        }
        for name, v in sb["systems"].items()
    ]
    diffs = [
        {"pair": pair, "grade": _signed(d["grade"]), "at ≥ 2 (share)": _signed(d["ge2"])}
        | {"at = 3 (share)": _signed(d["eq3"])}
        for pair, d in sb["differences"].items()
    ]
    return (
        table(
            rows, ["system", "pairs", "judge − label (grade)", "at = 3 (share)", "mean grade", "mean label"], ("pairs",)
        )
        + [""]
        + table(diffs, ["pair", "grade", "at ≥ 2 (share)", "at = 3 (share)"])
        + [
            "",
            f"Kendall τ of the systems' ranking by judge and by labels: {sb['kendall_tau']}; "
            f"{a['questions']} questions, top-{a['top_k']}, {a['pairs']} labelled pairs, "
            f"{a['model_calls']} new model calls.",
            "",
            source_line("results/judge_independent.json"),
        ]
    )


RERANKER_SETS = {
    "golden": "golden samples (span gold)",
    "labels": "in-domain labels (condensed)",
    "labels-full": "in-domain labels (full top 10)",
    "scifact": "SciFact test",
    "trec-dl-2020": "TREC DL 2020",
}


def reranker(root: Path) -> list[str]:
    """The reranker the standard configs use, per set and first stage: before and after, paired
    (bench/reranker_eval.py), with the cross-encoder alone beside it (the ablation's row)."""
    d = _json(root, "results/reranker.json")
    rows = []
    for key, r in d["sets"].items():
        name, first = key.split("/")
        for row_name in ("after", "cross-encoder alone"):
            a, b = r["before"], r[row_name]
            rows.append(
                {
                    "set, first stage": f"{RERANKER_SETS.get(name, name)}, {first} (n={r['n']})",
                    "reranked by": "cross-encoder + BM25" if row_name == "after" else "cross-encoder alone",
                    "nDCG@10": f"{a['ndcg@10']:.3f} → {b['ndcg@10']:.3f}",
                    "difference [95% CI]": diff_ci(b["ndcg@10_diff"]),
                    "hit@3": f"{a['hit@3']:.2f} → {b['hit@3']:.2f}",
                    "top-3 < 400 chars": f"{a['short_top3']:.1%} → {b['short_top3']:.1%}",
                    "holes@10": f"{a['holes@10']:.1f} → {b['holes@10']:.1f}" if "holes@10" in a else "–",
                }
            )
    ck = d.get("checkpoint") or {}
    res = ck.get("result") or {}
    srcs = ", ".join(
        f"{s.get('questions_kept')} synthetic questions"
        if s.get("name") == "synthetic"
        else f"{s.get('queries')} pseudo-queries cut from training chunks"
        if s.get("name") == "pseudo"
        else f"{s.get('name')} {s.get('split')} ({s.get('queries')} queries)"
        for s in ck.get("sources", [])
        if not s.get("skipped")
    )
    cols = ["set, first stage", "reranked by", "nDCG@10", "difference [95% CI]", "hit@3", "top-3 < 400 chars"]
    return table(rows, [*cols, "holes@10"]) + [
        "",
        f"Checkpoint `{d['model']}` sha256 `{(ck.get('sha256') or '?')[:12]}`, trained by `{d['config']}` on "
        f"{srcs} ({ck.get('pairs')} pairs, {res.get('steps')} steps, {res.get('seconds')} s).",
        f"BM25's weight {d.get('weight')} was fitted on {res.get('dev_queries')} of those queries, held back from "
        f"training. Pool {d['pool']}; {d['intervals']}.",
        *holes_line(d.get("holes_labels")),
        "",
        source_line("results/reranker.json"),
    ]


def holes_line(h: dict | None) -> list[str]:
    """Who graded the in-domain set's holes, and its standing (bench/reranker_eval.py `holes_labels`)."""
    if not h:
        return []
    a = (h.get("assessors") or [{}])[0]
    kci = h.get("kappa_ge2_ci") or [None, None]
    return wrap(
        f"Full top-10 lists: the in-domain labels plus {h['labels']} labels of the passages they left unjudged, graded "
        f"blind by {a.get('assessor')} (κ at ≥ 2 against NIST {a.get('value')} {ci(kci, '{:.2f}')} on "
        f"{a.get('n_calibration')} calibration pairs mixed into the same batches; floor {a.get('floor')}); a passage "
        "still unjudged counts as not relevant."
    )


def diff_ci(d: dict) -> str:
    """A paired difference and its interval: +0.012 [-0.001, +0.027]."""
    return f"{d['diff']:+.3f} {ci(d['ci'], '{:+.3f}')}"


def standard_found(root: Path, run: str = "standard") -> list[str]:
    """What the reference run found: the report's opening section (templates/found.md), its bullets
    wrapped, without its heading."""
    from spacelm.lib.report.found import found
    from spacelm.lib.report.render import render

    m = _json(root, f"results/{run}/{names.MANIFEST}")
    model = ((m.get("config") or {}).get("retrieval") or {}).get("reranker", {}).get("model")
    text = render("found.md", found(root / "results" / run, run, model))
    out = []
    for line in text.splitlines()[1:]:
        if line.startswith("- "):
            out += textwrap.wrap(line, 120, subsequent_indent="  ", break_on_hyphens=False)
        elif line.strip():
            out += wrap(line)
    return out + ["", source_line(f"results/{run}/")]


def standard_screening(root: Path, run: str = "standard") -> list[str]:
    """The assessor's screening of the reference run's written questions: its standing and what it
    rejected (labels/standing.json, grading/question_screening.json)."""
    st = [
        a
        for a in _json(root, f"results/{run}/labels/standing.json").get("assessors", [])
        if a["kind"] == "screening" and a["passes"]
    ]
    f = _json(root, f"results/{run}/{names.QUESTION_SCREENING}")
    if not st or not f.get("screened"):
        return ["_No screening imported into this run._"]
    a, m = st[-1], st[-1]["measures"]
    kept = f["by_suite_verdict"].get("kept", {})
    prem = f["by_suite_verdict"].get("premise", {})
    text = (
        f"Screening pass imported: {a['assessor']}; {100 * a['value']:.0f}%{pct_ci(m.get('agreement_ci'))} of "
        f"{a['n_calibration']} golden questions screened in the known direction (answerable kept "
        f"{100 * m['answerable_kept']:.0f}%, unanswerable rejected {100 * m['unanswerable_rejected']:.0f}%; floor "
        f"{100 * a['floor']:.0f}%), self-agreement {a['self_agreement']['exact']:.0%} on {a['self_agreement']['n']} "
        f"repeats. It rejected {f['rejected']} of the {f['questions']} questions Table 1 graded "
        f"({100 * f['rejected_share']:.0f}%{pct_ci(f['rejected_ci'])}), so Table 1 reads {f['kept_for_table1']}. "
        f"Of the {kept.get('screened', 0)} questions synth kept it calls {kept.get('answerable', 0)} answerable; "
        f"of the {prem.get('screened', 0)} its premise check dropped, {prem.get('answerable', 0)}."
    )
    return wrap(text) + [
        "",
        source_line(f"results/{run}/labels/standing.json", f"results/{run}/{names.QUESTION_SCREENING}"),
    ]


def pct_ci(b) -> str:
    """ " [26%, 45%]" of an interval of shares, "" without one."""
    if not b or b[0] is None:
        return ""
    return f" [{100 * b[0]:.0f}%, {100 * b[1]:.0f}%]"


def reranker_ingredients(root: Path) -> list[str]:
    """bench/reranker_ingredients.py's table: the reranker trained on each ingredient, over BM25."""
    rel = "results/bench/reranker_ingredients.json"
    d = _json(root, rel)
    cols = ["trained on", "train s", "w", "set", "nDCG@10 (BM25 → reranked)", "difference [95% CI]"]
    cols += ["top-3 < 400 chars", "holes@10", "CE alone: difference"]
    rows = []
    conf = _json(root, "results/reranker.json")
    # the configured checkpoint's ingredients, named as the bench names a variant
    used = {x.get("name") for x in (conf.get("checkpoint") or {}).get("sources", []) if not x.get("skipped")}
    configured = "+".join(n for n in ("synthetic", "scifact", "pseudo") if n in used)
    variants = {(f"{k} (configured)" if k == configured else k): v for k, v in d["variants"].items()}
    for variant, v in variants.items():
        for key, r in v["sets"].items():
            name, first = key.split("/")
            if first != "bm25":
                continue
            a, b, c = r["before"], r["after"], r["cross-encoder alone"]
            rows.append(
                {
                    "trained on": variant.replace("+", " + "),
                    "train s": f"{v['train_seconds']:.0f}",
                    "w": f"{v['weight']}",
                    "set": f"{RERANKER_SETS.get(name, name)} (n={r['n']})",
                    "nDCG@10 (BM25 → reranked)": f"{a['ndcg@10']:.3f} → {b['ndcg@10']:.3f}",
                    "difference [95% CI]": diff_ci(b["ndcg@10_diff"]),
                    "top-3 < 400 chars": f"{a['short_top3']:.1%} → {b['short_top3']:.1%}",
                    "holes@10": f"{a['holes@10']:.1f} → {b['holes@10']:.1f}"
                    if name.startswith("labels") and "holes@10" in b
                    else "–",
                    "CE alone: difference": diff_ci(c["ndcg@10_diff"]),
                }
            )
    lead = (
        f"Each variant trained by stage train-reranker from `{d['config']}` with only the named ingredients "
        f"(pseudo-queries: {d['pseudo_queries']}), BM25's weight w fitted on its own held-back training queries; "
        "first stage BM25 top 100. (configured): the ingredients the standard configs train on; its checkpoint's "
        "own rows are those of the table above."
    )
    return wrap(lead) + [""] + table(rows, cols) + ["", source_line(rel, "results/reranker.json")]


def reranker_speed(root: Path) -> list[str]:
    """Milliseconds per pair of each inference path of the trained cross-encoder, and its agreement with fp32."""
    d = _json(root, "results/reranker_speed.json")
    rows = [
        {
            "path": name,
            "ms / pair": f"{r['ms_per_pair']:.1f}",
            f"s / question at pool {d['pool']}": f"{r['s_per_question']:.2f}",
            "Spearman vs fp32": f"{r.get('spearman_vs_fp32', float('nan')):.3f}",
            "same top 10 as fp32": f"{r.get('same_top10_share', float('nan')):.0%}",
        }
        for name, r in d["paths"].items()
        if "skipped" not in r
    ]
    skipped = [f"{name}: {r['skipped']}" for name, r in d["paths"].items() if "skipped" in r]
    return table(rows, list(rows[0])) + [
        "",
        f"{d['questions']} golden questions × BM25's top {d['pool']} chunks ({d['pairs']} pairs), batch "
        f"{d['batch_size']}, timed one path after another in one process."
        + (f" Not measured: {'; '.join(skipped)}." if skipped else ""),
        "",
        source_line("results/reranker_speed.json"),
    ]


QUESTIONS_DIR = "data/synthetic/standard"


def question_checks(root: Path) -> list[str]:
    """What synth's checks rejected per task in the standard run, and the same checks on the golden samples."""
    rows = _csv(root, f"{QUESTIONS_DIR}/{names.REJECTIONS}")
    cols = ["task", "written", "malformed", "rejected_copy", "rejected_premise", "rejected_label", "not_retrieved"]
    out = []
    for name, title in (("written", "written by the run"), ("golden", "golden samples, same checks")):
        picked = [{**r, "task": f"{r['task']} ({title})" if r["task"] == "all" else r["task"]} for r in rows]
        out += table([r for r in picked if r["set"] == name], [*cols, "kept"], right=tuple(cols[1:]) + ("kept",))
        out.append("")
    skipped = next(r for r in rows if r["set"] == "sources skipped")
    reasons = ", ".join(
        f"{k[len('boilerplate_') :]} {int(float(v))}"
        for k, v in skipped.items()
        if k.startswith("boilerplate_") and float(v or 0)
    )
    return out + [
        f"Boilerplate chunks never sources: {int(float(skipped['written']))} ({reasons}).",
        "",
        source_line(f"{QUESTIONS_DIR}/{names.REJECTIONS}"),
    ]


def question_audit(root: Path) -> list[str]:
    """The standard run's questions against their source chunks, before the checks (as committed before
    issue 40) and after (written, kept), beside the golden samples."""
    before = [r for r in _json(root, "results/question_audit_before.json")["audit"] if r["task"] == "all"]
    after = [r for r in _csv(root, f"{QUESTIONS_DIR}/{names.QUESTION_AUDIT}") if r["task"] == "all"]
    label = {
        "run": "kept, before the checks",
        "written": "written, after",
        "kept": "kept, after",
        "golden": "golden samples",
    }
    rows = [{**r, "set": label[r["set"]]} for r in before if r["set"] == "run"] + [
        {**r, "set": label[r["set"]]} for r in after
    ]
    cols = [
        "n",
        "coverage_mean",
        "verbatim_median",
        "verbatim_p90",
        "share_copy",
        "share_outside_context",
        "share_outside_document",
        "share_boilerplate",
    ]
    for r in rows:
        for c in cols[1:]:
            r[c] = f"{float(r[c]):.3f}".rstrip("0").rstrip(".") if "." in str(r[c]) else r[c]
    return table(rows, ["set", *cols], right=tuple(cols)) + [
        "",
        source_line("results/question_audit_before.json", f"{QUESTIONS_DIR}/{names.QUESTION_AUDIT}"),
    ]


GENERATORS = {
    "standard-question-checks": question_checks,
    "standard-question-audit": question_audit,
    "reranker": reranker,
    "reranker-speed": reranker_speed,
    "judge-independent-audit": judge_independent_audit,
    "judge-independent": judge_independent,
    "standard-chunk-sizes": chunk_sizes,
    "standard-chunk-size-differences": size_differences,
    "paper-chunks-chunk-sizes": lambda root: chunk_sizes(root, "paper-chunks"),
    "paper-chunks-size-differences": lambda root: size_differences(root, "paper-chunks"),
    "paper-chunks-table1-sizes": table1_by_size,
    "standard-summary": run_summary,
    "standard-sizes": run_sizes,
    "standard-findings": findings,
    "standard-findings-detail": findings_detail,
    "standard-primary": primary,
    "standard-setup": setup,
    "standard-rerank-pool": rerank_pool,
    "standard-rules": rules,
    "standard-model-time": model_time,
    "standard-stage-seconds": lambda root: stage_seconds(root, "standard"),
    "standard-table1": md_file(names.TABLE1_MD, plain=True),
    "standard-table1-note": note_of(names.TABLE1_MD),
    "standard-table2": md_file(names.TABLE2_MD),
    "standard-table2-note": note_of(names.TABLE2_MD),
    "standard-judges-relevance": judges_relevance("standard"),
    "standard-judges-controls": judges_controls("standard"),
    "standard-judges-boundaries": judges_boundaries("standard"),
    "standard-judges-bias": judges_bias("standard"),
    "standard-controls-vintage": controls_vintage("standard"),
    "standard-control-gaps": control_gaps(ANSWERS_RUN, f"configs/{ANSWERS_RUN}.yaml"),
    "control-gaps-by-kind": control_gaps_by_kind,
    "judge-injection": judge_injection,
    "quick-stage-seconds": stage_seconds,
    "quick-findings": lambda root: findings(root, "quick"),
    "quick-model-time": lambda root: model_time(root, "quick"),
    "standard-unanswerable": unanswerable,
    "quick-controls-vintage": controls_vintage("quick"),
    "judge-reference-relevance": judges_relevance("judge-reference"),
    "judge-reference-controls": judges_controls("judge-reference"),
    "judge-reference-position-bias": position_bias("judge-reference"),
    "judge-controls": judges_controls("judge-controls"),
    "judge-controls-vintage": controls_vintage("judge-controls"),
    "judge-variants": judge_variants,
    "ppi-coverage": ppi_coverage,
    "beir-anchor": beir_anchor,
    "reranker-ablation": reranker_ablation,
    "reranker-ingredients": reranker_ingredients,
    "standard-screening": standard_screening,
    "standard-found": standard_found,
    "retrieval-scale": retrieval_scale,
    "llm-throughput": llm_throughput,
    "unit-costs": unit_costs,
    "left-out-costs": left_out_costs,
    "citations": citations,
    "gate": gate,
}


# --------------------------------------------------------------------------- figures quoted in prose
# (file, what, text that must be present with `{}` for the figure, a function of the root giving the
# figure from its run file). `--check` fails when a quoted figure no longer matches.
def _relevance(run: str, source: str, fmt: str):
    def read(root: Path) -> str:
        r = next(m for m in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}") if m["source"] == source)
        flat = {k: v for k, v in r.items() if not isinstance(v, (list, dict))}
        return fmt.format(**flat)

    return read


def _key(rel: str, *keys, fmt: str = "{}"):
    def read(root: Path) -> str:
        v = _json(root, rel)
        for k in keys:
            v = v[k]
        return fmt.format(v)

    return read


def _control(run: str, rubric: str, fmt: str = "{verdict}"):
    def read(root: Path) -> str:
        r = next(c for c in _csv(root, f"results/{run}/judge_check/controls.csv") if c["rubric"] == rubric)
        return fmt.format(**r)

    return read


def _cold_time(run: str = "standard", fmt: str = "{:,.0f}"):
    """A run's process time from its manifest, formatted with (seconds, minutes)."""

    def read(root: Path) -> str:
        t = _json(root, f"results/{run}/{names.MANIFEST}")["total_seconds"]
        return fmt.format(t, t / 60)

    return read


def _sizes(run: str, fmt: str):
    """Figures of a run's manifest `sizes`, formatted by name: "{table1_questions}"."""
    return lambda root: fmt.format(**_json(root, f"results/{run}/{names.MANIFEST}")["sizes"])


def _controls_n(run: str):
    return lambda root: str(max(int(c["n"]) for c in _csv(root, f"results/{run}/judge_check/controls.csv")))


def _setup(component: str, words: int):
    def read(root: Path) -> str:
        r = next(c for c in _csv(root, "results/standard/setup_vs_paper.csv") if c["component"] == component)
        return " ".join(str(r["this_run"]).split()[:words])

    return read


def _ingest_audit_spans(root: Path) -> str:
    m = re.search(r"Removed as bibliography \((\d+) spans", (root / "results" / "ingest_audit.md").read_text())
    return m.group(1) if m else "?"


QUOTED = [
    ("docs/stages.md", "ingest audit bibliography spans", "every one of its {} removed spans", _ingest_audit_spans),
    (
        "docs/measured.md",
        "standard Table 1 questions and chunks",
        "(Table 1 on {} source chunks",
        _sizes("standard", "{table1_questions} questions from {table1_source_chunks}"),
    ),
    (
        "docs/judges.md",
        "standard trec grader",
        "the grader is *{}* on TREC DL 2020",
        _relevance("standard", "trec-dl-2020", "{verdict}"),
    ),
    (
        "docs/judges.md",
        "standard golden grader",
        "*{}* on the corpus's own golden pairs",
        _relevance("standard", "golden (in-domain)", "{verdict}"),
    ),
    (
        "docs/judges.md",
        "judge-reference scifact hard negatives",
        "barely from the hard negatives people rejected (AUC {})",
        _relevance("judge-reference", "scifact", "{auc_relevant_vs_hard_negative:.2f}"),
    ),
    (
        "docs/judges.md",
        "judge-reference scifact random negatives",
        "unrelated ones well (AUC {} against random",
        _relevance("judge-reference", "scifact", "{auc_relevant_vs_random_negative:.2f}"),
    ),
    (
        "docs/measured.md",
        "standard cold seconds",
        "in {} cold",
        _cold_time(fmt="{:,.0f} s ({:.0f} min)"),
    ),
    (
        "docs/stages.md",
        "standard cold minutes",
        "made cold in one process ({} min on 2 cores",
        _cold_time(fmt="{1:.0f}"),
    ),
    (
        "docs/measured.md",
        "quick run total seconds",
        "the whole run took {} s",
        _key(f"results/quick/{names.MANIFEST}", "total_seconds", fmt="{:.1f}"),
    ),
]


# --------------------------------------------------------------------------- claims written by hand
# Two kinds of run figure are easy to type into prose and go stale unseen: a verdict next to a
# judge's name ("the refusal judge is *fails*", "relevance *weak*") and a count of questions ("24
# questions", "20 unanswerable ones", "Table 1's 60"). Outside the generated blocks and code
# fences, each such claim in README.md and docs/*.md must lie inside a QUOTED template (checked
# against its run file above) or inside a NOT_RUN_FIGURES phrase, which says why it is no figure of
# a committed run file (a rule, a past run, a bench's own fixed setting); `--check` reports any
# other, and a NOT_RUN_FIGURES phrase no longer in its file.
_JUDGES = r"faithfulness|relevance|noise[- ]robustness|negative[- ]rejection|refusal|grader|judge|rubric"
_VERDICTS = r"valid|weak|fails|failed|passes|passed|too few pairs to tell|too few kinds to tell"
# a judge's name, then within 40 characters of the same clause (no other judge named between) a
# verdict word in emphasis ("*weak*") or after a copula ("is valid", "is still weak")
VERDICT_CLAIM = re.compile(
    rf"\b(?:{_JUDGES})\b(?:(?!\b(?:{_JUDGES})\b)[^.;:!?|()\[\]]){{0,40}}?"
    rf"(?:\*{{1,2}}(?P<v>{_VERDICTS})\*{{1,2}}|\b(?:is|are|was|were|still|stays)\s+\*{{0,2}}(?P<v2>{_VERDICTS})\b)",
    re.I,
)
# a number of questions or unanswerable ones ("24 questions", "21 golden unanswerable"), or
# Table 1's / Table 2's number
COUNT_CLAIM = re.compile(
    r"\b(?P<n>\d[\d,]*)\s+(?:(?:golden|synthetic|written|unanswerable|labelled|Table [12])\s+)?"
    r"(?:questions?|unanswerable)\b|\bTable [12]'s (?P<n2>\d[\d,]*)"
)
# (file, phrase holding a claim, why it is not a figure of a committed run file)
NOT_RUN_FIGURES = [
    ("docs/judges.md", "every rubric *failed* its controls in the previous", "a previous run, kept as history"),
    ("docs/judges.md", "faithfulness was *valid* there", "the previous reference run, kept as history"),
    ("docs/judges.md", "over its 60 Table 1 questions at top-3", "the previous reference run, kept as history"),
    ("docs/judges.md", "relevance was *weak* there", "the previous reference run, kept as history"),
    ("docs/judges.md", "noise robustness was *weak* there", "the previous reference run, kept as history"),
    ("docs/judges.md", "rubric was *weak* there on its controls", "the previous reference run, kept as history"),
    ("docs/judges.md", "yes/no verdict, *failed* there", "the previous reference run, kept as history"),
    ("docs/judges.md", "refusal judge asked both ways, which is *weak*", "the table of the refusal judge below"),
    ("docs/judges.md", "The independent grader is *weak* wherever", "sums up the judge-independent blocks above"),
    ("docs/judges.md", "answer 24 golden questions", "bench/generator_choice.py's fixed setting"),
    ("docs/judges.md", "and 21 golden unanswerable questions", "bench/generator_choice.py's fixed setting"),
    ("docs/judges.md", "they span 48 questions in all", "bench/control_gaps.py's held-out control sets"),
    ("docs/statistics.md", "an answer rubric that is not *valid*", "a rule"),
    ("docs/corpus.md", "and 17 unanswerable (3–4 per task type)", "the golden sample files' contents"),
    ("docs/team-corpus.md", "with 3 of each verdict, and 5 unanswerable)", "the golden sample files' contents"),
    ("docs/team-corpus.md", "77 answerable and 21 unanswerable", "the golden sample files' contents"),
    ("docs/corpus.md", "synth (60 questions from 60 chunks)", "the paper-chunks config's setting"),
    ("docs/corpus.md", "Table 1 at each size on 10 questions", "the paper-chunks config's setting"),
    ("docs/corpus.md", "Table 1 at each size rests on 10 questions", "the paper-chunks config's setting"),
    ("docs/measured.md", "beyond what 72 questions can resolve", "the chunk-size comparison's question set"),
    ("docs/measured.md", "the same 10 golden questions ×", "a bench's fixed setting"),
    ("docs/measured.md", "4 questions × 4 passages", "bench/llm_throughput.py's fixed setting"),
    ("docs/stages.md", "(10 synthetic questions from 10 chunks, 10 unanswerable", "configs/quick.yaml's setting"),
    ("docs/stages.md", "1 question graded at top-3/5, 1 question answered", "configs/quick.yaml's setting"),
    ("docs/stages.md", "46 of 90 questions exceed", "the synth audit of a past run, kept as history"),
    ("docs/stages.md", "is in 3 written questions (13 before)", "the synth audit of a past run, kept as history"),
]


def prose(text: str) -> str:
    """`text` without its generated blocks, code fences and HTML comments, whitespace collapsed."""
    text = re.sub(r"<!-- generated:[\w.-]+ -->.*?<!-- /generated -->", " ", text, flags=re.S)  # flattened too
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return " ".join(text.split())


def _spans(text: str, pattern: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(pattern, text)]


def unchecked_claims(texts: dict[str, str]) -> list[str]:
    """Verdicts next to a judge's name and counts of questions in the prose of `texts` ({file:
    text}) whose figure (the verdict word, the number) no QUOTED template checks and no
    NOT_RUN_FIGURES phrase explains, and NOT_RUN_FIGURES phrases no longer found."""
    bad = []
    for rel, raw in texts.items():
        text = prose(raw)
        covered = []
        for f, _what, template, _ in QUOTED:
            if f == rel:
                left, _, right = template.partition("{}")
                covered += _spans(text, re.escape(left) + r"[^|]{1,80}?" + re.escape(right))
        for f, phrase, _ in NOT_RUN_FIGURES:
            if f == rel:
                found = _spans(text, re.escape(" ".join(phrase.split())))
                covered += found
                if not found:
                    bad.append(f"{rel}: the phrase {phrase!r} of NOT_RUN_FIGURES is no longer there")
        for m in [*VERDICT_CLAIM.finditer(text), *COUNT_CLAIM.finditer(text)]:
            fig = next(m.span(g) for g in ("v", "v2", "n", "n2") if g in m.groupdict() and m.group(g))
            if not any(a <= fig[0] and fig[1] <= b for a, b in covered):  # the figure itself is checked
                bad.append(
                    f"{rel}: {m.group(0)!r} is written by hand: put it in a generated block, quote it (QUOTED) "
                    "or, if it is no run figure, say why in NOT_RUN_FIGURES"
                )
    return bad


def files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def fill(text: str, root: Path = ROOT) -> tuple[str, list[str]]:
    """`text` with every generated block rewritten, and the names of blocks with no generator."""
    unknown = []

    def sub(m: re.Match) -> str:
        name = m.group(2)
        if name not in GENERATORS:
            unknown.append(name)
            return m.group(0)
        return m.group(1) + "\n".join(GENERATORS[name](root)) + "\n" + m.group(4)

    return BLOCK.sub(sub, text), unknown


def quoted_mismatches(texts: dict[str, str], root: Path = ROOT) -> list[str]:
    """Quoted figures (`QUOTED`) that differ from their run files (line breaks count as spaces)."""
    bad = []
    for rel, what, template, read in QUOTED:
        text = " ".join(texts.get(rel, "").split())
        try:
            figure = read(root)
        except (OSError, KeyError, StopIteration) as e:
            bad.append(f"{rel}: {what}: its run file cannot be read ({e})")
            continue
        if template.format(figure) not in text:
            bad.append(f"{rel}: {what}: the run file says {template.format(figure)!r}, not found")
    return bad


def check(root: Path = ROOT) -> list[str]:
    """Every problem `--check` reports: stale blocks, unknown generators, quoted figures."""
    problems, texts = [], {}
    for path in files(root):
        rel = str(path.relative_to(root))
        texts[rel] = path.read_text()
        new, unknown = fill(texts[rel], root)
        problems += [f"{rel}: block {name!r} names no generator" for name in unknown]
        if new != texts[rel]:
            problems.append(f"{rel}: generated blocks are out of date: run python scripts/readme_tables.py")
    return problems + quoted_mismatches(texts, root) + unchecked_claims(texts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that every block and quoted figure is current")
    args = ap.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p)
        return 1 if problems else 0
    for path in files(ROOT):
        text = path.read_text()
        new, unknown = fill(text)
        for name in unknown:
            print(f"{path.relative_to(ROOT)}: block {name!r} names no generator")
        if new != text:
            path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
