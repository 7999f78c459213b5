"""`spacelm plan`: what a run would ask of its models, before it starts and without loading one.

Per stage and model phase: the number of model calls, the prompt tokens (counted with each
model's tokenizer on the prompts the stage would render) and the completion tokens its
requests allow, and the order in which the engines load, so that a GPU job can be sized first.

Each model-using stage runs its own `compute` (the code `spacelm run` runs) with stand-in
models: :class:`PlanTurns` in place of the stage's `ModelTurns`, answering through
:class:`~spacelm.lib.llm.dry_run.PlanLLM` and deciding every model-dependent choice the way that makes
the most calls (see :class:`PlanTurns`). What a stage reads comes from the files of earlier
stages when those are current, or from the plan of those stages when a run would recompute them:

- chunks: `chunks.jsonl`, or ingest and chunking done in memory (same functions; seconds);
- questions: `questions.jsonl`, or every written question assumed kept (an upper bound);
- rankings: `rankings.jsonl`, or stand-in rankings whose systems overlap as little as the
  corpus allows (an upper bound on distinct graded pairs; passages of average length).

Each count says its basis: exact, upper bound (a count that depends on earlier model output, or
on retrieval not run yet) or estimate (the claim-support judge, whose count depends on how the
answers are written)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path

from .config import Config, ConfigError, LLMConfig
from .lib import names
from .lib.llm.dry_run import (
    CLAIM_TOKENS,
    PhaseCount,
    PlanLLM,
    StandInRetriever,
    TokenCounter,
    claim_answer,
    spread,
    stand_in_ranking,
    stand_in_rankings,
    typical_order,
    weakest,
)
from .lib.report.power import power_table
from .pipeline import status
from .runner.data import (
    chunks_path,
    documents_path,
    golden_path,
    load_chunks,
    load_documents,
    load_questions,
    load_rankings,
    questions_path,
    rankings_path,
)
from .stages.grade import paired_tests_at

ROLES = ("question_writer", "generator", "judge")


# --------------------------------------------------------------------------- tokenizers
def _own_tokenizer(spec: str, backend: str) -> tuple[str, Path] | None:
    """("gguf" | "hf", path) of a model's own tokenizer when it is on this machine (an embedded
    GGUF, a local file or folder, or a hub model already in the local hub cache), else None."""
    from .lib.llm.models import EMBEDDED, ModelNotFound, model_path

    if spec.startswith("embedded:"):
        m = EMBEDDED.get(spec.split(":", 1)[1])
        if m is None:
            return None
        try:
            p = model_path(m.name, assemble=False)
        except ModelNotFound:
            return None
        return ("gguf", p) if m.kind == "gguf" else ("hf", p / "tokenizer.json")
    p = Path(spec)
    if p.is_file():
        return ("gguf", p) if p.suffix == ".gguf" else ("hf", p) if p.suffix == ".json" else None
    if p.is_dir():
        if (p / "tokenizer.json").is_file():
            return "hf", p / "tokenizer.json"
        ggufs = sorted(p.glob("*.gguf"))
        return ("gguf", ggufs[0]) if ggufs else None
    if backend == "llamacpp" or spec.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(spec, "tokenizer.json")
    except Exception:  # noqa: BLE001 - no hub library or an invalid name: not on this machine
        return None
    return ("hf", Path(hit)) if isinstance(hit, str) else None


def tokenizer_source(arg: str) -> tuple[str, Path]:
    """What `--tokenizer` names: a GGUF file, a tokenizer.json, a folder holding one, or an
    embedded model."""
    found = _own_tokenizer(arg, "")
    if found is None:
        raise ConfigError(
            f"--tokenizer {arg!r}: not a GGUF file, a tokenizer.json, a folder holding one, "
            "or an assembled embedded model"
        )
    return found


class Tokenizers:
    """One token counter per tokenizer, shared by the models that use it."""

    def __init__(self, cfg: Config, override: str | None = None):
        self.cfg = cfg
        self.override = tokenizer_source(override) if override else None
        self._counters: dict = {}
        self.labels: dict[str, str] = {}

    def _load(self, kind: str, path: Path) -> TokenCounter:
        from .lib.llm.dry_run import gguf_counter, hf_counter, wordpiece_counter

        key = (kind, str(path))
        if key not in self._counters:
            make = {"gguf": gguf_counter, "hf": hf_counter, "wordpiece": wordpiece_counter}[kind]
            self._counters[key] = make(path)
        return self._counters[key]

    def _fallback(self) -> tuple[str, Path, str]:
        """(kind, path, name) of the tokenizer that stands in for one not on this machine: an
        embedded GGUF's (byte-level BPE, as Llama 3 and Qwen use), else the chunking tokenizer."""
        from .lib.llm.models import EMBEDDED, ModelNotFound, model_path

        for m in EMBEDDED.values():
            if m.kind == "gguf":
                try:
                    return "gguf", model_path(m.name, assemble=False), f"the {m.name} tokenizer and chat template"
                except ModelNotFound:
                    continue
        return "wordpiece", Path(self.cfg.chunking.tokenizer), f"{self.cfg.chunking.tokenizer} (chunking.tokenizer)"

    def counter(self, role: str, llm: LLMConfig) -> TokenCounter:
        own = _own_tokenizer(llm.model, llm.backend)
        if own:
            c, label = self._load(*own), f"{llm.model}'s own ({own[1].name})"
        elif self.override:
            c, label = self._load(*self.override), f"{self.override[1]} (given with --tokenizer)"
        else:
            kind, path, name = self._fallback()
            c = self._load(kind, path)
            label = (
                f"APPROXIMATE: {llm.model}'s tokenizer is not on this machine; counted with {name}; give "
                "--tokenizer for exact counts"
            )
        self.labels[role] = label + (f" ({c.note})" if c.note else "")
        return c


