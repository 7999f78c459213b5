"""Language models: one interface, four backends (one module each), and the cached front end.

- `llamacpp.py`: in-process llama-cpp-python, the embedded CPU default;
- `openai.py`: any OpenAI-compatible server;
- `vllm.py`: offline vLLM in process;
- `vllm_server.py`: a `vllm serve` started for one model phase, spoken to over `openai.py`;
- `frontend.py`: :class:`LLM`, a backend plus the persistent call cache;
- `settings.py`: :class:`LLMConfig`, one endpoint's settings (the config's `models.*` sections).
"""

from .frontend import LLM, CallStats, model_logs, open_llm
from .settings import LLMConfig
from .types import BackendError, BackendUnavailable, Completion, Request

__all__ = [
    "LLM",
    "BackendError",
    "BackendUnavailable",
    "CallStats",
    "Completion",
    "LLMConfig",
    "Request",
    "model_logs",
    "open_llm",
]
