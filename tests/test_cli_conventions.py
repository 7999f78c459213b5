"""CLI conventions: --version, a help line per subcommand, global flags on either side of the
subcommand, and a run's log file."""

from __future__ import annotations

import logging

import pytest

from spacelm import __version__
from spacelm.cli import build_parser, main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.strip()
    import re

    # the version and the commit of the code that runs (a checkout: its HEAD, "+dirty" when edited)
    assert re.fullmatch(rf"spacelm {re.escape(__version__)} \(commit [0-9a-f]{{40}}(\+dirty)?\)", out), out


def test_every_subcommand_has_a_help_line_and_description():
    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "command")
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert set(helps) == set(sub.choices)
    for name, p in sub.choices.items():
        assert helps[name] and helps[name].strip(), name
        assert p.description, name


@pytest.mark.parametrize(
    "argv",
    [
        ["--debug", "status"],
        ["status", "--debug"],
        ["--progress", "grade", "--config", "x.yaml"],
        ["grade", "--config", "x.yaml", "--progress"],
        ["--debug", "models", "list"],
        ["models", "list", "--debug"],
    ],
)
def test_global_flags_on_either_side(argv):
    a = build_parser().parse_args(argv)
    want = {"debug": "--debug" in argv, "progress": "--progress" in argv}
    assert {"debug": a.debug, "progress": a.progress} == want


def test_flag_before_is_not_reset_after():
    a = build_parser().parse_args(["--debug", "status", "--progress"])
    assert a.debug and a.progress


def test_run_log_file(tmp_path):
    from types import SimpleNamespace

    from spacelm.runner.runlog import log_path, run_log

    cfg = SimpleNamespace(run_dir=tmp_path / "results" / "r", run_name="r", source="configs/x.yaml")
    log = logging.getLogger("spacelm.test")
    with run_log(cfg, "grade") as path:
        with run_log(cfg, "inner"):  # nested: one handler, lines written once
            log.info("inside %d", 1)
        logging.getLogger("other.lib").info("not spacelm's")
    log.info("after the block")
    assert path == log_path(cfg).resolve()
    text = path.read_text()
    assert text.count("inside 1") == 1 and "grade: run 'r'" in text
    assert "not spacelm's" not in text and "after the block" not in text


def test_help_lists_every_subcommand_once_under_its_group(capsys):
    from spacelm.cli import COMMAND_GROUPS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "command")
    for name in sub.choices:
        assert sum(line.startswith(f"  {name} ") for line in out.splitlines()) == 1, name
    for title, _ in COMMAND_GROUPS:
        assert f"{title}:" in out
    assert max(map(len, out.splitlines())) <= 100