# --------------------------------------------------------------------------- the planner
def _settings(llm: LLMConfig) -> str:
    parts = []
    if llm.backend.startswith("vllm"):  # vllm, or a managed vllm server
        parts += [f"tp {llm.tensor_parallel_size}"] + (
            [f"pp {llm.pipeline_parallel_size}"] if llm.pipeline_parallel_size > 1 else []
        )
        parts += [f"{llm.quantization}"] if llm.quantization else []
        parts += [f"max_model_len {llm.max_model_len}"] if llm.max_model_len else []
    elif llm.backend == "llamacpp":
        parts.append(f"n_ctx {llm.n_ctx}")
    elif llm.base_url:
        from .lib.redact import redact_url

        parts.append(redact_url(llm.base_url))
    return (", " + ", ".join(parts)) if parts else ""


class Planner:
    """Collects the phases, engine loads, notes and warnings of a plan."""

    def __init__(self, cfg: Config, tokenizer: str | None = None, exact: bool = False):
        self.cfg, self.exact = cfg, exact
        self.tokenizers = Tokenizers(cfg, tokenizer)
        self._llms: dict[str, PlanLLM] = {}
        self._answered: dict = {}
        self.serial = [0]
        self.phases: list[PhaseCount] = []
        self.loads: list[dict] = []
        self.other_models: list[dict] = []
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def llm(self, role: str) -> PlanLLM:
        if role not in self._llms:
            llm_cfg = getattr(self.cfg.models, role)
            self._llms[role] = PlanLLM(
                llm_cfg, role, self.tokenizers.counter(role, llm_cfg), self._answered, self.serial, self.exact
            )
        return self._llms[role]

    def encoder(self, stage: str, role: str, model: str) -> None:
        self.other_models.append({"stage": stage, "role": role, "model": model})


# --------------------------------------------------------------------------- what the stages read
@dataclasses.dataclass
class Inputs:
    chunks: list
    golden: list
    records: list | None  # questions.jsonl rows when current, else None (the synth plan makes them)
    rankings: dict | None  # rankings.jsonl when current, else None (stand-ins are used)
    notes: list


def read_inputs(cfg: Config, current: dict, use_outputs: bool) -> Inputs:
    """Chunks, golden samples, questions and rankings as the stages would find them (see the
    module docstring); `current[stage]` says whether a run would reuse the stage's outputs."""
    from .lib.ingest.chunking import chunk_documents
    from .lib.io import read_jsonl
    from .lib.synth.golden import load_golden
    from .stages.ingest import ingest_configured

    # a stage the run leaves out (synth.enabled false) has its outputs read as inputs
    have = lambda stage, path: (current.get(stage, True) or use_outputs) and Path(path).is_file()
    notes = []
    if have("chunk", chunks_path(cfg)):
        chunks = load_chunks(cfg)
        notes.append(f"chunks: {len(chunks)} from {chunks_path(cfg)}")
    else:
        twin = None if have("ingest", documents_path(cfg)) else _same_ingest(cfg)
        if have("ingest", documents_path(cfg)):
            docs, where = load_documents(cfg), f"documents from {documents_path(cfg)}"
        elif twin is not None:
            docs = load_documents(twin)
            where = f"documents from {documents_path(twin)}, ingested from the same corpus with the same settings"
        else:
            docs = ingest_configured(cfg).documents
            where = f"corpus.raw_dir {cfg.corpus.raw_dir} ingested in memory"
        chunks = chunk_documents(docs, cfg.chunking.max_tokens, cfg.chunking.tokenizer, cfg.chunking.overlap)
        notes.append(
            f"chunks: {len(chunks)} made in memory with this config's chunking ({where}; the chunk stage "
            "has not run with this config)"
        )
    if not chunks:
        raise ConfigError(f"corpus.raw_dir {cfg.corpus.raw_dir!r}: no text to chunk, so no model call to plan")
    golden = load_golden(golden_path(cfg), min_per_task=cfg.synth.n_fewshot, tasks=tuple(cfg.synth.tasks))
    records = None
    if have("synth", questions_path(cfg)):
        records = list(read_jsonl(questions_path(cfg)))
        notes.append(f"questions: {questions_path(cfg)} ({sum(r['kept'] for r in records)} kept)")
    else:
        notes.append(
            "questions: not written yet for this config; planned as the synth stage would write them, "
            "every question assumed kept (upper bound)"
        )
    rankings = None
    if records is not None and have("retrieve", rankings_path(cfg)):
        rankings = load_rankings(cfg)
        notes.append(f"rankings: {rankings_path(cfg)}")
    else:
        notes.append(
            "rankings: not computed yet for this config; stand-in rankings with as little overlap between "
            "systems as the corpus allows (upper bound on graded pairs) and passages of average length "
            "(token estimate)"
        )
    return Inputs(chunks, golden, records, rankings, notes)


def _same_ingest(cfg: Config) -> Config | None:
    """This config pointed at another folder beside its processed_dir whose ingest output is up to
    date for this config's own ingest inputs (corpus, ingest settings, code): the same documents,
    so the plan need not read every PDF again (another chunk size of the same corpus). None if none."""
    from .runner.base import freshness, stage_inputs
    from .stages import stages_for

    ingest = next((s for s in stages_for(cfg) if s.name == "ingest"), None)
    parent = cfg.processed_dir.parent
    if ingest is None or not parent.is_dir():
        return None
    inputs = stage_inputs(ingest, cfg)
    for d in sorted(p for p in parent.iterdir() if p.is_dir() and p != cfg.processed_dir):
        other = dataclasses.replace(cfg, paths=dataclasses.replace(cfg.paths, processed_dir=str(d)))
        # its stamp against this config's inputs (they name no folder): up to date means the same documents
        if (d / names.DOCUMENTS).is_file() and freshness(ingest, other, inputs)[0] == "up to date":
            return other
    return None


