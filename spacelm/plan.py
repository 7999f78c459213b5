"""`spacelm plan`: what a run would ask of its models, before it starts and without loading one.

Per stage and model phase: the number of model calls, the prompt tokens (counted with each
model's tokenizer on the prompts the stage would render) and the completion tokens its
requests allow, and the order in which the engines load, so that a GPU job can be sized first.

The stages' own planning and request-building functions run here (`plan_generation`,
`plan_unanswerable`, `plan_pairs`, `build_items`, `grade_pairs`, `judge_rubrics`, ...) against a
stand-in front end (:class:`~spacelm.lib.plan.PlanLLM`), in the order the stages call them.
What a stage reads comes from the files of earlier stages when those are current, or from the
plan of those stages when a run would recompute them:

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
from contextlib import contextmanager
from pathlib import Path

from .config import Config, ConfigError, LLMConfig
from .lib.plan import (
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
from .lib.power import power_table
from .pipeline import status
from .stages.data import (
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

ROLES = ("question_writer", "generator", "judge")


# --------------------------------------------------------------------------- tokenizers
def _own_tokenizer(spec: str, backend: str) -> tuple[str, Path] | None:
    """("gguf" | "hf", path) of a model's own tokenizer when it is on this machine (an embedded
    GGUF, a local file or folder, or a hub model already in the local hub cache), else None."""
    from .lib.models import EMBEDDED, ModelNotFound, model_path

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
        from .lib.plan import gguf_counter, hf_counter, wordpiece_counter

        key = (kind, str(path))
        if key not in self._counters:
            make = {"gguf": gguf_counter, "hf": hf_counter, "wordpiece": wordpiece_counter}[kind]
            self._counters[key] = make(path)
        return self._counters[key]

    def _fallback(self) -> tuple[str, Path, str]:
        """(kind, path, name) of the tokenizer that stands in for one not on this machine: an
        embedded GGUF's (byte-level BPE, as Llama 3 and Qwen use), else the chunking tokenizer."""
        from .lib.models import EMBEDDED, ModelNotFound, model_path

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
class Engine:
    """One span between a stage opening a model and releasing it."""

    def __init__(self, planner: Planner, stage: str, role: str, llm: PlanLLM):
        self.planner, self.stage, self.role, self.llm = planner, stage, role, llm
        self.phases: list[PhaseCount] = []

    @contextmanager
    def phase(self, name: str, basis: str = "exact", pseudo_passages: bool = False, note: str = ""):
        """Requests made inside are counted as phase `name` (calls `basis`; `pseudo_passages`
        when stand-in passages are in the prompts)."""
        ph = PhaseCount(
            self.stage, name, self.role, self.llm.cfg.model, self.llm.cfg.backend, basis, pseudo_passages, note
        )
        self.llm.current, self.llm.stage = ph, self.stage
        self.phases.append(ph)
        self.planner.phases.append(ph)
        try:
            yield ph
        finally:
            self.llm.current = None


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

    def __init__(self, cfg: Config, tokenizer: str | None = None):
        self.cfg = cfg
        self.tokenizers = Tokenizers(cfg, tokenizer)
        self._llms: dict[str, PlanLLM] = {}
        self._answered: dict = {}
        self.serial = [0]
        self.phases: list[PhaseCount] = []
        self.loads: list[dict] = []
        self._last_cfg = None  # the engine key of the engine loaded last
        self.other_models: list[dict] = []
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def llm(self, role: str) -> PlanLLM:
        if role not in self._llms:
            llm_cfg = getattr(self.cfg.models, role)
            self._llms[role] = PlanLLM(
                llm_cfg, role, self.tokenizers.counter(role, llm_cfg), self._answered, self.serial
            )
        return self._llms[role]

    @contextmanager
    def engine(self, stage: str, role: str, note: str = ""):
        """A model opened by `stage` and released at the end of the block; it loads (and so
        enters the load order) only if a phase inside makes a call."""
        e = Engine(self, stage, role, self.llm(role))
        yield e
        made = [p for p in e.phases if p.calls]
        if made:
            c = e.llm.cfg
            last = self.loads[-1] if self.loads else None
            if (
                last
                and stage in ("synth", "answer")
                and stage == last["stage"]
                and self._last_cfg == c.engine_key()
                and role != "generator"
                and last["role"] != "generator"
            ):
                # a stage's writer and judge share one engine when its settings are equal (stages/base.py ModelTurns)
                last["phases"] += [p.phase for p in made]
                last["calls"] += sum(p.calls for p in made)
                last["calls_basis"] = weakest(last["calls_basis"], *[p.calls_basis for p in made])
                if role not in last["role"].split(" + "):
                    last["role"] += f" + {role}"
                return
            self._last_cfg = c.engine_key()
            self.loads.append(
                {
                    "stage": stage,
                    "role": role,
                    "model": c.model,
                    "backend": c.backend,
                    "settings": _settings(c),
                    "phases": [p.phase for p in made],
                    "note": note,
                    "calls": sum(p.calls for p in made),
                    "calls_basis": weakest(*[p.calls_basis for p in made]),
                }
            )

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
    from .lib.chunking import chunk_documents
    from .lib.documents import ingest_corpus
    from .lib.golden import load_golden
    from .lib.io import read_jsonl

    have = lambda stage, path: (current[stage] or use_outputs) and Path(path).is_file()
    notes = []
    if have("chunk", chunks_path(cfg)):
        chunks = load_chunks(cfg)
        notes.append(f"chunks: {len(chunks)} from {chunks_path(cfg)}")
    else:
        if have("ingest", documents_path(cfg)):
            docs, where = load_documents(cfg), f"documents from {documents_path(cfg)}"
        else:
            docs = ingest_corpus(
                cfg.path(cfg.corpus.raw_dir),
                cfg.corpus.extensions,
                cfg.corpus.exclude,
                cfg.ingest.rules(),
                cfg.ingest.garbled_threshold,
                cfg.ingest.min_doc_chars,
            ).documents
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


