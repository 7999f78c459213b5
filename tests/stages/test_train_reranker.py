"""Stage train-reranker with a scripted question writer (no training): it runs only when the config
names a trained cross-encoder, holds every evaluation question's chunk out of the training set,
mixes in the labelled sets, and refuses a labelled set that holds an evaluation question."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from spacelm.config import ConfigError, LLMConfig
from spacelm.lib.llm.types import Completion
from spacelm.lib.retrieval.cross_encoder import LeakError
from spacelm.lib.synth.golden import GoldenSample
from spacelm.runner.base import ModelTurns
from spacelm.stages import stages_for, train_reranker
from tests.conftest import make_beir

TRAINED = {"kind": "cross-encoder", "model": "trained:ce-test"}


def _with_reranker(cfg, **train):
    rr = dataclasses.replace(cfg.retrieval.reranker, kind="cross-encoder", model="trained:ce-test")
    rr.train = dataclasses.replace(rr.train, **train)
    cfg.retrieval.reranker = rr
    return cfg


def test_the_stage_runs_before_retrieve_only_when_a_trained_cross_encoder_reranks(tiny_config):
    assert "train-reranker" not in [s.name for s in stages_for(tiny_config)]
    _with_reranker(tiny_config)
    names = [s.name for s in stages_for(tiny_config)]
    assert names.index("train-reranker") == names.index("retrieve") - 1
    tiny_config.retrieval.systems = ["bm25", "dense"]  # nothing reranked: nothing to train
    assert "train-reranker" not in [s.name for s in stages_for(tiny_config)]


def test_asking_for_the_stage_where_the_config_trains_nothing_names_the_settings(tiny_config):
    from spacelm.pipeline import run_stages

    with pytest.raises(ConfigError, match="train-reranker with retrieval.reranker.kind cross-encoder"):
        run_stages(tiny_config, upto="train-reranker")
    with pytest.raises(ConfigError, match="retrieval.reranker.model: trained:<name>"):
        train_reranker.model_folder(tiny_config)


def test_the_training_settings_load_from_a_config_and_typos_are_named():
    from spacelm.config import from_dict

    cfg = from_dict(
        {
            "retrieval": {
                "reranker": {
                    **TRAINED,
                    "train": {"questions": 50, "labelled": [{"name": "scifact", "path": "../shared/beir/scifact"}]},
                }
            }
        }
    )
    assert cfg.retrieval.reranker.train.labelled[0].split == "train"
    with pytest.raises(ConfigError, match="retrieval.reranker.train.question"):
        from_dict({"retrieval": {"reranker": {**TRAINED, "train": {"question": 50}}}})


class _Writer:
    """A question writer that asks about the passage's first words (so each question is its own)."""

    name = "scripted"
    written = itertools.count()

    def complete_many(self, reqs, on_done):
        for i, r in enumerate(reqs):
            words = re.findall(r"[A-Za-z]+", r.messages[-1]["content"].split("\n", 1)[-1])
            n = next(self.written)
            on_done(i, Completion(text=f"What does it say about {' '.join(words[5:11])} in case {n}?"))

    def close(self):
        pass


def _golden() -> list[GoldenSample]:
    return [
        GoldenSample(id=f"{t}-{i}", task=t, question=f"A {t} question number {i} about orbits?", passage="p")
        for t in ("direct_qa", "summarization")
        for i in range(3)
    ]


def _turns(cfg):
    from spacelm.lib.llm import LLM

    return ModelTurns(cfg, "train-reranker", opener=lambda c, d=None: LLM(c, None, backend=_Writer()))


@pytest.fixture
def chunked(tiny_config):
    from spacelm.runner.data import load_chunks
    from spacelm.stages import chunk, ingest

    ingest.run(tiny_config)
    chunk.run(tiny_config)
    tiny_config.synth.tasks = ["direct_qa", "summarization"]
    tiny_config.synth.n_fewshot = 2
    tiny_config.models.question_writer = LLMConfig(model="scripted-writer", max_tokens=32)
    return tiny_config, load_chunks(tiny_config)


