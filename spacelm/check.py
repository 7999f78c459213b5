"""`spacelm check`: every check of a config and its input files that needs no model.

One pass over what a run would read, each problem one line naming the file and line (or the
config key) and the fix:

- the config: what the stages about to run need from it (`check_stage_needs`), the few-shot
  prompts within the question writer's context, no k above the number of chunks;
- the corpus folder: present, and against its corpus list (`corpus.file_list`) when it names one;
- the golden-sample file: every line valid, enough answerable samples per task for
  `synth.n_fewshot`, and every answerable sample's passage found in a chunk of the corpus;
- the labelled folders: judge-check's sources (a missing one is a warning: judge-check reports it
  "not run") and the reranker's training sets (a missing one is an error: training would stop).

Passages are looked up in the chunks the chunk stage wrote when ingest and chunk are up to date,
else in the corpus ingested and chunked in memory (the same functions; a tokenizer, no model).
`spacelm status` and `spacelm run` call the same check first; `run` refuses with exit 2 before it
writes anything."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config, ConfigError
from .lib.io import InputError
from .lib.redact import shown_name

log = logging.getLogger("spacelm")


@dataclass(frozen=True)
class Problem:
    level: str  # "error" (a run would fail or measure the wrong thing) or "warning"
    text: str

    def __str__(self) -> str:
        return f"{self.level}: {self.text}"


@dataclass
class CheckReport:
    problems: list[Problem] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "warning"]

    def error(self, text: str) -> None:
        self.problems.append(Problem("error", text))

    def warn(self, text: str) -> None:
        self.problems.append(Problem("warning", text))


class CheckFailed(InputError):
    """A run refused by the check: one line per error in `lines`."""

    def __init__(self, report: CheckReport, command: str):
        self.lines = [str(p) for p in report.errors]
        n = len(self.lines)
        super().__init__(
            f"{command} refused: {n} problem{'s' if n != 1 else ''} found before any model loads "
            f"(`spacelm check` lists them): " + " | ".join(self.lines)
        )
        self.command = command


def run_check(cfg: Config, stages: list[str] | None = None) -> CheckReport:
    """Every model-free check of `cfg` for the stages a run would run (default: all of them)."""
    from .stages import stages_for

    stages = stages if stages is not None else [s.name for s in stages_for(cfg)]
    rep = CheckReport()
    rep.summary.append(f"config {cfg.source or '<config>'}: run '{cfg.run_name}' writes {_shown(cfg, cfg.run_dir)}")
    _stage_needs(cfg, stages, rep)
    corpus_ok = _corpus_folder(cfg, rep)
    golden = _golden(cfg, rep)
    chunks = _chunks(cfg, rep) if corpus_ok else None
    if chunks is not None:
        _corpus_size(cfg, chunks, rep)
    if golden is not None:
        _passages(cfg, golden, chunks, rep)
        if "synth" in stages and not rep.errors:
            _fewshot(cfg, rep)
    _labelled_folders(cfg, stages, rep)
    if "chunk-sizes" in stages and corpus_ok:
        _chunk_study_gate(cfg, rep)
    return rep


def _chunk_study_gate(cfg: Config, rep: CheckReport) -> None:
    """Sizes whose Table 1 the chunk-size study would leave ungraded (stages/chunk_gate.py): warnings."""
    from .stages.chunk_gate import gate_before_run

    for size, g in gate_before_run(cfg).items():
        if not g["graded"]:
            rep.warn(f"chunk_study: Table 1 at {size} tokens will not be graded: {g['reason']}")


def refuse_on_problems(cfg: Config, command: str, stages: list[str] | None = None) -> CheckReport:
    """Run the check; log its warnings, raise :class:`CheckFailed` on any error."""
    rep = run_check(cfg, stages)
    for p in rep.warnings:
        log.warning("%s", p.text)
    if rep.errors:
        raise CheckFailed(rep, command)
    return rep


# --------------------------------------------------------------------------- the checks
def _shown(cfg: Config, p: Path) -> str:
    from .runner.base import display_path

    return display_path(cfg, Path(p))


def _stage_needs(cfg: Config, stages: list[str], rep: CheckReport) -> None:
    from .config.validate import check_stage_needs

    try:
        check_stage_needs(cfg, stages)
    except ConfigError as e:
        rep.error(str(e))


def _corpus_folder(cfg: Config, rep: CheckReport) -> bool:
    """The corpus folder is there (and matches its list); False when passages cannot be looked up."""
    from .lib.ingest.documents import list_sources

    raw = cfg.path(cfg.corpus.raw_dir)
    lst_name = cfg.corpus.file_list
    fetch = (
        f" (`spacelm corpus fetch {lst_name} --to {cfg.corpus.raw_dir}` downloads the listed files)" if lst_name else ""
    )
    if not raw.is_dir():
        shown = cfg.corpus.raw_dir + ("" if str(raw) == cfg.corpus.raw_dir else f" ({raw})")
        rep.error(
            f"corpus.raw_dir: {shown} is not a folder; point corpus.raw_dir at the folder of "
            f"{'/'.join(cfg.corpus.extensions)} documents{fetch}"
        )
        return False
    if not lst_name:
        files = list_sources(raw, cfg.corpus.extensions, cfg.corpus.exclude)
        if not files:
            rep.error(
                f"corpus.raw_dir: {raw} holds no {'/'.join(cfg.corpus.extensions)} file (corpus.extensions); "
                "put the documents there"
            )
            return False
        rep.summary.append(f"corpus {cfg.corpus.raw_dir}: {len(files)} files (no corpus list named)")
        return True
    from .lib.ingest import corpus_list as cl

    try:
        lst = cl.load_corpus_list(lst_name)
    except (InputError, ConfigError, OSError) as e:
        rep.error(f"corpus.file_list: {e}")
        return False
    bad = [s for s in cl.verify_folder(lst, raw) if s.status != "ok"]
    for s in bad:
        rep.error(
            f"{shown_name(raw / s.file)}: {s.status} ({s.detail}) against corpus list '{lst.name}' "
            "(corpus.file_list); "
            f"`spacelm corpus fetch {lst.name} --to {cfg.corpus.raw_dir}` restores it, or remove corpus.file_list "
            "to ingest the folder as it is"
        )
    extra = cl.unlisted_files(lst, raw, tuple(cfg.corpus.extensions))
    if extra:
        named = ", ".join(map(shown_name, extra[:5])) + (" …" if len(extra) > 5 else "")
        rep.warn(
            f"{raw}: {len(extra)} file(s) not in corpus list '{lst.name}' will be ingested too: "
            f"{named}; remove them or add them to the list"
        )
    rep.summary.append(
        f"corpus {cfg.corpus.raw_dir}: {len(lst.entries) - len(bad)} of {len(lst.entries)} files match "
        f"corpus list '{lst.name}'"
    )
    return not bad


def _golden(cfg: Config, rep: CheckReport) -> list | None:
    """The valid golden samples (every bad line one error), None when the file cannot be read."""
    from .lib.synth.golden import read_golden
    from .runner.data import golden_path

    path = golden_path(cfg)
    samples, problems = read_golden(path, min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    if not path.is_file():
        from .lib.datasets import file_hint

        hint = file_hint(path)  # a set the project builds there (the real corpus's golden samples)
        rep.error(f"{path}: golden samples file not found ({hint})" if hint else problems[0])
        return None
    for p in problems:
        rep.error(p)
    answerable = sum(s.answerable for s in samples)
    rep.summary.append(
        f"golden {cfg.corpus.golden_samples}: {len(samples)} samples ({answerable} answerable, "
        f"{len(samples) - answerable} unanswerable); each task of synth.tasks needs at least "
        f"{cfg.synth.n_fewshot} answerable (synth.n_fewshot)"
    )
    return samples


def _chunks(cfg: Config, rep: CheckReport) -> list | None:
    """The chunks a run would search: the chunk stage's when ingest and chunk are up to date,
    else ingested and chunked in memory. None (with an error) when no document is usable."""
    from .runner.base import freshness
    from .runner.data import chunks_path, load_chunks
    from .stages import BY_NAME

    if chunks_path(cfg).is_file() and all(freshness(BY_NAME[s], cfg)[0] == "up to date" for s in ("ingest", "chunk")):
        chunks = load_chunks(cfg)
        rep.summary.append(f"chunks: {len(chunks)} from {_shown(cfg, chunks_path(cfg))} (up to date)")
        return chunks
    from .lib.ingest.chunking import chunk_documents
    from .stages.ingest import ingest_configured

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = ingest_configured(cfg)
        except InputError as e:
            rep.error(f"corpus.raw_dir: {e}")
            return None
    for w in caught:  # files ingest would skip, pages without text: one line each
        rep.warn(str(w.message))
    chunks = chunk_documents(res.documents, cfg.chunking.max_tokens, cfg.chunking.tokenizer, cfg.chunking.overlap)
    rep.summary.append(
        f"chunks: {len(chunks)} from {len(res.documents)} documents, ingested and chunked in memory (the chunk "
        "stage has not run with this config; no model)"
    )
    return chunks


def _corpus_size(cfg: Config, chunks: list, rep: CheckReport) -> None:
    from .stages.preflight import check_corpus_size

    try:
        check_corpus_size(cfg, len(chunks))
    except ConfigError as e:
        rep.error(str(e))


def _passages(cfg: Config, golden: list, chunks: list | None, rep: CheckReport) -> None:
    """Every answerable sample's passage (or chunk id) found in a chunk: one error line per sample."""
    from .lib.synth.golden import locate_samples, not_found_message
    from .runner.data import golden_path

    answerable = [s for s in golden if s.answerable]
    if chunks is None:
        if answerable:
            rep.warn(
                f"{cfg.corpus.golden_samples}: the {len(answerable)} answerable samples' passages were not looked up "
                "in the corpus: fix the corpus folder first"
            )
        return
    path = golden_path(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reported below, one line per sample
        found, missing = locate_samples(golden, chunks, path)
    for s in missing:
        rep.error(not_found_message(s, path))
    docs = {c.doc_id for c in chunks}
    for s in answerable:
        if s.doc_id and s.doc_id not in docs and s.id in found:
            rep.warn(
                f"{path}:{s.line}: golden sample {s.id!r}: doc_id {s.doc_id!r} names no document of the corpus (its "
                "passage was found by searching every document); correct the doc_id or leave it out"
            )
    jc = cfg.judge_check
    if jc.enabled and jc.in_domain and len(found) < jc.n_in_domain:
        rep.warn(
            f"judge_check.n_in_domain is {jc.n_in_domain} but only {len(found)} golden passages are found in the "
            "corpus: the in-domain check will use fewer; add samples or lower judge_check.n_in_domain"
        )
    if answerable:
        rep.summary.append(f"golden passages: {len(found)} of {len(answerable)} answerable found in the chunks")


def _fewshot(cfg: Config, rep: CheckReport) -> None:
    from .stages.preflight import check_before_run

    try:
        check_before_run(cfg, ["synth"])
    except (ConfigError, InputError) as e:
        rep.error(str(e))


def _labelled_folders(cfg: Config, stages: list[str], rep: CheckReport) -> None:
    """Judge-check's sources (missing: a warning, judge-check reports the source "not run") and the
    reranker's training sets (missing: an error, training would stop)."""
    from .lib.datasets import fetch_hint
    from .lib.retrieval.beir import qrels_file

    def missing_files(folder: Path, split: str) -> list[Path]:
        return [
            p for p in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_file(folder, split)) if not p.is_file()
        ]

    jc = cfg.judge_check
    if "judge-check" in stages and jc.enabled:
        present = 0
        for i, src in enumerate(jc.sources):
            key, folder = f"judge_check.sources[{i}] ({src.name})", cfg.path(src.path)
            if not folder.is_dir():
                why = (
                    "; Table 1's verdicts read the judge's in-domain validity from this source, so they will read "
                    "'no evidence'"
                    if src.in_domain
                    else ""
                )
                rep.warn(
                    f"{key}: {src.path} not found: judge-check will report this source as not run{why}; "
                    f"{fetch_hint(folder)}, or remove the source"
                )
                continue
            for p in missing_files(folder, src.split):
                rep.error(
                    f"{key}: {p} missing; a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/{src.split}.tsv "
                    "(or qrels.tsv)"
                )
            if src.reference_judges and not cfg.path(src.reference_judges).is_dir():
                rep.warn(f"{key}: reference_judges {src.reference_judges} not found; no reference judge is compared")
            present += 1
        rep.summary.append(f"judge-check sources: {present} of {len(jc.sources)} present")
    if "train-reranker" in stages:
        for i, spec in enumerate(cfg.retrieval.reranker.train.labelled):
            key, folder = f"retrieval.reranker.train.labelled[{i}] ({spec.name})", cfg.path(spec.path)
            if spec.optional and not folder.is_dir():
                rep.warn(
                    f"{key}: {spec.path} not found: an optional set, so the reranker trains without it; "
                    f"{fetch_hint(folder)}"
                )
                continue
            gone = [folder] if not folder.is_dir() else missing_files(folder, spec.split)
            for p in gone:
                rep.error(
                    f"{key}: {p} not found: the train-reranker stage reads this BEIR folder; {fetch_hint(folder)}, "
                    "or remove the set (or mark it `optional: true`)"
                )
