"""The settings of one language model endpoint (backend, model, sampling defaults, engine and
server options): what :func:`~spacelm.lib.llm.open_llm` and every backend read. The run's config
holds three of them (`models.generator`, `models.judge`, `models.question_writer`) and re-exports
the class; it is defined here so the library never imports the config."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Literal


@dataclass
class LLMConfig:
    """One language model endpoint (generator or judge)."""

    # llamacpp: in process on the CPU; vllm: vLLM in process; vllm-server: a `vllm serve` started for
    # each model phase on 127.0.0.1 and stopped after it; openai: any OpenAI-compatible server
    backend: Literal["llamacpp", "vllm", "vllm-server", "openai"] = "llamacpp"
    model: str = "embedded:qwen2.5-coder-1.5b"
    n_ctx: int = 4096
    n_threads: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0
    # openai backend
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 4
    timeout_s: float = 120.0
    max_retries: int = 4
    # give up after this many consecutive failures to reach the server (not per request)
    breaker_failures: int = 3
    # vllm and vllm-server backends (an `embedded:` GGUF model is exported once to a safetensors folder)
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    # "ray" to spread tensor/pipeline parallel workers over the nodes of a running Ray cluster
    distributed_executor_backend: Literal["mp", "ray", "uni", "external_launcher"] | None = None
    gpu_memory_utilization: float = 0.9  # on a GPU: the share of its memory for weights + KV cache
    # KV-cache size in bytes; null: on a GPU what gpu_memory_utilization leaves, on a CPU 2 GiB
    # (there gpu_memory_utilization is a share of the machine's RAM)
    kv_cache_bytes: int | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    # skip torch.compile / CUDA graphs; null: on a CPU yes (compiling costs minutes there), on a GPU no
    enforce_eager: bool | None = None
    # vLLM's CPU thread binding (VLLM_CPU_OMP_THREADS_BIND: "auto", "nobind" or cores like "0-31")
    cpu_threads_bind: str | None = None
    max_model_len: int | None = None
    quantization: str | None = None
    enable_prefix_caching: bool = True
    # requests handed to the engine at once; finished batches are cached before the next starts
    submit_batch: int = 256
    # vllm-server backend: the Python of the environment that has vLLM (null: this one; e.g.
    # ~/.cache/spacelm/vllm-venv/bin/python), how long to wait for the server's /health, and extra
    # `vllm serve` flags passed as they are
    server_python: str | None = None
    server_start_timeout_s: float = 900.0
    server_args: list[str] = field(default_factory=list)

    # per-request defaults: two roles that differ only in these can share one loaded engine
    SAMPLING = ("temperature", "top_p", "max_tokens", "seed")

    def engine_key(self) -> str:
        """What makes a loaded engine: every setting except the per-request sampling defaults."""
        d = {k: v for k, v in dataclasses.asdict(self).items() if k not in self.SAMPLING}
        return json.dumps(d, sort_keys=True)
