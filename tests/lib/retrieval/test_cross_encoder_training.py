"""The cross-encoder's training data and training: the split that keeps evaluation questions out,
the leak check, BM25's round-trip filter, negatives that never share the source span, labelled
sets' pairs, the trained-model registry (`trained:<name>`), and a tiny real training (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spacelm.lib.ingest.chunking import Chunk
from spacelm.lib.retrieval.bm25 import BM25Config
from spacelm.lib.retrieval.cross_encoder import (
    LeakError,
    TrainingPair,
    check_no_leak,
    held_out,
    labelled_pairs,
    pair_counts,
    pick_negatives,
    round_trip_filter,
    synthetic_pairs,
    training_pool,
)
from spacelm.lib.retrieval.rerankers.settings import RerankerTraining
from tests.conftest import make_beir


def _chunk(cid: str, doc: str, start: int, end: int, text: str = "") -> Chunk:
    return Chunk(cid, doc, text or f"text of {cid}", 1, 1, start, end, 50)


# two documents: A in five 100-character chunks, B in three
CHUNKS = [_chunk(f"A:{i}", "A", 100 * i, 100 * (i + 1)) for i in range(5)] + [
    _chunk(f"B:{i}", "B", 100 * i, 100 * (i + 1)) for i in range(3)
]
QUESTIONS = [
    # a run question: its source chunk A:2, its evidence span reaching back into A:1
    {
        "qid": "q1",
        "question": "What limits the pass?",
        "source_chunk_id": "A:2",
        "doc_id": "A",
        "span_start": 150,
        "span_end": 250,
    },
    # a golden sample located only by its span
    {
        "qid": "g1",
        "question": "Who screens conjunctions?",
        "source_chunk_id": None,
        "doc_id": "B",
        "span_start": 10,
        "span_end": 20,
    },
]


def test_held_out_takes_each_source_chunk_its_span_and_neighbours():
    assert held_out(CHUNKS, QUESTIONS, "chunk", neighbours=0).chunk_ids == {"A:1", "A:2", "B:0"}
    held = held_out(CHUNKS, QUESTIONS, "chunk", neighbours=1)
    assert held.chunk_ids == {"A:0", "A:1", "A:2", "A:3", "B:0", "B:1"}
    assert [c.chunk_id for c in training_pool(CHUNKS, held)] == ["A:4", "B:2"]
    assert held.n_documents == 2 and held.n_questions == 2
    by_doc = held_out(CHUNKS, QUESTIONS[:1], "document", neighbours=0)
    assert by_doc.chunk_ids == {f"A:{i}" for i in range(5)}
    with pytest.raises(ValueError, match="split 'page'"):
        held_out(CHUNKS, QUESTIONS, "page")


def test_a_span_that_ends_inside_a_later_chunk_holds_that_chunk_out():
    """Source chunk A:1 (characters 100-200), evidence span 150-350: the span runs through A:2 and
    ends inside A:3, so all three are held out even with no neighbours; A:4 is not. A span ending
    exactly where A:3 begins (300, the end is exclusive) does not reach it."""
    q = {"qid": "q", "question": "How far does the span reach?", "source_chunk_id": "A:1", "doc_id": "A"}
    long = held_out(CHUNKS, [dict(q, span_start=150, span_end=350)], "chunk", neighbours=0)
    assert long.chunk_ids == {"A:1", "A:2", "A:3"}
    assert [c.chunk_id for c in training_pool(CHUNKS, long)] == ["A:0", "A:4", "B:0", "B:1", "B:2"]
    edge = held_out(CHUNKS, [dict(q, span_start=150, span_end=300)], "chunk", neighbours=0)
    assert edge.chunk_ids == {"A:1", "A:2"}


def test_a_training_set_holding_an_evaluation_chunk_or_question_is_refused():
    held = held_out(CHUNKS, QUESTIONS, "chunk", neighbours=1)
    clean = [TrainingPair("t1", "How is the orbit fitted?", "A:4", "x", 1.0, "synthetic")]
    check_no_leak(clean, held)
    with pytest.raises(LeakError, match=r"1 evaluation chunk\(s\) \['A:2'\]"):
        check_no_leak(clean + [TrainingPair("t2", "Another question?", "A:2", "x", 0.0, "synthetic")], held)
    # an evaluation question's text, whatever its case and punctuation, from any source
    with pytest.raises(LeakError, match="1 evaluation question"):
        check_no_leak(clean + [TrainingPair("s9", "what LIMITS the pass", "doc7", "x", 1.0, "scifact")], held)


def test_round_trip_filter_keeps_a_question_bm25_finds_again_in_its_top_n():
    records = [
        {"qid": "a", "source_chunk_id": "A:4", "drop_reason": None},
        {"qid": "b", "source_chunk_id": "B:2", "drop_reason": None},
        {"qid": "c", "source_chunk_id": "B:2", "drop_reason": "too_short"},
    ]
    round_trip_filter(records, [["B:2", "A:4"], ["A:4", "x", "B:2"]], top_n=2)
    assert [(r["kept"], r["drop_reason"], r.get("rank_bm25")) for r in records[:2]] == [
        (True, None, 2),
        (False, "not_retrieved", 3),
    ]
    assert "kept" not in records[2]
    with pytest.raises(ValueError, match="1 rankings for 2 valid"):
        round_trip_filter([{"source_chunk_id": "A:4", "drop_reason": None}] * 2, [["A:4"]], 2)


def test_negatives_never_share_the_source_span_and_are_seeded():
    # overlapping chunks: C:1 shares characters 100-120 with the source C:0
    pool = [_chunk("C:0", "C", 0, 120), _chunk("C:1", "C", 100, 220), _chunk("C:2", "C", 220, 340)]
    pool += [_chunk(f"D:{i}", "D", 100 * i, 100 * (i + 1)) for i in range(4)]
    rec = {"qid": "ce-1", "question": "q?", "source_chunk_id": "C:0", "doc_id": "C", "span_start": 0, "span_end": 120}
    rec["kept"] = True
    ranking = ["C:1", "C:0", "D:0", "C:2", "D:1", "D:2", "D:3"]
    pairs = synthetic_pairs([rec], pool, [ranking], negatives=3, seed=13)
    assert [(p.passage_id, p.label) for p in pairs][:1] == [("C:0", 1.0)]
    negs = [p.passage_id for p in pairs if p.label == 0.0]
    assert len(negs) == 3 and not {"C:0", "C:1"} & set(negs)
    assert negs == [p.passage_id for p in synthetic_pairs([rec], pool, [ranking], 3, 13) if p.label == 0.0]
    assert pick_negatives(["x", "y"], {"x"}, 5, (1,)) == ["y"]
    assert pair_counts(pairs) == {"synthetic": {"queries": 1, "positives": 1, "negatives": 3}}


def test_labelled_pairs_take_graded_negatives_first_then_ungraded_bm25_neighbours(tmp_path):
    from spacelm.lib.retrieval.beir import load_beir

    data = load_beir(make_beir(tmp_path / "labels", graded=True), "test")  # per query: a=3, b=1, c=0
    pairs = labelled_pairs(data, "tiny", 2, None, 3, BM25Config(), 10, seed=13)
    q0 = [p for p in pairs if p.query_id == "q0"]
    assert [(p.passage_id, p.label) for p in q0 if p.label == 1.0] == [("d0a", 1.0)]
    negs = [p.passage_id for p in q0 if p.label == 0.0]
    assert negs[:2] == ["d0b", "d0c"] and len(negs) == 3 and negs[2] not in ("d0a", "d0b", "d0c")
    assert {p.source for p in pairs} == {"tiny"} and len({p.query_id for p in pairs}) == 6
    two = labelled_pairs(data, "tiny", 2, 2, 3, BM25Config(), 10, seed=13)
    assert len({p.query_id for p in two}) == 2


def test_training_settings_name_each_bad_value():
    assert RerankerTraining().problems() == []
    bad = RerankerTraining(negatives=0, learning_rate=2.0, questions=0, bm25_weight=1.5, dev_share=0.0)
    keys = [k for k, _ in bad.problems()]
    assert keys == ["negatives", "learning_rate", "bm25_weight", "dev_share", "questions"]
    assert RerankerTraining(bm25_weight=0.3).problems() == []
    from spacelm.lib.retrieval.rerankers.settings import LabelledSet

    test_split = RerankerTraining(labelled=[LabelledSet("scifact", "../shared/beir/scifact", "test")])
    assert ("labelled[0].split", "is 'test', the split studies evaluate on; train on 'train'") in test_split.problems()


# --------------------------------------------------------------------------- the registry
def _fake_trained(models: Path, name: str, weights: bytes = b"weights") -> Path:
    import hashlib

    folder = models / "trained" / name
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(weights)
    meta = {
        "name": name,
        "kind": "cross-encoder",
        "sha256": hashlib.sha256(weights).hexdigest(),
        "base_model": {"name": "embedded:minilm", "upstream": "sentence-transformers/all-MiniLM-L6-v2"},
        "training": {
            "sources": [
                {"name": "synthetic", "questions_kept": 12, "corpus": "data/processed/chunks.jsonl", "writer": "w"},
                {"name": "scifact", "split": "train", "queries": 5, "corpus_sha256": "abc", "query_ids": ["1", "2"]},
            ],
            "pairs": 60,
        },
    }
    (folder / "spacelm_trained.json").write_text(json.dumps(meta))
    return folder


def test_a_trained_model_is_listed_verified_resolved_and_its_damage_named(tmp_path, monkeypatch):
    from spacelm.lib.llm import models

    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path))
    folder = _fake_trained(tmp_path, "ce-test")
    assert models.trained_names() == ["ce-test"]
    row = models.trained_row("ce-test")
    assert row["name"] == "trained:ce-test" and row["base_model"] == "embedded:minilm"
    assert (
        row["training"] == "12 synthetic questions (data/processed/chunks.jsonl, writer w) + scifact train (5 queries)"
    )
    assert row["sha256"] == models.read_trained("ce-test")["sha256"]
    assert models.resolve_model_path("trained:ce-test") == str(folder)
    assert models.model_identity("trained:ce-test")["base_model"]["name"] == "embedded:minilm"
    assert [r["ok"] for r in models.verify_models(["trained:ce-test"])] == [True]
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert [r["ok"] for r in models.verify_models(["ce-test"])] == [False]
    with pytest.raises(models.ModelDamaged, match="spacelm train-reranker"):
        models.resolve_model_path("trained:ce-test")
    with pytest.raises(models.ModelNotFound, match="spacelm train-reranker"):
        models.resolve_model_path("trained:never-trained")
    with pytest.raises(models.ModelNotFound, match="unknown model 'nope'"):
        models.verify_models(["nope"])
    with pytest.raises(models.ModelNotFound, match="letters, digits"):
        models.resolve_model_path("trained:../escape")


def test_the_bench_names_models_as_models_list_does_and_refuses_trained_on_queries(tmp_path, monkeypatch):
    import importlib.util

    from spacelm.lib.io import sha256_file

    spec = importlib.util.spec_from_file_location("beir_anchor", Path(__file__).parents[3] / "bench" / "beir_anchor.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    _fake_trained(tmp_path / "models", "ce-test")
    assert bench.model_spec("ce-test") == "trained:ce-test"
    assert bench.model_spec("mpnet") == "embedded:mpnet"
    assert bench.model_spec("trained:ce-test") == "trained:ce-test"
    beir = make_beir(tmp_path / "beir")
    record = {
        "training": {
            "sources": [
                {
                    "name": "x",
                    "split": "train",
                    "corpus_sha256": sha256_file(beir / "corpus.jsonl"),
                    "query_ids": ["q1", "q9"],
                }
            ]
        }
    }
    assert bench.leaked_queries(record, beir, ["q0", "q1"]) == [("x (train)", 1)]
    assert bench.leaked_queries(record, beir, ["q0"]) == []
    assert bench.doc_clusters(beir, {"q0": {"d0a": 1}}) is None


# --------------------------------------------------------------------------- a real (tiny) training
FACTS = [
    (
        "collision probability threshold",
        "Operators plan an avoidance manoeuvre when the collision probability exceeds one in ten thousand.",
    ),
    (
        "solar array degradation",
        "Solar arrays lose a few percent of their power output each year from radiation damage to the cells.",
    ),
    ("reaction wheel saturation", "Reaction wheels saturate and are desaturated with magnetorquers or thrusters."),
    (
        "debris re-entry timing",
        "Atmospheric drag decides when a debris object re-enters, and solar activity changes the drag.",
    ),
    (
        "ground station passes",
        "Ground station passes are scheduled from predicted visibility windows above the horizon mask.",
    ),
    (
        "telemetry limit checking",
        "Telemetry values are compared against soft and hard limits, and a violation raises an alarm.",
    ),
    (
        "orbit determination",
        "Orbit determination fits a trajectory to radar and optical tracking measurements by least squares.",
    ),
    (
        "battery depth of discharge",
        "Keeping the battery depth of discharge shallow in eclipse extends the battery's cycle life.",
    ),
]
HELD = (
    "star tracker blinding",
    "A star tracker is blinded when the Sun or the Moon enters its field of view, so attitude falls back to gyros.",
)


def _question(topic: str) -> str:
    return f"What do we know about {topic}?"


@pytest.mark.slow
def test_a_tiny_cross_encoder_trained_on_hand_built_pairs_ranks_a_held_out_positive_first(tmp_path, monkeypatch):
    """24 hand-built pairs (each topic's question with its fact, and two other topics' facts as
    negatives), 15 steps from the shipped MiniLM weights; then a topic it never saw: its fact must
    outscore every other fact, through the `trained:<name>` path a run uses."""
    import hashlib

    from spacelm.lib.llm.models import resolve_model_path
    from spacelm.lib.retrieval.cross_encoder import train_cross_encoder
    from spacelm.lib.retrieval.rerankers import CrossEncoderReranker

    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    pairs = []
    for i, (topic, fact) in enumerate(FACTS):
        pairs.append(TrainingPair(f"q{i}", _question(topic), f"p{i}", fact, 1.0, "hand"))
        for j in (1, 3):
            k = (i + j) % len(FACTS)
            pairs.append(TrainingPair(f"q{i}", _question(topic), f"p{k}", FACTS[k][1], 0.0, "hand"))
    settings = RerankerTraining(
        epochs=5, batch_size=8, learning_rate=3e-4, warmup_share=0.0, max_length=64, bm25_weight=0.0
    )
    folder = tmp_path / "models" / "trained" / "ce-tiny"
    result = train_cross_encoder(pairs, resolve_model_path("embedded:minilm"), settings, 13, folder)
    assert result.steps == 15 and result.loss_last < result.loss_first
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "spacelm_trained.json").write_text(json.dumps({"sha256": hashlib.sha256(weights).hexdigest()}))

    texts = {"held-out positive": HELD[1], **{f"negative {i}": fact for i, (_, fact) in enumerate(FACTS)}}
    reranker = CrossEncoderReranker("trained:ce-tiny", texts)
    (scores,) = reranker.rescore([_question(HELD[0])], [list(texts)])
    ranked = sorted(zip(scores, texts), reverse=True)
    assert ranked[0][1] == "held-out positive", ranked[:3]
    assert reranker.pairs == len(texts)


def test_the_cross_encoder_scores_a_pair_once_however_many_pools_hold_it(monkeypatch):
    import sys
    import types

    from spacelm.lib.retrieval.rerankers import CrossEncoderReranker

    asked = []

    class Scripted:  # stands in for sentence_transformers.CrossEncoder
        def __init__(self, path, device):
            pass

        def predict(self, pairs, batch_size, show_progress_bar):
            asked.append(list(pairs))
            return [float(len(p)) for _, p in pairs]

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=Scripted))
    texts = {"a": "one", "b": "three", "c": "seven"}
    r = CrossEncoderReranker("some/model", texts)
    assert r.rescore(["q"], [["a", "b"]]) == [[3.0, 5.0]]
    # the dense pool of the same question shares "b": only "c" is scored
    assert r.rescore(["q", "q"], [["b", "c"], ["c", "a"]]) == [[5.0, 5.0], [5.0, 3.0]]
    assert asked == [[("q", "one"), ("q", "three")], [("q", "seven")]] and r.pairs == 3
    with pytest.raises(ValueError, match="precision 'int4'"):
        CrossEncoderReranker("some/model", texts, precision="int4")


def test_batches_hold_whole_query_groups_and_skip_groups_that_teach_nothing():
    from spacelm.lib.retrieval.cross_encoder import query_groups

    def pair(q, label, source="s"):
        return TrainingPair(q, q, f"{q}-{label}", "p", float(label), source)

    pairs = [pair("a", 1), pair("a", 0), pair("a", 0), pair("b", 1), pair("b", 0), pair("c", 0), pair("c", 0)]
    pairs += [pair("d", 1), pair("a", 0, "other")]  # d has no negative; ("other", a) no positive
    batches = query_groups(pairs, 4, 2, 7)
    seen = [sorted(pairs[i].query_id for i in g) for b in batches for g in b]
    assert sorted(seen) == [["a", "a", "a"]] * 2 + [["b", "b"]] * 2
    assert all(sum(map(len, b)) >= 4 or b is batches[-1] or len(b) == 1 for b in batches)
    assert query_groups(pairs, 4, 2, 7) == batches  # seeded


def test_the_listwise_loss_is_low_when_each_positive_outscores_its_own_negatives():
    import torch

    from spacelm.lib.retrieval.cross_encoder import listwise_loss

    labels = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0])
    good = listwise_loss(torch.tensor([5.0, 0.0, 0.0, 5.0, 0.0]), labels, [3, 2])
    bad = listwise_loss(torch.tensor([0.0, 5.0, 0.0, 0.0, 5.0]), labels, [3, 2])
    # a group's scores are compared within the group only: shifting one group changes nothing
    shifted = listwise_loss(torch.tensor([5.0, 0.0, 0.0, 105.0, 100.0]), labels, [3, 2])
    assert good < 0.02 < bad and abs(float(shifted) - float(good)) < 1e-5


# --------------------------------------------------------------------------- BM25's weight
def test_mixing_z_normalises_each_score_over_the_pool_and_weight_zero_keeps_the_cross_encoder():
    from spacelm.lib.retrieval.rerankers import mix_scores

    cross, bm25 = [3.0, 1.0, 2.0], [10.0, 30.0, 20.0]
    assert mix_scores(cross, bm25, 0.0) == cross
    assert mix_scores(cross, bm25, 1.0) == pytest.approx([-1.2247, 1.2247, 0.0], abs=1e-4)
    half = mix_scores(cross, bm25, 0.5)
    assert half == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)  # opposite orders cancel
    assert mix_scores([1.0, 1.0], [2.0, 1.0], 0.5) == pytest.approx([0.5, -0.5])  # a constant score adds nothing


def test_the_fitted_weight_is_the_one_that_ranks_held_back_positives_best():
    from spacelm.lib.retrieval.cross_encoder import fit_bm25_weight

    # the cross-encoder alone ranks the positive last in both groups; BM25 ranks it first: w 1 wins
    groups = [([1, 0, 0], [0.0, 1.0, 2.0], [9.0, 1.0, 0.0]), ([0, 1, 0], [5.0, 0.0, 4.0], [0.0, 7.0, 1.0])]
    w, curve = fit_bm25_weight(groups)
    assert w >= 0.6 and dict(curve)[1.0] == 1.0 and dict(curve)[0.0] < 0.6
    # and the reverse: the cross-encoder right, BM25 wrong -> the smallest weight on the tie
    flipped = [(lab, b, c) for lab, c, b in groups]
    assert fit_bm25_weight(flipped)[0] == 0.0


def test_the_dev_queries_are_whole_groups_held_back_from_training_and_seeded():
    from spacelm.lib.retrieval.cross_encoder import dev_split

    pairs = [
        TrainingPair(f"q{i}", f"question {i}", f"p{i}-{j}", "text", float(j == 0), "s")
        for i in range(20)
        for j in range(3)
    ]
    train, dev = dev_split(pairs, 0.15, 7)
    assert len(dev) == 9 and len(train) == 51
    assert not {p.query_id for p in dev} & {p.query_id for p in train}
    assert dev_split(pairs, 0.15, 7) == (train, dev) and dev_split(pairs, 0.15, 8)[1] != dev
    assert dev_split(pairs[:27], 0.15, 7)[1] == []  # under 10 queries: nothing held back


def test_a_model_carrying_a_bm25_weight_ranks_each_pool_by_the_mix(monkeypatch):
    import sys
    import types

    from spacelm.lib.retrieval.rerankers import CrossEncoderReranker

    class Scripted:  # a cross-encoder that prefers short passages, fitted with BM25 weight 0.8
        bm25_weight = 0.8

        def __init__(self, path, device):
            pass

        def predict(self, pairs, batch_size, show_progress_bar):
            return [-float(len(p)) for _, p in pairs]

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=Scripted))
    texts = {
        "toc": "Contents",
        "answer": "The conjunction screening volume around the station is a box of two by fifty by fifty kilometres",
        "other": "Launch windows are chosen to avoid close approaches with tracked debris objects in orbit",
    }
    r = CrossEncoderReranker("some/model", texts)
    (alone,) = r.cross_scores(["station screening volume box kilometres"], [list(texts)])
    assert max(zip(alone, texts))[1] == "toc"
    (mixed,) = r.rescore(["station screening volume box kilometres"], [list(texts)])
    assert max(zip(mixed, texts))[1] == "answer"


def test_a_dev_query_is_ranked_over_its_bm25_pool_in_its_own_corpus_less_what_shares_its_span():
    from spacelm.lib.retrieval.cross_encoder import DevCorpus, pool_groups

    class Length:  # stands in for the trained model: longer passages score higher
        def predict(self, pairs, batch_size):
            return [float(len(p)) for _, p in pairs]

    ids = ["c1", "c2", "c3", "c4"]
    texts = ["orbit debris screening volume", "debris screening in orbit, the neighbour", "launch window", "x"]
    dev = [
        TrainingPair("q1", "debris screening orbit", "c1", texts[0], 1.0, "synthetic"),
        TrainingPair("q1", "debris screening orbit", "c3", texts[2], 0.0, "synthetic"),
        TrainingPair("q9", "a query of a source with no corpus", "z", "z", 1.0, "elsewhere"),
    ]
    corpora = {"synthetic": DevCorpus(ids, texts, {"q1": {"c2"}})}
    (group,) = pool_groups(Length(), dev, corpora, BM25Config(), depth=3)
    labels, cross, bm25 = group
    # the pool: BM25's top 3 (c1, c2, and one more) less c2 (it shares the span), positive c1 first
    assert labels[0] == 1.0 and sum(labels) == 1.0 and len(labels) == 2
    assert cross[0] == float(len(texts[0])) and bm25[0] > bm25[1]


def test_a_pseudo_query_is_a_sentence_of_its_chunk_whose_positive_lacks_it_and_whose_negatives_are_not_near():
    import random

    from spacelm.lib.retrieval.cross_encoder import cut_sentence, pseudo_query_pairs

    # a 12-word sentence among others: the only one of 8-30 words that is mostly letters
    text = (
        "Short one. The ground station tracks the satellite twice a day from its northern site. "
        + "Table 4 12 13 14 15 16 17 18 19 20 21 22. "
        + " ".join(f"word{i}" for i in range(30))
    )
    sentence, rest = cut_sentence(text, random.Random(0))
    assert sentence == "The ground station tracks the satellite twice a day from its northern site."
    assert sentence not in rest and "Short one." in rest
    assert cut_sentence("Too short to cut at all.", random.Random(0)) is None

    body = "Orbit {i} keeps station by thrusting {w} times a week near the node. " + " ".join(
        f"Pad{j} goes here." for j in range(8)
    )
    pool = [
        _chunk(f"D{d}:{i}", f"D{d}", 100 * i, 100 * (i + 1), body.format(i=i, w=d)) for d in range(2) for i in range(4)
    ]
    pairs = pseudo_query_pairs(pool, n=3, negatives=2, depth=8, bm25=BM25Config(), seed=5)
    groups: dict = {}
    for p in pairs:
        groups.setdefault(p.query_id, []).append(p)
    assert 1 <= len(groups) <= 3
    for ps in groups.values():
        pos = [p for p in ps if p.label == 1.0]
        assert len(pos) == 1 and pos[0].query not in pos[0].passage and pos[0].source == "pseudo"
        doc, _, i = pos[0].passage_id.rpartition(":")
        near = {f"{doc}:{int(i) + k}" for k in (-1, 0, 1)}
        negs = [p.passage_id for p in ps if p.label == 0.0]
        assert negs and not near & set(negs)
    assert pairs == pseudo_query_pairs(pool, n=3, negatives=2, depth=8, bm25=BM25Config(), seed=5)
    assert ("pseudo_queries", "must be >= 0, got -1") in RerankerTraining(pseudo_queries=-1).problems()
    assert not [k for k, _ in RerankerTraining(questions=0, pseudo_queries=10).problems() if k == "questions"]
