"""Language models: one interface, three backends (one module each), and the cached front end.

- `llamacpp.py`: in-process llama-cpp-python, the embedded CPU default;
- `openai.py`: any OpenAI-compatible server;
- `vllm.py`: offline vLLM;
- `frontend.py`: :class:`LLM`, a backend plus the persistent call cache.
"""
from .frontend import LLM, CallStats, open_llm
from .types import BackendError, BackendUnavailable, Completion, Request

__all__ = ["LLM", "BackendError", "BackendUnavailable", "CallStats", "Completion", "Request", "open_llm"]