# --------------------------------------------------------------------------- the stand-in models
@dataclasses.dataclass(frozen=True)
class Basis:
    """What a phase's count rests on: its calls' basis, whether stand-in passages are in its
    prompts, a note on the phase, and a note on the engine when the phase loads one."""

    calls: str = "exact"
    pseudo_passages: bool = False
    note: str = ""
    engine_note: str = ""


class Replayed:
    """A retriever that gives each question a finished run checked the passages its check graded."""

    def __init__(self, by_question: dict):
        self.by_question = by_question

    def search(self, queries, k: int) -> list:
        return [[(d, 0.0) for d in self.by_question.get(q, [])[:k]] for q in queries]


class PlanTurns:
    """The stand-in for a stage's :class:`~spacelm.runner.base.ModelTurns`: `spacelm plan` runs
    the stage's own `compute` against it. Each `use` is answered by the role's
    :class:`~spacelm.lib.llm.dry_run.PlanLLM` and counted as phase `phase` of the stage (`basis(phase)`
    says what the count rests on); a use that makes a call loads its engine unless the same
    engine is still loaded (ModelTurns shares it), and a phase without a call is not listed.

    Where a count depends on what a model decides, the stand-in decides for the most calls: the
    retrieval filter keeps every question and the unanswerable check searches stand-in rankings;
    every unanswerable candidate is well formed and the judge's verdicts on them cannot be read
    (so every passage is graded and every round runs); the gate stops every answer; the claim
    judge reads answers holding the estimated number of claims. With `replay` (a finished
    run's call cache, see :func:`_call_replay`) and `records` (its questions) the run is replayed
    instead: requests it made are answered as they were, and the filter and the check's rankings
    are the ones it recorded."""

    def __init__(self, planner: Planner, stage: str, basis, chunks: list, records: list | None = None, replay=None):
        self.p, self.cfg, self.stage, self.basis, self.chunks = planner, planner.cfg, stage, basis, chunks
        self.records = records if replay is not None else None
        self.replay = replay
        self.loaded, self._load = None, None
        self.stats: dict = {}
        self.identity: dict = {}

    def _phase(self, role: str, llm: PlanLLM, phase: str) -> PhaseCount:
        for x in self.p.phases:
            if (x.stage, x.phase, x.role) == (self.stage, phase, role):
                return x
        b = self.basis(phase)
        return PhaseCount(self.stage, phase, role, llm.cfg.model, llm.cfg.backend, b.calls, b.pseudo_passages, b.note)

    def use(self, role: str, fn, phase: str = ""):
        llm = self.p.llm(role)
        ph = self._phase(role, llm, phase)
        before = ph.calls
        llm.current, llm.stage = ph, self.stage
        llm.unreadable = self.replay is None and phase.startswith("unanswerable check")
        llm.replay = (lambda req: self.replay(llm.cfg, req)) if self.replay else None
        try:
            out = fn(llm)
            if self.replay is None and phase.startswith("unanswerable questions"):
                for r in out:  # every candidate well formed, so every one goes to the check
                    r["drop_reason"] = None
            return out
        finally:
            llm.current, llm.unreadable, llm.replay = None, False, None
            self.identity[role] = llm.identity
            if ph.calls > before:
                if ph not in self.p.phases:
                    self.p.phases.append(ph)
                self._count_load(role, llm, ph, ph.calls - before)

    def _count_load(self, role: str, llm: PlanLLM, ph: PhaseCount, calls: int) -> None:
        """Enter the engine in the load order, or add to the engine still loaded."""
        c = llm.cfg
        last = self._load
        if last is not None and self.loaded == c.engine_key() and self.p.loads and self.p.loads[-1] is last:
            if ph.phase not in last["phases"]:
                last["phases"].append(ph.phase)
            last["calls"] += calls
            last["calls_basis"] = weakest(last["calls_basis"], ph.calls_basis)
            if role not in last["role"].split(" + "):
                last["role"] += f" + {role}"
            return
        self.loaded = c.engine_key()
        self._load = {
            "stage": self.stage,
            "role": role,
            "model": c.model,
            "backend": c.backend,
            "settings": _settings(c),
            "phases": [ph.phase],
            "note": self.basis(ph.phase).engine_note,
            "calls": calls,
            "calls_basis": ph.calls_basis,
        }
        self.p.loads.append(self._load)

    def release(self) -> None:
        self.loaded, self._load = None, None

    def retrieval_filter(self, chunks: list, records: list[dict]) -> dict:
        """Every well-formed question kept (or as the run filtered it); the check's retrievers."""
        self.p.encoder(self.stage, "dense (filter)", self.cfg.retrieval.dense.model)
        if self.records is None:
            for r in records:
                if r["drop_reason"] is None and r["answerable"]:
                    r["kept"] = True
            k = self.cfg.synth.unanswerable.check_k
            order = typical_order(chunks)
            return {name: StandInRetriever(stand_in_ranking(order, i, k)) for i, name in enumerate(["bm25", "dense"])}
        ran = {r["qid"]: r for r in self.records}
        for r in records:
            if r["drop_reason"] is None and r["answerable"] and r["qid"] in ran:
                r.update({k: ran[r["qid"]].get(k) for k in ("rank_bm25", "rank_dense", "kept", "drop_reason")})
        graded = {r["question"]: list(r["check_grades"]) for r in self.records if r.get("check_grades")}
        # the check takes passages by rank across the two systems: alternate the graded ones
        return {
            "bm25": Replayed({q: ids[0::2] for q, ids in graded.items()}),
            "dense": Replayed({q: ids[1::2] for q, ids in graded.items()}),
        }

    def audit_systems(self, names: list[str], ids: list[str], texts: list[str], labelled: dict) -> dict:
        """Stand-in systems for the judge check's bias audit, each ranking a query's labelled
        passages first, rotated by its slot (the most distinct labelled pairs: an upper bound);
        the encoders the real systems would load are counted."""
        from .lib.names import reads_dense

        if reads_dense(names):
            self.p.encoder(self.stage, "dense (bias audit)", self.cfg.retrieval.dense.model)
        if any(n.endswith("+rerank") for n in names) and self.cfg.retrieval.reranker.kind in (
            "biencoder",
            "cross-encoder",
        ):
            rr = self.cfg.retrieval.reranker
            self.p.encoder(self.stage, f"reranker ({rr.kind}, bias audit)", rr.model)
        width = self.cfg.judge_check.bias_top_k
        return {name: LabelledFirst(labelled, ids, i * width) for i, name in enumerate(names)}

    def gate(self, items: list[dict], text_of: dict) -> None:
        """Every answer with passages stopped by the gate (the most gated refusals to judge)."""
        self.p.encoder(self.stage, "dense (gate)", self.cfg.retrieval.dense.model)
        for it in items:
            if it.get("passage_ids"):
                it["gate"] = {"passed": False}

    def as_written(self, items: list[dict]) -> list[dict]:
        """The answers with the estimated number of claims, each citing a passage."""
        per_answer, how = _claims_per_answer(self.cfg)
        self.p.notes.append(
            f"answer/claim support: an estimate, {how}; the real count depends on how the answers are written"
        )
        style = self.cfg.answer.citations
        return [
            dict(it, answer=claim_answer(n, it["passage_ids"], style, self.p.serial))
            for it, n in zip(items, spread(per_answer, len(items)))
        ]


