"""Value checks that types alone cannot express: ranges, choices, cross-field rules, and model
files that must exist. Each error names the key and the fix, and all of them run when the
config is loaded, before any model is."""

from __future__ import annotations

import re
from pathlib import Path

from ..lib.names import FIRST_STAGE, PIPELINES, SYSTEMS, TASKS
from .schema import Config, ConfigError, LLMConfig

MODEL_ROLES = ("question_writer", "generator", "judge")


def _get(cfg: Config, dotted: str):
    obj = cfg
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def validate(cfg: Config, source: str) -> None:
    def need(cond: bool, key: str, msg: str) -> None:
        if not cond:
            raise ConfigError(f"{source}: key '{key}' {msg}")

    def at_least(key: str, lo, optional: bool = False) -> None:
        v = _get(cfg, key)
        if v is None and optional:
            return
        need(
            v is not None and v >= lo, key, f"must be >= {lo}{' (or null for no limit)' if optional else ''}, got {v!r}"
        )

    def within(key: str, lo, hi, value=None) -> None:
        v = _get(cfg, key) if value is None else value
        need(lo <= v <= hi, key, f"must be between {lo} and {hi}, got {v!r}")

    need(
        bool(re.fullmatch(r"[A-Za-z0-9._-]+", cfg.run_name)) and ".." not in cfg.run_name and cfg.run_name != ".",
        "run_name",
        f"is {cfg.run_name!r}; it names the run's folder under paths.results_dir, so it may hold only "
        "letters, digits, '.', '_' and '-' (no '..', no '/')",
    )
    # a seed every random generator takes (numpy's legacy generators stop at 2**32 - 1)
    within("seed", 0, 2**32 - 1)
    # counts and sizes
    for key in (
        "chunking.max_tokens",
        "retrieval.hybrid.depth",
        "retrieval.dense.batch_size",
        "retrieval.reranker.batch_size",
        "synth.filter_top_n",
        "synth.min_question_words",
        "grading.n_bootstrap",
        "answer.n_bootstrap",
        "answer.retrieve_k",
        "labels.calibration_per_grade",
    ):
        at_least(key, 1)
    for key in ("labels.floor.relevance_kappa", "labels.floor.controls", "labels.floor.screening"):
        within(key, 0.0, 1.0)
    within("labels.repeat_share", 0.0, 0.5)
    if cfg.retrieval.device == "cuda":
        from ..lib.retrieval.systems import cuda_available

        need(
            cuda_available(),
            "retrieval.device",
            "is 'cuda' but torch sees no GPU on this machine; use 'auto' (CUDA where there is one, else the CPU) "
            "or 'cpu'",
        )
    for key in ("labels.calibration_questions", "labels.calibration_controls"):
        at_least(key, 0)
    for key in (
        "seed",
        "ingest.min_doc_chars",
        "synth.n_fewshot",
        "retrieval.near_page_window",
        "retrieval.hybrid.rrf_k",
        "retrieval.bm25.k1",
    ):
        at_least(key, 0)
    for key in (
        "judge_check.position_bias_queries",
        "synth.max_chunks",
        "grading.max_questions",
        "grading.max_golden_questions",
        "grading.deep_questions",
        "grading.judge_questions",
        "answer.max_questions",
        "answer.judge_questions",
        "retrieval.dense.max_seq_length",
    ):
        at_least(key, 1, optional=True)
    within("retrieval.bm25.b", 0, 1)
    within("ingest.garbled_threshold", 0, 1)
    within("ingest.bibliography_min_score", 0, 1)
    within("ingest.bibliography_max_stopwords", 0, 1)
    at_least("ingest.bibliography_min_entries", 1)
    within("grading.auc_warning", 0.5, 1)
    need(
        0 <= cfg.chunking.overlap < 1 or 1 <= cfg.chunking.overlap < cfg.chunking.max_tokens,
        "chunking.overlap",
        "must be a ratio in [0, 1) or a token count below chunking.max_tokens",
    )
    # k values: positive, and within what the first stage returns
    pool = cfg.retrieval.pool
    if isinstance(pool, float):
        need(
            0 < pool < 1,
            "retrieval.pool",
            f"must be a whole number of passages (>= 1) or a share of the corpus between 0 and 1, got {pool!r}",
        )
    else:
        need(pool >= 1, "retrieval.pool", f"must be >= 1 (or a share of the corpus below 1), got {pool!r}")
    limit = pool if isinstance(pool, int) else None  # a share is resolved against the corpus at retrieval
    for key in ("retrieval.k_values", "grading.top_k"):
        ks = _get(cfg, key)
        need(len(ks) > 0, key, "must hold at least one k")
        for k in ks:
            need(
                isinstance(k, int) and 1 <= k <= (limit or k),
                key,
                f"must hold integers from 1 to retrieval.pool ({pool}), got {k!r}",
            )
    need(
        cfg.answer.retrieve_k <= (limit or cfg.answer.retrieve_k),
        "answer.retrieve_k",
        f"must be <= retrieval.pool ({pool})",
    )
    # names
    for s in cfg.retrieval.systems:
        need(s in SYSTEMS, "retrieval.systems", f"holds unknown system {s!r} (choose from {sorted(SYSTEMS)})")
    need(
        len(cfg.grading.retrievers) > 0,
        "grading.retrievers",
        f"must hold at least one first-stage retriever (from {list(FIRST_STAGE)})",
    )
    qs = cfg.grading.question_sets
    need(
        "run" in qs and len(set(qs)) == len(qs),
        "grading.question_sets",
        f"is {qs!r}; it must hold 'run' (the files every reader takes Table 1 from) once, and may add "
        "'golden': write [run] or [run, golden]",
    )
    need(
        cfg.grading.judge_questions is None or cfg.grading.instrument == "both",
        "grading.judge_questions",
        f"is {cfg.grading.judge_questions}, but grading.instrument is {cfg.grading.instrument!r}: a sample of the "
        "questions graded by the judge needs the assessor's labels to read them all (instrument: both), or "
        "write judge_questions: null",
    )
    need(
        cfg.answer.judge_questions is None or cfg.answer.instrument == "both",
        "answer.judge_questions",
        f"is {cfg.answer.judge_questions}, but answer.instrument is {cfg.answer.instrument!r}: a sample of the "
        "answers scored by the judges needs the assessor's scores of them all (instrument: both), or write "
        "judge_questions: null",
    )
    for s in cfg.grading.retrievers:
        need(
            s in FIRST_STAGE,
            "grading.retrievers",
            f"holds {s!r}; choose first-stage retrievers from "
            f"{list(FIRST_STAGE)} (their reranked lists are graded too)",
        )
    need(
        cfg.answer.retriever in SYSTEMS, "answer.retriever", f"is {cfg.answer.retriever!r}; choose from {list(SYSTEMS)}"
    )
    for t in cfg.synth.tasks:
        need(t in TASKS, "synth.tasks", f"holds unknown task {t!r} (choose from {sorted(TASKS)})")
    need(len(cfg.synth.tasks) > 0, "synth.tasks", "must hold at least one task")
    for n in cfg.answer.n_wrong_values:
        need(0 <= n <= 20, "answer.n_wrong_values", f"must hold integers in 0..20, got {n!r}")
    within("answer.negative_n_wrong", 0, 20)
    for p in cfg.answer.pipelines:
        need(p in PIPELINES, "answer.pipelines", f"holds unknown pipeline {p!r} (A, B or C)")
    # unanswerable questions and the evidence gate
    at_least("synth.unanswerable.per_task", 1, optional=True)
    at_least("synth.unanswerable.check_k", 1)
    at_least("synth.unanswerable.max_rounds", 1)
    within("synth.unanswerable.answerable_grade", 1, 3)
    subjects = cfg.synth.unanswerable.subjects
    need(
        not subjects or cfg.path(subjects).is_file(),
        "synth.unanswerable.subjects",
        f"names {subjects!r}, which is not a file: a text file of subjects, one per line (null: the package's list)",
    )
    at_least("answer.max_unanswerable", 0, optional=True)
    g = cfg.answer.gate
    at_least("answer.gate.top_n", 1)
    at_least("answer.gate.sweep_steps", 2)
    for key in ("answer.gate.threshold", "answer.gate.strong_threshold"):
        within(key, 0, 1)
    for part in ("weights", "strong_weights"):
        w = getattr(g, part)
        for name in ("similarity", "keywords", "confirmation"):
            at_least(f"answer.gate.{part}.{name}", 0)
        need(w.similarity + w.keywords + w.confirmation > 0, f"answer.gate.{part}", "needs at least one weight above 0")
    for part in ("strong_patterns", "confirmation_patterns"):
        for i, pat in enumerate(getattr(g, part)):
            try:
                re.compile(pat)
            except re.error as e:
                need(False, f"answer.gate.{part}[{i}]", f"is not a valid regular expression ({e}): {pat!r}")
    from ..lib.llm.prompting import has_template

    for name in (cfg.grading.prompt, cfg.grading.prompt + "_swapped"):
        need(
            has_template(name),
            "grading.prompt",
            f"needs spacelm/prompts/{name}.txt (the prompt and its passage-first twin, <name>_swapped.txt)",
        )
    if cfg.grading.method == "calibrated":
        _check_calibration(cfg, need)
    _check_independence(cfg, need)
    from ..lib.judge.calibrated import PROMPT_FEATURES

    for f in cfg.grading.diagnostic_features:
        need(
            f in PROMPT_FEATURES,
            "grading.diagnostic_features",
            f"holds {f!r}; a diagnostic feature is a prompt feature of the judge: {', '.join(PROMPT_FEATURES)}",
        )
    jc = cfg.judge_check
    for key in (
        "judge_check.n_in_domain",
        "judge_check.n_controls",
        "judge_check.n_bootstrap",
        "judge_check.min_pairs",
        "judge_check.min_controls",
    ):
        at_least(key, 1)
    for key in ("judge_check.max_ci_width", "judge_check.valid_kappa"):
        within(key, 0, 1)
    for key in ("judge_check.valid_auc", "judge_check.fail_auc"):
        within(key, 0.5, 1)
    need(jc.fail_auc <= jc.valid_auc, "judge_check.fail_auc", "must be <= judge_check.valid_auc")
    within("judge_check.fail_pass_rate", 0, 1)
    within("judge_check.valid_pass_rate", 0, 1)
    need(
        jc.fail_pass_rate <= jc.valid_pass_rate, "judge_check.fail_pass_rate", "must be <= judge_check.valid_pass_rate"
    )
    names = [s.name for s in jc.sources]
    need(len(names) == len(set(names)), "judge_check.sources", f"names must be unique, got {names}")
    for i, src in enumerate(jc.sources):
        need(src.n_queries >= 1, f"judge_check.sources[{i}].n_queries", f"must be >= 1, got {src.n_queries!r}")
        need(
            bool(re.fullmatch(r"[A-Za-z0-9_.-]+", src.name)),
            f"judge_check.sources[{i}].name",
            "may hold only letters, digits, '.', '_' and '-' (it names output files)",
        )
    for role in MODEL_ROLES:
        _validate_llm(getattr(cfg.models, role), f"models.{role}", need)
    for key in ("retrieval.dense.model", "retrieval.reranker.model", "chunking.tokenizer"):
        if key == "retrieval.reranker.model" and cfg.retrieval.reranker.kind in ("llm", "none"):
            continue
        _check_model_spec(_get(cfg, key), key, cfg, need)
    for role in MODEL_ROLES:
        llm = getattr(cfg.models, role)
        if llm.backend != "openai":
            _check_model_spec(llm.model, f"models.{role}.model", cfg, need)
    for k, why in cfg.retrieval.reranker.train.problems():
        need(False, f"retrieval.reranker.train.{k}", why)
    _check_stemmer(cfg.retrieval.bm25.stemmer, need)
    _validate_corpus_and_chunk_study(cfg, need, at_least)
    _validate_plan(cfg, source)
    for rubric in ("faithfulness", "relevance"):
        key = f"findings.margins.{rubric}"
        need(_get(cfg, key) > 0, key, f"must be > 0 rubric points (the equivalence margin), got {_get(cfg, key)!r}")


