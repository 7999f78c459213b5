"""One typed configuration object for a whole run, loaded from YAML.

Every stage receives the same :class:`Config`; nothing reads global state. Loading is
strict: an unknown key or a value of the wrong type is a :class:`ConfigError` that names
the file and the dotted key, so a typo never silently falls back to a default.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union


class ConfigError(ValueError):
    """A configuration file is missing, malformed, or holds an unknown key / wrong type."""


# --------------------------------------------------------------------------- sections
@dataclass
class CorpusConfig:
    raw_dir: str = "data/raw"
    golden_samples: str = "data/raw/golden_samples.jsonl"
    extensions: list[str] = field(default_factory=lambda: [".pdf", ".md", ".txt"])
    exclude: list[str] = field(default_factory=lambda: ["README.md"])


@dataclass
class PathsConfig:
    processed_dir: str = "data/processed"
    synthetic_dir: str = "data/synthetic"
    results_dir: str = "results"
    cache_dir: str = ".cache/spacelm"


@dataclass
class IngestConfig:
    reference_filter: bool = True
    garbled_threshold: float = 0.02
    min_doc_chars: int = 200


@dataclass
class ChunkingConfig:
    max_tokens: int = 256
    overlap: float = 0.0
    tokenizer: str = "embedded:minilm"


@dataclass
class BM25Config:
    method: str = "lucene"
    k1: float = 1.2
    b: float = 0.75
    stemmer: Optional[str] = "english"
    stopwords: Optional[str] = "en"


@dataclass
class DenseConfig:
    model: str = "embedded:minilm"
    batch_size: int = 32
    query_prefix: str = ""
    passage_prefix: str = ""
    max_seq_length: Optional[int] = None


@dataclass
class HybridConfig:
    rrf_k: int = 60
    depth: int = 100


@dataclass
class RerankerConfig:
    kind: Literal["biencoder", "cross-encoder", "llm", "none"] = "biencoder"
    model: str = "embedded:mpnet"
    batch_size: int = 16
    query_prefix: str = ""
    passage_prefix: str = ""


@dataclass
class RetrievalConfig:
    systems: list[str] = field(default_factory=lambda: ["bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid"])
    k_values: list[int] = field(default_factory=lambda: [3, 5, 7, 10])
    pool: int = 100
    near_page_window: int = 1
    bm25: BM25Config = field(default_factory=BM25Config)
    dense: DenseConfig = field(default_factory=DenseConfig)
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    reranker: RerankerConfig = field(default_factory=RerankerConfig)


@dataclass
class LLMConfig:
    """One language model endpoint (generator or judge)."""

    backend: Literal["llamacpp", "vllm", "openai"] = "llamacpp"
    model: str = "embedded:qwen2.5-coder-1.5b"
    n_ctx: int = 4096
    n_threads: Optional[int] = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0
    # openai backend
    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 4
    timeout_s: float = 120.0
    max_retries: int = 4
    # vllm backend
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    distributed_executor_backend: Optional[str] = None
    gpu_memory_utilization: float = 0.9
    max_model_len: Optional[int] = None
    quantization: Optional[str] = None
    enable_prefix_caching: bool = True


@dataclass
class ModelsConfig:
    generator: LLMConfig = field(default_factory=LLMConfig)
    judge: LLMConfig = field(default_factory=LLMConfig)
    question_writer: LLMConfig = field(default_factory=LLMConfig)


@dataclass
class SynthConfig:
    tasks: list[str] = field(
        default_factory=lambda: ["direct_qa", "abstract_qa", "fact_checking", "summarization", "analysis"]
    )
    n_fewshot: int = 5
    fewshot_sampling: Literal["per_chunk", "per_task_fixed"] = "per_task_fixed"
    max_chunks: Optional[int] = None
    with_reference_answer: bool = False
    min_question_words: int = 4
    filter_top_n: int = 50
    filter_retriever: Literal["bm25", "dense", "union"] = "union"


@dataclass
class GradingConfig:
    max_questions: Optional[int] = None
    retrievers: list[str] = field(default_factory=lambda: ["bm25", "dense"])
    top_k: list[int] = field(default_factory=lambda: [3, 5, 7, 10])
    n_bootstrap: int = 1000
    consistency_check: bool = True  # re-grade the validity pairs with the passage before the question
    auc_warning: float = 0.75  # judge-validity AUC below this is flagged in the report


@dataclass
class AnswerConfig:
    max_questions: Optional[int] = None
    # settings with the relevant passage plus N wrong ones ("standard" is N = 0) ...
    n_wrong_values: list[int] = field(default_factory=lambda: [0, 3])
    # ... and the negative setting: N wrong passages and no relevant one (0 to skip it)
    negative_n_wrong: int = 5
    wrong_sampling: Literal["random", "hard"] = "random"
    pipelines: list[str] = field(default_factory=lambda: ["A", "B", "C"])
    retriever: str = "bm25"  # the system whose ranking feeds pipelines B and C
    retrieve_k: int = 3
    binary_judges: bool = True
    n_bootstrap: int = 1000


@dataclass
class Config:
    run_name: str = "quick"
    seed: int = 13
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    synth: SynthConfig = field(default_factory=SynthConfig)
    grading: GradingConfig = field(default_factory=GradingConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    # where the YAML came from; relative paths in the config resolve against `root`
    source: Optional[str] = field(default=None, metadata={"internal": True})
    root: Optional[str] = field(default=None, metadata={"internal": True})

    # ------------------------------------------------------------------ helpers
    def path(self, p: str) -> Path:
        """Resolve a path from the config against the project root."""
        q = Path(p)
        return q if q.is_absolute() or self.root is None else Path(self.root) / q

    @property
    def processed_dir(self) -> Path:
        return self.path(self.paths.processed_dir)

    @property
    def synthetic_dir(self) -> Path:
        return self.path(self.paths.synthetic_dir)

    @property
    def run_dir(self) -> Path:
        return self.path(self.paths.results_dir) / self.run_name

    @property
    def cache_dir(self) -> Path:
        return self.path(self.paths.cache_dir)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("source", None)
        d.pop("root", None)
        return d

    def section_hash(self, *names: str) -> str:
        """A short, stable hash of the named config sections (used to decide if a stage is stale)."""
        d = self.to_dict()
        payload = {n: _dig(d, n) for n in names}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _dig(d: dict, dotted: str) -> Any:
    for part in dotted.split("."):
        d = d[part]
    return d


# --------------------------------------------------------------------------- loading
def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(value: Any, tp: Any, key: str, source: str) -> Any:
    """Check `value` against the annotation `tp`; build nested dataclasses."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, key, source)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{source}: key '{key}' may not be null")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{source}: key '{key}' must be one of {list(args)}, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: key '{key}' must be a list, got {type(value).__name__} ({value!r})")
        return [_coerce(v, args[0], f"{key}[{i}]", source) for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: key '{key}' must be a mapping, got {type(value).__name__}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: key '{key}' must be a mapping of settings, got {type(value).__name__}")
        return _build(tp, value, key, source)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: key '{key}' must be a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: key '{key}' must be an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: key '{key}' must be true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: key '{key}' must be a string, got {value!r}")
        return value
    raise ConfigError(f"{source}: key '{key}' has unsupported type {_type_name(tp)}")


def _build(cls: type, data: dict, prefix: str, source: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    kwargs = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{source}: unknown key '{key}' (known keys here: {known})")
        kwargs[k] = _coerce(v, hints[k], key, source)
    return cls(**kwargs)


def from_dict(data: dict, source: str = "<dict>", root: Optional[str] = None) -> Config:
    """Build a validated :class:`Config` from a plain mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    cfg = _build(Config, data, "", source)
    _validate(cfg, source)
    cfg.source = source
    cfg.root = root
    return cfg


def _validate(cfg: Config, source: str) -> None:
    """Checks that types alone cannot express."""
    def need(cond: bool, key: str, msg: str) -> None:
        if not cond:
            raise ConfigError(f"{source}: key '{key}' {msg}")

    need(cfg.chunking.max_tokens > 0, "chunking.max_tokens", "must be > 0")
    need(0 <= cfg.chunking.overlap < 1 or cfg.chunking.overlap >= 1 and cfg.chunking.overlap < cfg.chunking.max_tokens,
         "chunking.overlap", "must be a ratio in [0, 1) or a token count below max_tokens")
    need(cfg.retrieval.pool >= max(cfg.retrieval.k_values, default=1), "retrieval.pool", "must be >= every k in retrieval.k_values")
    need(all(k > 0 for k in cfg.retrieval.k_values), "retrieval.k_values", "must hold positive integers")
    allowed = {"bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid", "hybrid+rerank"}
    for s in cfg.retrieval.systems:
        need(s in allowed, "retrieval.systems", f"holds unknown system {s!r} (choose from {sorted(allowed)})")
    tasks = {"direct_qa", "abstract_qa", "fact_checking", "summarization", "analysis"}
    for t in cfg.synth.tasks:
        need(t in tasks, "synth.tasks", f"holds unknown task {t!r} (choose from {sorted(tasks)})")
    need(cfg.synth.n_fewshot >= 0, "synth.n_fewshot", "must be >= 0")
    need(0 <= cfg.ingest.garbled_threshold <= 1, "ingest.garbled_threshold", "must be in [0, 1]")
    for n in cfg.answer.n_wrong_values:
        need(0 <= n <= 20, "answer.n_wrong_values", "must hold integers in 0..20")
    need(0 <= cfg.answer.negative_n_wrong <= 20, "answer.negative_n_wrong", "must be in 0..20")
    for p in cfg.answer.pipelines:
        need(p in ("A", "B", "C"), "answer.pipelines", f"holds unknown pipeline {p!r} (A, B or C)")


def load_config(path: Union[str, Path], overrides: Optional[dict] = None) -> Config:
    """Load a YAML config file. Relative paths inside it resolve against the project root
    (the parent of the `configs/` folder holding the file, else the file's own folder)."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: config file not found")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if overrides:
        data = _merge(data, overrides)
    root = p.resolve().parent
    if root.name == "configs":
        root = root.parent
    return from_dict(data, source=str(p), root=str(root))


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def parse_override(text: str) -> dict:
    """Turn `retrieval.pool=50` into `{"retrieval": {"pool": 50}}` (value parsed as YAML)."""
    import yaml

    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    key, raw = text.split("=", 1)
    value = yaml.safe_load(raw)
    out: dict = {}
    cur = out
    parts = key.strip().split(".")
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value
    return out
