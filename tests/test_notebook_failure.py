"""A notebook whose cell fails does not end `spacelm run` with a traceback after every stage finished
(issue 43): it is written as far as it ran beside the executed copy, which stays as it was (issue 57),
the failure is named, the others run."""

import json

import nbformat
import pytest

from spacelm.notebooks import NotebookFailed, execute_notebook


def _notebook(path, code):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in code]
    nbformat.write(nb, path)


def test_a_failing_cell_is_named_and_the_copy_is_kept(tmp_path):
    src, dest, cfg = tmp_path / "01_x.ipynb", tmp_path / "out" / "01_x.ipynb", tmp_path / "c.yaml"
    cfg.write_text("run_name: x\n")
    _notebook(src, ["x = {'a': 1}", "x['ndcg@10']", "print('never')"])
    with pytest.raises(NotebookFailed) as e:
        execute_notebook(src, dest, cfg, cwd=tmp_path)
    assert e.value.name == "01_x.ipynb" and e.value.error == "KeyError: 'ndcg@10'"
    assert not dest.exists() and e.value.path == dest.with_name("01_x.failed.ipynb")
    cells = json.loads(e.value.path.read_text())["cells"]
    assert cells[1]["outputs"][0]["ename"] == "KeyError" and not cells[2].get("outputs")


def test_a_failed_execution_never_replaces_an_executed_copy_and_a_success_clears_it(tmp_path):
    src, dest, cfg = tmp_path / "01_x.ipynb", tmp_path / "out" / "01_x.ipynb", tmp_path / "c.yaml"
    cfg.write_text("run_name: x\n")
    _notebook(src, ["print('the figures')"])
    execute_notebook(src, dest, cfg, cwd=tmp_path)
    good = dest.read_bytes()
    _notebook(src, ["raise RuntimeError('stale (code: ...)')"])
    with pytest.raises(NotebookFailed):
        execute_notebook(src, dest, cfg, cwd=tmp_path)
    assert dest.read_bytes() == good and dest.with_name("01_x.failed.ipynb").is_file()
    _notebook(src, ["print('again')"])
    execute_notebook(src, dest, cfg, cwd=tmp_path)
    assert "again" in dest.read_text() and not dest.with_name("01_x.failed.ipynb").exists()


def test_a_failed_notebook_names_no_folder_of_this_machine(tmp_path):
    src, dest, cfg = tmp_path / "02_x.ipynb", tmp_path / "out" / "02_x.ipynb", tmp_path / "c.yaml"
    cfg.write_text("run_name: x\n")
    # a traceback through a file of this project and a path no config names
    (tmp_path / "helper.py").write_text("def boom():\n    raise KeyError('/srv/labels/batch-3/x.jsonl')\n")
    _notebook(
        src, ["import sys; sys.path.insert(0, '.'); print(__import__('os').getcwd())", "import helper; helper.boom()"]
    )
    with pytest.raises(NotebookFailed) as failed:
        execute_notebook(src, dest, cfg, cwd=tmp_path)
    text = json.dumps(json.loads(dest.with_name("02_x.failed.ipynb").read_text())["cells"])
    assert str(tmp_path) not in text and "/srv/" not in text
    assert "helper.py" in text and "<outside the project>/x.jsonl" in text
    assert "/srv/" not in str(failed.value)