def _check_stemmer(stemmer: str | None, need) -> None:
    """The BM25 stemmer must be one PyStemmer knows (else BM25 fails mid-run, after synth's calls)."""
    if not stemmer:
        return
    try:
        import Stemmer
    except ImportError:  # the retriever names the missing package when it runs
        return
    known = sorted(Stemmer.algorithms())
    need(
        stemmer in known,
        "retrieval.bm25.stemmer",
        f"is {stemmer!r}, which PyStemmer does not know; choose from {', '.join(known)} (or null for no stemming)",
    )


def blame_set(err: ConfigError, source: str, sets: list) -> ConfigError:
    """The same error, naming the `--set` argument that set the key it is about (the last one
    when several did), or unchanged when the key comes from the file. `sets`: (argument,
    dotted key) pairs."""
    msg = str(err)
    m = re.search(r"key '([^']+)'", msg)
    if not m or not msg.startswith(source + ": "):
        return err
    key = m.group(1)
    for text, set_key in reversed(sets):
        if key == set_key or key.startswith((set_key + ".", set_key + "[")) or set_key.startswith(key + "."):
            return ConfigError(f"--set {text}: {msg[len(source) + 2 :]}")
    return err


def check_stage_needs(cfg: Config, stages: list[str], source: str | None = None) -> None:
    """What the stages about to run need from the rest of the config (checked before any of them
    runs, so a missing retrieval system never costs the model calls of the stages before): grading
    reads each of grading.retrievers' lists before and after reranking, the answer pipelines B and
    C and the refusal evaluation read answer.retriever's."""
    try:
        _stage_needs(cfg, stages, source or cfg.source or "<config>")
    except ConfigError as e:
        raise blame_set(e, source or cfg.source or "<config>", cfg.sets) from None


