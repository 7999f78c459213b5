"""The power table at the config's cluster unit (issue 44): a last run clustered by another unit
is recomputed at the plan's unit; the unit and the clusters needed are stated."""

import pandas as pd
import pytest

from spacelm.config import ConfigError, from_dict
from spacelm.lib.report import power as P
from spacelm.lib.stats import questions_needed

FINDING = "Reranking raises the share of grade 3 (BM25, top-3)"


def _cfg(tmp_path, unit=None):
    grading = {"retrievers": ["bm25"], "top_k": [3], "max_questions": 40, **({"cluster": unit} if unit else {})}
    return from_dict({"run_name": "r", "paths": {"results_dir": str(tmp_path)}, "grading": grading})


def _row(unit, n_clusters, sd, deff):
    return {
        "comparison": "reranked - retrieved",
        "retriever": "bm25",
        "top_k": 3,
        "measure": "share_3",
        "n_questions": 40,
        "n_source_chunks": 40,
        "n_clusters": n_clusters,
        "cluster": unit,
        "sd": sd,
        "deff": deff,
    }


def _store(tmp_path, rows):
    (tmp_path / "r" / "grading").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(tmp_path / "r" / "grading" / "paired_tests.csv", index=False)


def test_a_run_clustered_otherwise_is_recomputed_at_the_plans_unit(tmp_path):
    """The stored table clustered by source chunk (deff 1); recomputed by document: SD 12, design
    effect 2, 40 questions in 10 documents (4 per document): the need is questions_needed(5.1, 12,
    deff 2) and the documents needed a quarter of it, rounded up."""
    cfg = _cfg(tmp_path)
    assert cfg.grading.cluster == "document"
    _store(tmp_path, [_row("source_chunk", 40, 12.0, 1.0)])
    asked = []

    def recluster(unit):
        asked.append(unit)
        return [_row(unit, 10, 12.0, 2.0)]

    top3 = next(r for r in P.power_table(cfg.power_plan(), recluster=recluster) if r["finding"] == FINDING)
    n = questions_needed(5.10, 12.0, deff=2.0)
    assert asked == ["document"] and top3["cluster"] == "document"
    assert top3["questions_needed"] == n and top3["clusters_needed"] == -(-n // 4)
    assert top3["clusters_planned"] == 10 and top3["source_chunks_planned"] == 40
    assert "cluster" in P.format_power([top3])


def test_a_run_at_the_same_unit_is_read_as_it_is(tmp_path):
    cfg = _cfg(tmp_path, "source_chunk")
    _store(tmp_path, [_row("source_chunk", 40, 12.0, 1.0)])
    top3 = next(
        r
        for r in P.power_table(cfg.power_plan(), recluster=lambda u: pytest.fail("not needed"))
        if r["finding"] == FINDING
    )
    assert top3["cluster"] == "source_chunk" and top3["questions_needed"] == questions_needed(5.10, 12.0)


def test_the_unit_is_checked_in_the_config():
    with pytest.raises(ConfigError, match=r"grading\.cluster.*document"):
        from_dict({"grading": {"cluster": "chunk"}})
