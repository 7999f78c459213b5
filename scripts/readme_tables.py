"""Fill the generated blocks of README.md and docs/*.md (`<!-- generated:NAME -->` ... `<!-- /generated -->`)
from committed run files and bench outputs: each generator reads its facts, a macro of spacelm/templates/readme/
words them. `--check` exits 1 when a block is out of date or names no generator, or a claim in prose or a figure in
a table is not checked against its run file (spacelm/templates/readme/claims.yaml)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import textwrap
from functools import cache, lru_cache
from itertools import zip_longest
from pathlib import Path

import yaml
from jinja2 import Undefined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's spacelm, for the generators that compute with it
from spacelm.lib import names  # noqa: E402  (every run-folder file name, defined once)
from spacelm.lib.labels.store import LabelStore  # noqa: E402
from spacelm.lib.report.render import MISSING, TEMPLATES, _missing, environment  # noqa: E402

BLOCK = re.compile(r"(<!-- generated:([\w.-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)
WIDTH = 118  # wrapped prose stays under the 120-character line limit
ANSWERS_RUN = "standard_answers"  # the Table 2 study of the reference config (configs/standard.yaml: Table 1)


# --------------------------------------------------------------------------- words
def cell(v) -> str:
    return MISSING if _missing(v) else str(v).replace("|", "\\|").replace("\n", " ")


def fmt(x, spec: str) -> str:
    if isinstance(x, Undefined):
        str(x)  # raises the UndefinedError that names the missing key
    return MISSING if _missing(x) else format(x, spec)


def interval(bounds, spec: str = ".2f") -> str:
    if not bounds or bounds[0] is None:
        return MISSING
    return "[" + ", ".join(format(x, spec) for x in bounds) + "]"


def wrap(text: str, indent: str = "") -> str:
    lines = textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=" " * len(indent))
    return "\n".join(lines)


def short_model(name: str) -> str:
    return name.split(":")[-1].replace("qwen2.5-coder-", "")


@lru_cache(maxsize=1)
def _env():
    env = environment().overlay()
    more = dict(cell=cell, fmt=fmt, interval=interval, wrap=wrap, short_model=short_model, repr=repr)
    env.filters = {**env.filters, **more}
    env.tests = {**env.tests, "missing": _missing}
    env.globals = {**env.globals, "answers_run": ANSWERS_RUN}
    return env


def words(macro: str, **facts) -> str:
    """The text of `macro` ("page.name": a macro of spacelm/templates/readme/page.md) for `facts`."""
    page, name = macro.split(".")
    return str(getattr(_env().get_template(f"readme/{page}.md").module, name)(**facts)).rstrip("\n")


# --------------------------------------------------------------------------- reading
def _json(root: Path, rel: str):
    return json.loads((root / rel).read_text())


def _json_or_empty(root: Path, rel: str) -> dict:
    return _json(root, rel) if (root / rel).is_file() else {}


def _csv(root: Path, rel: str) -> list[dict]:
    import pandas as pd

    return pd.read_csv(root / rel).to_dict("records")


def _manifest_rel(run: str) -> str:
    return f"results/{run}/{names.MANIFEST}"


def _manifest(root: Path, run: str) -> dict:
    return _json(root, _manifest_rel(run))


def _commit(m: dict) -> str:
    return str(m.get("git_commit"))[:7]


def answers_in(m: dict) -> bool:
    """Whether the run a manifest describes has an answer stage (Table 2, answerability)."""
    return bool(((m.get("config") or {}).get("answer") or {}).get("enabled", True))


def _answers_made(root: Path) -> bool:
    return (root / "results" / ANSWERS_RUN / names.MANIFEST).is_file()


def _if_answers(root: Path, gen) -> str:
    """`gen()` when the Table 2 study's run is committed, else what says it is not."""
    return gen() if _answers_made(root) else words("run.table2_elsewhere", run="standard", made=False)


def compact(md: str) -> list[str]:
    """A padded Markdown table (as pandas writes it) with its padding removed."""
    out = []
    for line in md.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= set(":-") and c for c in cells):
            cells = ["---:" if c.endswith(":") and not c.startswith(":") else "---" for c in cells]
        out.append("| " + " | ".join(cells) + " |" if not cells[0].startswith("---") else "|" + "|".join(cells) + "|")
    return out