class LabelledFirst:
    """A stand-in retriever for the bias audit, slot `shift` of several: a query with labelled
    passages (graded labels, where only those count) gets them rotated by `shift`; one without
    gets every passage rotated by `shift` (binary labels, where every retrieved passage counts).
    Systems in different slots then retrieve as many distinct countable pairs as there are."""

    def __init__(self, labelled: dict, ids: list[str], shift: int):
        self.labelled, self.ids, self.shift = labelled, list(ids), shift

    def search(self, queries, k: int) -> list:
        out = []
        for q in queries:
            order = list(self.labelled.get(q) or self.ids)
            s = self.shift % max(1, len(order))
            out.append([(d, 0.0) for d in (order[s:] + order[:s])[:k]])
        return out


def _call_replay(cfg: Config):
    """`replay(llm_cfg, request) -> Completion | None` from the run's call cache, or None."""
    from .lib.llm import LLM, Completion
    from .lib.llm.cache import CallCache

    path = Path(cfg.cache_dir) / "llm_calls.sqlite" if cfg.cache_dir else None
    if path is None or not path.is_file():
        return None
    cache, fronts = CallCache(path), {}

    def replay(llm_cfg, req):
        front = fronts.setdefault(id(llm_cfg), LLM(llm_cfg))
        hit = cache.get(front._key(req))
        return Completion.from_cached(hit) if hit is not None else None

    return replay


# --------------------------------------------------------------------------- what the counts rest on
def _synth_basis(known: bool):
    def basis(phase: str) -> Basis:
        if phase == "questions" or known:
            return Basis()
        later = phase.endswith(tuple(f"round {n}" for n in range(2, 100)))
        note = "runs only for task types without a kept unanswerable question" if later else ""
        return Basis("upper bound", phase.startswith("unanswerable check"), engine_note=note)

    return basis


def _judge_check_basis(known_q: bool):
    def basis(phase: str) -> Basis:
        if phase.startswith("bias audit"):  # what the systems retrieve is not known before they run
            return Basis("upper bound")
        return Basis("upper bound" if phase == "known-answer controls" and not known_q else "exact")

    return basis


def _grade_basis(known_r: bool):
    return lambda phase: Basis("exact" if known_r else "upper bound", not known_r)


def _answer_basis(cfg: Config, known_q: bool, known_r: bool, asks_unanswerable: bool):
    ac = cfg.answer
    calls = "exact" if known_q else "upper bound"
    pseudo = not known_r and (asks_unanswerable or any(x != "A" for x in ac.pipelines))

    def basis(phase: str) -> Basis:
        if phase == "reference answers":
            return Basis(calls)
        if phase == "rubric scores, gated refusals":
            return Basis("upper bound", pseudo, "one per unanswerable question the gate stops (all, at most)")
        if phase == "claim support":
            return Basis("estimate", pseudo, _claims_per_answer(cfg)[1])
        return Basis(calls, pseudo)

    return basis


# --------------------------------------------------------------------------- the stages, run on stand-ins
def _planned_questions(records: list[dict]) -> list[dict]:
    """The questions the later stages read when synth has not run: every well-formed question
    kept, and the first round's unanswerable candidates (an upper bound)."""
    for r in records:
        if not r["answerable"]:
            for k in ("check_grades", "check_expected_grades", "check_passed"):
                r.pop(k, None)
            if r.get("origin") != "golden" and r.get("round") == 0:
                r.update(kept=True, drop_reason=None)
    return records


def _rankings(p: Planner, inp: Inputs, cfg_q: Config) -> dict:
    """The rankings the grade and answer stages read, or stand-ins."""
    if inp.rankings is not None:
        return inp.rankings
    qids = [q["qid"] for q in load_questions(cfg_q, inp.chunks, answerable=None)]
    width = max(max(p.cfg.grading.top_k), p.cfg.answer.retrieve_k)
    return stand_in_rankings(typical_order(inp.chunks), p.cfg.retrieval.systems, qids, width)


