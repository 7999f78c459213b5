"""vLLM without vLLM: the engine's arguments from the config (CPU and GPU defaults), embedded
GGUF models exported once to a folder, the engine shut down on release, and the managed
server's command line, start, health wait, bounded concurrency, log and stop, the server being
a small stand-in HTTP server started the same way as `vllm serve`. The real engine and server
run in tests/vllm_tier/ (marked `vllm`)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import textwrap
import time
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from spacelm.config import LLMConfig, from_dict
from spacelm.config.schema import ConfigError
from spacelm.lib.llm import LLM, BackendUnavailable, Request, hf_export, model_logs, models, open_llm
from spacelm.lib.llm import vllm_server as S
from spacelm.lib.llm.vllm import CPU_KV_CACHE_BYTES, VLLMBackend


# --------------------------------------------------------------------------- engine arguments
def test_engine_defaults_suit_a_cpu_and_a_gpu():
    cfg = LLMConfig(backend="vllm", model="m")
    cpu = VLLMBackend.engine_kwargs(cfg, "/models/m", cpu=True)
    assert cpu["model"] == "/models/m" and cpu["enforce_eager"] is True and cpu["dtype"] == "auto"
    assert cpu["kv_cache_memory_bytes"] == CPU_KV_CACHE_BYTES == 2 << 30
    gpu = VLLMBackend.engine_kwargs(cfg, "/models/m", cpu=False)
    assert gpu["enforce_eager"] is False and "kv_cache_memory_bytes" not in gpu
    assert gpu["gpu_memory_utilization"] == 0.9 and gpu["seed"] == 0 and gpu["enable_prefix_caching"]


def test_engine_settings_from_the_config_win_over_the_defaults():
    cfg = LLMConfig(
        backend="vllm",
        model="m",
        dtype="float32",
        enforce_eager=False,
        kv_cache_bytes=512 << 20,
        max_model_len=2048,
        tensor_parallel_size=2,
        pipeline_parallel_size=2,
        distributed_executor_backend="ray",
    )
    kw = VLLMBackend.engine_kwargs(cfg, "m", cpu=True)
    assert kw["dtype"] == "float32" and kw["enforce_eager"] is False and kw["kv_cache_memory_bytes"] == 512 << 20
    assert kw["max_model_len"] == 2048 and kw["tensor_parallel_size"] == 2 and kw["pipeline_parallel_size"] == 2
    assert kw["distributed_executor_backend"] == "ray"
    assert VLLMBackend.engine_kwargs(cfg, "m", cpu=False)["kv_cache_memory_bytes"] == 512 << 20


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("kv_cache_bytes", 100, "models.judge.kv_cache_bytes' is a size in bytes"),
        ("dtype", "fp4", "models.judge.dtype' must be one of"),
        ("distributed_executor_backend", "slurm", "models.judge.distributed_executor_backend' must be one of"),
        ("cpu_threads_bind", "all of them", "models.judge.cpu_threads_bind' must be 'auto'"),
        ("server_args", ["--port", "9000"], r"models.judge.server_args\[0\]' sets --port"),
        ("server_python", "/no/such/python", "models.judge.server_python' points to '/no/such/python'"),
        ("server_start_timeout_s", 0, "models.judge.server_start_timeout_s' must be > 0"),
    ],
)
def test_bad_vllm_settings_name_the_key(key, value, match):
    judge = {"backend": "vllm-server", "model": "org/model", key: value}
    with pytest.raises(ConfigError, match=match):
        from_dict({"models": {"judge": judge}}, source="<test>")


class _Shutdowns:
    def __init__(self):
        self.n = 0

    def shutdown(self):
        self.n += 1


def test_release_shuts_the_engine_down_through_the_client_vllm_has():
    """vLLM 0.32 has no LLM.shutdown(): the engine-core client's shutdown ends the child process."""
    core = _Shutdowns()
    old_style = SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))
    llm = LLM(LLMConfig(backend="vllm", model="m"), backend=VLLMBackend(LLMConfig(backend="vllm"), engine=old_style))
    llm.release()
    assert core.n == 1 and llm._backend is None
    newer = _Shutdowns()  # a vLLM with LLM.shutdown() is shut down through it, once
    newer.llm_engine = SimpleNamespace(engine_core=core)
    VLLMBackend(LLMConfig(backend="vllm"), engine=newer).close()
    assert newer.n == 1 and core.n == 1