# --------------------------------------------------------------------------- reference runs
def run_summary(root: Path, run: str = "standard") -> str:
    m = _manifest(root, run)
    store = m["stages"].get("labels", {})
    instrument = (m.get("config") or {}).get("grading", {}).get("instrument", "judge")
    for u in m.get("updates") or []:  # a report recomputed under a later config reads what that config says
        instrument = (u.get("config_changes") or {}).get("grading.instrument", instrument)
    standing = _json_or_empty(root, f"results/{run}/labels/standing.json")
    rel = [a for a in standing.get("assessors", []) if a.get("kind") == "relevance" and a.get("passes")]
    grading = {
        "method": m["stages"].get("grade", {}).get("grading_method"),
        "instrument": instrument,
        "assessor": rel[-1]["assessor"] if rel else store.get("assessor"),
        # the store a label import left, else the one the run read (its files are the grade stage's inputs)
        "store_sha256": str(store.get("store_sha256") or LabelStore(root / "results" / run / "labels").sha256())[:12],
    }
    screening = _json_or_empty(root, f"results/{run}/{names.QUESTION_SCREENING}")
    answer_labels = [a for a in standing.get("assessors", []) if a.get("kind") == "answers" and a.get("passes")]
    return words(
        "run.summary",
        table1=bool(((m.get("config") or {}).get("grading") or {}).get("enabled", True)),
        answer_labels=answer_labels[-1] if answer_labels else None,
        rel=_manifest_rel(run),
        run=run,
        m=m,
        mt=m.get("model_time", {}),
        z=m.get("sizes", {}),
        commit=_commit(m),
        answers=answers_in(m),
        screening=screening if screening.get("screened") else None,
        grading=grading,
    )


def run_sizes(root: Path, run: str = "standard") -> str:
    m = _manifest(root, run)
    z = m.get("sizes", {})
    # the golden unanswerable questions the run kept, counted from answers.jsonl when it names their kind
    ans = root / "results" / run / names.ANSWERS
    rows = map(json.loads, ans.read_text().splitlines()) if ans.is_file() else []
    golden = sum(r.get("unanswerable_kind") == "golden" for r in rows if r.get("answerable") is False)
    written = z.get("unanswerable_written", m["stages"].get("synth", {}).get("unanswerable_generated"))
    return words(
        "run.sizes",
        rel=_manifest_rel(run),
        z=z,
        answers=answers_in(m),
        pipelines=(m.get("config") or {}).get("answer", {}).get("pipelines", []),
        unanswerable={"written": written, "kept": z.get("unanswerable_kept"), "golden": golden},
    )


def _reason(r: dict) -> str:
    reason = str(r.get("verdict_reason") or "")
    return "" if reason.strip().lower() in ("", "nan", "none") else reason


def findings(root: Path, run: str = "standard") -> str:
    rel = f"results/{run}/{names.PAPER_VS_RUN}"
    rows = _csv(root, rel)
    why: dict = {}
    for r in rows:
        if _reason(r):
            why.setdefault((r["verdict"], _reason(r)), []).append(r["finding"])
    reasons = [{"verdict": v, "reason": reason, "findings": len(fs)} for (v, reason), fs in why.items()]
    return words("run.findings", rel=rel, rows=rows, reasons=reasons)


def primary(root: Path, run: str = "standard") -> str:
    rel = f"results/{run}/{names.PAPER_VS_RUN}"
    rows = [
        {**r, "why": _reason(r), "holes": int(float(r.get("holes") or 0)), "n_needed": int(float(r["n_needed"]))}
        for r in _csv(root, rel)
        if r.get("role") == "primary"
    ]
    return words("run.primary", run=run, rel=rel, rows=rows)


def findings_detail(root: Path, run: str = "standard") -> str:
    rel = f"results/{run}/{names.PAPER_VS_RUN}"
    return words("run.findings_detail", rel=rel, rows=_csv(root, rel))


def rules(root: Path, run: str = "standard") -> str:
    rel = f"results/{run}/{names.PAPER_VS_RUN}"
    return words("run.rules", rel=rel, rows=_csv(root, rel))


def setup(root: Path, run: str = "standard", width: int = 150) -> str:
    """A `this_run` cell longer than `width` keeps its first clause; the rest becomes a note."""
    rel = f"results/{run}/{names.SETUP_VS_PAPER}"
    rows, notes = [], []
    for r in _csv(root, rel):
        head, _, rest = str(r["this_run"]).partition("; ")
        if len(str(r["this_run"])) > width and rest:
            notes.append({"component": r["component"], "rest": rest})
            r = dict(r, head=head, note=len(notes))
        rows.append({"note": None, **r})
    return words("run.setup", rel=rel, rows=rows, notes=notes)