def _golden_set(p: Planner, inp: Inputs, questions: list[dict]):
    """Table 1's golden question set as the grade stage would read it (its rankings, or stand-ins
    before retrieve has ranked them), or None when the config grades the run's questions alone."""
    from .runner.data import golden_rankings_path, golden_set
    from .stages import gold_check

    if not gold_check.enabled(p.cfg):
        return None
    path = golden_rankings_path(p.cfg)
    if inp.rankings is not None and path.is_file():
        return gold_check.golden_inputs(p.cfg, inp.chunks, questions, load_rankings(p.cfg, path), docs=[])
    qids = [q["qid"] for q in golden_set(p.cfg, inp.chunks, questions, docs=[])]
    width = max(p.cfg.grading.top_k)
    stand_in = stand_in_rankings(typical_order(inp.chunks), p.cfg.retrieval.systems, qids, width)
    return gold_check.golden_inputs(p.cfg, inp.chunks, questions, stand_in, docs=[])


def _claims_per_answer(cfg: Config) -> tuple[float, str]:
    """Claim checks per answer with passages: as in this run folder's last answer stage when it
    has one, else one per CLAIM_TOKENS of the generator's max_tokens."""
    from .lib.records import Answer, Claim, read_records

    claims, answers = cfg.run_dir / names.CLAIM_ROWS, cfg.run_dir / names.ANSWERS
    if claims.is_file() and answers.is_file():
        checks = sum(len(c.get("support") or {}) for c in read_records(claims, Claim))
        judged = sum(1 for a in read_records(answers, Answer) if a.get("answerable", True) and a.get("passage_ids"))
        if judged and checks:
            return checks / judged, f"{checks / judged:.2f} checks per answer, as in {claims}"
    n = max(1.0, cfg.models.generator.max_tokens / CLAIM_TOKENS)
    return n, (
        f"{n:.1f} checks per answer: one claim per {CLAIM_TOKENS} tokens of the generator's max_tokens "
        f"({cfg.models.generator.max_tokens}), each citing one passage"
    )


def _worded_like_their_passage(questions: list[dict], chunks: list) -> list[dict]:
    """Stand-in questions worded as their source passage: a known-answer control needs a question
    whose passage holds a sentence answering it, which a placeholder never has; worded so, every
    question whose passage holds an answer-like sentence gives controls (the upper bound)."""
    text_of = {c.chunk_id: c.text for c in chunks}
    return [dict(q, question=text_of.get(q.get("source_chunk_id"), q["question"])) for q in questions]


def _stage_calls(p: Planner, inp: Inputs, cfg_q: Config, rankings: dict) -> None:
    """Run judge-check, grade and answer's `compute` on stand-in models (after synth)."""
    from .stages import answer, grade, judge_check

    cfg, known_q, known_r = p.cfg, inp.records is not None, inp.rankings is not None
    jc = cfg.judge_check
    questions = load_questions(cfg_q, inp.chunks)
    for_controls = questions if known_q else _worded_like_their_passage(questions, inp.chunks)
    checked = judge_check.compute(
        cfg,
        inp.chunks,
        for_controls if jc.enabled and jc.controls else [],
        PlanTurns(p, "judge-check", _judge_check_basis(known_q), inp.chunks),
    )
    for c in checked.sources:
        if isinstance(c, dict) and c["path"]:
            p.notes.append(
                f"judge-check: source {c['source']} ({c['path']}) not found: the stage reports it as not run, no call"
            )
    p.warnings.extend(below_minimum(cfg, checked))
    if cfg.grading.enabled:
        golden = _golden_set(p, inp, questions)
        turns = PlanTurns(p, "grade", _grade_basis(known_r), inp.chunks)
        grade.compute(cfg, inp.chunks, questions, rankings, turns, golden)
    if not cfg.answer.enabled:  # a Table 1 study: no answer stage
        return
    una = load_questions(cfg_q, inp.chunks, answerable=False)
    asks_una = bool(una) and cfg.answer.max_unanswerable != 0 and "B" in cfg.answer.pipelines
    answer.compute(
        cfg,
        inp.chunks,
        questions,
        una,
        rankings,
        PlanTurns(p, "answer", _answer_basis(cfg, known_q, known_r, asks_una), inp.chunks),
    )


def below_minimum(cfg: Config, checked) -> list[str]:
    """A warning for each judge check the plan draws below its own minimum, which the report will
    then give as "too few to tell" with no figures: a labelled source with fewer pairs than
    `judge_check.min_pairs`, a judge with fewer known-answer controls than `min_controls` or fewer
    kinds of bad answer than `min_control_kinds`."""
    jc, out = cfg.judge_check, []
    for c in checked.sources:
        if not isinstance(c, dict) and len(c.pairs) < jc.min_pairs:
            out.append(
                f"judge-check: source {c.name} draws {len(c.pairs)} pairs, fewer than judge_check.min_pairs "
                f"({jc.min_pairs}): its agreement will read 'too few pairs to tell' (raise the source's n_queries)"
            )
    by_judge: dict[str, list[dict]] = {}
    for r in checked.control_rows or []:
        by_judge.setdefault(r["rubric"], []).append(r)
    for judge, rows in by_judge.items():
        kinds = {str(r.get("kind")) for r in rows}
        if len(rows) < jc.min_controls:
            out.append(
                f"judge-check: {len(rows)} known-answer controls for the {judge} judge, fewer than "
                f"judge_check.min_controls ({jc.min_controls}): it will read 'too few pairs to tell' (raise n_controls)"
            )
        elif len(kinds) < jc.min_control_kinds:
            out.append(
                f"judge-check: the {judge} judge's controls hold {len(kinds)} kinds of bad answer, fewer than "
                f"judge_check.min_control_kinds ({jc.min_control_kinds}): it will read 'too few kinds to tell'"
            )
    return out


