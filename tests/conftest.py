"""Shared fixtures: tiny corpora and PDFs built inside the tests with PyMuPDF."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RAM_DISK = Path("/dev/shm")


def pytest_configure(config):
    """Test folders on a RAM disk where the machine has one (unless `--basetemp` is given): the
    suite writes and deletes thousands of small files (runs, stamps, caches), and on a shared
    VM's disk each unlink can cost milliseconds. Each session gets its own folder."""
    if config.option.basetemp is None and RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK):
        config.option.basetemp = tempfile.mkdtemp(prefix="spacelm-tests-", dir=RAM_DISK)
        config._spacelm_ram_basetemp = config.option.basetemp


@pytest.fixture(autouse=True)
def _one_model_test_at_a_time(request):
    """Under pytest-xdist (`scripts/test.sh` runs on every core), the tests that load real models
    or read a whole real corpus take turns through a lock file shared by the run's workers: two
    model engines on two cores would each slow the other by more than the split gains, while
    the other worker goes on with light tests. (`--dist loadgroup` would keep them on one
    worker, but with pytest 9.2 it no longer groups: pytest-dev/pytest-xdist#1386.)"""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    heavy = request.node.get_closest_marker("slow") or request.node.get_closest_marker("vllm")
    if not (run_id and heavy):
        yield
        return
    import fcntl

    with open(Path(tempfile.gettempdir()) / f"spacelm-model-tests-{run_id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_sessionfinish(session, exitstatus):
    """The RAM-disk folder goes when every test passed; after a failure it stays for a look."""
    base = getattr(session.config, "_spacelm_ram_basetemp", None)
    if base and exitstatus == 0:
        shutil.rmtree(base, ignore_errors=True)
    elif base:
        session.config.get_terminal_writer().line(f"test folders kept in {base}")


LOREM = (
    "Collision avoidance for satellites in low Earth orbit relies on conjunction data messages issued by "
    "surveillance networks. Operators compare the probability of collision with a threshold and plan a "
    "manoeuvre when the risk is too high. "
)


def make_pdf(path: Path, pages: list, two_column: bool = False, encrypt: bool = False) -> Path:
    """Write a PDF whose pages hold the given texts. With `two_column`, each page's text is a pair
    (left, right) placed in two columns."""
    import pymupdf

    doc = pymupdf.open()
    for content in pages:
        page = doc.new_page(width=595, height=842)
        if two_column:
            left, right = content
            page.insert_textbox(pymupdf.Rect(50, 60, 290, 780), left, fontsize=10)
            page.insert_textbox(pymupdf.Rect(305, 60, 545, 780), right, fontsize=10)
        else:
            page.insert_textbox(pymupdf.Rect(50, 60, 545, 780), content, fontsize=10)
        page.insert_text((280, 820), f"Page {doc.page_count} of {len(pages)}", fontsize=8)
    kwargs = {}
    if encrypt:
        kwargs = dict(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="secret")
    doc.save(path, **kwargs)
    doc.close()
    return path


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """Three small documents: a multi-page PDF with references, a Markdown file, a text file."""
    raw = tmp_path / "raw"
    raw.mkdir()
    body = [
        LOREM * 6 + "\n\nThe operators then re-\nviewed the orbit determination.",
        LOREM * 5,
        LOREM * 3 + "\n\nReferences\n\n[1] IADC. Space Debris Mitigation Guidelines. 2020.\n"
        "[2] ESA. Space Environment Report. 2024.",
    ]
    make_pdf(raw / "ops-note.pdf", body)
    (raw / "guide.md").write_text("# Guide\n\n" + LOREM * 8 + "\n\n## Section 2\n\n" + LOREM * 4, encoding="utf-8")
    (raw / "notes.txt").write_text(LOREM * 10, encoding="utf-8")
    (raw / "README.md").write_text("not a corpus document", encoding="utf-8")
    return raw


def make_beir(folder: Path, graded: bool = False) -> Path:
    """A small folder of human relevance labels in BEIR format, made up for the tests: six
    queries on orbital topics, each with passages people would call relevant or not."""
    import json

    topics = [
        ("collision probability threshold", "Operators manoeuvre when the collision probability exceeds 1e-4."),
        ("ground station pass planning", "Ground station passes are planned from predicted visibility windows."),
        ("solar array degradation", "Solar arrays lose output each year from radiation damage to the cells."),
        ("reaction wheel saturation", "Reaction wheels saturate and are unloaded with magnetorquers or thrusters."),
        ("debris re-entry timing", "Atmospheric drag decides when a debris object re-enters the atmosphere."),
        ("telemetry limit checking", "Telemetry values are compared with soft and hard limits on the ground."),
    ]
    corpus, queries, qrels = [], [], []
    for i, (topic, fact) in enumerate(topics):
        queries.append({"_id": f"q{i}", "text": f"What is known about {topic}?"})
        corpus.append({"_id": f"d{i}a", "title": topic, "text": fact})
        corpus.append({"_id": f"d{i}b", "title": topic, "text": f"A note that mentions {topic} in passing only."})
        corpus.append({"_id": f"d{i}c", "title": "", "text": f"Unrelated remark number {i} about office hours."})
        qrels += [(f"q{i}", f"d{i}a", 3 if graded else 1)]
        if graded:
            qrels += [(f"q{i}", f"d{i}b", 1), (f"q{i}", f"d{i}c", 0)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    name = folder / ("qrels.tsv" if graded else "qrels/test.tsv")
    name.parent.mkdir(parents=True, exist_ok=True)
    name.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels))
    return folder