def _stage_needs(cfg: Config, stages: list[str], source: str) -> None:
    have = set(cfg.retrieval.systems)
    if not cfg.synth.enabled and any(s in stages for s in ("retrieve", "train-reranker", "grade", "answer")):
        from ..lib.names import QUESTIONS

        questions = cfg.synthetic_dir / QUESTIONS  # where runner.data.questions_path finds them
        if not questions.is_file():
            raise ConfigError(
                f"{source}: key 'synth.enabled' is false, so the run reads the questions in paths.synthetic_dir, "
                f"but {questions} does not exist; run the config that writes them first, point "
                "paths.synthetic_dir at them, or set synth.enabled: true"
            )
    if "grade" in stages:
        from ..lib.names import reranked

        need = [s for r in cfg.grading.retrievers for s in (r, reranked(r))]
        missing = [s for s in need if s not in have]
        if missing:
            raise ConfigError(
                f"{source}: key 'retrieval.systems' lacks {', '.join(missing)}, which grading needs for "
                f"Table 1 (grading.retrievers {cfg.grading.retrievers}, before and after reranking); add "
                f"them to retrieval.systems or change grading.retrievers"
            )
    if (
        "answer" in stages
        and cfg.answer.retriever not in have
        and (any(p != "A" for p in cfg.answer.pipelines) or cfg.synth.unanswerable.enabled)
    ):
        raise ConfigError(
            f"{source}: key 'retrieval.systems' lacks {cfg.answer.retriever!r}, which answer.retriever "
            f"names (pipelines B and C and the refusal evaluation read its ranking); add it to "
            f"retrieval.systems or change answer.retriever"
        )


