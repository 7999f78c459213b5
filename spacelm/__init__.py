"""spacelm: a benchmark suite for retrieval-augmented generation over space-operations documents.

The user-facing verbs are re-exported here; each pipeline stage lives in its own module
(`ingest`, `chunk`, ...), and every stage takes the one :class:`Config` loaded from YAML.
"""
from .config import Config, ConfigError, load_config
from .io import InputError

__version__ = "0.1.0"

__all__ = ["Config", "ConfigError", "InputError", "load_config", "__version__"]