# --------------------------------------------------------------------------- the stages
def plan_synth(p: Planner, inp: Inputs) -> list[dict]:
    """The synth stage's calls (see `stages/synth.py`). Returns the question records the later
    stages read: the file's when current, else the planned ones (every question kept)."""
    from .lib.questions import add_reference_answers, generate_questions, golden_unanswerable, plan_generation

    cfg, sc = p.cfg, p.cfg.synth
    known = inp.records is not None
    chunks_by_id = {c.chunk_id: c for c in inp.chunks}
    text_of = {cid: c.text for cid, c in chunks_by_id.items()}
    with p.engine("synth", "question_writer") as w:
        with w.phase("questions"):
            writing = cfg.question_writing()
            planned = generate_questions(writing, w.llm, plan_generation(writing, inp.chunks, inp.golden))
        answerable = (
            [dict(r) for r in inp.records if r.get("answerable", True) and r.get("source_chunk_id") in chunks_by_id]
            if known
            else planned
        )
        if sc.with_reference_answer:
            with w.phase("reference answers", "exact" if known else "upper bound"):
                add_reference_answers(
                    cfg.question_writing(), w.llm, [dict(r) for r in answerable] if known else answerable, chunks_by_id
                )
    p.encoder("synth", "dense (filter)", cfg.retrieval.dense.model)
    if not known:
        for r in planned:  # upper bound: every question passes the retrieval filter
            r.update(kept=r["drop_reason"] is None)
    gold_una = golden_unanswerable(inp.golden)
    una_kept: list = []
    if sc.unanswerable.enabled:
        una_kept = _synth_unanswerable(p, inp, answerable, gold_una, chunks_by_id, text_of)
    if known:
        return inp.records
    return answerable + una_kept + gold_una