def _validate_plan(cfg: Config, source: str) -> None:
    """The analysis plan names known findings once, with one primary, and the run can reach the
    primary's questions (each synth chunk gives at most one question; Table 1 takes at most
    grading.max_questions)."""
    from ..lib.report.plan import plan_problems, primary

    entries = cfg.analysis_plan.entries()
    problems = plan_problems(entries)
    if problems:
        raise ConfigError(f"{source}: {problems[0]}")
    main = primary(entries)
    # a primary the plan itself marks underpowered is tested below its n by design, and says so
    if main is None or not main.n_needed or main.underpowered:
        return
    for key in ("grading.max_questions", "synth.max_chunks"):
        v = _get(cfg, key)
        if v is not None and v < main.n_needed:
            raise ConfigError(
                f"{source}: key '{key}' is {v}, but the analysis plan's primary finding {main.id!r} needs "
                f"{main.n_needed} questions (analysis_plan.findings n_needed): raise it, or move the finding to a "
                "run that can reach its n rather than testing it below its n"
            )


def _validate_corpus_and_chunk_study(cfg: Config, need, at_least) -> None:
    """A named corpus list must exist; the chunk study's sizes must be readable by its dense model."""
    if cfg.corpus.file_list:
        from ..lib.ingest.corpus_list import available_lists, list_path

        need(
            list_path(str(cfg.corpus.file_list)).is_file(),
            "corpus.file_list",
            f"names {cfg.corpus.file_list!r}, which is neither a shipped corpus list ({', '.join(available_lists())}) "
            "nor a .tsv file; or remove it to ingest the folder unchecked",
        )
    at_least("corpus.sized_for_chunks", 1, optional=True)
    at_least("retrieval.pool_max", 1, optional=True)
    cs = cfg.chunk_study
    if not cs.sizes:
        return
    for size in cs.sizes:
        need(isinstance(size, int) and size >= 16, "chunk_study.sizes", f"must hold token counts >= 16, got {size!r}")
    need(len(set(cs.sizes)) == len(cs.sizes), "chunk_study.sizes", f"holds a size twice: {cs.sizes}")
    for s in cs.systems:
        need(s in SYSTEMS, "chunk_study.systems", f"holds unknown system {s!r} (choose from {sorted(SYSTEMS)})")
    need(0 < cs.min_share <= 1, "chunk_study.min_share", f"must be in (0, 1], got {cs.min_share!r}")
    need(cs.grade_questions >= 0, "chunk_study.grade_questions", "must be >= 0 (0: retrieval only)")
    _validate_budgets(cs, need)
    if cs.grade_questions:
        from ..lib.names import reranked

        need(
            any(r in cs.systems and reranked(r) in cs.systems for r in cfg.grading.retrievers),
            "chunk_study.systems",
            f"must hold a retriever of grading.retrievers {cfg.grading.retrievers} and its "
            "reranked system to grade Table 1 at each size (or set chunk_study.grade_questions: 0)",
        )
    dense = cs.dense_model or cfg.retrieval.dense.model
    from ..lib.llm.models import encoder_window

    window = encoder_window(dense)
    from ..lib.names import reads_dense as _reads_dense

    reads_dense = _reads_dense(cs.systems)
    need(
        not reads_dense or window is None or max(cs.sizes) <= window,
        "chunk_study.dense_model",
        f"is {dense!r}, which reads at most {window} word pieces: chunks of {max(cs.sizes)} tokens would be cut. "
        "Use embedded:nomic-embed-text-v1.5 (2,048) or drop the larger sizes",
    )
    for key in ("chunk_study.dense_model", "chunk_study.tokenizer"):
        _check_model_spec(_get(cfg, key), key, cfg, need)