def model_time(root: Path, run: str = "standard") -> str:
    return words(
        "run.model_time", rel=_manifest_rel(run), units=_manifest(root, run).get("model_time", {}).get("per_unit", [])
    )


def stage_seconds(root: Path, run: str = "quick") -> str:
    m = _manifest(root, run)
    stages = [(s, v) for s, v in m["stages"].items() if v.get("seconds") and s != "report"]  # report: after the wall
    return words("run.stage_seconds", rel=_manifest_rel(run), run=run, m=m, commit=_commit(m), stages=stages)


def md_file(name: str, plain: bool = False):
    """A run's markdown table; `plain`: without its best/second marks (bold, underline)."""

    def gen(root: Path, run: str = "standard") -> str:
        if name == names.TABLE2_MD and not (root / "results" / run / name).is_file():
            if not (root / "results" / ANSWERS_RUN / name).is_file():
                return words("run.table2_elsewhere", run=run, made=_answers_made(root))
            run = ANSWERS_RUN
        text = (root / "results" / run / name).read_text().split("\n\n")[0]
        if plain:
            text = re.sub(r"\*\*|</?u>", "", text)
        return "\n".join(compact(text)) + "\n\n" + words("common.source", paths=[f"results/{run}/{name}"])

    return gen


def note_of(name: str):
    """The note a run writes under its table (sample and judge), wrapped."""

    def gen(root: Path, run: str = "standard") -> str:
        if not (root / "results" / run / name).is_file():
            run = ANSWERS_RUN
        if not (root / "results" / run / name).is_file():
            return ""
        parts = (root / "results" / run / name).read_text().strip().split("\n\n")
        return wrap(" ".join(parts[1:])) if len(parts) > 1 else ""

    return gen


def rerank_pool(root: Path, run: str = "standard") -> str:
    return words("run.rerank_pool", rel=_manifest_rel(run), run=run, r=_manifest(root, run)["stages"]["retrieve"])


def standard_screening(root: Path, run: str = "standard") -> str:
    sources = [f"results/{run}/labels/standing.json", f"results/{run}/{names.QUESTION_SCREENING}"]
    st = [a for a in _json(root, sources[0]).get("assessors", []) if a["kind"] == "screening" and a["passes"]]
    f = _json(root, sources[1])
    by = f.get("by_suite_verdict", {})
    a = st[-1] if st and f.get("screened") else None
    return words("run.screening", sources=sources, a=a, f=f, kept=by.get("kept", {}), premise=by.get("premise", {}))


def chunk_sizes(root: Path, run: str = "standard") -> str:
    rel, crel = f"results/{run}/{names.CHUNK_SIZES_SUMMARY}", f"results/{run}/{names.CHUNK_SIZES_COSTS}"
    costs = {r["chunk_size"]: r for r in _csv(root, crel)}
    return words("run.chunk_sizes", sources=[rel, crel], rows=_csv(root, rel), costs=costs)


def size_differences(root: Path, run: str = "standard") -> str:
    rel = f"results/{run}/{names.CHUNK_SIZES_DIFFERENCES}"
    return words("run.size_differences", rel=rel, rows=_csv(root, rel))


def table1_by_size(root: Path, run: str = "paper-chunks") -> str:
    base = root / "results" / run / names.CHUNK_SIZES
    paths = sorted(base.glob(f"*/{names.CHUNK_SIZE_TESTS}"), key=lambda p: int(p.parent.name))
    sources = [str(p.relative_to(root)) for p in paths]
    rows = [
        {**r, "size": p.parent.name}
        for p, rel in zip(paths, sources)
        for r in _csv(root, rel)
        if r["comparison"] == "reranked - retrieved" and r["measure"] in ("share_3", "mean_grade")
    ]
    return words("run.table1_by_size", sources=sources, rows=rows)


def unanswerable(root: Path, rel: str = f"data/synthetic/standard/{names.UNANSWERABLE}") -> str:
    import pandas as pd

    d = pd.read_csv(root / rel).groupby("kind", sort=False)[["generated", "well_formed", "check_passed", "kept"]].sum()
    rows = [{"kind": k, **{c: int(v) for c, v in r.items()}} for k, r in d.iterrows()]
    return words("run.unanswerable", rel=rel, rows=rows)


QUESTIONS_DIR = "data/synthetic/standard"


