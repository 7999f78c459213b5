"""Configuration: the schema (`schema.py`), loading from YAML (`load.py`) and value checks
(`validate.py`). Everything a run does is decided by one :class:`Config`."""

from .load import from_dict, load_config, merge, parse_override
from .schema import (
    AnswerConfig,
    BM25Config,
    CheckSource,
    ChunkingConfig,
    Config,
    ConfigError,
    CorpusConfig,
    DenseConfig,
    GradingConfig,
    HybridConfig,
    IngestConfig,
    JudgeCheckConfig,
    LLMConfig,
    ModelsConfig,
    PathsConfig,
    RerankerConfig,
    RetrievalConfig,
    SynthConfig,
)

__all__ = [
    "AnswerConfig",
    "BM25Config",
    "CheckSource",
    "ChunkingConfig",
    "Config",
    "ConfigError",
    "CorpusConfig",
    "DenseConfig",
    "GradingConfig",
    "HybridConfig",
    "IngestConfig",
    "JudgeCheckConfig",
    "LLMConfig",
    "ModelsConfig",
    "PathsConfig",
    "RerankerConfig",
    "RetrievalConfig",
    "SynthConfig",
    "from_dict",
    "load_config",
    "merge",
    "parse_override",
]