def _validate_budgets(cs, need) -> None:
    """The reader budgets are positive whole token counts; the minimum of graded questions too."""
    whole = lambda b: isinstance(b, int) and not isinstance(b, bool) and b > 0
    ok = isinstance(cs.budgets, list) and bool(cs.budgets) and all(whole(b) for b in cs.budgets)
    need(ok, "chunk_study.budgets", f"must be a list of positive token counts such as [512, 2048], got {cs.budgets!r}")
    m = cs.min_grade_questions
    need(
        m is None or (isinstance(m, int) and m >= 1),
        "chunk_study.min_grade_questions",
        f"must be a positive number of questions, or null for no minimum, got {m!r}",
    )


def _validate_llm(llm: LLMConfig, key: str, need) -> None:
    for name, lo in (
        ("n_ctx", 64),
        ("max_tokens", 1),
        ("max_concurrency", 1),
        ("max_retries", 0),
        ("tensor_parallel_size", 1),
        ("pipeline_parallel_size", 1),
        ("breaker_failures", 1),
        ("submit_batch", 1),
    ):
        v = getattr(llm, name)
        need(v >= lo, f"{key}.{name}", f"must be >= {lo}, got {v!r}")
    need(llm.n_threads is None or llm.n_threads >= 1, f"{key}.n_threads", "must be >= 1 (or null for every core)")
    need(llm.temperature >= 0, f"{key}.temperature", f"must be >= 0, got {llm.temperature!r}")
    need(0 < llm.top_p <= 1, f"{key}.top_p", f"must be in (0, 1], got {llm.top_p!r}")
    need(llm.timeout_s > 0, f"{key}.timeout_s", f"must be > 0 seconds, got {llm.timeout_s!r}")
    need(
        0 < llm.gpu_memory_utilization <= 1,
        f"{key}.gpu_memory_utilization",
        f"must be a share in (0, 1], got {llm.gpu_memory_utilization!r}",
    )
    need(llm.max_tokens < llm.n_ctx, f"{key}.max_tokens", f"must be below {key}.n_ctx ({llm.n_ctx})")
    need(
        llm.backend != "openai" or bool(llm.base_url),
        f"{key}.base_url",
        "is required by the openai backend (e.g. http://127.0.0.1:8000/v1)",
    )
    need(
        llm.kv_cache_bytes is None or llm.kv_cache_bytes >= 1 << 20,
        f"{key}.kv_cache_bytes",
        f"is a size in bytes (e.g. 2147483648 for 2 GiB; null for the default), got {llm.kv_cache_bytes!r}",
    )
    need(
        llm.server_start_timeout_s > 0,
        f"{key}.server_start_timeout_s",
        f"must be > 0 seconds, got {llm.server_start_timeout_s!r}",
    )
    need(
        llm.cpu_threads_bind is None or bool(re.fullmatch(r"auto|nobind|[0-9,\-|]+", llm.cpu_threads_bind)),
        f"{key}.cpu_threads_bind",
        f"must be 'auto', 'nobind' or a core list such as '0-31', got {llm.cpu_threads_bind!r}",
    )
    for i, arg in enumerate(llm.server_args):
        need(
            arg.split("=")[0] not in _MANAGED_SERVER_FLAGS,
            f"{key}.server_args[{i}]",
            f"sets {arg.split('=')[0]}, which spacelm sets itself (the server listens on 127.0.0.1 at a free port); "
            f"remove it",
        )
    if llm.backend == "vllm-server" and llm.server_python:
        exe = Path(llm.server_python).expanduser()
        need(
            exe.is_file(),
            f"{key}.server_python",
            f"points to {llm.server_python!r}, which is not a file; give the Python of an environment that has "
            f"vLLM (e.g. ~/.cache/spacelm/vllm-venv/bin/python) or null to use this one",
        )


