"""spacelm: a benchmark suite for retrieval-augmented generation over space-operations documents.

Three layers, each importing only the ones below it:
- `spacelm.config` and `spacelm.lib`: the configuration, and functions of data (documents,
  chunking, retrieval, metrics, statistics, model backends, judging) that know nothing of a
  run folder;
- `spacelm.stages`: one module per pipeline stage, each reading and writing the run folder
  through one declaration of its inputs and outputs;
- `spacelm.pipeline`, `spacelm.cli`, `spacelm.notebooks`: running the stages in order, the
  command line, and the notebooks' helpers.
"""

from .config import Config, ConfigError, load_config
from .lib.io import InputError

__version__ = "0.1.0"

__all__ = ["Config", "ConfigError", "InputError", "load_config", "__version__"]
