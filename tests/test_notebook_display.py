"""What a notebook shows: the config line as ordinary output, missing table cells as a dash."""

import numpy as np
import pandas as pd
import pytest

from spacelm.lib.tables import MISSING, dash_missing, render


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


def _table():
    return pd.DataFrame(
        {
            "score": [4.25, np.nan],
            "setting": ["standard", None],
            "flag": [None, None],
            "n": pd.array([3, None], dtype="Int64"),
        }
    )


def test_a_notebook_shows_missing_cells_as_a_dash(shell):
    from spacelm.notebooks import show_missing_as_dash

    assert show_missing_as_dash()
    data, _ = shell.display_formatter.format(_table())
    for kind in ("text/html", "text/plain"):
        shown = data[kind]
        assert MISSING in shown and "4.25" in shown, kind
        for word in ("NaN", "nan", "None", "<NA>", "&lt;NA&gt;"):
            assert word not in shown, (kind, word)
    series, _ = shell.display_formatter.format(pd.Series([1.5, None], name="x"))
    assert MISSING in series["text/plain"] and "NaN" not in series["text/plain"]


def test_outside_a_notebook_nothing_is_registered():
    from IPython.core.interactiveshell import InteractiveShell

    from spacelm.notebooks import show_missing_as_dash

    assert not InteractiveShell.initialized()
    assert show_missing_as_dash() is False


def test_the_config_line_is_ordinary_output_in_a_notebook(shell, capsys, monkeypatch):
    from spacelm.notebooks import _say_config

    class Cfg:
        run_name = "quick"

    _say_config("configs/quick.yaml", Cfg(), reuse_only=True)
    out, err = capsys.readouterr()
    assert "run 'quick'" in out and "reuse-only" in out and not err


def test_dash_missing_keeps_numbers_and_render_writes_no_nan():
    out = dash_missing(_table())
    assert out["score"].dtype == float and list(out["setting"]) == ["standard", MISSING]
    assert list(out["flag"]) == [MISSING, MISSING] and list(out["n"]) == [3, MISSING]
    md = render(pd.DataFrame({"a": ["1.0", None], "b": [np.nan, "x"]}))
    assert MISSING in md and "nan" not in md and "None" not in md


def test_a_notebook_asks_for_a_report_section_by_name_and_an_unknown_name_lists_them():
    import pytest

    from spacelm.stages.report import SHOWN, section_text

    assert {"judge_checks", "judge_banner", "answerability", "table1", "table2"} <= set(SHOWN)
    with pytest.raises(KeyError, match="judge_checks"):
        section_text(None, "judge_check")  # a misspelt name: the error lists the sections