def _evaluation(chunks, n=3) -> list[dict]:
    picked = chunks[:: max(1, len(chunks) // n)][:n]
    return [
        {
            "qid": f"eval-{i}",
            "question": f"Which threshold applies in evaluation case {i}?",
            "source_chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "span_start": c.char_start,
            "span_end": c.char_end,
        }
        for i, c in enumerate(picked)
    ]


def test_no_evaluation_chunk_enters_training_and_labelled_sets_add_their_pairs(chunked, tmp_path):
    cfg, chunks = chunked
    labels = make_beir(tmp_path / "labels", graded=True)
    _with_reranker(cfg, questions=6, filter_top_n=0, negatives=2, negative_depth=5, neighbours=1)
    from spacelm.lib.retrieval.rerankers.settings import LabelledSet

    missing = LabelledSet("elsewhere", str(tmp_path / "not-here"), "train", optional=True)
    cfg.retrieval.reranker.train.labelled = [LabelledSet("tiny", str(labels), "test", min_grade=2), missing]
    evaluation = _evaluation(chunks)
    ts = train_reranker.compute(cfg, chunks, evaluation, _golden(), _turns(cfg))
    # an optional set that is missing trains nothing and says where such a set comes from
    skipped = next(s for s in ts.sources if s["name"] == "elsewhere")["skipped"]
    assert "an optional set" in skipped and "docs/team-corpus.md#judge-check-sources" in skipped
    sources = {p.source for p in ts.pairs}
    assert sources == {"synthetic", "tiny"}
    assert {q["source_chunk_id"] for q in evaluation} <= ts.held.chunk_ids
    assert not {p.passage_id for p in ts.pairs if p.source == "synthetic"} & ts.held.chunk_ids
    syn = [p for p in ts.pairs if p.source == "synthetic"]
    by_name = {s["name"]: s for s in ts.sources}
    # six written; the tiny corpus repeats its text, so identical prompts give duplicates, dropped
    kept = [r for r in ts.records if r["kept"]]
    assert by_name["synthetic"]["questions_written"] == 6 and 2 <= len(kept) == by_name["synthetic"]["questions_kept"]
    assert sum(p.label == 1.0 for p in syn) == len(kept) and all(p.query_id.startswith("ce-") for p in syn)
    assert by_name["synthetic"]["training_chunks"] == len(chunks) - len(ts.held.chunk_ids)
    assert by_name["tiny"]["queries"] == 6 and by_name["tiny"]["query_ids"] == [f"q{i}" for i in range(6)]


def test_a_labelled_set_holding_an_evaluation_question_is_refused(chunked, tmp_path):
    import json

    cfg, chunks = chunked
    labels = make_beir(tmp_path / "labels", graded=True)
    evaluation = _evaluation(chunks)
    rows = [json.loads(line) for line in (labels / "queries.jsonl").read_text().splitlines()]
    rows[0]["text"] = evaluation[0]["question"].upper()  # the golden question, as a labelled query
    (labels / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _with_reranker(cfg, questions=0)
    from spacelm.lib.retrieval.rerankers.settings import LabelledSet

    cfg.retrieval.reranker.train.labelled = [LabelledSet("leaky", str(labels), "test", min_grade=2)]
    with pytest.raises(LeakError, match="1 evaluation question"):
        train_reranker.compute(cfg, chunks, evaluation, _golden(), _turns(cfg))


def test_a_split_that_leaves_no_training_chunk_says_what_to_change(chunked):
    cfg, chunks = chunked
    _with_reranker(cfg, questions=4, split="document")
    everywhere = [{"question": "q?", "source_chunk_id": c.chunk_id} for c in chunks]
    with pytest.raises(ValueError, match="use split 'chunk'"):
        train_reranker.compute(cfg, chunks, everywhere, _golden(), _turns(cfg))


def test_the_trained_model_is_registered_with_its_record_and_reused_until_an_input_changes(
    chunked, tmp_path, monkeypatch
):
    """The stage end to end with training replaced by a stand-in that writes weights: the folder
    under the models folder holds the weights, their sha256 and the training data; a second run
    reuses it; another seed trains again."""
    import json

    from spacelm.lib.llm import LLM, models
    from spacelm.lib.retrieval.cross_encoder import TrainResult
    from spacelm.runner.base import execute, models_opened_by

    cfg, chunks = chunked
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    golden = [
        {
            "id": f"{t}-{i}",
            "task": t,
            "question": f"What does note {i} say about {t}?",
            "passage": "Operators compare the probability of collision with a threshold and plan a manoeuvre",
        }
        for t in ("direct_qa", "summarization")
        for i in range(2)
    ]
    golden_file = tmp_path / "golden.jsonl"
    golden_file.write_text("".join(json.dumps(g) + "\n" for g in golden))
    cfg.corpus.golden_samples = str(golden_file)
    _with_reranker(cfg, questions=4, filter_top_n=0, negatives=2, negative_depth=5)
    trained = []

    def stand_in(pairs, base_path, settings, seed, out_dir, progress=None, device="cpu", bm25=None, dev_corpora=None):
        trained.append(len(pairs))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "model.safetensors").write_bytes(f"{len(pairs)} pairs, seed {seed}".encode())
        return TrainResult(len(pairs), 1, 1, 0.1, 10.0, 0.7, 0.5)

    monkeypatch.setattr(train_reranker, "train_cross_encoder", stand_in)
    with models_opened_by(lambda c, d=None: LLM(c, None, backend=_Writer())):
        first = execute(train_reranker.STAGE, cfg)
        assert not first["skipped"] and first["trained"] == "trained:ce-test" and first["pairs"] == trained[0]
        assert models.trained_names() == ["ce-test"]
        record = models.read_trained("ce-test")
        assert record["base_model"]["name"] == "embedded:minilm" and record["seed"] == cfg.seed
        assert record["training"]["held_out"]["questions"] == 4  # the golden samples stand for the run's questions
        assert [r["ok"] for r in models.verify_models(["trained:ce-test"])] == [True]
        held = set(json.loads((train_reranker.model_folder(cfg) / "held_out.json").read_text())["chunk_ids"])
        seen = {p["passage_id"] for p in train_reranker.read_pairs(train_reranker.model_folder(cfg))}
        assert held and not held & seen
        assert execute(train_reranker.STAGE, cfg)["skipped"] and len(trained) == 1
        cfg.seed = 14
        assert not execute(train_reranker.STAGE, cfg)["skipped"] and len(trained) == 2
    assert models.read_trained("ce-test")["seed"] == 14


def test_synths_copies_train_the_reranker_without_a_model_call(chunked):
    """questions_from synth_copies: the questions synth rejected as copies, on training chunks only,
    at most `questions` of them; the writer is never opened; no questions file is a clear error."""
    from spacelm.lib.io import write_jsonl
    from spacelm.runner.data import questions_path

    cfg, chunks = chunked
    _with_reranker(cfg, questions=2, filter_top_n=0, negatives=1, negative_depth=5, neighbours=0)
    cfg.retrieval.reranker.train.questions_from = "synth_copies"
    evaluation = _evaluation(chunks, 1)
    with pytest.raises(ValueError, match="run `spacelm synth` first"):
        train_reranker.compute(cfg, chunks, evaluation, _golden(), _turns(cfg))
    free = [c for c in chunks if c.chunk_id != evaluation[0]["source_chunk_id"]]
    by_id = {c.chunk_id: c for c in chunks}

    def row(qid, question, chunk_id, why):
        c = by_id[chunk_id]
        return {
            "qid": qid,
            "question": question,
            "source_chunk_id": chunk_id,
            "doc_id": c.doc_id,
            "span_start": c.char_start,
            "span_end": c.char_end,
            "drop_reason": why,
        }

    rows = [
        row(f"syn-a{i}", f"What does part {i} say about orbits?", c.chunk_id, "copy") for i, c in enumerate(free[:3])
    ]
    rows.append(row("syn-b", "A premise question about orbits?", free[3].chunk_id, "premise"))
    rows.append(row("syn-c", "An evaluation chunk's copy?", evaluation[0]["source_chunk_id"], "copy"))
    write_jsonl(questions_path(cfg), rows)

    def no_model(c, d=None):
        raise AssertionError("the writer was opened")

    ts = train_reranker.compute(cfg, chunks, evaluation, _golden(), ModelTurns(cfg, "train-reranker", opener=no_model))
    assert [r["qid"] for r in ts.records] == ["ce-a0", "ce-a1"]  # copies only, training chunks, at most 2
    assert all(r["synth_drop_reason"] == "copy" for r in ts.records)
    assert {s["name"]: s for s in ts.sources}["synthetic"]["questions_from"] == "synth_copies"


def test_one_verdict_per_inputs_whichever_clone_trained_last(chunked, tmp_path, monkeypatch):
    """Two clones share the models folder (as every clone of a user does). The checkpoint one trained is
    up to date for the other on the same inputs, and stays so run after run; a clone whose inputs
    differ retrains it, and the first clone's next run restores its own checkpoint, kept aside under
    its inputs' fingerprint, instead of training again (issue 55: a second run retrained it)."""
    import copy
    import json
    import shutil

    from spacelm.lib.llm import LLM, models
    from spacelm.lib.retrieval.cross_encoder import TrainResult
    from spacelm.runner.base import execute, freshness, models_opened_by

    cfg, _ = chunked
    monkeypatch.setenv("SPACELM_MODELS_DIR", str(tmp_path / "models"))
    golden = [
        {"id": f"{t}-{i}", "task": t, "question": f"What does note {i} say about {t}?", "passage": "Operators plan"}
        for t in ("direct_qa", "summarization")
        for i in range(2)
    ]
    clones = []
    for name in ("a", "b"):  # the same project at two places: paths relative to each clone's root
        root = tmp_path / name
        shutil.copytree(cfg.processed_dir, root / "processed")
        (root / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))
        c = copy.deepcopy(cfg)
        c.root = str(root)
        c.paths = dataclasses.replace(c.paths, processed_dir="processed", synthetic_dir="synthetic", cache_dir="cache")
        c.corpus.golden_samples = "golden.jsonl"
        clones.append(_with_reranker(c, questions=4, filter_top_n=0, negatives=2, negative_depth=5))
    a, b = clones
    trained = []

    def stand_in(pairs, base_path, settings, seed, out_dir, progress=None, device="cpu", bm25=None, dev_corpora=None):
        trained.append(seed)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "model.safetensors").write_bytes(f"{len(pairs)} pairs, seed {seed}".encode())
        return TrainResult(len(pairs), 1, 1, 0.1, 10.0, 0.7, 0.5)

    monkeypatch.setattr(train_reranker, "train_cross_encoder", stand_in)
    stage = train_reranker.STAGE
    with models_opened_by(lambda c, d=None: LLM(c, None, backend=_Writer())):
        assert not execute(stage, a)["skipped"] and trained == [cfg.seed]
        sha_a = models.read_trained("ce-test")["sha256"]
        assert freshness(stage, b) == ("up to date", [])  # found in the store: the verdict where it was trained
        assert execute(stage, b)["skipped"] and execute(stage, a)["skipped"] and execute(stage, b)["skipped"]
        assert trained == [cfg.seed]

        b.seed = cfg.seed + 1  # another clone's inputs differ: it trains its own
        assert not execute(stage, b)["skipped"] and trained == [cfg.seed, b.seed]
        assert freshness(stage, a)[0] == "stale"
        back = execute(stage, a)  # restored, not trained: the checkpoint of these inputs, byte for byte
        assert not back["skipped"] and back["restored_kept"] and trained == [cfg.seed, b.seed]
        assert models.read_trained("ce-test")["sha256"] == sha_a and models.read_trained("ce-test")["seed"] == a.seed
        assert execute(stage, a)["skipped"]  # and the next run reuses it
        assert execute(stage, b)["restored_kept"] and trained == [cfg.seed, b.seed]
        kept = train_reranker.kept_folder(a, "x").parent
        assert len(list(kept.iterdir())) == 1 and models.trained_names() == ["ce-test"]
