from types import SimpleNamespace as C

import pytest

from spacelm.lib import answers as answer
from spacelm.config import from_dict


@pytest.mark.parametrize("text,refusal", [
    ("The answer cannot be found in the provided passages.", True),
    ("The passages do not contain information about that.", True),
    ("I do not know.", True),
    ("Operators manoeuvre above a probability of 1e-4 [ca:2].", False),
])
def test_refusal_detection(text, refusal):
    assert answer.is_refusal(text) == refusal


def test_citation_check():
    c = answer.citation_check("A [d:1]. B [e:2]. C [zz:9].", ["d:1", "e:2"], {"d:1", "e:2", "f:0"})
    assert c["cited"] == ["d:1", "e:2", "zz:9"] and not c["citations_exist"] and not c["citations_in_context"]
    assert c["citation_accuracy"] == pytest.approx(2 / 3)
    assert answer.citation_check("no cites", ["d:1"], set())["citation_accuracy"] is None


def test_parse_binary():
    assert answer.parse_binary("Yes - it matches the reference.") == (True, "it matches the reference.")
    assert answer.parse_binary("**No**: unsupported claim") == (False, "unsupported claim")
    assert answer.parse_binary("maybe")[0] is None


def _chunks():
    return [C(chunk_id=f"{d}:{i}", doc_id=d, text=f"{d} text {i}") for d in "abcd" for i in range(3)]


def test_contexts_per_setting():
    cfg = from_dict({"answer": {"n_wrong_values": [0, 3], "negative_n_wrong": 5, "pipelines": ["A", "B"],
                                "retrieve_k": 2}})
    assert [s["name"] for s in answer.settings(cfg)] == ["standard", "3_wrong", "5_wrong"]
    q = {"qid": "q1", "task": "direct_qa", "question": "?", "source_chunk_id": "a:1", "doc_id": "a"}
    items = answer.build_items(cfg, [q], _chunks(), {"q1": ["b:0", "a:1", "c:2"]})
    by = {(it["pipeline"], it["setting"]): it for it in items}
    std, three, five = by[("table2", "standard")], by[("table2", "3_wrong")], by[("table2", "5_wrong")]
    assert std["passage_ids"] == ["a:1"] and std["rubrics"] == ["faithfulness", "relevance"]
    assert sorted(three["passage_ids"]) == sorted(["a:1"] + three["wrong_ids"]) and len(three["wrong_ids"]) == 3
    assert all(not w.startswith("a:") for w in three["wrong_ids"] + five["wrong_ids"])
    assert "a:1" not in five["passage_ids"] and five["rubrics"] == ["negative_rejection"]
    assert three["rubrics"] == ["faithfulness", "relevance", "noise_robustness"]
    assert by[("A", "closed_book")]["passage_ids"] == [] and by[("B", "retrieved")]["passage_ids"] == ["b:0", "a:1"]
    again = answer.build_items(cfg, [q], _chunks(), {"q1": ["b:0", "a:1", "c:2"]})
    assert [it["passage_ids"] for it in again] == [it["passage_ids"] for it in items]  # seeded


def test_table2_long_and_wide():
    items = [{"pipeline": "table2", "setting": "standard", "rubrics": ["faithfulness"], "scores": {"faithfulness": s}}
             for s in (5, 4, None)]
    items += [{"pipeline": "table2", "setting": "5_wrong", "rubrics": ["negative_rejection"],
               "scores": {"negative_rejection": 1}}]
    long = answer.table2(items, ["standard", "5_wrong"], 100, 0)
    row = long[(long.metric == "faithfulness")].iloc[0]
    assert row["mean"] == 4.5 and row["n"] == 2 and row["missing"] == 1 and row["std"] == pytest.approx(0.707, abs=1e-3)
    assert list(long.columns[:5]) == ["metric", "setting", "mean", "std", "n"]
    md = answer.table2_wide(long, ["standard", "5_wrong"])
    cells = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in md.splitlines()[2:]}
    assert cells["Faithfulness"] == ["4.50 ± 0.71 (n=2)", "–"] and cells["Relevance"] == ["–", "–"]


def test_pipelines_table_latency_and_rates():
    its = [{"pipeline": "B", "latency_s": t, "binary": {"correct": {"verdict": v}}, "scores": {"faithfulness": 4},
            "citation": {"citation_accuracy": 1.0, "n_cited": 1}, "refusal": False} for t, v in ((1, True), (3, False))]
    df = answer.pipelines_table(its).iloc[0]
    assert df.correctness == 0.5 and df.latency_p50_s == 2 and df.refusal_rate == 0
