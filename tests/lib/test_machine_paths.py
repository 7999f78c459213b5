"""The scrubber of this machine's folders in text a run writes (issue 57, item 4): a path under
the project, home, the cache or the temporary folder is written in its public form wherever it
sits in a string, and only a whole folder matches (a sibling sharing a prefix is left alone).
The machine's folders are made-up ones here, so each form is checked exactly."""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile

import pytest

from spacelm.lib import machine_paths as mp

ROOT = "/srv/labs/main"
HOME = "/home/ada"


@pytest.fixture
def machine(monkeypatch):
    """A machine with the project at /srv/labs/main, home /home/ada, the user's cache in
    /var/cache/ada, the temporary folder /scratch/tmp and models in /opt/models."""
    monkeypatch.setattr(mp, "_PROJECTS", {})
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/ada")
    monkeypatch.setenv("SPACELM_MODELS_DIR", "/opt/models")
    monkeypatch.setattr(tempfile, "tempdir", "/scratch/tmp")
    return lambda text, **kw: mp.public_text(text, ROOT, **kw)


@pytest.mark.parametrize(
    "text, want",
    [
        # at the start, in the middle, after '=', quoted
        (f"{ROOT}/results/quick/manifest.json", "results/quick/manifest.json"),
        (f"cwd: {ROOT}/data/processed (3 files)", "cwd: data/processed (3 files)"),
        (f"--model={HOME}/ckpt/qwen --seed 1", "--model=~/ckpt/qwen --seed 1"),
        (f"open('{ROOT}/x.txt') and \"{HOME}/y\"", "open('x.txt') and \"~/y\""),
        (f"[{ROOT}/a.py:12]", "[a.py:12]"),
        # the folder itself
        (f"cd {ROOT} && ls {HOME}", "cd . && ls ~"),
        (f"run in {ROOT}/, home {HOME}.", "run in ./, home ~."),
        # cache outside home, temporary folder, models folder
        ("weights in /var/cache/ada/huggingface/hub/m", "weights in <cache>/huggingface/hub/m"),
        ("TMPDIR=/scratch/tmp/vllm-1 x", "TMPDIR=<tmp>/vllm-1 x"),
        ("load /opt/models/qwen.gguf now", "load models:qwen.gguf now"),
        # several in one line
        (f"{ROOT}/a {HOME}/b /scratch/tmp/c", "a ~/b <tmp>/c"),
    ],
)
def test_paths_anywhere_in_a_string_take_their_public_form(machine, text, want):
    assert machine(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "/srv/labs/main2/results/x",  # a sibling of the root sharing its prefix
        "/srv/labs/main.bak/x",
        "/srv/labs/main-old",
        "/mnt/srv/labs/main/x",  # the root's path inside a longer one
        "/home/ada2/notes",
        "/home/adam",
        "/scratch/tmpfiles/x",
        "/usr/lib/python3/site.py",  # a system path says nothing of this machine
        "results/quick is relative already; ~/x and <tmp>/y are public",
        "http://127.0.0.1:8000/v1",
    ],
)
def test_what_is_not_under_a_machine_folder_is_left_alone(machine, text):
    assert machine(text) == text


def test_a_prefix_sibling_is_not_taken_for_the_root_even_next_to_it(machine):
    assert machine(f"{ROOT}2/a and {ROOT}/a") == f"{ROOT}2/a and a"


def test_the_deeper_place_wins_and_a_place_inside_an_earlier_one_keeps_its_form(machine, monkeypatch):
    # a virtual environment inside the project: the packages' folder, not the project's
    from spacelm.lib.machine_paths import path_roots

    site = next(str(r) for label, r in path_roots() if label == "package")
    assert mp.public_text(f"at {site}/numpy/core.py") == "at package:numpy/core.py"
    # the cache under home stays `~/.cache/…` as the manifest's public_path writes it
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert machine(f"--model={HOME}/.cache/hf/m") == "--model=~/.cache/hf/m"
    # a project inside home and the temporary folder: relative to the project
    nested = f"{HOME}/proj"
    assert mp.public_text(f"{nested}/results/x and {HOME}/other", nested) == "results/x and ~/other"
    assert mp.public_text("/scratch/tmp/p/r/x /scratch/tmp/q", "/scratch/tmp/p") == "r/x <tmp>/q"


def test_folders_the_config_names_outside_the_project(machine):
    got = machine(
        "corpus /data/shared/space_corpus/a.pdf, results /fast/runs/quick/manifest.json",
        anchors=["/data/shared/space_corpus"],
        named=["/fast/runs"],
    )
    assert (
        got == "corpus ../../../data/shared/space_corpus/a.pdf, results <outside the project>/runs/quick/manifest.json"
    )


def test_a_remembered_project_is_scrubbed_by_callers_that_know_no_config(machine):
    assert mp.public_text("/srv/other/x") == "/srv/other/x"
    mp.remember_project("/srv/other", named=["/fast/runs"])
    assert mp.public_text("/srv/other/x in /fast/runs/r") == "x in <outside the project>/runs/r"


def test_the_log_formatter_cleans_the_line_and_its_traceback_not_the_record(machine):
    fmt = mp.PublicFormatter("%(levelname)s %(message)s")
    mp.remember_project(ROOT)
    try:
        raise OSError(f"cannot read {ROOT}/data/x.pdf")
    except OSError:
        exc = sys.exc_info()
    record = logging.LogRecord(
        "spacelm", logging.ERROR, __file__, 1, "cwd %s, key sk-abcdefgh12345678", (f"{HOME}/w",), exc
    )
    line = fmt.format(record)
    assert line.startswith("ERROR cwd ~/w, key ***") and "cannot read data/x.pdf" in line
    assert HOME not in line and ROOT not in line
    assert record.getMessage() == f"cwd {HOME}/w, key sk-abcdefgh12345678"  # the terminal's copy unchanged


def test_a_servers_output_is_copied_line_by_line_with_paths_public(machine):
    mp.remember_project(ROOT)
    raw = f"loading {ROOT}/models/m\nbytes \xff\xfe kept {HOME}/x\nno newline at the end {ROOT}".encode("latin-1")
    sink = io.BytesIO()
    sink.close = lambda: None  # read back below
    mp.public_lines(io.BytesIO(raw), sink)
    assert sink.getvalue() == b"loading models/m\nbytes \xff\xfe kept ~/x\nno newline at the end ."


def test_the_real_machine_folders_are_covered():
    """On this machine, with its real home and temporary folder."""
    home, tmp = os.path.expanduser("~"), tempfile.gettempdir()
    if home in ("", "/"):
        pytest.skip("no home folder to scrub")
    text = mp.public_text(f"a={home}/x b='{tmp}/y'")
    assert text.startswith("a=") and home not in text and tmp not in text