def question_checks(root: Path) -> str:
    rel = f"{QUESTIONS_DIR}/{names.REJECTIONS}"
    rows = _csv(root, rel)
    skipped = next(r for r in rows if r["set"] == "sources skipped")
    reasons = [
        (k.removeprefix("boilerplate_"), int(float(v)))
        for k, v in skipped.items()
        if k.startswith("boilerplate_") and float(v or 0)
    ]
    return words("run.question_checks", rel=rel, rows=rows, boilerplate=int(float(skipped["written"])), reasons=reasons)


def _short_number(v):
    """A float written with at most 3 decimals and no trailing zeros; anything else as it is."""
    return f"{v:.3f}".rstrip("0").rstrip(".") if isinstance(v, float) and "." in str(v) else v


def question_audit(root: Path) -> str:
    before_rel, after_rel = "results/bench/question_audit_before.json", f"{QUESTIONS_DIR}/{names.QUESTION_AUDIT}"
    before = [r for r in _json(root, before_rel)["audit"] if r["task"] == "all" and r["set"] == "run"]
    after = [r for r in _csv(root, after_rel) if r["task"] == "all"]
    rows = [{k: _short_number(v) for k, v in r.items()} for r in before + after]
    return words("run.question_audit", sources=[before_rel, after_rel], rows=rows)


def standard_found(root: Path, run: str = "standard", answers_only: bool = False) -> str:
    """The report's opening section (templates/found.md) wrapped, without its heading; `answers_only`:
    its Table 2 facts alone (the README gives the retrieval figures once, from the Table 1 run)."""
    import dataclasses

    from spacelm.lib.report.found import found
    from spacelm.lib.report.render import render

    m = _manifest(root, run)
    model = ((m.get("config") or {}).get("retrieval") or {}).get("reranker", {}).get("model")
    facts = found(root / "results" / run, run, model)
    if answers_only:
        facts = dataclasses.replace(facts, retrieval=[], answer_judge={})
    out = []
    for line in render("found.md", facts).splitlines()[1:]:
        if line.startswith("- "):
            out += textwrap.wrap(line, 120, subsequent_indent="  ", break_on_hyphens=False)
        elif line.strip():
            out.append(wrap(line))
    return "\n".join(out) + "\n\n" + words("common.source", paths=[f"results/{run}/"])


# --------------------------------------------------------------------------- judges
def _relevance(root: Path, run: str) -> dict:
    """A run's relevance-grader checks, those of the sources it ran."""
    rel = f"results/{run}/{names.JUDGE_RELEVANCE}"
    return {"rel": rel, "rows": [m for m in _json(root, rel) if m.get("run")]}


def _min_pairs(root: Path, run: str) -> int:
    """The run's judge_check.min_pairs (below it a source's figures are not printed), from its manifest."""
    from spacelm.config.schema import JudgeCheckConfig

    jc = (_manifest(root, run).get("config") or {}).get("judge_check") or {}
    return int(jc.get("min_pairs") or JudgeCheckConfig.min_pairs)


def judges_relevance(run: str):
    return lambda root: words("judges.relevance", **_relevance(root, run), min_pairs=_min_pairs(root, run))


def no_controls(root: Path, run: str) -> str | None:
    """The words for a run that scored no known-answer controls (None when it did)."""
    p = root / "results" / run / names.JUDGE_CONTROLS
    if p.is_file() and len(p.read_text().strip().splitlines()) > 1:  # a header and at least one judge
        return None
    committed = (root / "results" / run / names.MANIFEST).is_file()
    return words("judges.no_controls", run=run, committed=committed, made=_answers_made(root))


def judges_controls(run: str):
    def gen(root: Path) -> str:
        if (absent := no_controls(root, run)) is not None:
            return absent
        rel = f"results/{run}/{names.JUDGE_CONTROLS}"
        return words("judges.controls", rel=rel, rows=_csv(root, rel))

    return gen


def judge_injection(root: Path) -> str:
    rel = "results/judge_injection.json"
    d = _json(root, rel)
    rows = [
        {"judge": judge, "variant": v, "r": res[v], "noise": res.get(noise)}
        for judge, res in d["by_judge"].items()
        for v, noise in (("forged", "neutral"), ("forged_answer", "neutral_answer"))
        if res.get(v)
    ]
    moved = sorted({x["judge"] for x in rows if x["r"].get("beyond_noise")})
    return words("judges.injection", rel=rel, d=d, rows=rows, moved=moved)