def test_the_engine_gets_the_config_and_the_thread_binding(monkeypatch, tmp_path):
    seen = {}

    class Engine:
        def __init__(self, **kw):
            seen.update(kw, bind=os.environ.get("VLLM_CPU_OMP_THREADS_BIND"))

    vllm = types.ModuleType("vllm")
    vllm.LLM = Engine
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = SimpleNamespace(is_cpu=lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    for k in ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_LOGGING_STREAM", "VLLM_LOGGING_LEVEL"):
        monkeypatch.delenv(k, raising=False)
    folder = tmp_path / "hf-model"
    folder.mkdir()
    VLLMBackend(LLMConfig(backend="vllm", model=str(folder), cpu_threads_bind="0-1"))
    assert seen["model"] == str(folder) and seen["enforce_eager"] and seen["bind"] == "0-1"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in os.environ  # set for the engine's start only
    # vLLM's own log goes to stderr, so `spacelm grade` still prints only its JSON summary on stdout
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stderr"


# --------------------------------------------------------------------------- export to a folder
@pytest.fixture
def gguf_model(tmp_path, monkeypatch):
    """A stand-in GGUF 'model' registered as the only embedded model, and a stand-in converter
    that writes the folder's files (the real conversion runs in the vllm tier)."""
    data = b"GGUF" + bytes(range(256))
    m = models.EmbeddedModel(
        name="tiny",
        kind="gguf",
        upstream="test/tiny",
        packages=("p",),
        part_glob="part",
        licence="test",
        sha256=hashlib.sha256(data).hexdigest(),
        weights_file="tiny-q4.gguf",
        layout="split-file",
    )
    part = tmp_path / "part"
    part.write_bytes(data)
    monkeypatch.setattr(models, "EMBEDDED", {"tiny": m})
    monkeypatch.setattr(hf_export, "EMBEDDED", {"tiny": m})
    monkeypatch.setattr(models, "_part_files", lambda em: [part])
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    calls = []

    def convert(gguf, dest, dtype):
        calls.append((gguf.name, dtype))
        (dest / "config.json").write_text("{}")
        (dest / hf_export.WEIGHTS).write_bytes(gguf.read_bytes()[::-1])

    monkeypatch.setattr(hf_export, "convert_gguf", convert)
    return m, calls


def test_export_writes_the_folder_once_and_records_the_gguf_hash(gguf_model, capsys):
    from spacelm.cli import main

    m, calls = gguf_model
    assert main(["models", "export-hf", "tiny"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder.name == "tiny-q4-hf" and folder.parent == models.models_dir()
    assert (folder / hf_export.WEIGHTS).is_file() and not folder.with_name("tiny-q4-hf.partial").exists()
    record = json.loads((folder.parent / "tiny-q4-hf.json").read_text())  # beside the folder
    assert record["gguf_sha256"] == m.sha256 and record["dtype"] == "bfloat16" and len(calls) == 1
    assert main(["models", "export-hf", "tiny"]) == 0  # done: a no-op that prints the same folder
    out = capsys.readouterr()
    assert out.out.strip() == str(folder) and "already exported" in out.err and len(calls) == 1
    # a vLLM model spec resolves to the folder
    from spacelm.lib.llm.vllm import model_source

    assert model_source("embedded:tiny") == str(folder) and len(calls) == 1


def test_an_interrupted_export_leaves_nothing_that_would_be_used(gguf_model, monkeypatch):
    def dies(gguf, dest, dtype):
        (dest / hf_export.WEIGHTS).write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(hf_export, "convert_gguf", dies)
    with pytest.raises(KeyboardInterrupt):
        hf_export.export_hf("tiny")
    folder = hf_export.export_dir("tiny")
    assert not folder.exists() and not folder.with_name(folder.name + ".partial").exists()
    assert hf_export.exported("tiny") is None


def test_export_refuses_a_damaged_gguf_and_a_non_gguf_model(gguf_model):
    path = models.model_path("tiny")
    path.write_bytes(b"GGUF damaged")
    with pytest.raises(models.ModelNotFound, match=r"does not match the sha256.*spacelm models verify"):
        hf_export.export_hf("tiny")
    with pytest.raises(models.ModelNotFound, match="unknown embedded model 'nope'"):
        hf_export.export_hf("nope")


def test_a_changed_gguf_is_exported_again(gguf_model, monkeypatch):
    m, calls = gguf_model
    folder, written = hf_export.export_hf("tiny")
    assert written and hf_export.exported("tiny") == folder
    record = folder.with_name(folder.name + ".json")
    record.write_text(json.dumps(dict(json.loads(record.read_text()), gguf_sha256="0" * 64)))
    assert hf_export.exported("tiny") is None  # the record names another GGUF
    assert hf_export.export_hf("tiny") == (folder, True) and len(calls) == 2


# --------------------------------------------------------------------------- the managed server
def test_server_command_line():
    cfg = LLMConfig(
        backend="vllm-server",
        model="org/judge-70b",
        tensor_parallel_size=4,
        pipeline_parallel_size=2,
        distributed_executor_backend="ray",
        quantization="fp8",
        max_model_len=16384,
        server_args=["--max-num-seqs", "64"],
    )
    cmd = S.server_command(cfg, ["py", "-m", "vllm.entrypoints.cli.main", "serve"], "/m/judge", 41234, cpu=False)
    assert cmd[:5] == ["py", "-m", "vllm.entrypoints.cli.main", "serve", "/m/judge"]
    flags = dict(zip(cmd[5::1], cmd[6::1]))
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "41234" and flags["--served-model-name"] == cfg.model
    assert flags["--tensor-parallel-size"] == "4" and flags["--pipeline-parallel-size"] == "2"
    assert flags["--distributed-executor-backend"] == "ray" and flags["--quantization"] == "fp8"
    assert flags["--max-model-len"] == "16384" and flags["--generation-config"] == "vllm"
    assert (
        "--enforce-eager" not in cmd and "--kv-cache-memory-bytes" not in cmd and cmd[-2:] == ["--max-num-seqs", "64"]
    )
    cpu = S.server_command(LLMConfig(backend="vllm-server", model="m"), ["py", "--model"], "/m", 1, cpu=True)
    assert "--enforce-eager" in cpu and cpu[cpu.index("--kv-cache-memory-bytes") + 1] == str(2 << 30)
    assert "--distributed-executor-backend" not in cpu and "--enable-prefix-caching" in cpu


def test_free_port_is_free():
    import socket

    port = S.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # would raise if someone listened there


def _fake_python(tmp_path: Path, dist: str, serve: str = "") -> Path:
    """A 'python' that answers the launcher's probe with `dist` and runs `serve` (Python code)
    when started as the server."""
    script = tmp_path / "python"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nif sys.argv[1] == '-c':\n    print({dist + ' 0.0.1'!r})\n"
        f"    raise SystemExit(0)\n" + serve
    )
    script.chmod(0o755)
    return script


def test_launcher_follows_the_installed_distribution(tmp_path):
    assert S.launcher(str(_fake_python(tmp_path, "vllm")))[1:] == ["-m", "vllm.entrypoints.cli.main", "serve"]
    assert S.launcher(str(_fake_python(tmp_path, "vllm-cpu")))[-1] == "--model"
    with pytest.raises(BackendUnavailable, match="has no vLLM.*server_python"):
        S.launcher(str(_fake_python(tmp_path, "")))


STAND_IN_SERVER = textwrap.dedent("""
    import json, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    record = open(args[args.index("--record") + 1], "a")
    print("stand-in server", args, flush=True)
    time.sleep(1.0)  # not ready at once, like a loading model
    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, obj):
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply({"version": "0.0-stand-in"} if self.path == "/version" else {})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            time.sleep(0.2)
            choice = (body.get("structured_outputs") or {}).get("choice")
            text = choice[-1] if choice else "echo " + body["messages"][-1]["content"]
            with lock:
                state["now"] -= 1
                record.write(json.dumps({"model": body["model"], "most": state["most"], "grammar": "grammar" in body,
                                         "choice": choice}) + "\\n")
                record.flush()
            lp = [{"token": text, "logprob": -0.1, "top_logprobs": [{"token": text, "logprob": -0.1}]}]
            self.reply({"choices": [{"message": {"content": text}, "finish_reason": "stop",
                                     "logprobs": {"content": lp} if choice else None}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1}})

    ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
""")


@pytest.fixture
def stand_in_server(tmp_path):
    record = tmp_path / "requests.jsonl"
    python = _fake_python(tmp_path, "vllm-cpu", STAND_IN_SERVER)
    cfg = LLMConfig(
        backend="vllm-server",
        model="org/served-model",
        server_python=str(python),
        max_concurrency=3,
        server_start_timeout_s=60,
        server_args=["--record", str(record)],
    )
    return cfg, record


def test_managed_server_serves_a_phase_and_stops_with_it(stand_in_server, tmp_path):
    cfg, record = stand_in_server
    logs = tmp_path / "run" / "logs"
    with model_logs(logs):
        llm = open_llm(cfg, tmp_path / "cache")
    llm.stage = "grade"
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(8)]
    reqs.append(Request(messages=[{"role": "user", "content": "grade"}], choices=["0", "1", "2", "3"], max_tokens=2))
    out = llm.chat_many(reqs)
    assert [c.text for c in out[:8]] == [f"echo q{i}" for i in range(8)] and out[8].text == "3"
    assert out[8].choice_probs["3"] == 1.0
    server = llm.backend
    proc, log_file = server.proc, server.log_path
    assert proc.poll() is None and server.server_version == "0.0-stand-in"
    rows = [json.loads(ln) for ln in record.read_text().splitlines()]
    assert {r["model"] for r in rows} == {"org/served-model"}  # the served name is the config's spec
    assert max(r["most"] for r in rows) <= cfg.max_concurrency  # bounded concurrency
    assert [r["choice"] for r in rows if r["choice"]] == [["0", "1", "2", "3"]]  # as vLLM's structured outputs
    assert not any(r["grammar"] for r in rows)
    llm.release()
    assert proc.poll() is not None  # stopped with the phase
    assert log_file.parent == logs and log_file.name.startswith("vllm-server-grade-org_served-model-")
    text = log_file.read_text()
    assert "--host 127.0.0.1" in text and "stand-in server" in text and "server stopped" in text
    # a warm re-run answers from the cache and starts no server
    again = open_llm(cfg, tmp_path / "cache")
    assert [c.text for c in again.chat_many(reqs)] == [c.text for c in out] and again._backend is None


def test_a_server_that_dies_while_loading_is_reported_with_its_log(tmp_path):
    python = _fake_python(
        tmp_path, "vllm-cpu", "print('RuntimeError: out of memory loading weights')\nraise SystemExit(3)\n"
    )
    cfg = LLMConfig(backend="vllm-server", model="org/m", server_python=str(python))
    with model_logs(tmp_path / "logs"):
        llm = open_llm(cfg)
    with pytest.raises(BackendUnavailable, match=r"(?s)exited with code 3 before it was ready.*out of memory"):
        llm.chat([{"role": "user", "content": "x"}])


def test_a_server_that_never_gets_ready_is_stopped(tmp_path):
    python = _fake_python(tmp_path, "vllm-cpu", "import time\nprint('loading', flush=True)\ntime.sleep(600)\n")
    cfg = LLMConfig(backend="vllm-server", model="org/m", server_python=str(python), server_start_timeout_s=2)
    with pytest.raises(BackendUnavailable, match=r"(?s)not ready after 2 s \(server_start_timeout_s\).*loading"):
        S.VLLMServerBackend(cfg, log_dir=tmp_path / "logs")
    log = next((tmp_path / "logs").glob("vllm-server-*.log")).read_text()
    assert "server stopped, exit code -15" in log  # SIGTERM to its process group


# --------------------------------------------------------------------------- the manifest
def test_manifest_records_vllm_whichever_name_it_is_distributed_under(monkeypatch, tmp_path):
    from importlib import metadata

    from spacelm.runner import manifest

    real = metadata.version

    def version(name):
        if name == "vllm":
            raise metadata.PackageNotFoundError(name)
        return "0.32.0" if name == "vllm-cpu" else real(name)

    monkeypatch.setattr(manifest.metadata, "version", version)
    assert manifest.package_versions()["vllm"] == "0.32.0 (vllm-cpu)"
    cfg = from_dict(
        {
            "models": {
                "judge": {
                    "backend": "vllm-server",
                    "model": "org/m",
                    "server_python": str(_fake_python(tmp_path, "vllm-cpu")),
                }
            }
        },
        source="<t>",
    )
    # the server's python by its public path: no machine folder in the manifest (issue 43)
    assert manifest.server_versions(cfg) == {"judge": "0.0.1 (vllm-cpu) at <outside the project>/python"}


_HOLD_A_SERVER = """
import sys, time
from pathlib import Path
from spacelm.config import LLMConfig
from spacelm.lib.llm import open_llm
from spacelm.lib.llm.types import Request
from spacelm.signals import exit_code, terminations

python, record, cache = sys.argv[1:4]
cfg = LLMConfig(backend="vllm-server", model="org/served-model", server_python=python,
                server_start_timeout_s=60, server_args=["--record", record])
with terminations():
    try:
        llm = open_llm(cfg, Path(cache))
        llm.chat_many([Request(messages=[{"role": "user", "content": "hello"}])])
        print(llm.backend.proc.pid, flush=True)
        time.sleep(120)
    except KeyboardInterrupt as e:
        sys.exit(exit_code(e, 130))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by init) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _held_server(stand_in_server, tmp_path):
    import subprocess

    cfg, record = stand_in_server
    script = tmp_path / "hold.py"
    script.write_text(_HOLD_A_SERVER)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    child = subprocess.Popen(
        [sys.executable, str(script), cfg.server_python, str(record), str(tmp_path / "cache")],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    pid = int(child.stdout.readline())
    assert _alive(pid)
    return child, pid


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.time() + seconds
    while time.time() < end:
        if not _alive(pid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="process checks read /proc")
def test_sigterm_stops_the_managed_server_and_exits_143(stand_in_server, tmp_path):
    """Issue 43: SIGTERM (what `timeout` and schedulers send) left the vLLM server running, reparented to
    init. One signal path: it ends the command as Ctrl-C does, so the server is stopped, exit 128 + 15."""
    import signal

    child, pid = _held_server(stand_in_server, tmp_path)
    child.send_signal(signal.SIGTERM)
    assert child.wait(60) == 143
    assert _gone_within(pid, 10)


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's parent-death signal is Linux's")
def test_a_killed_spacelm_takes_its_server_with_it(stand_in_server, tmp_path):
    """SIGKILL runs no cleanup at all: the server asked the kernel for SIGTERM when its parent dies."""
    import signal

    child, pid = _held_server(stand_in_server, tmp_path)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert _gone_within(pid, 30)