def _synth_unanswerable(
    p: Planner, inp: Inputs, answerable: list, gold_una: list, chunks_by_id: dict, text_of: dict
) -> list[dict]:
    """The unanswerable rounds: from the file when current (the rounds that ran, the pairs the
    judge graded), else every round the config allows with every task (upper bound: a later
    round runs only for task types still without a kept question). Returns the planned kept
    candidates (upper bound: round 0's)."""
    from .lib.questions import generate_unanswerable, plan_unanswerable, unanswerable_check_pairs
    from .lib.relevance import grade_pairs

    cfg, uc = p.cfg, p.cfg.synth.unanswerable
    known = inp.records is not None
    file_una = [r for r in inp.records or [] if not r.get("answerable", True) and r.get("origin") != "golden"]
    file_gold = [r for r in inp.records or [] if not r.get("answerable", True) and r.get("origin") == "golden"]
    rounds = sorted({r.get("round", 0) for r in file_una}) if known else list(range(uc.max_rounds))
    basis = "exact" if known else "upper bound"
    written: list = []
    kept: list = []
    for round_ in rounds:
        tasks = (
            list(cfg.synth.tasks)
            if round_ == 0 or not known
            else [t for t in cfg.synth.tasks if any(r["task"] == t and r.get("round", 0) == round_ for r in file_una)]
        )
        plan = plan_unanswerable(cfg.question_writing(), answerable, chunks_by_id, round_, tasks)
        if not plan:
            break
        later = "" if round_ == 0 or known else "runs only for task types without a kept unanswerable question"
        with p.engine("synth", "question_writer", note=later) as w:
            with w.phase(f"unanswerable questions, round {round_ + 1}", basis):
                new = generate_unanswerable(cfg.question_writing(), w.llm, plan, answerable + written)
        if known:
            checked = [r for r in file_una if r.get("round", 0) == round_] + (file_gold if round_ == 0 else [])
            pairs = [
                {"qid": r["qid"], "question": r["question"], "chunk_id": cid, "purpose": ["unanswerable_check"]}
                for r in checked
                for cid in (r.get("check_grades") or {})
            ]
        else:
            for r in new:  # upper bound: every candidate is well formed and goes to the check
                r.update(drop_reason=None, round=round_)
            systems = {
                name: StandInRetriever(stand_in_ranking(typical_order(inp.chunks), i, uc.check_k))
                for i, name in enumerate(["bm25", "dense"])
            }
            pairs = unanswerable_check_pairs(systems, new + (gold_una if round_ == 0 else []), uc.check_k)
            if round_ == 0:
                kept = [dict(r, kept=True) for r in new]
        written += new
        if pairs:  # upper bound when not known: the check stops at a candidate's first answering passage
            with p.engine("synth", "judge", note=later) as j:
                with j.phase(f"unanswerable check, round {round_ + 1}", basis, pseudo_passages=not known):
                    grade_pairs(j.llm, pairs, text_of, judging=cfg.grading.judging(cfg.root))
    return kept