def checks_not_run(cfg: Config) -> list[str]:
    """A warning for each check or finding the config turns off or cannot reach, which the report
    will then give as not run, with the reason: the judge check off while a verdict reads the judge,
    the position-bias check off, and Table 1 findings whose top-k the grade stage does not grade."""
    out = []
    g, jc = cfg.grading, cfg.judge_check
    if g.enabled and g.instrument == "judge" and not jc.enabled:
        out.append(
            "judge-check: judge_check.enabled is false, so no judge is shown valid in domain: every Table 1 "
            "verdict will read 'no evidence' (turn it on, or read labels: grading.instrument)"
        )
    if jc.enabled and g.enabled and g.method == "prompt" and not jc.position_bias and g.debias != "both_orders":
        out.append(
            "judge-check: judge_check.position_bias is false: the grader's position bias will read 'not measured'"
        )
    if g.enabled:
        ks = set(g.top_k)
        missing = [k for k in (3, 10) if k not in ks]
        if missing:
            out.append(
                f"grade: grading.top_k {sorted(ks)} lacks top-{', '.join(map(str, missing))}: the findings that "
                "compare reranking at top-3 with top-10 will read 'not tested'"
            )
    return out


# --------------------------------------------------------------------------- the whole plan
def _sum(phases: list[PhaseCount]) -> dict:
    return {
        "calls": sum(x.calls for x in phases),
        "prompt_tokens": sum(x.prompt_tokens for x in phases),
        "prompt_tokens_evaluated": sum(x.prompt_tokens_evaluated for x in phases),
        "completion_tokens_max": sum(x.completion_tokens_max for x in phases),
        "max_prompt_tokens": max((x.max_prompt_tokens for x in phases), default=0),
        "calls_basis": weakest(*[x.calls_basis for x in phases if x.calls]),
        "tokens_basis": weakest(*[x.tokens_basis for x in phases if x.calls]),
    }


def _corpus_size_warning(p: Planner, cfg: Config, n_chunks: int) -> None:
    """The run's own corpus-size check (a k above the chunk count), as a plan warning."""
    from .stages.preflight import check_corpus_size

    try:
        check_corpus_size(cfg, n_chunks)
    except ConfigError as e:
        p.warnings.append(f"{e} (a run stops here, after chunking)")


def _training_calls(p: Planner, inp: Inputs, cfg_q: Config, records: list[dict]) -> None:
    """The reranker-training questions (stage train-reranker) on stand-in models, when the run trains
    one; the run's questions (`records`) held out by source chunk (golden samples are not located here,
    so the pool it writes from is at most a few chunks larger than the stage's)."""
    from .lib.retrieval.cross_encoder import held_out, training_pool
    from .stages import train_reranker

    if not train_reranker.trains_reranker(cfg_q):
        return
    t = cfg_q.retrieval.reranker.train
    if t.questions and t.questions_from == "writer":  # synth's copies cost no model call
        held = held_out(inp.chunks, records, t.split, t.neighbours)
        turns = PlanTurns(p, "train-reranker", _synth_basis(False), inp.chunks)
        train_reranker.write_questions(cfg_q, training_pool(inp.chunks, held), inp.golden, held, turns)
    p.encoder("train-reranker", "base model (fine-tuned)", t.base_model)


def _context_warnings(p: Planner) -> None:
    """A prompt plus its completion longer than the engine's context fails at run time."""
    for role in ROLES:
        phases = [x for x in p.phases if x.role == role and x.calls]
        if not phases:
            continue
        llm = getattr(p.cfg.models, role)
        limit, key = (
            (llm.n_ctx, "n_ctx")
            if llm.backend == "llamacpp"
            else (llm.max_model_len, "max_model_len")
            if llm.backend.startswith("vllm")
            else (None, None)
        )
        if not limit:
            continue
        for x in phases:
            need = x.max_prompt_tokens + x.max_completion_tokens
            if need > limit:
                p.warnings.append(
                    f"{x.stage}/{x.phase}: the longest prompt is {x.max_prompt_tokens:,} tokens "
                    f"({x.tokens_basis}) + {x.max_completion_tokens} to generate > models.{role}.{key} "
                    f"= {limit:,} of {llm.model}: raise models.{role}.{key}, or shorten the context "
                    "(chunking.max_tokens, answer.negative_n_wrong, answer.n_wrong_values)"
                )