def control_gaps(run: str, config: str):
    """What spacelm/lib/report/findings.py's resolution rule reads of the controls."""

    def gen(root: Path) -> str:
        if (absent := no_controls(root, run)) is not None:
            return absent

        from spacelm.config.schema import FindingsConfig
        from spacelm.lib.io import read_jsonl
        from spacelm.lib.report.findings import RESOLUTION, control_gap

        rel = f"results/{run}/{names.JUDGE_CONTROLS_ROWS}"
        rows = read_jsonl(root / rel)
        declared = (yaml.safe_load((root / config).read_text()) or {}).get("findings") or {}
        default = dataclasses.asdict(FindingsConfig())
        margins = {**default["margins"], **(declared.get("margins") or {})}
        kinds = {**default["control_kinds"], **(declared.get("control_kinds") or {})}
        out = []
        for rubric, margin in margins.items():
            mine = sorted({r.get("kind") for r in rows if r.get("rubric") == rubric and r.get("kind")})
            out += [
                {"rubric": rubric, "kind": k, "read": None, "need": None, "gap": control_gap(rows, rubric, [k])}
                for k in mine
            ]
            gap, need = control_gap(rows, rubric, kinds[rubric]), RESOLUTION * margin
            resolves = gap["low"] is not None and gap["low"] >= need
            out.append({"rubric": rubric, "read": kinds[rubric], "gap": gap, "need": need, "resolves": resolves})
        return words("judges.control_gaps", rel=rel, config=config, rows=out)

    return gen


def controls_vintage(run: str):
    def gen(root: Path) -> str:
        import pandas as pd

        from spacelm.config import JudgeCheckConfig
        from spacelm.lib.stats import wilson_ci

        if (absent := no_controls(root, run)) is not None:
            return absent
        rel = f"results/{run}/{names.JUDGE_CONTROLS}"
        c = pd.read_csv(root / rel)
        manifest = root / "results" / run / names.MANIFEST
        git = _commit(json.loads(manifest.read_text())) if manifest.is_file() else ""
        n = 0 if c.empty else int(c["n"].max())
        lo, hi = wilson_ci(n, n) if n else (None, None)
        facts = dict(run=run, rel=rel, empty=c.empty, current="passed" in c.columns, git=git, n=n, lo=lo, hi=hi)
        return words("judges.controls_vintage", bar=JudgeCheckConfig().valid_pass_rate, **facts)

    return gen


def position_bias(run: str):
    def gen(root: Path) -> str:
        rel = f"results/{run}/{names.JUDGE_RELEVANCE}"
        return words("judges.position_bias", rel=rel, rows=[r for r in _json(root, rel) if r.get("position_bias")])

    return gen


def ppi_coverage(root: Path) -> str:
    rel = "results/bench/ppi_coverage.json"
    rows = _json(root, rel)["rows"]
    strat = {(r["judge"], r["run"], r["n_human"]): r for r in rows if r.get("sampler") == "stratified"}
    pairs = [(r, strat.get((r["judge"], r["run"], r["n_human"]))) for r in rows if r.get("sampler") == "uniform"]
    return words("judges.ppi", rel=rel, rows=pairs)


def judges_boundaries(run: str):
    return lambda root: words("judges.boundaries", **_relevance(root, run))


def judges_bias(run: str):
    def gen(root: Path) -> str:
        checked = _relevance(root, run)
        audits = [(m, m["system_bias"]) for m in checked["rows"] if m.get("system_bias")]
        return words("judges.bias", run=run, rel=checked["rel"], audits=audits)

    return gen


def judge_independent(root: Path) -> str:
    rel = "results/bench/judge_independent.json"
    d = _json(root, rel)
    rows = []
    for name, m in d["shipped"].items():
        # a list: the reference judges on the pairs of the row above
        rows += [(True, r["name"], r) for r in m] if isinstance(m, list) else [(False, name, m)]
    return words("judges.independent", rel=rel, stem=Path(d["exported"]).stem, rows=rows)


# --------------------------------------------------------------------------- bench outputs
def bench(macro: str, rel: str):
    """A generator whose facts are one bench output (`rel`), read whole."""
    return lambda root: words(macro, rel=rel, d=_json(root, rel))