@pytest.fixture
def tiny_config(tmp_path: Path, tiny_corpus: Path):
    """A config whose every path lives in tmp_path (the judge check reads a made-up labelled folder)."""
    from spacelm.config import from_dict

    return from_dict(
        {
            "run_name": "test",
            "corpus": {"raw_dir": str(tiny_corpus), "golden_samples": str(tiny_corpus / "golden_samples.jsonl")},
            "paths": {
                "processed_dir": str(tmp_path / "processed"),
                "synthetic_dir": str(tmp_path / "synthetic"),
                "results_dir": str(tmp_path / "results"),
                "cache_dir": str(tmp_path / "cache"),
            },
            "chunking": {"max_tokens": 64},
            "judge_check": {
                "sources": [{"name": "tiny", "path": str(make_beir(tmp_path / "beir")), "n_queries": 2}],
                "n_in_domain": 2,
                "n_controls": 1,
            },
        },
        source="<test>",
        root=str(ROOT),
    )


@pytest.fixture
def tiny_config_file(tmp_path, tiny_corpus):
    """A YAML config on the tiny corpus with the 0.5B model everywhere: (path, its run folder)."""
    import json

    import yaml

    rows = []
    for t in ("direct_qa", "summarization"):
        for i in range(2):
            rows.append(
                {
                    "id": f"{t}-{i}",
                    "task": t,
                    "question": f"What does note {i} say about collision probability thresholds?"
                    if t == "direct_qa"
                    else f"Summarise what note {i} says about planning manoeuvres.",
                    "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre.",
                }
            )
    (tiny_corpus / "golden_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    small = {"backend": "llamacpp", "model": "embedded:qwen2.5-coder-0.5b", "n_ctx": 2048, "max_tokens": 48}
    p = tmp_path / "test.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "run_name": "nbtest",
                "corpus": {"raw_dir": str(tiny_corpus), "golden_samples": str(tiny_corpus / "golden_samples.jsonl")},
                "paths": {
                    "processed_dir": str(tmp_path / "processed"),
                    "results_dir": str(tmp_path / "results"),
                    "synthetic_dir": str(tmp_path / "synthetic"),
                    "cache_dir": str(tmp_path / "cache"),
                },
                "chunking": {"max_tokens": 64},
                "retrieval": {
                    "systems": ["bm25", "dense", "bm25+rerank", "hybrid"],
                    "pool": 10,
                    "reranker": {"kind": "biencoder", "model": "embedded:minilm"},
                },
                "models": {"question_writer": small, "generator": small, "judge": dict(small, max_tokens=8)},
                "synth": {
                    "tasks": ["direct_qa", "summarization"],
                    "n_fewshot": 2,
                    "max_chunks": 2,
                    "filter_top_n": 5,
                    "sampling": "every_task",
                },
                "grading": {"retrievers": ["bm25"], "top_k": [1, 3], "max_questions": 2, "n_bootstrap": 100},
                "answer": {
                    "max_questions": 1,
                    "n_wrong_values": [0, 1],
                    "negative_n_wrong": 2,
                    "retrieve_k": 2,
                    "n_bootstrap": 100,
                },
                "judge_check": {
                    "sources": [
                        {"name": "tiny-binary", "path": str(make_beir(tmp_path / "beir")), "n_queries": 2},
                        {
                            "name": "tiny-graded",
                            "path": str(make_beir(tmp_path / "graded", graded=True)),
                            "n_queries": 1,
                        },
                        {"name": "absent", "path": str(tmp_path / "no-such-folder")},
                    ],
                    "n_in_domain": 1,
                    "n_controls": 1,
                    "n_bootstrap": 100,
                },
            }
        )
    )
    return p, tmp_path / "results" / "nbtest"


# the one file of a run folder meant to hold this machine's paths (the config as this machine reads it)
LOCAL_FILES = (".config.resolved.local.yaml",)


def machine_paths_in(run: Path, places) -> dict[str, list[str]]:
    """{file: the `places` it names} over every file of a run folder (the local config left out)."""
    found = {}
    for f in sorted(run.rglob("*")):
        if f.is_file() and f.name not in LOCAL_FILES:
            text = f.read_bytes().decode("utf-8", "replace")
            hit = sorted(p for p in places if p in text)
            if hit:
                found[str(f.relative_to(run))] = hit
    return found