def plan_judge_check(p: Planner, inp: Inputs, cfg_q: Config) -> None:
    """The judge-check stage's calls (see `stages/judge_check.py`)."""
    from .lib.beir import load_beir
    from .lib.golden import load_golden, locate_samples
    from .lib.judge_check import build_controls, golden_check_pairs, sample_check_pairs, score_controls
    from .lib.relevance import grade_pairs

    cfg, jc = p.cfg, p.cfg.judge_check
    if not jc.enabled:
        return
    two_orders = (jc.position_bias or cfg.grading.debias == "both_orders") and cfg.grading.method == "prompt"
    text_of = {c.chunk_id: c.text for c in inp.chunks}
    with p.engine("judge-check", "judge") as j:

        def check(name: str, pairs: list, passages: dict) -> None:
            with j.phase(f"labelled pairs: {name}"):
                grade_pairs(j.llm, pairs, passages, judging=cfg.grading.judging(cfg.root))
            if two_orders:
                from .stages.judge_check import bias_sample

                sub = pairs if cfg.grading.debias == "both_orders" else bias_sample(pairs, jc.position_bias_queries)
                with j.phase(f"labelled pairs: {name}, passage first"):
                    grade_pairs(j.llm, sub, passages, template=cfg.grading.prompt + "_swapped")

        for src in jc.sources:
            d = cfg.path(src.path)
            if not d.is_dir():
                p.notes.append(
                    f"judge-check: source {src.name} ({src.path}) not found: the stage reports it as not run, no call"
                )
                continue
            data = load_beir(d, src.split)
            from .stages.judge_check import fitted_queries

            pairs = sample_check_pairs(
                data, src.n_queries, cfg.seed, src.name, exclude_queries=fitted_queries(cfg, src.name)
            )
            need = {x["chunk_id"] for x in pairs}
            ids, texts = data.passages()
            check(src.name, pairs, {i: t for i, t in zip(ids, texts) if i in need})
        if jc.in_domain:
            samples = load_golden(golden_path(cfg))
            found, _ = locate_samples(samples, inp.chunks, golden_path(cfg))
            check(
                "golden (in-domain)", golden_check_pairs(samples, found, inp.chunks, jc.n_in_domain, cfg.seed), text_of
            )
        if jc.controls:
            questions = load_questions(cfg_q, inp.chunks)
            controls = build_controls(
                questions, text_of, {c.chunk_id: c.doc_id for c in inp.chunks}, jc.n_controls, cfg.seed
            )
            with j.phase("known-answer controls", "exact" if inp.records is not None else "upper bound"):
                score_controls(j.llm, controls, text_of)


def _rankings(p: Planner, inp: Inputs, cfg_q: Config) -> dict:
    """The rankings the grade and answer stages read, or stand-ins."""
    if inp.rankings is not None:
        return inp.rankings
    qids = [q["qid"] for q in load_questions(cfg_q, inp.chunks, answerable=None)]
    width = max(max(p.cfg.grading.top_k), p.cfg.answer.retrieve_k)
    return stand_in_rankings(typical_order(inp.chunks), p.cfg.retrieval.systems, qids, width)


def plan_grade(p: Planner, inp: Inputs, cfg_q: Config, rankings: dict) -> None:
    """The grade stage's calls (see `stages/grade.py`)."""
    from .lib.relevance import grade_pairs, plan_pairs, select_questions, table_systems

    cfg = p.cfg
    chunks_by_id = {c.chunk_id: c for c in inp.chunks}
    need = {s for _, _, s in table_systems(cfg.table_design())}
    if not need <= set(rankings):
        raise ConfigError(
            f"grading.retrievers: grading needs retrieval systems {sorted(need)}; add them to "
            f"retrieval.systems (have {sorted(rankings)})"
        )
    all_q = [q for q in load_questions(cfg_q, inp.chunks) if q["qid"] in rankings[next(iter(need))]]
    questions = select_questions(all_q, cfg.grading.max_questions, cfg.seed)
    pairs = plan_pairs(cfg.table_design(), questions, rankings, chunks_by_id)
    text_of = {cid: c.text for cid, c in chunks_by_id.items()}
    known = inp.rankings is not None
    basis = "exact" if known else "upper bound"
    swapped = cfg.grading.prompt + "_swapped"
    with p.engine("grade", "judge") as j:
        with j.phase("relevance grades", basis, pseudo_passages=not known):
            grade_pairs(j.llm, pairs, text_of, judging=cfg.grading.judging(cfg.root))
        if cfg.grading.debias == "both_orders":
            with j.phase("relevance grades, passage first", basis, pseudo_passages=not known):
                grade_pairs(j.llm, pairs, text_of, template=swapped)
        elif cfg.grading.consistency_check and cfg.grading.method == "prompt":
            validity = [x for x in pairs if any(t.startswith("validity") for t in x["purpose"])]
            with j.phase("validity pairs, passage first", basis, pseudo_passages=not known):
                grade_pairs(j.llm, validity, text_of, template=swapped)