def plan_run(cfg: Config, use_outputs: bool = False, tokenizer: str | None = None, exact: bool = False) -> dict:
    """The plan of `spacelm run` under `cfg`, as a dict (see :func:`format_plan`).
    Loads no model: only tokenizers. `use_outputs`: read earlier stages' outputs even when a run
    would recompute them (to price one stage with the data at hand). `exact`: tokenize every prompt
    rather than a sample of each large phase (:class:`~spacelm.lib.llm.dry_run.PlanLLM`)."""
    from .config.validate import check_stage_needs
    from .lib.io import write_jsonl
    from .stages import stages_for

    check_stage_needs(cfg, [s.name for s in stages_for(cfg)])  # the run would refuse it too
    t0 = time.perf_counter()
    p = Planner(cfg, tokenizer, exact)
    p.warnings.extend(checks_not_run(cfg))
    rows = status(cfg)
    current = {r["stage"]: not r["would_recompute"] for r in rows}
    inp = read_inputs(cfg, current, use_outputs)
    from .stages import synth

    known = inp.records is not None
    replay = _call_replay(cfg) if known and cfg.synth.enabled else None
    if known and replay is None and cfg.synth.enabled:
        p.notes.append(
            f"synth: {questions_path(cfg)} is current but the call cache is not in {cfg.cache_dir}: its calls are "
            "counted as a new run would make them (upper bound)"
        )
    if cfg.synth.enabled:
        turns = PlanTurns(p, "synth", _synth_basis(replay is not None), inp.chunks, inp.records, replay)
        planned = synth.compute(cfg, inp.chunks, inp.golden, turns).records
    records = inp.records if known else _planned_questions(planned)
    with tempfile.TemporaryDirectory(prefix="spacelm-plan-") as tmp:
        cfg_q = cfg
        if not known:  # the later stages read the planned questions as they would read the file
            cfg_q = dataclasses.replace(cfg, paths=dataclasses.replace(cfg.paths, synthetic_dir=tmp))
            write_jsonl(questions_path(cfg_q), records)
        for system in cfg.retrieval.systems:
            if system.startswith("dense") or system == "hybrid":
                p.encoder("retrieve", "dense", cfg.retrieval.dense.model)
                break
        _training_calls(p, inp, cfg_q, records)
        if any("+rerank" in s for s in cfg.retrieval.systems) and cfg.retrieval.reranker.kind != "none":
            p.encoder("retrieve", f"reranker ({cfg.retrieval.reranker.kind})", cfg.retrieval.reranker.model)
        _stage_calls(p, inp, cfg_q, _rankings(p, inp, cfg_q))
    _context_warnings(p)
    _corpus_size_warning(p, cfg, len(inp.chunks))
    cs = cfg.chunk_study
    if cs.sizes:
        per_q = 2 * len(cfg.grading.retrievers) * max(cs.grade_top_k) + 2
        p.notes.append(
            f"chunk-sizes: not counted above: {len(cs.sizes)} chunkings, each indexed by "
            + (f"{cs.dense_model or cfg.retrieval.dense.model}" if names.reads_dense(cs.systems) else "BM25 alone")
            + (
                f"; ≤{cs.grade_questions * per_q} judge calls per size ({cs.grade_questions} questions × "
                f"≤{per_q} distinct pairs), passages up to {max(cs.sizes)} tokens long"
                if cs.grade_questions
                else "; no grading"
            )
            + " (bench/chunk_size_cost.py measures the cost)"
        )
        from .stages.chunk_gate import gate_before_run

        for size, g in gate_before_run(cfg).items():
            if not g["graded"]:
                p.warnings.append(f"chunk-sizes: Table 1 at {size} tokens will not be graded: {g['reason']}")
    repeats = sum(x.repeats for x in p.phases)
    if repeats:
        p.notes.append(
            f"{repeats} request(s) repeat an earlier one exactly and are served by the call cache: not counted as calls"
        )
    stage_rows = []
    for r in rows:
        phases = [x for x in p.phases if x.stage == r["stage"]]
        if not phases:
            continue
        state = (
            "would be recomputed by a run"
            if r["would_recompute"]
            else "up to date (a run reuses it and makes none of these calls)"
        )
        stage_rows.append(
            {"stage": r["stage"], "state": state, "would_recompute": r["would_recompute"], **_sum(phases)}
        )
    models = []
    for key in dict.fromkeys((x.model, x.backend) for x in p.phases):
        phases = [x for x in p.phases if (x.model, x.backend) == key]
        models.append({"model": key[0], "backend": key[1], **_sum(phases)})
    todo = [x for x in p.phases if any(s["stage"] == x.stage and s["would_recompute"] for s in stage_rows)]
    return {
        "run_name": cfg.run_name,
        "config": cfg.source,
        "inputs": inp.notes,
        "phases": [x.to_dict() for x in p.phases],
        "stages": stage_rows,
        "models": models,
        "total": _sum(p.phases),
        "total_to_recompute": _sum(todo),
        "load_order": p.loads,
        "other_models": p.other_models,
        "tokenizers": p.tokenizers.labels,
        "notes": p.notes,
        "warnings": p.warnings,
        "power": power_table(cfg.power_plan(), recluster=lambda unit: paired_tests_at(cfg, unit)),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def plan_json(plan: dict) -> str:
    return json.dumps(plan, indent=2, default=str)


# --------------------------------------------------------------------------- the printed plan
def _num(n: int, basis: str) -> str:
    mark = {"exact": "", "upper bound": "≤", "estimate": "~"}[basis]
    return f"{mark}{n:,}"


def short_model(spec: str) -> str:
    return spec.split(":", 1)[1] if spec.startswith("embedded:") else spec.rstrip("/").split("/")[-1]


def _total_row(stage: str, label: str, d: dict) -> tuple:
    """A totals row of the plan's table (a stage's or the run's), in the per-phase rows' columns."""
    return (
        stage,
        label,
        "",
        "",
        _num(d["calls"], d["calls_basis"]),
        d["calls_basis"],
        _num(d["prompt_tokens"], d["tokens_basis"]),
        _num(d["prompt_tokens_evaluated"], d["tokens_basis"]),
        f"{d['completion_tokens_max']:,}",
    )


def format_plan(plan: dict, wide: bool = False) -> str:
    """The plan as text: the per-phase table, per-stage and per-model totals, the engines in
    load order, the tokenizers, notes and warnings. Within 100 columns (the table's model, backend,
    basis and prefix-reuse columns left out, prose wrapped) unless `wide`."""
    lines = [f"plan for run '{plan['run_name']}' ({plan['config']}): no model loaded; calls on an empty call cache", ""]
    for note in plan["inputs"]:
        lines.append(f"input: {note}")
    lines.append("")
    head = (
        "stage",
        "phase",
        "model",
        "backend",
        "calls",
        "basis",
        "prompt tokens",
        "after prefix reuse",
        "completion tokens (max)",
    )
    rows = [head]
    for r in plan["phases"]:
        rows.append(
            (
                r["stage"],
                r["phase"],
                short_model(r["model"]),
                r["backend"],
                f"{r['calls']:,}",
                r["calls_basis"],
                _num(r["prompt_tokens"], r["tokens_basis"]),
                _num(r["prompt_tokens_evaluated"], r["tokens_basis"]),
                f"{r['completion_tokens_max']:,}",
            )
        )
    t = plan["total"]
    rows += [_total_row(s["stage"], "stage total", s) for s in plan["stages"]]
    rows.append(_total_row("all", "total", t))
    if not wide:  # the calls column carries its basis as the token columns do (≤ upper bound, ~ estimate)
        every = [*plan["phases"], *plan["stages"], t]
        head = ("stage", "phase", "calls", "prompt tokens", "max completion")
        rows = [head] + [(r[0], r[1], _num(x["calls"], x["calls_basis"]), r[6], r[8]) for r, x in zip(rows[1:], every)]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    right = {4, 6, 7, 8} if wide else {2, 3, 4}
    fmt = lambda r: "  ".join(
        str(v).rjust(w) if i in right else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths))
    ).rstrip()
    n_phases = len(plan["phases"])
    lines.append(fmt(head))
    lines.append("  ".join("-" * w for w in widths))
    for i, r in enumerate(rows[1:]):
        if i in (n_phases, n_phases + len(plan["stages"])):
            lines.append("  ".join("-" * w for w in widths))
        lines.append(fmt(r))
    lines.append(
        "prompt tokens: plain = counted on the rendered prompts; ≤ = upper bound (earlier model output "
        "counted at its max_tokens); ~ = estimate. Completion tokens: the requests' max_tokens (a "
        "constrained answer: its longest option)."
    )
    r = plan["total_to_recompute"]
    todo = [s["stage"] for s in plan["stages"] if s["would_recompute"]]
    lines.append(
        f"a run now recomputes {', '.join(todo) if todo else 'no stage'}: "
        f"{_num(r['calls'], r['calls_basis'])} calls, {_num(r['prompt_tokens'], r['tokens_basis'])} prompt "
        f"tokens, {r['completion_tokens_max']:,} completion tokens at most"
    )
    lines.append("")
    lines.append("per model:")
    for m in plan["models"]:
        lines.append(
            f"  {m['model']} ({m['backend']}): {_num(m['calls'], m['calls_basis'])} calls, "
            f"{_num(m['prompt_tokens'], m['tokens_basis'])} prompt tokens, {m['completion_tokens_max']:,} "
            f"completion tokens at most; longest prompt {m['max_prompt_tokens']:,} tokens"
        )
    lines.append("")
    lines.append("engines in load order (each released before the next loads):")
    for i, e in enumerate(plan["load_order"], 1):
        heads = ", ".join(dict.fromkeys(ph.split(":")[0].split(",")[0] for ph in e["phases"]))
        lines.append(
            f"  {i:>2}. {e['stage']:<12} {e['role']:<16} {e['model']} ({e['backend']}{e['settings']}): "
            f"{_num(e['calls'], e['calls_basis'])} calls ({heads}){'; ' + e['note'] if e['note'] else ''}"
        )
    if plan.get("other_models"):
        lines.append("other models (encoders, loaded on the way):")
        for m in plan["other_models"]:
            lines.append(f"      {m['stage']:<12} {m['role']:<20} {m['model']}")
    lines.append("")
    lines.append("tokenizers:")
    for role, label in plan["tokenizers"].items():
        lines.append(f"  {role}: {label}")
    lines.append("")
    lines.append("stages: " + "; ".join(f"{s['stage']} {s['state']}" for s in plan["stages"]))
    for n in plan["notes"]:
        lines.append(f"note: {n}")
    for w in plan["warnings"]:
        lines.append(f"WARNING: {w}")
    if plan.get("power"):
        from .lib.report.power import format_power

        lines += ["", format_power(plan["power"], wide)]
    if wide:
        return "\n".join(lines)
    import textwrap

    out = []
    for line in "\n".join(lines).splitlines():
        indent = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, 100, subsequent_indent=indent + "  ", break_on_hyphens=False) or [""]
    return "\n".join(out)


