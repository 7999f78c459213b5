"""Claim-level support: the split, the checks planned, and the three metrics by hand."""

import pytest

from spacelm.lib.answer import claims as K
from spacelm.lib.llm.types import Completion

IDS = ["a:1", "b:2"]


def test_split_claims_attaches_trailing_markers_and_skips_declines():
    text = (
        "Drag lowers the perigee of debris. [1] Solar maximum speeds this up [1][2]. Yes. "
        "The passages do not contain the launch date."
    )
    cl = K.split_claims(text, IDS)
    assert [c["claim"] for c in cl] == ["Drag lowers the perigee of debris.", "Solar maximum speeds this up."]
    assert [c["cited"] for c in cl] == [["a:1"], ["a:1", "b:2"]]
    assert K.split_claims("The answer cannot be found in the provided passages.", IDS) == []
    assert K.split_claims("It uses [3] passages.", IDS)[0]["cited"] == []  # an invalid number supports nothing


def test_one_check_per_cited_passage_or_the_whole_context():
    items = [
        {"answer": "Drag lowers perigee [1][2]. Storms heat the air.", "passage_ids": IDS},
        {"answer": "Closed book answer here.", "passage_ids": []},
    ]
    checks = K.plan_claim_checks(items)
    assert [(c["claim_index"], c["ids"]) for c in checks] == [(0, ["a:1"]), (0, ["b:2"]), (1, IDS)]


class Judge:
    """Scripted yes/no: P(yes) from a table keyed by (claim start, passage text); asked the mirrored
    question, the opposite."""

    def __init__(self, table):
        self.table = table

    def chat_many(self, reqs, progress=None):
        out = []
        for r in reqs:
            user = r.messages[-1]["content"]
            p = next(v for (claim, passage), v in self.table.items() if claim in user and passage in user)
            if "do not support" in user:  # the mirrored question: a consistent judge says the opposite
                p = 1 - p
            out.append(Completion(text="yes" if p >= 0.5 else "no", choice_probs={"yes": p, "no": 1 - p}))
        return out


def test_metrics_by_hand():
    text_of = {"a:1": "PASSAGE-A", "b:2": "PASSAGE-B"}
    it = {
        "qid": "q",
        "setting": "standard",
        "pipeline": "table2",
        "answer": "Drag lowers perigee [1][2]. Storms heat the air [2]. Debris is tracked daily.",
        "passage_ids": IDS,
    }
    judge = Judge(
        {
            ("Drag", "PASSAGE-A"): 0.9,
            ("Drag", "PASSAGE-B"): 0.2,
            ("Storms", "PASSAGE-B"): 0.3,
            ("Debris", "PASSAGE-A"): 0.8,
        }
    )
    rows = K.judge_claims(judge, [it], text_of, "ids")
    assert [(r["claim"][:5], r["supported"], r["p_supported"]) for r in rows] == [
        ("Drag ", True, 0.9),
        ("Storm", False, 0.3),
        ("Debri", True, 0.8),
    ]
    assert rows[2]["support"] == {"context": 0.8} and rows[0]["support"] == {"a:1": 0.9, "b:2": 0.2}
    c = K.answer_counts(it)
    # 3 claims, 2 supported; citations: Drag->a (yes), Drag->b (no), Storms->b (no); claims with a
    # supporting citation: Drag only ("Debris" cites nothing)
    assert c == {"claims": 3, "supported": 2, "citations": 3, "supporting_citations": 1, "claims_with_support": 1}
    m = K.claim_metrics([c])
    assert m["claim_faithfulness"] == pytest.approx(2 / 3)
    assert m["citation_precision"] == pytest.approx(1 / 3)
    assert m["citation_recall"] == pytest.approx(1 / 3)


def test_claim_table_pools_answers_with_cis():
    def item(setting, sup):
        return {
            "setting": setting,
            "claims": [{"supported": s, "cited": [], "support": {"context": 0.9 if s else 0.1}} for s in sup],
        }

    items = [item("standard", [True, True]), item("standard", [True, False]), item("5_wrong", [False])]
    t = {r["setting"]: r for r in K.claim_table(items, "setting", 200, 0)}
    assert t["standard"]["n_answers"] == 2 and t["standard"]["n_claims"] == 4
    assert t["standard"]["claim_faithfulness"] == 0.75
    assert t["standard"]["citation_precision"] is None  # no citations: undefined, not 0
    assert t["5_wrong"]["claim_faithfulness"] == 0.0 and t["5_wrong"]["claim_faithfulness_ci_low"] is None
    assert t["standard"]["claim_faithfulness_ci_low"] <= 0.75 <= t["standard"]["claim_faithfulness_ci_high"]


def test_an_answer_opening_with_a_marker_cites_forwards():
    cl = K.split_claims("[1] Drag lowers the perigee. [2] Storms heat the upper air.", IDS)
    assert [(c["claim"], c["cited"]) for c in cl] == [
        ("Drag lowers the perigee.", ["a:1"]),
        ("Storms heat the upper air.", ["b:2"]),
    ]
