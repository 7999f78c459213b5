"""A relevance grader that shares nothing with the systems it grades: the embedded judge's own
signals only (no retriever's cosine), measured on labelled pairs in and out of domain, and the
calibration that ships in `spacelm/data/judges/`.

    python bench/judge_independent.py collect    # model calls through the run's call cache; resumable
    python bench/judge_independent.py analyse [--export NAME --combo COMBO]   # no model call

Sources (labels): TREC DL 2020 (NIST, 0-3), SciFact train and test (binary), and the in-domain
reference set `../shared/judge/space-corpus` (an LLM assessor's 0-3, not people's: its
PROVENANCE.md). On TREC and SciFact the pairs are drawn as `spacelm judge-check` draws them; in
domain every labelled pair is graded (466: each golden question's BM25 and MiniLM top 4), so the
same grades serve the fit, the check drawn one pair per label per query, and the system-bias audit.

Features are those of `spacelm/lib/judge/calibrated.py` (prompt features of the judge model). The
calls go through the library's cached LLM front end with the runs' cache folder, so a run that
grades the same pairs later makes no model call for them.

`analyse` fits each combination on training sources only and reports, held out: in domain by five
folds over documents (every fold's training also holds TREC's fit queries and SciFact train), TREC
by five query folds, SciFact test whole. Figures: AUC, binary kappa at each boundary (grade >= 1,
>= 2, = 3), weighted kappa, each with a 95% bootstrap CI over queries, and the reference judges
(GPT-4o/UMBRELA, Rank1-7B, monoT5) on exactly the same TREC pairs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.lib.judge import calibrated as cal_lib  # noqa: E402
from spacelm.lib.judge.validity import sample_check_pairs  # noqa: E402
from spacelm.lib.retrieval.beir import load_beir  # noqa: E402

SHARED = ROOT.parent / "shared"
# name -> (folder, split, queries drawn (None: every labelled pair), role)
SOURCES = {
    "space-corpus": (SHARED / "judge" / "space-corpus", "test", None, "in domain"),
    "trec-dl-2020": (SHARED / "judge" / "trec-dl-2020", "test", 54, "fit and check"),
    "scifact-train": (SHARED / "beir" / "scifact", "train", 20, "fit"),
    "scifact-test": (SHARED / "beir" / "scifact", "test", 30, "check"),
}
FEATURES = ("fewshot_expected", "fewshot_yes", "fewshot_mirror", "digit_expected")
SEED = 13
COMBOS = {
    "fewshot yes": ("fewshot_yes",),
    "fewshot both ways": ("fewshot_both",),
    "fewshot both ways + digit": ("fewshot_both", "fewshot_expected"),
    "fewshot yes + mirror + digit": ("fewshot_yes", "fewshot_mirror", "fewshot_expected"),
    "fewshot both ways + paper digit": ("fewshot_both", "digit_expected"),
    "fewshot both ways + digit + paper digit": ("fewshot_both", "fewshot_expected", "digit_expected"),
    # with --embedding: the cosine of a model no compared system may read
    "fewshot both ways + digit + cosine": ("fewshot_both", "fewshot_expected", "cosine"),
    "fewshot both ways + cosine": ("fewshot_both", "cosine"),
}


def source_pairs(name: str) -> tuple[list[dict], dict, bool]:
    """(pairs, passages, graded labels) of a source; in domain every labelled pair, each marked
    `drawn` when `spacelm judge-check` would draw it (one passage per label per query)."""
    folder, split, n, _ = SOURCES[name]
    data = load_beir(folder, split)
    ids, texts = data.passages()
    text = dict(zip(ids, texts))
    if n is None:
        drawn = {
            (p["qid"], p["chunk_id"])
            for p in sample_check_pairs(data, len(data.queries), SEED, name)
            if p["kind"] != "random_negative"
        }
        pairs = [
            {
                "source": name,
                "qid": q,
                "question": data.queries[q],
                "chunk_id": d,
                "label": int(g),
                "kind": f"grade_{g}",
                "purpose": ["study"],
                "drawn": (q, d) in drawn,
            }
            for q in sorted(data.qrels)
            if q in data.queries
            for d, g in sorted(data.qrels[q].items())
            if d in text
        ]
    else:
        pairs = [
            dict(p, drawn=True)
            for p in sample_check_pairs(data, n, SEED, name)
            if p["kind"] != "random_negative"  # the reference judges have no label for unjudged passages
        ]
    graded = max((g for rel in data.qrels.values() for g in rel.values()), default=0) > 1
    return pairs, {p["chunk_id"]: text[p["chunk_id"]] for p in pairs}, graded


def _llm(threads: int | None):
    from spacelm.lib.llm import LLMConfig
    from spacelm.lib.llm.frontend import open_llm

    cfg = LLMConfig(backend="llamacpp", model="embedded:qwen2.5-coder-1.5b", max_tokens=8, n_threads=threads)
    return open_llm(cfg, ROOT / ".cache" / "spacelm")


def collect(args) -> int:
    llm = _llm(args.threads)
    for feats in args.passes:
        for name in args.source:
            pairs, passages, _ = source_pairs(name)
            t0, calls0 = time.perf_counter(), llm.stats.calls
            # in slices, so an interrupted pass keeps (in the call cache) what it finished
            for i in range(0, len(pairs), 40):
                cal_lib.measure_features(llm, pairs[i : i + 40], passages, feats.split(","), f"{name} {feats}")
            print(
                f"{name} [{feats}]: {len(pairs)} pairs, {llm.stats.calls - calls0} new calls, "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    llm.release()
    return 0


def feature_table(llm, embedding: str | None = None) -> list[dict]:
    """Every pair of every source with the features the cache holds for it (cache only: a pair
    whose calls are missing has them as None), and with `embedding` the cosine of that model."""
    rows = []
    enc = None
    if embedding:
        from spacelm.lib.retrieval.dense import make_encoder

        enc = make_encoder(embedding, cache_dir=ROOT / ".cache" / "spacelm")
    for name in SOURCES:
        pairs, passages, graded = source_pairs(name)
        raw, tokens, _ = cal_lib.measure_features(_CacheOnly(llm), pairs, passages, FEATURES)
        if enc is not None:
            cos = cal_lib.cosine_features(enc, pairs, passages)
            for p, r in zip(pairs, raw):
                r["cosine"] = cos[(p["qid"], p["chunk_id"])]
        for p, r, t in zip(pairs, raw, tokens):
            rows.append(
                dict(
                    {k: p[k] for k in ("source", "qid", "chunk_id", "label", "kind", "drawn")},
                    graded=graded,
                    prompt_tokens=t,
                    **cal_lib.add_derived(r),
                )
            )
    return rows


class _CacheOnly:
    """An LLM front end that answers from the cache and never loads the model (missing: None)."""

    def __init__(self, llm):
        self.llm = llm

    def chat_many(self, reqs, progress=None):
        from spacelm.lib.llm.types import Completion

        out = []
        for r in reqs:
            hit = self.llm.cache.get(self.llm._key(r.resolved(self.llm.cfg)))
            out.append(Completion(**hit, cached=True) if hit else Completion(text="", choice_probs=None))
        return out


def relevant(r: dict) -> int:
    return int(r["label"] >= (2 if r["graded"] else 1))


def fit(train: list[dict], feats: tuple):
    return cal_lib.fit_calibration(train, feats, "study", "embedded:qwen2.5-coder-1.5b")


def has(r: dict, feats: tuple) -> bool:
    return all(r.get(f) is not None for f in cal_lib.base_features(feats))


def scored(cal, rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        s = cal.score([cal_lib.feature_value(f, r) for f in cal.features])
        out.append(dict(r, score=s, grade=cal.grade(s)))
    return out


def figures(rows: list[dict], graded: bool, n_boot: int) -> dict:
    from spacelm.lib.judge.validity import boundary_agreement

    return boundary_agreement(rows, n_boot, SEED, graded)


def held_out_in_domain(table: list[dict], feats: tuple, fit_rows: list[dict], n_boot: int) -> dict:
    """Five folds over the documents of the in-domain questions: each fold graded by a fit on the
    other four plus the out-of-domain fit rows; figures on the drawn pairs and on all pairs."""
    from sklearn.model_selection import GroupKFold

    ind = [r for r in table if r["source"] == "space-corpus" and has(r, feats)]
    doc = {r["qid"]: r["chunk_id"].split(":")[0] for r in ind if r["label"] == 3}
    groups = [doc.get(r["qid"], r["qid"]) for r in ind]
    out = []
    for tr, te in GroupKFold(n_splits=5).split(ind, groups=groups):
        cal = fit([ind[i] for i in tr] + fit_rows, feats)
        out += scored(cal, [ind[i] for i in te])
    res = {"drawn (one pair per label per query)": figures([r for r in out if r["drawn"]], True, n_boot)}
    res["all labelled pairs"] = figures(out, True, n_boot)
    return res


def analyse(args) -> int:
    from sklearn.model_selection import GroupKFold

    llm = _llm(None)
    table = feature_table(llm, args.embedding)
    out_embedding = args.embedding
    by = {s: [r for r in table if r["source"] == s] for s in SOURCES}
    out: dict = {"note": __doc__.split("\n\n")[0], "sources": {}, "combos": {}, "embedding": out_embedding}
    for s, rows in by.items():
        ok = [r for r in rows if r.get("fewshot_yes") is not None]
        out["sources"][s] = {"pairs": len(rows), "with_features": len(ok)}
        single = {}
        for f in (*FEATURES, "fewshot_both", *(("cosine",) if args.embedding else ())):
            # the score alone ranks (the AUC); grade 0 is a placeholder the AUC does not read
            sub = [dict(r, score=r[f], grade=0) for r in rows if r.get(f) is not None]
            if len(sub) >= 20:
                single[f] = figures(sub, rows[0]["graded"], args.n_boot)["auc"]
        out["sources"][s]["single_feature_auc"] = single
    trec = by["trec-dl-2020"]
    trec_qids = sorted({r["qid"] for r in trec})
    for combo, feats in COMBOS.items():
        sf_train = [r for r in by["scifact-train"] if has(r, feats)]
        tr_rows = [r for r in trec if has(r, feats)]
        if len(tr_rows) < 40:
            continue
        res: dict = {"features": list(feats)}
        # in domain, by document folds; out-of-domain rows always in training
        if sum(has(r, feats) for r in by["space-corpus"]) >= 100:
            res["space-corpus (5 document folds)"] = held_out_in_domain(table, feats, tr_rows + sf_train, args.n_boot)
        # TREC by query folds, trained on the other folds + SciFact train + all in-domain pairs
        ind = [r for r in by["space-corpus"] if has(r, feats)]
        oof = []
        for fi, te in GroupKFold(n_splits=5).split(tr_rows, groups=[r["qid"] for r in tr_rows]):
            cal = fit([tr_rows[i] for i in fi] + sf_train + ind, feats)
            oof += scored(cal, [tr_rows[i] for i in te])
        res["trec-dl-2020 (5 query folds)"] = figures(oof, True, args.n_boot)
        # SciFact test under a fit on everything else
        cal = fit(tr_rows + sf_train + ind, feats)
        sf = [r for r in by["scifact-test"] if has(r, feats)]
        if len(sf) >= 20:
            res["scifact-test"] = figures(scored(cal, sf), False, args.n_boot)
        out["combos"][combo] = res
    # reference judges on exactly the TREC pairs
    from spacelm.lib.judge.validity import read_reference_judges, reference_agreement

    refs = read_reference_judges(SOURCES["trec-dl-2020"][0] / "reference_judges")
    base = [dict(r, grade=0, score=None) for r in trec]
    out["trec_reference_judges"] = reference_agreement(base, refs, args.n_boot, SEED, True)
    out["trec_queries"] = len(trec_qids)
    if args.export:
        out["chosen"] = args.combo
        out["exported"] = export(args, by, out)
    prev = Path(args.out)
    if prev.is_file() and "audit" in json.loads(prev.read_text()):  # `audit` writes its own part
        out["audit"] = json.loads(prev.read_text())["audit"]
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1)[:20000])
    return 0


def in_domain_half(rows: list[dict]) -> set:
    """The in-domain queries of every other document (documents sorted by id; a query's document is
    that of its highest-labelled passage): the fit's half, so a judge check keeps the other
    documents' queries, none of whose documents the fit saw."""
    best: dict = {}
    for r in rows:
        doc = str(r["chunk_id"]).rsplit(":", 1)[0]
        if r["qid"] not in best or r["label"] > best[r["qid"]][0]:
            best[r["qid"]] = (r["label"], doc)
    docs = sorted({d for _, d in best.values()})
    fit_docs = set(docs[::2])
    return {q for q, (_, d) in best.items() if d in fit_docs}


