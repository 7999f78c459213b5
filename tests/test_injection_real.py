"""Issue 26 #4 with the real embedded judge: a grader note injected into an irrelevant passage
(after a closing triple quote, and without one) does not change the grade the default
(calibrated) relevance judge gives. `bench/prompt_injection.py` prints the same comparison,
with the paper's digit prompt beside it (which the 1.5B model does obey: see docs/judges.md)."""

import pytest

pytestmark = pytest.mark.slow


def test_injected_note_leaves_the_calibrated_grade_unchanged(tmp_path):
    import importlib.util
    from pathlib import Path

    from spacelm.config import load_config
    from spacelm.lib.judge.relevance import grade_pairs
    from spacelm.lib.llm import open_llm

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("prompt_injection", root / "bench" / "prompt_injection.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    cfg = load_config(root / "configs" / "quick.yaml")
    assert cfg.grading.method == "calibrated"
    llm = open_llm(cfg.models.judge, tmp_path)
    pairs = [{"qid": n, "chunk_id": n, "question": bench.QUESTION, "purpose": ["test"]} for n in bench.VARIANTS]
    rows = {r["qid"]: r for r in grade_pairs(llm, pairs, bench.VARIANTS, judging=cfg.grading.judging(cfg.root))}
    llm.release()
    clean = rows["clean"]["grade"]
    assert clean is not None and clean <= 1
    assert all(r["grade"] == clean for r in rows.values()), {k: (r["grade"], r["score"]) for k, r in rows.items()}