def reranker_ingredients(root: Path) -> str:
    rel = "results/bench/reranker_ingredients.json"
    conf = _json(root, "results/reranker.json").get("checkpoint") or {}
    used = {x.get("name") for x in conf.get("sources", []) if not x.get("skipped")}
    # the configured checkpoint's ingredients, named as the bench names a variant
    configured = "+".join(n for n in ("synthetic", "scifact", "pseudo") if n in used)
    return words("bench.reranker_ingredients", rel=rel, d=_json(root, rel), configured=configured)


def reranker_speed(root: Path) -> str:
    rel = "results/bench/reranker_speed.json"
    d = _json(root, rel)
    skipped = [(name, r["skipped"]) for name, r in d["paths"].items() if "skipped" in r]
    return words("bench.reranker_speed", rel=rel, d=d, skipped=skipped)


GENERATORS = {
    "standard-question-checks": question_checks,
    "standard-question-audit": question_audit,
    "reranker": bench("bench.reranker", "results/reranker.json"),
    "reranker-speed": reranker_speed,
    "judge-independent-audit": bench("judges.independent_audit", "results/bench/judge_independent.json"),
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
    "control-gaps-by-kind": bench("judges.gaps_by_kind", "results/bench/control_gaps.json"),
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
    "judge-variants": bench("judges.variants", "results/bench/judge_variants.json"),
    "ppi-coverage": ppi_coverage,
    "beir-anchor": bench("bench.beir", "results/bench/beir_anchor.json"),
    "reranker-ablation": bench("bench.reranker_ablation", "results/bench/reranker_ablation.json"),
    "reranker-ingredients": reranker_ingredients,
    "standard-screening": standard_screening,
    "standard-found": standard_found,
    "answers-found": lambda root: _if_answers(root, lambda: standard_found(root, ANSWERS_RUN, answers_only=True)),
    "answers-primary": lambda root: _if_answers(root, lambda: primary(root, ANSWERS_RUN)),
    "answers-findings": lambda root: _if_answers(root, lambda: findings(root, ANSWERS_RUN)),
    "answers-summary": lambda root: _if_answers(root, lambda: run_summary(root, ANSWERS_RUN)),
    "answers-stage-seconds": lambda root: _if_answers(root, lambda: stage_seconds(root, ANSWERS_RUN)),
    "retrieval-scale": bench("bench.retrieval_scale", "results/bench/retrieval_scale.json"),
    "llm-throughput": bench("bench.llm_throughput", "results/bench/llm_throughput.json"),
    "unit-costs": bench("bench.unit_costs", "results/bench/unit_costs.json"),
    "left-out-costs": bench("bench.left_out_costs", "results/bench/left_out_costs.json"),
    "citations": bench("bench.citations", "results/bench/citations_bench.json"),
    "gate": bench("bench.gate", "results/bench/gate_calibration.json"),
}


# --------------------------------------------------------------------------- figures quoted in prose
# QUOTED: (file, what, text that must be present with `{}` for the figure, a function of the root giving
# the figure from its run file), from spacelm/templates/readme/quoted.yaml, whose `read` names a reader.
def _read_relevance(run: str, source: str, fmt: str):
    def read(root: Path) -> str:
        r = next(m for m in _json(root, f"results/{run}/{names.JUDGE_RELEVANCE}") if m["source"] == source)
        return fmt.format(**{k: v for k, v in r.items() if not isinstance(v, (list, dict))})

    return read


def _read_key(path: str, keys: list[str], fmt: str):
    def read(root: Path) -> str:
        v = _json(root, path)
        for k in keys:
            v = v[k]
        return fmt.format(v)

    return read


def _read_cold_time(run: str, fmt: str):
    """A run's process time from its manifest, formatted with (seconds, minutes)."""

    def read(root: Path) -> str:
        t = _manifest(root, run)["total_seconds"]
        return fmt.format(t, t / 60)

    return read


def _read_sizes(run: str, fmt: str):
    return lambda root: fmt.format(**_manifest(root, run)["sizes"])


def _read_match(path: str, pattern: str):
    def read(root: Path) -> str:
        m = re.search(pattern, (root / path).read_text())
        return m.group(1) if m else "?"

    return read


READERS = {
    "relevance": _read_relevance,
    "key": _read_key,
    "cold_time": _read_cold_time,
    "sizes": _read_sizes,
    "match": _read_match,
}
_CLAIMS = yaml.safe_load((TEMPLATES / "readme" / "claims.yaml").read_text())
QUOTED = [(q["file"], q["what"], q["text"], READERS[q["read"]](**q["args"])) for q in _CLAIMS["quoted"]]
# (file, phrase holding a claim, why it is not a figure of a committed run file)
NOT_RUN_FIGURES = [tuple(x) for x in _CLAIMS["not_run_figures"]]