def time_estimate(plan: dict, prompt_tps: float, gen_tps: float | None = None) -> list[dict]:
    """Seconds per model and in total from throughputs the user measured on their own serving
    setup: prompt tokens / `prompt_tps` plus, when `gen_tps` is given, the completion tokens at
    their maximum / `gen_tps` (an upper bound on generation time). Prompt tokens are those left
    after prefix reuse (`prompt_tokens_evaluated`, as llama.cpp evaluates a batch sent in prompt
    order) where the plan has them. Calls of one model are independent, so replicas or
    data-parallel ranks divide the time: give their summed rate."""
    rows = []
    for m in plan["models"]:
        prompt_s = m.get("prompt_tokens_evaluated", m["prompt_tokens"]) / prompt_tps
        gen_s = m["completion_tokens_max"] / gen_tps if gen_tps else None
        rows.append(
            {
                "model": m["model"],
                "prompt_tokens": m["prompt_tokens"],
                "prompt_tokens_evaluated": m.get("prompt_tokens_evaluated", m["prompt_tokens"]),
                "prompt_seconds": prompt_s,
                "completion_tokens_max": m["completion_tokens_max"],
                "generation_seconds_max": gen_s,
                "seconds": prompt_s + (gen_s or 0.0),
            }
        )
    return rows


def format_time_estimate(rows: list[dict], prompt_tps: float, gen_tps: float | None = None) -> str:
    hours = lambda s: f"{s / 3600:,.2f} h"
    lines = [
        f"time at {prompt_tps:,.0f} prompt tokens/s"
        + (f" and {gen_tps:,.0f} generated tokens/s" if gen_tps else " (generation not counted: give --throughput P:G)")
        + ", models one after another:"
    ]
    for r in rows:
        gen = (
            f" + {hours(r['generation_seconds_max'])} generation at most"
            if r["generation_seconds_max"] is not None
            else ""
        )
        lines.append(
            f"  {r['model']}: {hours(r['prompt_seconds'])} prompt ({r['prompt_tokens_evaluated']:,} of "
            f"{r['prompt_tokens']:,} prompt tokens left after prefix reuse){gen}"
        )
    lines.append(
        f"  total: {hours(sum(r['seconds'] for r in rows))}" + (" at most" if gen_tps else " (prompt evaluation only)")
    )
    return "\n".join(lines)