def _claims_per_answer(cfg: Config) -> tuple[float, str]:
    """Claim checks per answer with passages: as in this run folder's last answer stage when it
    has one, else one per CLAIM_TOKENS of the generator's max_tokens."""
    from .lib.io import read_jsonl

    claims, answers = cfg.run_dir / "claims.jsonl", cfg.run_dir / "answers.jsonl"
    if claims.is_file() and answers.is_file():
        checks = sum(len(r.get("support") or {}) for r in read_jsonl(claims))
        judged = sum(1 for a in read_jsonl(answers) if a.get("answerable", True) and a.get("passage_ids"))
        if judged and checks:
            return checks / judged, f"{checks / judged:.2f} checks per answer, as in {claims}"
    n = max(1.0, cfg.models.generator.max_tokens / CLAIM_TOKENS)
    return n, (
        f"{n:.1f} checks per answer: one claim per {CLAIM_TOKENS} tokens of the generator's max_tokens "
        f"({cfg.models.generator.max_tokens}), each citing one passage"
    )


def plan_answer(p: Planner, inp: Inputs, cfg_q: Config, rankings: dict) -> None:
    """The answer stage's calls (see `stages/answer.py`): the generator's phase, then the judge's."""
    from .lib.answers import (
        JUDGE_STYLE,
        build_items,
        cannot_answer,
        generate,
        judge_binary,
        judge_refusal,
        judge_rubrics,
        unanswerable_items,
        verify,
    )
    from .lib.claims import judge_claims
    from .lib.gate import REFUSAL_TEXT
    from .lib.relevance import select_questions
    from .stages.answer import claim_items, references_needed

    cfg, ac = p.cfg, p.cfg.answer
    text_of = {c.chunk_id: c.text for c in inp.chunks}
    questions = select_questions(load_questions(cfg_q, inp.chunks), ac.max_questions, cfg.seed)
    all_una = load_questions(cfg_q, inp.chunks, answerable=False)
    una = [] if ac.max_unanswerable == 0 else select_questions(all_una, ac.max_unanswerable, cfg.seed)
    ranked = rankings.get(ac.retriever)
    if ranked is None and (una or any(x != "A" for x in ac.pipelines)):
        raise ConfigError(f"answer.retriever {ac.retriever!r} is not among retrieval.systems")
    if una and "B" not in ac.pipelines:
        una = []
    design = cfg.answer_design()
    items = build_items(design, questions, inp.chunks, ranked) + unanswerable_items(design, una, ranked)
    known_q, known_r = inp.records is not None, inp.rankings is not None
    basis = "exact" if known_q else "upper bound"
    pseudo = not known_r and (bool(una) or any(x != "A" for x in ac.pipelines))
    if ac.gate.enabled:
        p.encoder("answer", "dense (gate)", cfg.retrieval.dense.model)
    with p.engine("answer", "generator") as g:
        with g.phase("answers", basis, pseudo_passages=pseudo):
            generate(g.llm, items, text_of, design)
        c_items = [it for it in items if it["pipeline"] == "C"]
        for it in c_items:
            it["draft_answer"] = it["answer"]
        if c_items:
            with g.phase("verification rewrites", basis, pseudo_passages=pseudo):
                verify(g.llm, c_items, text_of, design)
    by_id = {c.chunk_id: c for c in inp.chunks}
    recs = references_needed(cfg, items, by_id)
    if recs:
        from .lib.questions import add_reference_answers

        with p.engine("answer", "question_writer") as w:
            with w.phase("reference answers", basis):
                add_reference_answers(cfg.question_writing(), w.llm, recs, by_id)
    with p.engine("answer", "judge") as j:
        with j.phase("rubric scores", basis, pseudo_passages=pseudo):
            judge_rubrics(j.llm, items, text_of)
        una_items = [it for it in items if it["setting"] == "unanswerable"]
        if ac.gate.enabled and una_items:
            gated = [dict(it, answer=REFUSAL_TEXT, scores={}, expected_scores={}, raw_judge={}) for it in una_items]
            with j.phase(
                "rubric scores, gated refusals",
                "upper bound",
                pseudo_passages=pseudo,
                note="one per unanswerable question the gate stops (all, at most)",
            ):
                judge_rubrics(j.llm, gated, text_of)
        if ac.binary_judges:
            with j.phase("binary judges", basis, pseudo_passages=pseudo):
                judge_binary(j.llm, [it for it in items if it["pipeline"] != "table2" and it["answerable"]], text_of)
        if ac.refusal_judge:
            with j.phase("refusal judge", basis, pseudo_passages=pseudo):
                judge_refusal(j.llm, [it for it in items if cannot_answer(it)])
        if ac.claims:
            per_answer, how = _claims_per_answer(cfg)

            judged = claim_items(cfg, items)
            fake = [
                dict(it, answer=claim_answer(n, it["passage_ids"], ac.citations, p.serial))
                for it, n in zip(judged, spread(per_answer, len(judged)))
            ]
            with j.phase("claim support", "estimate", pseudo_passages=pseudo, note=how):
                judge_claims(j.llm, fake, text_of, JUDGE_STYLE)
            p.notes.append(
                f"answer/claim support: an estimate, {how}; the real count depends on how the answers are written"
            )