# --------------------------------------------------------------------------- claims written by hand
# Two kinds of run figure are easy to type into prose and go stale unseen: a verdict next to a
# judge's name ("the refusal judge is *fails*", "relevance *weak*") and a count of questions ("24
# questions", "20 unanswerable ones", "Table 1's 60"). Outside the generated blocks and code
# fences, each such claim in README.md and docs/*.md must lie inside a QUOTED template (checked
# against its run file above) or inside a NOT_RUN_FIGURES phrase, which says why it is no figure of
# a committed run file (a rule, a past run, a bench's own fixed setting); `--check` reports any
# other, and a NOT_RUN_FIGURES phrase no longer in its file.
_JUDGES, _VERDICTS, _COUNTED = ("|".join(_CLAIMS["claims"][k]) for k in ("judges", "verdicts", "counted"))
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
    rf"\b(?P<n>\d[\d,]*)\s+(?:(?:{_COUNTED})\s+)?(?:questions?|unanswerable)\b|\bTable\s[12]'s\s(?P<n2>\d[\d,]*)"
)


def prose(text: str) -> str:
    """`text` without its generated blocks, code fences and HTML comments, whitespace collapsed."""
    text = re.sub(r"<!-- generated:[\w.-]+ -->.*?<!-- /generated -->", " ", text, flags=re.S)  # flattened too
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return " ".join(text.split())


def _spans(text: str, pattern: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(pattern, text)]


def unchecked_claims(texts: dict[str, str]) -> list[str]:
    """The claims in the prose of `texts` ({file: text}) that nothing checks or explains."""
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
                    bad.append(words("check.phrase_gone", rel=rel, phrase=phrase))
        for m in [*VERDICT_CLAIM.finditer(text), *COUNT_CLAIM.finditer(text)]:
            fig = next(m.span(g) for g in ("v", "v2", "n", "n2") if g in m.groupdict() and m.group(g))
            if not any(a <= fig[0] and fig[1] <= b for a, b in covered):  # the figure itself is checked
                bad.append(words("check.by_hand", rel=rel, claim=m.group(0)))
    return bad


# --------------------------------------------------------------------------- figures typed into tables
# A decimal figure ("0.74", "+0.013", "−0.024", "12.5%"; not a version, 0.1.0, nor part of a name, 0.5B) in a
# table row of README.md or docs/*.md, outside generated blocks, code fences and inline code, must fall under a
# `tables` entry of claims.yaml. An entry names its file, its table (a phrase of the heading, the paragraph above
# the table or its header row) and optionally its `rows` (phrases of a row) and `columns` (header cells); then
# either `sources`, results files in which one record (a JSON object's own values, a line of any other file)
# holds every figure the entry covers in a row, each at its shown precision (a percentage: or 100 times it), or
# `why` the figures are no run figure. `--check` names the file, line and figure of any other.
FIGURE = re.compile(r"(?<![\w.+\-−])(?:[+\-−](?=\d))?\d+\.\d+%?(?!\w|\.\d)")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
TABLES = _CLAIMS["tables"]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def table_rows(text: str):
    """(line number, row, title, header cells) of each table row outside generated blocks and code fences;
    the title: the heading above, the last paragraph above and the header row."""
    gen = fence = gap = False
    heading, above, header, title = "", [], None, ""
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        gen = s.startswith("<!-- generated:") or (gen and not s.startswith("<!-- /generated"))
        skip = gen or fence or s.startswith("```")
        fence = fence != s.startswith("```")
        if skip or not s.startswith("|"):
            header = None
            if s.startswith("#"):
                heading, above = s, []
            elif s and not skip:
                above = [*([] if gap else above), s]
            gap = gap if skip else not s
            continue
        if header is None:
            header, title = _cells(s), " ".join([heading, *above, s])
        if not set(s) <= set("|-: "):
            yield i, s, title, header


def _has_dict(v) -> bool:
    return isinstance(v, list) and any(isinstance(i, dict) for i in v)