_MANAGED_SERVER_FLAGS = ("--host", "--port", "--served-model-name", "--uds")


def _looks_like_path(spec: str) -> bool:
    """A local path, as opposed to a hub name ("org/name", optionally "org/name:file-glob")."""
    return (
        spec.startswith(("/", "./", "../", "~"))
        or spec.count("/") > 1
        or Path(spec).suffix.lower() in (".gguf", ".json", ".safetensors", ".bin")
    )


def _check_model_spec(spec: str | None, key: str, cfg: Config, need) -> None:
    """An `embedded:` name must be known; a path must exist (checked before any model loads)."""
    if not spec:
        return
    from ..lib.llm.models import is_trained

    if is_trained(spec):  # trained by the suite (spacelm train-reranker): a cross-encoder reranker only
        from ..lib.llm.models import ModelNotFound, trained_name

        try:
            trained_name(spec)
        except ModelNotFound as e:
            need(False, key, str(e))
        need(
            key == "retrieval.reranker.model" and cfg.retrieval.reranker.kind == "cross-encoder",
            key,
            f"is {spec!r}, a model the suite trains, which only a cross-encoder reranker reads "
            "(retrieval.reranker.kind: cross-encoder)",
        )
        return
    if spec.startswith("embedded:"):
        from ..lib.llm.models import EMBEDDED

        name = spec.split(":", 1)[1]
        need(
            name in EMBEDDED,
            key,
            f"names unknown embedded model {name!r}; known: {', '.join(EMBEDDED)} (`spacelm models list`)",
        )
        return
    if _looks_like_path(spec):
        p = Path(spec).expanduser()
        if not p.is_absolute() and cfg.root:
            p = Path(cfg.root) / p
        need(
            p.exists(),
            key,
            f"points to {spec!r}, which does not exist ({p}); give an existing file or folder, "
            f"or an embedded model such as 'embedded:qwen2.5-coder-1.5b'",
        )
        return
    repo = spec.split(":", 1)[0]
    need(
        bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", repo)),
        key,
        f"is {spec!r}: neither an embedded model, a path, nor a hub name such as 'org/name'",
    )
    if hub_offline() and not hub_cached(repo):
        need(
            False,
            key,
            f"names hub model {repo!r}, which is not in the local hub cache, and the hub is offline "
            f"(HF_HUB_OFFLINE); download it first, give a local path, or use an embedded model "
            f"(`spacelm models list`)",
        )