def export(args, by: dict, out: dict) -> str:
    """Fit `--combo` on TREC DL 2020's first half of queries (SciFact train with
    --with-scifact-train, the in-domain pairs with --with-in-domain: a judge check then leaves
    every query it was fitted on out) and write it as a shipped calibration."""
    from spacelm.lib.llm.models import model_identity

    feats = COMBOS[args.combo]
    trec_q = sorted({r["qid"] for r in by["trec-dl-2020"]})
    fit_q = set(trec_q[: len(trec_q) // 2])
    train = [r for r in by["trec-dl-2020"] if r["qid"] in fit_q and has(r, feats)]
    if args.with_scifact_train:
        train += [r for r in by["scifact-train"] if has(r, feats)]
    if args.with_in_domain:
        train += [r for r in by["space-corpus"] if has(r, feats)]
    elif args.with_in_domain_half:
        half = in_domain_half(by["space-corpus"])
        train += [r for r in by["space-corpus"] if r["qid"] in half and has(r, feats)]
    fitted_on: dict = {}
    for r in train:
        fitted_on.setdefault(r["source"], set()).add(r["qid"])
    model = "embedded:qwen2.5-coder-1.5b"
    probe = cal_lib.fit_calibration(train, feats, args.export, model)
    shipped = shipped_figures(probe, by, fitted_on, feats, args.n_boot)
    out["shipped"] = shipped
    cal = cal_lib.fit_calibration(
        train,
        feats,
        args.export,
        model,
        judge_sha256=model_identity(model).get("sha256"),
        embedding_model=args.embedding if "cosine" in feats else None,
        fitted_on={k: sorted(v) for k, v in fitted_on.items()},
        description=(
            f"logistic combination of {', '.join(feats)} of {model} (prompt relevance_fewshot, asked both ways), "
            f"cut into 0-3; no retriever's score enters it; fitted on {len(train)} labelled pairs: "
            + ", ".join(f"{k} ({len(v)} queries)" for k, v in sorted(fitted_on.items()))
            + " by bench/judge_independent.py"
        ),
        measured={
            k: {x: v.get(x) for x in ("n_pairs", "auc", "auc_ci", "boundaries")}
            for k, v in shipped.items()
            if "auc" in v
        },
    )
    path = cal_lib.calibration_path(args.export)
    path.write_text(json.dumps(cal.to_dict(), indent=1) + "\n")
    return str(path.relative_to(ROOT))


def shipped_figures(cal, by: dict, fitted_on: dict, feats: tuple, n_boot: int) -> dict:
    """The exported calibration on every pair it was not fitted on: in domain (drawn as the judge
    check draws, and every labelled pair), TREC DL 2020's other half of queries with the reference
    judges on exactly those pairs, SciFact test (and train when it was not fitted)."""
    from spacelm.lib.judge.validity import read_reference_judges, reference_agreement

    out: dict = {}
    fitted = fitted_on.get("space-corpus", set())
    ind = [r for r in by["space-corpus"] if has(r, feats) and r["qid"] not in fitted]
    if ind:  # the in-domain queries the fit did not see (all of them, or the other documents' half)
        held = ", queries of the documents not fitted" if fitted else ""
        out[f"space-corpus, drawn one pair per label per query{held}"] = figures(
            scored(cal, [r for r in ind if r["drawn"]]), True, n_boot
        )
        out[f"space-corpus, every labelled pair{held}"] = figures(scored(cal, ind), True, n_boot)
    held = [r for r in by["trec-dl-2020"] if r["qid"] not in fitted_on.get("trec-dl-2020", set()) and has(r, feats)]
    rows = scored(cal, held)
    out["trec-dl-2020, queries not fitted"] = figures(rows, True, n_boot)
    refs = read_reference_judges(SOURCES["trec-dl-2020"][0] / "reference_judges")
    out["trec-dl-2020 reference judges, same pairs"] = reference_agreement(rows, refs, n_boot, SEED, True)
    for name in ("scifact-test", "scifact-train"):
        if name not in fitted_on:
            out[name] = figures(scored(cal, [r for r in by[name] if has(r, feats)]), False, n_boot)
    return out


def audit(args) -> int:
    """The shipped grader's system-bias audit in domain, as `spacelm judge-check` runs it: the
    configured systems (`--config`'s retrieval settings: BM25, MiniLM, each reranked) retrieve their
    top `judge_check.bias_top_k` from the in-domain labelled passages for every question; the
    grader grades them (from the call cache the study filled); `system_bias` per system and per
    pair of systems, and the grader's agreement at each boundary on those pairs. Written to the
    output file's `audit`."""
    from spacelm.config import load_config
    from spacelm.lib.judge.relevance import RelevanceJudging, grade_pairs
    from spacelm.lib.judge.validity import boundary_agreement, system_bias
    from spacelm.stages.judge_check import audit_pairs

    cfg = load_config(args.config)
    folder, split, _, _ = SOURCES["space-corpus"]
    data = load_beir(folder, split)
    ids, texts = data.passages()
    qids = sorted(q for q in data.qrels if q in data.queries)
    k = cfg.judge_check.bias_top_k
    # the judge check's own audit (every labelled in-domain passage is searched: the pool is small)
    pairs, retrieved_by, _ = audit_pairs(cfg, data, qids, "space-corpus", graded=True)
    llm = _llm(None)
    judging = RelevanceJudging("calibrated", "relevance", cfg.grading.judging(cfg.root).calibration)
    text = dict(zip(ids, texts))
    rows = grade_pairs(llm, pairs, {p["chunk_id"]: text[p["chunk_id"]] for p in pairs}, judging=judging)
    for r, p in zip(rows, pairs):
        r.update(label=p["label"], kind="retrieved")
    res = {
        "config": args.config,
        "calibration": cfg.grading.calibration,
        "top_k": k,
        "questions": len(qids),
        "pairs": len(pairs),
        "model_calls": llm.stats.calls,
        "system_bias": system_bias(rows, retrieved_by, args.n_boot, SEED, True),
        "agreement_on_retrieved_pairs": boundary_agreement(rows, args.n_boot, SEED, True),
    }
    path = Path(args.out)
    full = json.loads(path.read_text()) if path.is_file() else {}
    full["audit"] = res
    path.write_text(json.dumps(full, indent=1) + "\n")
    print(json.dumps(res["system_bias"], indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["collect", "analyse", "audit"])
    ap.add_argument("--config", default="configs/standard.yaml", help="audit: the run settings whose systems to audit")
    ap.add_argument("--source", action="append", choices=sorted(SOURCES))
    ap.add_argument(
        "--passes",
        nargs="+",
        default=["fewshot_expected,fewshot_yes,fewshot_mirror", "digit_expected"],
        help="collect: comma-separated features per pass (each pass over every source in turn)",
    )
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--export", metavar="NAME", help="analyse: write --combo as spacelm/data/judges/NAME.json")
    ap.add_argument("--combo", default="fewshot both ways + digit")
    ap.add_argument("--with-in-domain", action="store_true", help="export: fit on the in-domain pairs too")
    ap.add_argument(
        "--with-in-domain-half",
        action="store_true",
        help="export: fit on the in-domain queries of every other document too (the check keeps the rest)",
    )
    ap.add_argument("--with-scifact-train", action="store_true", help="export: fit on SciFact train too")
    ap.add_argument("--embedding", help="analyse: add the cosine of this embedding model as a feature")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "judge_independent.json"))
    args = ap.parse_args(argv)
    if args.command == "collect":
        args.source = args.source or list(SOURCES)
        return collect(args)
    return audit(args) if args.command == "audit" else analyse(args)


if __name__ == "__main__":
    sys.exit(main())