@cache
def records(root: Path, rel: str) -> tuple[tuple[float, ...], ...]:
    """The numbers of a results file by record: each JSON object's own values, each line of another file."""
    text, out = (root / rel).read_text(), []

    def walk(x):
        if isinstance(x, dict):
            out.append([v for v in x.values() if not isinstance(v, dict) and not _has_dict(v)])
        for v in x.values() if isinstance(x, dict) else x if isinstance(x, list) else []:
            walk(v)

    if rel.endswith(".json"):
        walk(json.loads(text))
    else:
        out.extend(text.splitlines())
    return tuple(tuple(float(n) for n in NUMBER.findall(json.dumps(r) if isinstance(r, list) else r)) for r in out)


def shown(figure: str, values) -> bool:
    """Whether `figure` is one of `values` at its shown decimals (a percentage: or 100 times one)."""
    x, d = float(figure.rstrip("%").replace("−", "-")), len(figure.rstrip("%").partition(".")[2])
    scales = (1, 100) if figure.endswith("%") else (1,)
    return any(abs(v * k - x) <= 0.5 * 10**-d + 1e-9 for v in values for k in scales)


def unheld(figures: list[str], record) -> list[str]:
    """The figures `record` does not hold, each figure taking a value of its own."""
    values, miss = list(record), []
    for f in figures:
        v = next((v for v in values if shown(f, [v])), None)
        if v is None:
            miss.append(f)
        else:
            values.remove(v)
    return miss


def _covers(e: dict, rel: str, row: str, title: str, column: str) -> bool:
    return (
        e["file"] == rel
        and " ".join(e["table"].split()) in " ".join(title.split())
        and any(r in row for r in e.get("rows", [""]))
        and column in e.get("columns", [column])
    )


def table_figures(texts: dict[str, str], root: Path = ROOT, tables: list[dict] | None = None) -> list[str]:
    """The figures in the tables of `texts` ({file: text}) no `tables` entry covers, or that differ from their
    sources; and the entries that cover no figure."""
    tables, say = TABLES if tables is None else tables, _CLAIMS["table_messages"]
    bad, used = [], set()
    for rel, text in texts.items():
        for i, row, title, header in table_rows(text):
            where = f"{rel}:{i}"
            cells = zip_longest(_cells(row), header, fillvalue="")
            figs = [(h, f) for c, h in cells for f in FIGURE.findall(re.sub(r"`[^`]*`", "", c))]
            left = set(range(len(figs)))
            for k, e in enumerate(tables):
                mine = [n for n, (h, _) in enumerate(figs) if _covers(e, rel, row, title, h)]
                if not mine:
                    continue
                used.add(k)
                left -= set(mine)
                if "sources" in e:  # the record of its sources that holds the most of the row's figures
                    row_figs = [figs[n][1] for n in mine]
                    holds = (unheld(row_figs, r) for s in e["sources"] for r in records(root, s))
                    miss = min(holds, key=len, default=row_figs)
                    bad += [say["differs"].format(where=where, figure=f, sources=", ".join(e["sources"])) for f in miss]
            bad += [say["unchecked"].format(where=where, figure=figs[n][1]) for n in sorted(left)]
    return bad + [say["gone"].format(**e) for k, e in enumerate(tables) if k not in used and e["file"] in texts]


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
        return m.group(1) + GENERATORS[name](root) + "\n" + m.group(4)

    return BLOCK.sub(sub, text), unknown


def quoted_mismatches(texts: dict[str, str], root: Path = ROOT) -> list[str]:
    """Quoted figures (`QUOTED`) that differ from their run files (line breaks count as spaces)."""
    bad = []
    for rel, what, template, read in QUOTED:
        text = " ".join(texts.get(rel, "").split())
        try:
            figure = read(root)
        except (OSError, KeyError, StopIteration) as e:
            bad.append(words("check.unreadable", rel=rel, what=what, error=e))
            continue
        if template.format(figure) not in text:
            bad.append(words("check.mismatch", rel=rel, what=what, quote=template.format(figure)))
    return bad


def check(root: Path = ROOT) -> list[str]:
    """Every problem `--check` reports: stale blocks, unknown generators, quoted figures, table figures."""
    problems, texts = [], {}
    for path in files(root):
        rel = str(path.relative_to(root))
        texts[rel] = path.read_text()
        new, unknown = fill(texts[rel], root)
        problems += [words("check.unknown", rel=rel, name=name) for name in unknown]
        if new != texts[rel]:
            problems.append(words("check.stale", rel=rel))
    return problems + quoted_mismatches(texts, root) + unchecked_claims(texts) + table_figures(texts, root)


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
            print(words("check.unknown", rel=path.relative_to(ROOT), name=name))
        if new != text:
            path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