def hub_offline() -> bool:
    """Whether the Hugging Face libraries are told not to use the network."""
    import os

    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_cached(repo: str) -> bool:
    """Whether a hub model has a local copy in the hub cache (a bare name also as
    sentence-transformers/<name>, as that library resolves it); no network."""
    import os

    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub"
    )
    names = [repo] if "/" in repo else [repo, f"sentence-transformers/{repo}"]
    return any((Path(cache) / ("models--" + n.replace("/", "--")) / "snapshots").is_dir() for n in names)


def _check_calibration(cfg, need) -> None:
    """A calibrated judge needs its calibration file, the model it was fitted for, and one order."""
    from ..lib.judge.calibrated import load_calibration

    g = cfg.grading
    try:
        cal = load_calibration(str(cfg.path(g.calibration)) if g.calibration.endswith(".json") else g.calibration)
    except (FileNotFoundError, TypeError, ValueError) as e:
        need(
            False,
            "grading.calibration",
            f"{e}; use a name from spacelm/data/judges/ or a JSON file written by bench/judge_formulations.py",
        )
        return
    need(
        cal.judge_model == cfg.models.judge.model,
        "grading.method",
        f"calibration {cal.name!r} was fitted on the signals of {cal.judge_model}, not models.judge.model="
        f"{cfg.models.judge.model!r}; set grading.method: prompt for this judge, or fit a calibration for it "
        "with bench/judge_formulations.py",
    )
    need(
        g.debias == "none",
        "grading.debias",
        "both_orders applies to the prompt method's digit; a calibrated "
        "judge uses one order (set grading.debias: none)",
    )


def graded_systems(cfg) -> list[str]:
    """The systems whose lists the relevance grader grades: Table 1's retrievers before and after
    reranking, as far as the run builds them."""
    from ..lib.names import reranked

    return [s for r in cfg.grading.retrievers for s in (r, reranked(r)) if s in cfg.retrieval.systems]


def shared_with_grader(cfg) -> dict:
    """{system: the features (and models) the relevance grader shares with it}; {} when independent."""
    import copy

    from ..lib.instruments import grader_instrument, shared_scorers, system_scorers

    try:
        inst = grader_instrument(cfg.grading, cfg.models.judge.model, cfg.root)
    except (FileNotFoundError, TypeError, ValueError):
        return {}  # _check_calibration names the problem
    shared = shared_scorers(inst, system_scorers(graded_systems(cfg), cfg.retrieval, cfg.models.judge.model))
    cs = cfg.chunk_study
    if cs.sizes and cs.grade_questions:  # Table 1 at every size grades the study's systems, its own dense model
        rc = copy.deepcopy(cfg.retrieval)
        rc.dense.model = cs.dense_model or rc.dense.model
        study = [s for s in cs.systems if s.split("+")[0] in cfg.grading.retrievers]
        for s, v in shared_scorers(inst, system_scorers(study, rc, cfg.models.judge.model)).items():
            shared.setdefault(s, v)
    return shared


def _check_independence(cfg, need) -> None:
    """The relevance grader may not read the score of a system it grades (unless the config
    declares the exception: grading.allow_shared_scorer)."""
    shared = shared_with_grader(cfg)
    if not shared or cfg.grading.allow_shared_scorer:
        return
    what = "; ".join(f"{s} ranks by {', '.join(v)}" for s, v in shared.items())
    need(
        False,
        "grading.calibration" if cfg.grading.method == "calibrated" else "models.judge.model",
        f"the relevance grader ({cfg.grading.method}"
        + (f" {cfg.grading.calibration}" if cfg.grading.method == "calibrated" else f" {cfg.models.judge.model}")
        + f") reads the scorer of systems it grades: {what}. A judge that contains a system's scorer grades that "
        "system's opinion of itself. Use a grader that reads none of them (grading.calibration: "
        "qwen2.5-coder-1.5b-llm-only reads only the judge model), or another dense/reranker model; to "
        "reproduce an old run set grading.allow_shared_scorer: true, and every finding comparing those "
        "systems reads no evidence",
    )