# --------------------------------------------------------------------------- the whole plan
def _sum(phases: list[PhaseCount]) -> dict:
    return {
        "calls": sum(x.calls for x in phases),
        "prompt_tokens": sum(x.prompt_tokens for x in phases),
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


def plan_run(cfg: Config, use_outputs: bool = False, tokenizer: str | None = None) -> dict:
    """The plan of `spacelm run` under `cfg`, as a dict (see :func:`~spacelm.lib.plan.format_plan`).
    Loads no model: only tokenizers. `use_outputs`: read earlier stages' outputs even when a run
    would recompute them (to price one stage with the data at hand)."""
    from .config.validate import check_stage_needs
    from .lib.io import write_jsonl
    from .stages import stages_for

    check_stage_needs(cfg, [s.name for s in stages_for(cfg)])  # the run would refuse it too
    t0 = time.perf_counter()
    p = Planner(cfg, tokenizer)
    rows = status(cfg)
    current = {r["stage"]: not r["would_recompute"] for r in rows}
    inp = read_inputs(cfg, current, use_outputs)
    records = plan_synth(p, inp)
    with tempfile.TemporaryDirectory(prefix="spacelm-plan-") as tmp:
        cfg_q = cfg
        if inp.records is None:  # the later stages read the planned questions as they would read the file
            cfg_q = dataclasses.replace(cfg, paths=dataclasses.replace(cfg.paths, synthetic_dir=tmp))
            write_jsonl(questions_path(cfg_q), records)
        for system in cfg.retrieval.systems:
            if system.startswith("dense") or system == "hybrid":
                p.encoder("retrieve", "dense", cfg.retrieval.dense.model)
                break
        if any("+rerank" in s for s in cfg.retrieval.systems) and cfg.retrieval.reranker.kind != "none":
            p.encoder("retrieve", f"reranker ({cfg.retrieval.reranker.kind})", cfg.retrieval.reranker.model)
        rankings = _rankings(p, inp, cfg_q)
        plan_judge_check(p, inp, cfg_q)
        plan_grade(p, inp, cfg_q, rankings)
        plan_answer(p, inp, cfg_q, rankings)
    _context_warnings(p)
    _corpus_size_warning(p, cfg, len(inp.chunks))
    cs = cfg.chunk_study
    if cs.sizes:
        per_q = 2 * len(cfg.grading.retrievers) * max(cs.grade_top_k) + 2
        p.notes.append(
            f"chunk-sizes: not counted above: {len(cs.sizes)} chunkings, each indexed by "
            f"{cs.dense_model or cfg.retrieval.dense.model}"
            + (
                f"; ≤{cs.grade_questions * per_q} judge calls per size ({cs.grade_questions} questions × "
                f"≤{per_q} distinct pairs), passages up to {max(cs.sizes)} tokens long"
                if cs.grade_questions
                else "; no grading"
            )
            + " (bench/chunk_size_cost.py measures the cost)"
        )
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
        "power": power_table(cfg.power_plan()),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def plan_json(plan: dict) -> str:
    return json.dumps(plan, indent=2, default=str)
