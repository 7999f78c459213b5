"""The reranker a config uses, measured where it matters: per set and first stage, before and after.

    python bench/reranker_eval.py --config configs/standard.yaml --out results/reranker.json \
        [--labels ../shared/judge/space-corpus] [--scifact ../shared/beir/scifact --scifact-queries 100] \
        [--trec ../shared/judge/trec-dl-2020]

The checkpoint is the one `retrieval.reranker.model` names (a `trained:<name>` must have been trained:
`spacelm train-reranker --config ...`); its sha256, the settings that trained it and BM25's weight in
its score are recorded. Each first stage (BM25, dense, as the config sets them) ranks the whole set;
its top `retrieval.pool` is reranked twice: by the model as the config runs it (cross-encoder + BM25
score at the fitted weight) and by the cross-encoder alone (weight 0, the ablation's row). Sets:

- `run`: the run's own answerable questions over its chunks (synth's kept questions), gold and hit@3
  as for `golden` (not in the default sets: the questions are the ones the run's Table 1 grades);
- `golden`: the config's golden samples over its chunks, gold = the chunks holding the golden passage's
  span (the overlap rule of `lib/retrieval/span_gold.py`); hit@3 = a gold chunk in the top 3;
- `labels`: graded in-domain labels (BEIR layout, queries with a passage graded 2 or 3); their pool is
  shallow, so nDCG@10 is on condensed lists (unjudged passages left out) and `holes@10`, the mean
  number of unjudged passages in the full top 10, is printed beside; hit@3 = grade >= 2 in the condensed top 3;
- `scifact`: BEIR SciFact test (the first `--scifact-queries` queries); unjudged = not relevant;
- `trec-dl-2020`: TREC DL 2020 passages with NIST grades (the corpus is the judged pool); nDCG@10 on
  the grades, hit@3 = grade >= 2 (TREC DL's passage convention), queries with such a passage.

Per row: n, nDCG@10 and hit@3 before and after, the paired difference (after - before) with its 95%
bootstrap CI over queries, the share of top-3 passages under 400 characters, and (in-domain sets) the
share of top-3 passages the synth checks call boilerplate. Nothing here trains or tunes the model.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHORT = 400  # characters: a passage under this is a fragment (a heading, a contents line, a caption)


def ndcg10(ranked, rel, condensed=False):
    ranked = [d for d in ranked if d in rel] if condensed else list(ranked)
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def paired(before, after, seed=0, n=2000):
    import numpy as np

    d = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), (n, len(d)))].mean(axis=1)
    return {
        "diff": round(float(d.mean()), 4),
        "ci": [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)],
    }


def read_jsonl(p):
    return [json.loads(x) for x in Path(p).read_text(encoding="utf-8").splitlines() if x.strip()]


def beir_set(folder, split=None, min_grade=1):
    """(ids, texts, queries {qid: text}, qrels {qid: {doc: grade}}) of a BEIR-layout folder."""
    folder = Path(folder)
    corpus = read_jsonl(folder / "corpus.jsonl")
    queries = {str(r["_id"]): r["text"] for r in read_jsonl(folder / "queries.jsonl")}
    qfile = folder / "qrels" / f"{split}.tsv" if split else folder / "qrels.tsv"
    qrels: dict = {}
    for i, line in enumerate(qfile.read_text().splitlines()):
        p = line.split("\t")
        if i and len(p) == 3:
            qrels.setdefault(p[0], {})[p[1]] = int(p[2])
    qrels = {q: r for q, r in qrels.items() if q in queries and max(r.values()) >= min_grade}
    ids = [str(c["_id"]) for c in corpus]
    texts = [(c.get("title", "") + " " + c["text"]).strip() for c in corpus]
    return ids, texts, queries, qrels


def rank_lists(first, reranker, qtexts, pool):
    """{list name: ranked ids per query}: the first stage's top `pool`, reranked as configured and by
    the cross-encoder alone."""
    import numpy as np

    pools = [[d for d, _ in r] for r in first.search(qtexts, pool)]
    cross = reranker.cross_scores(qtexts, pools)
    mixed = reranker.rescore(qtexts, pools)
    return {
        "before": pools,
        "after": [[pl[i] for i in np.argsort(-np.asarray(s), kind="stable")] for pl, s in zip(pools, mixed)],
        "cross-encoder alone": [
            [pl[i] for i in np.argsort(-np.asarray(s), kind="stable")] for pl, s in zip(pools, cross)
        ],
    }


def measure(name, sets_row, lists, qids, qrels, texts, hit_grade, condensed, boiler, judged=None, label_of=None):
    """Rows for one set and one first stage: before, after (as configured), the cross-encoder alone.
    `judged` ({qid: ids with a label}): holes@10 counts the top-10 passages outside it (default: qrels).
    `label_of(qid, id)` (the run's label store: the assessor's 0-3 grade, or None): the top-3 short
    passages are split into gold, answering (graded 2+), not answering and unlabelled, so that a short
    passage that answers is told from a contents line."""
    import numpy as np

    counts_holes = condensed or judged is not None
    judged = judged or {q: set(qrels[q]) for q in qids}
    out = {"n": len(qids)}
    per = {}
    for key, ranked in lists.items():
        nd = [ndcg10(r, qrels[q], condensed) for q, r in zip(qids, ranked)]
        top3 = [([d for d in r if d in qrels[q]] if condensed else r)[:3] for q, r in zip(qids, ranked)]
        hit = [float(any(qrels[q].get(d, 0) >= hit_grade for d in t)) for q, t in zip(qids, top3)]
        row = {
            "ndcg@10": round(float(np.mean(nd)), 4),
            "hit@3": round(float(np.mean(hit)), 4),
            "short_top3": round(float(np.mean([len(texts[d]) < SHORT for r in ranked for d in r[:3]])), 4),
        }
        if boiler is not None:
            row["boilerplate_top3"] = round(float(np.mean([d in boiler for r in ranked for d in r[:3]])), 4)
        if label_of is not None:
            slots = [(q, d) for q, r in zip(qids, ranked) for d in r[:3]]
            other = [(q, d) for q, d in slots if len(texts[d]) < SHORT and d not in qrels[q]]
            grades = [label_of(q, d) for q, d in other]
            row["short_not_gold_top3"] = round(len(other) / len(slots), 4)
            # unlabelled counted with the passages that do not answer: the share's upper bound
            row["short_not_answering_top3"] = round(sum(g is None or g < 2 for g in grades) / len(slots), 4)
            row["short_unlabelled_top3"] = round(sum(g is None for g in grades) / len(slots), 4)
        if counts_holes:
            row["holes@10"] = round(
                float(np.mean([sum(d not in judged[q] for d in r[:10]) for q, r in zip(qids, ranked)])), 2
            )
        per[key] = (nd, hit)
        out[key] = row
    for key in ("after", "cross-encoder alone"):
        out[key]["ndcg@10_diff"] = paired(per["before"][0], per[key][0])
        out[key]["hit@3_diff"] = paired(per["before"][1], per[key][1])
    out["per_query"] = {"qids": qids, "ndcg@10": {k: [round(x, 4) for x in v[0]] for k, v in per.items()}}
    sets_row[name] = out
    print(name, json.dumps({k: v for k, v in out.items() if k != "per_query"}), flush=True)
    return out


def hole_config(config, store):
    """The bench's own labelling run: its label store `store` (results/<run>/labels), apart from any
    study's, read and written by `spacelm label import --config C --set paths.results_dir=... --set
    run_name=...` as HOLES_HOWTO prints."""
    from spacelm.config import load_config

    store = Path(store)
    return load_config(config, {"paths": {"results_dir": str(store.parent.parent)}, "run_name": store.parent.name})


def hole_pairs(lists_by_stage, qids, queries, qrels, chunks, have):
    """The (question, passage) pairs in any list's top 10 that neither the set's labels nor the
    hole store (`have`: {(qid, chunk id): grade}) grade, as label-export rows."""
    from spacelm.stages.labels import pair_row

    out, seen = [], set()
    for lists in lists_by_stage:
        for ranked in lists.values():
            for q, r in zip(qids, ranked):
                for d in r[:10]:
                    if d in qrels[q] or (q, d) in have or (q, d) in seen:
                        continue
                    seen.add((q, d))
                    out.append(pair_row(q, chunks[d], "reranker-holes", queries[q]))
    return out


def hole_standing(cfg_holes, n):
    """The hole labels' assessor and standing (standing.json of the hole store's run)."""
    from spacelm.stages.labels import read_standing

    got = read_standing(cfg_holes)
    rel = [a for a in got.get("assessors", []) if a.get("kind") == "relevance"]
    return {
        "labels": n,
        "store": str(Path(cfg_holes.labels_dir).relative_to(ROOT)),
        "assessors": [
            {k: a.get(k) for k in ("assessor", "figure", "value", "floor", "passes", "n_calibration")} for a in rel
        ],
        "kappa_ge2_ci": rel[0]["measures"].get("kappa_ge2_ci") if rel else None,
    }


def hole_grades(cfg_holes, qids, queries, chunks):
    """{(qid, chunk id): grade} of the hole store's labels over these queries and chunks."""
    from spacelm.lib.labels.store import LabelStore, Span

    st = LabelStore(cfg_holes.labels_dir)
    span_of = {cid: Span.of_chunk(c) for cid, c in chunks.items()}
    pairs = [(q, d) for q in qids for d in chunks]
    got = st.relevance_grades(pairs, queries, span_of) if len(st) else {}
    return {k: v for k, v in got.items() if v is not None}


def updated(out: Path, record: dict) -> dict:
    """`record` (a run over some of the sets) merged into the earlier output `out` of the same
    checkpoint and config: its sets replace theirs, the others stay; `remade` lists each partial run."""
    if not out.is_file():
        raise SystemExit(f"--update: {out} does not exist; measure every set first (no --update)")
    old = json.loads(out.read_text())
    same = lambda r: ((r.get("checkpoint") or {}).get("sha256"), r.get("config"), r.get("overrides"), r.get("pool"))
    if same(old) != same(record):
        raise SystemExit(f"--update: {out} describes another checkpoint or config {same(old)}; measure every set again")
    sets = {**old["sets"], **record["sets"]}
    remade = [*old.get("remade", []), {"sets": sorted(record["sets"]), "seconds": record["seconds"]}]
    keep = {k: v for k, v in old.items() if k not in ("sets", "remade")}
    return {**keep, **{k: v for k, v in record.items() if k != "seconds"}, "sets": sets, "remade": remade}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", default="results/reranker.json")
    ap.add_argument("--labels", help="in-domain graded labels (BEIR layout), e.g. ../shared/judge/space-corpus")
    ap.add_argument("--scifact", help="BEIR SciFact folder (its test split is measured)")
    ap.add_argument("--scifact-queries", type=int, default=100)
    ap.add_argument(
        "--trec", help="TREC DL 2020 folder (BEIR layout with qrels.tsv), e.g. ../shared/judge/trec-dl-2020"
    )
    ap.add_argument("--sets", default="golden,labels,scifact,trec-dl-2020")
    ap.add_argument("--first", default="bm25,dense", help="first stages measured (a subset of bm25,dense)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="config override")
    ap.add_argument(
        "--holes-store",
        default="results/bench/reranker-holes/labels",
        help="label store of the in-domain set's holes (graded by the suite's assessor); when it holds labels, "
        "`labels-full` rows score full top-10 lists with them",
    )
    ap.add_argument(
        "--export-holes",
        metavar="DIR",
        help="write the in-domain set's holes (top-10 passages of any list that no label grades) as blind "
        "label batches in DIR, NIST pairs mixed in (spacelm label export's format); the assessor's answers come "
        "back with the `spacelm label import` command this prints",
    )
    ap.add_argument("--batches", type=int, default=0, help="--export-holes: batches (default: 130 items each)")
    ap.add_argument("--draw", type=int, default=1, help="--export-holes: the NIST calibration draw")
    ap.add_argument(
        "--update",
        action="store_true",
        help="keep the sets of --out this run does not measure (--sets names those it remakes, e.g. labels after "
        "its holes were labelled); refused unless --out describes the same checkpoint and config",
    )
    args = ap.parse_args(argv)

    from spacelm.config import load_config
    from spacelm.lib.io import write_json
    from spacelm.lib.llm.models import TRAINED_META, is_trained, resolve_model_path, trained_folder, trained_name
    from spacelm.lib.retrieval.bm25 import BM25Retriever
    from spacelm.lib.retrieval.dense import DenseRetriever
    from spacelm.lib.retrieval.rerankers import CrossEncoderReranker
    from spacelm.lib.synth.checks import boilerplate_reason
    from spacelm.runner.data import golden_questions, load_chunks
    from spacelm.stages.retrieve import gold_qrels

    cfg = load_config(args.config, sets=args.overrides)
    rc = cfg.retrieval
    if rc.reranker.kind != "cross-encoder":
        raise SystemExit(
            f"{args.config}: retrieval.reranker.kind is {rc.reranker.kind!r}; this bench measures a cross-encoder"
        )
    wanted = args.sets.split(",")
    pool = int(rc.pool) if float(rc.pool).is_integer() and rc.pool >= 1 else 100
    model_path = resolve_model_path(rc.reranker.model)
    record = {
        "config": args.config,
        **({"overrides": args.overrides} if args.overrides else {}),
        "model": rc.reranker.model,
        "pool": pool,
        "short_passage_chars": SHORT,
        "intervals": "95% bootstrap over queries (2,000 draws), paired: after - before",
    }
    if is_trained(rc.reranker.model):
        meta = json.loads((trained_folder(trained_name(rc.reranker.model)) / TRAINED_META).read_text())
        record["checkpoint"] = {
            "sha256": meta["sha256"],
            "settings": meta["settings"],
            "sources": [{k: v for k, v in s.items() if k != "query_ids"} for s in meta["training"]["sources"]],
            "pairs": meta["training"]["pairs"],
            "result": meta["result"],
        }
    else:
        record["checkpoint"] = {"path": str(model_path)}
    sets: dict = {}
    record["sets"] = sets
    t0 = time.perf_counter()

    firsts_wanted = set(args.first.split(","))

    def stages(ids, texts, dense_cache):
        firsts = {"bm25": lambda: BM25Retriever(rc.bm25).index(ids, texts)}
        firsts["dense"] = lambda: DenseRetriever.from_config(rc.dense, dense_cache, rc.resolved_device()).index(
            ids, texts
        )
        rr = CrossEncoderReranker(
            rc.reranker.model, dict(zip(ids, texts)), rc.reranker.batch_size, "fp32", rc.resolved_device(), rc.bm25
        )
        return {k: make() for k, make in firsts.items() if k in firsts_wanted}, rr

    cache = cfg.cache_dir
    if "golden" in wanted or "labels" in wanted or "run" in wanted:
        chunks = load_chunks(cfg)
        ids, texts = [c.chunk_id for c in chunks], [c.text for c in chunks]
        text_of = dict(zip(ids, texts))
        boiler = {c.chunk_id for c in chunks if boilerplate_reason(c.text)}
        firsts, rr = stages(ids, texts, cache)
        record["weight"] = rr.bm25_weight
        by_id = {c.chunk_id: c for c in chunks}
        from spacelm.lib.labels.store import RELEVANCE, LabelStore, Span, relevance_key

        run_labels = LabelStore(cfg.labels_dir).labels(RELEVANCE)  # read once, for every set and first stage

        def labelled(questions: dict):
            """The run's label store as `measure`'s label_of, for questions {qid: text}."""
            return lambda q, d: (run_labels.get(relevance_key(questions[q], Span.of_chunk(by_id[d]))) or {}).get(
                "grade"
            )

        if "golden" in wanted:
            golden = [g for g in golden_questions(cfg, chunks) if g["answerable"]]
            qrels = {q: r for q, r in gold_qrels(golden, chunks).items()}
            queries = {g["qid"]: g["question"] for g in golden}
            qids = sorted(qrels)
            for fs, first in firsts.items():
                lists = rank_lists(first, rr, [queries[q] for q in qids], pool)
                measure(f"golden/{fs}", sets, lists, qids, qrels, text_of, 1, False, boiler, None, labelled(queries))
        if "run" in wanted:  # the run's own questions, against the chunks holding each one's evidence span
            from spacelm.runner.data import load_questions

            run_qs = [q for q in load_questions(cfg, chunks, answerable=None) if q["answerable"]]
            qrels = gold_qrels(run_qs, chunks)
            queries = {q["qid"]: q["question"] for q in run_qs}
            qids = sorted(q for q in qrels if q in queries)
            for fs, first in firsts.items():
                lists = rank_lists(first, rr, [queries[q] for q in qids], pool)
                measure(f"run/{fs}", sets, lists, qids, qrels, text_of, 1, False, boiler, None, labelled(queries))
        if "labels" in wanted and args.labels:
            _, _, queries, qrels = beir_set(args.labels, min_grade=2)
            qids = sorted(qrels)
            cfg_holes = hole_config(args.config, args.holes_store)
            have = hole_grades(cfg_holes, qids, queries, by_id)
            all_lists = {}
            for fs, first in firsts.items():
                lists = all_lists[fs] = rank_lists(first, rr, [queries[q] for q in qids], pool)
                measure(f"labels/{fs}", sets, lists, qids, qrels, text_of, 2, True, boiler)
            if have:
                full = {q: {**{d: g for (qq, d), g in have.items() if qq == q}, **qrels[q]} for q in qids}
                judged = {q: set(full[q]) for q in qids}
                record["holes_labels"] = hole_standing(cfg_holes, len(have))
                for fs, lists in all_lists.items():
                    measure(f"labels-full/{fs}", sets, lists, qids, full, text_of, 2, False, boiler, judged)
            if args.export_holes:
                from spacelm.stages import labels as st_labels

                items = hole_pairs(all_lists.values(), qids, queries, qrels, by_id, have)
                n_batches = args.batches or max(1, round((len(items) * 1.1 + 100) / 130))
                meta = st_labels.export(cfg_holes, "pairs", n_batches, Path(args.export_holes), args.draw, items)
                print(json.dumps(meta, indent=1))
                print(
                    f"import: spacelm label import --config {args.config} --set paths.results_dir="
                    f"{cfg_holes.paths.results_dir} --set run_name={cfg_holes.run_name} --from {args.export_holes} "
                    "--assessor NAME"
                )
    for name, folder, split, min_grade, nq in (
        ("scifact", args.scifact, "test", 1, args.scifact_queries),
        ("trec-dl-2020", args.trec, None, 2, None),
    ):
        if name not in wanted or not folder:
            continue
        ids, texts, queries, qrels = beir_set(folder, split, min_grade)
        if nq:
            qrels = {q: qrels[q] for q in sorted(qrels)[:nq]}
        firsts, rr = stages(ids, texts, cache)
        qids = sorted(qrels)
        for fs, first in firsts.items():
            lists = rank_lists(first, rr, [queries[q] for q in qids], pool)
            measure(f"{name}/{fs}", sets, lists, qids, qrels, dict(zip(ids, texts)), min_grade, False, None)
    record["seconds"] = round(time.perf_counter() - t0, 1)
    if args.update:
        record = updated(Path(args.out), record)
    write_json(Path(args.out), record)
    print(f"wrote {args.out} ({record['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
