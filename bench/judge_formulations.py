"""Which way of asking the embedded 1.5B model gives the most valid relevance grades, and what
each costs: the features of several judge formulations on the same human-labelled pairs.

    python bench/judge_formulations.py collect --source trec-dl-2020 --source scifact-train \
        --source scifact-test            # model calls; resumable (one JSONL row per pair and pass)
    python bench/judge_formulations.py analyse  # no model: fits, held-out figures, reference judges

Formulations (each pass runs over all pairs of a source in question order, so the prefix reuse
is what a real run gets):

- ``digit``   today's 0-3 prompt (`relevance.txt`): the probability of each digit, read as the
              expected grade;
- ``yesno``   a yes/no question (`relevance_yesno.txt`): P(yes);
- ``fewshot`` four fixed graded examples in the system message (`relevance_fewshot.txt`, the same
              for every pair, so they stay in the shared prefix), then two instructions on one
              prefix: the 0-3 digit and yes/no;
- ``ql``      query likelihood: the mean log-probability of the question's tokens written after
              the passage (`query_likelihood.txt`), and the same with an empty passage, so that
              ``ql - ql_empty`` measures what the passage adds (a pointwise mutual information);
- ``cosine``  the cosine of the embedded MiniLM retriever between question and passage.

`analyse` fits a logistic combination and cut points into 0-3 on training pairs only (TREC DL
2020 by query folds; SciFact train) and reports held-out agreement beside the reference judges
(GPT-4o with UMBRELA, Rank1-7B, monoT5) on exactly the same TREC pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import LLMConfig  # noqa: E402
from spacelm.lib.judge.validity import is_graded, sample_check_pairs  # noqa: E402
from spacelm.lib.llm.prompting import render  # noqa: E402
from spacelm.lib.llm.types import Request  # noqa: E402
from spacelm.lib.retrieval.beir import load_beir  # noqa: E402

SOURCES = {
    "trec-dl-2020": ("../shared/judge/trec-dl-2020", "test", 30),
    "scifact-train": ("../shared/beir/scifact", "train", 20),
    "scifact-test": ("../shared/beir/scifact", "test", 30),
}
FEWSHOT_DIGIT = "Grade the passage for this question. Reply with one digit: 0, 1, 2 or 3."
FEWSHOT_YESNO = "Does the passage answer the question, completely or in good part? Reply yes or no."
PASSES = ("digit", "yesno", "fewshot", "ql")
FEATURES_FILE = ROOT / ".cache" / "spacelm" / "judge_formulations.jsonl"


# --------------------------------------------------------------------------- model calls
def last_logprobs(backend) -> np.ndarray:
    ptr = backend._llama_cpp.llama_get_logits_ith(backend.llm.ctx, -1)
    logits = np.ctypeslib.as_array(ptr, shape=(backend.llm.n_vocab(),)).astype(np.float64)
    m = logits.max()
    return logits - (m + math.log(np.exp(logits - m).sum()))


def continuation_logprob(backend, messages: list, text: str) -> tuple[float, int]:
    """Mean log-probability per token of `text` as the assistant's reply to `messages`."""
    toks, _ = backend.prompt_tokens(messages)
    cont = backend.llm.tokenize(text.strip().encode("utf-8"), add_bos=False, special=False)
    backend._eval_with_prefix_reuse(toks)
    total = 0.0
    for t in cont:
        total += float(last_logprobs(backend)[t])
        backend.llm.eval([t])
    backend.prompt_tokens_evaluated += len(cont)
    return total / max(1, len(cont)), len(cont)


def choose(backend, messages: list, choices: list) -> dict:
    comp = backend.complete(Request(messages=messages, choices=choices, max_tokens=2, temperature=0.0))
    return comp.choice_probs


def expected(probs: dict) -> float:
    return sum(int(k) * v for k, v in probs.items())


def run_pass(backend, name: str, pair: dict, passage: str, empty_ql: dict) -> dict:
    q = pair["question"]
    if name == "digit":
        p = choose(backend, render("relevance", question=q, passage=passage), ["0", "1", "2", "3"])
        return {"digit_probs": p, "digit_expected": expected(p)}
    if name == "yesno":
        p = choose(backend, render("relevance_yesno", question=q, passage=passage), ["yes", "no"])
        return {"yesno_p": p["yes"]}
    if name == "fewshot":
        p = choose(
            backend,
            render("relevance_fewshot", question=q, passage=passage, instruction=FEWSHOT_DIGIT),
            ["0", "1", "2", "3"],
        )
        y = choose(
            backend, render("relevance_fewshot", question=q, passage=passage, instruction=FEWSHOT_YESNO), ["yes", "no"]
        )
        return {"fewshot_probs": p, "fewshot_expected": expected(p), "fewshot_yes": y["yes"]}
    if name == "ql":
        if q not in empty_ql:
            empty_ql[q] = continuation_logprob(backend, render("query_likelihood", passage="(no passage)"), q)[0]
        lp, n = continuation_logprob(backend, render("query_likelihood", passage=passage), q)
        return {"ql": lp, "ql_empty": empty_ql[q], "ql_tokens": n}
    raise ValueError(name)


def load_rows() -> dict:
    rows = {}
    if FEATURES_FILE.is_file():
        for line in FEATURES_FILE.read_text().splitlines():
            r = json.loads(line)
            rows[(r["source"], r["qid"], r["chunk_id"], r["pass"])] = r
    return rows


def source_pairs(name: str, seed: int) -> tuple[list, dict, bool]:
    path, split, n = SOURCES[name]
    data = load_beir(ROOT / path, split)
    pairs = sample_check_pairs(data, n, seed, name)
    ids, texts = data.passages()
    need = {p["chunk_id"] for p in pairs}
    return pairs, {i: t for i, t in zip(ids, texts) if i in need}, is_graded(data.qrels)


def collect(args) -> int:
    from spacelm.lib.llm.llamacpp import LlamaCppBackend

    done = load_rows()
    backend = LlamaCppBackend(LLMConfig(model=args.model, n_ctx=4096, max_tokens=2, n_threads=args.threads))
    FEATURES_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(FEATURES_FILE, "a") as out:
        for name in args.source:
            pairs, passages, _ = source_pairs(name, args.seed)
            if not args.random_negatives:  # the reference judges have no label for unjudged passages
                pairs = [p for p in pairs if p["kind"] != "random_negative"]
            for pass_name in args.passes:
                empty_ql: dict = {}
                t_pass, n_new = time.perf_counter(), 0
                for p in pairs:
                    key = (name, p["qid"], p["chunk_id"], pass_name)
                    if key in done:
                        continue
                    ev0, t0 = backend.prompt_tokens_evaluated, time.perf_counter()
                    feats = run_pass(backend, pass_name, p, passages[p["chunk_id"]], empty_ql)
                    row = {
                        "source": name,
                        "qid": p["qid"],
                        "chunk_id": p["chunk_id"],
                        "pass": pass_name,
                        "label": p["label"],
                        "kind": p["kind"],
                        "seconds": round(time.perf_counter() - t0, 4),
                        "tokens_evaluated": backend.prompt_tokens_evaluated - ev0,
                        **feats,
                    }
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    done[key] = row
                    n_new += 1
                dt = time.perf_counter() - t_pass
                print(f"{name} {pass_name}: {n_new} new pairs in {dt:.0f} s", flush=True)
    backend.close()
    return 0


# --------------------------------------------------------------------------- analysis
def logit(p: float, eps: float = 1e-4) -> float:
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))


def cosines(pairs: list, passages: dict) -> dict:
    from spacelm.lib.retrieval.dense import make_encoder

    enc = make_encoder("embedded:minilm")
    qs = sorted({p["question"] for p in pairs})
    qv = dict(zip(qs, enc.encode_queries(qs)))
    ds = sorted({p["chunk_id"] for p in pairs})
    dv = dict(zip(ds, enc.encode_passages([passages[d] for d in ds])))
    return {(p["qid"], p["chunk_id"]): float(np.dot(qv[p["question"]], dv[p["chunk_id"]])) for p in pairs}


def feature_table(name: str, seed: int, rows: dict) -> list[dict]:
    """One record per pair with every feature that was collected for it."""
    pairs, passages, graded = source_pairs(name, seed)
    cos = cosines(pairs, passages)
    table = []
    for p in pairs:
        rec = {
            "source": name,
            "qid": p["qid"],
            "chunk_id": p["chunk_id"],
            "label": p["label"],
            "kind": p["kind"],
            "graded": graded,
            "cosine": cos[(p["qid"], p["chunk_id"])],
            "seconds": {},
            "tokens": {},
        }
        for pass_name in PASSES:
            r = rows.get((name, p["qid"], p["chunk_id"], pass_name))
            if r:
                rec.update(
                    {
                        k: v
                        for k, v in r.items()
                        if k
                        not in {"source", "qid", "chunk_id", "pass", "label", "kind", "seconds", "tokens_evaluated"}
                    }
                )
                rec["seconds"][pass_name] = r["seconds"]
                rec["tokens"][pass_name] = r["tokens_evaluated"]
        table.append(rec)
    return table


SCORES = {
    "digit (today: expected grade)": lambda r: r.get("digit_expected"),
    "yes/no P(yes)": lambda r: r.get("yesno_p"),
    "few-shot digit (expected grade)": lambda r: r.get("fewshot_expected"),
    "few-shot yes/no P(yes)": lambda r: r.get("fewshot_yes"),
    "query likelihood": lambda r: r.get("ql"),
    "query likelihood - empty passage (PMI)": lambda r: None if r.get("ql") is None else r["ql"] - r["ql_empty"],
    "MiniLM cosine": lambda r: r.get("cosine"),
}
COMBOS = {
    "fewshot + cosine": ("fewshot_expected", "fewshot_yes", "cosine"),
    "fewshot yes/no + cosine": ("fewshot_yes", "cosine"),
    "digit + cosine": ("digit_expected", "cosine"),
    "yesno + cosine": ("yesno_p", "cosine"),
    "pmi + cosine": ("pmi", "cosine"),
    "ql + pmi + cosine": ("ql", "pmi", "cosine"),
    "digit + yesno + cosine": ("digit_expected", "yesno_p", "cosine"),
    "fewshot + yesno + cosine": ("fewshot_expected", "fewshot_yes", "yesno_p", "cosine"),
    "all": ("digit_expected", "yesno_p", "fewshot_expected", "fewshot_yes", "pmi", "ql", "cosine"),
    "digit + yesno + fewshot + cosine": ("digit_expected", "yesno_p", "fewshot_expected", "fewshot_yes", "cosine"),
}


def design(rows: list[dict], feats: tuple) -> np.ndarray:
    def val(r, f):
        if f == "pmi":
            return r["ql"] - r["ql_empty"]
        if f in ("yesno_p", "fewshot_yes"):
            return logit(r[f])
        return r[f]

    return np.array([[val(r, f) for f in feats] for r in rows], dtype=float)


def relevant(r: dict) -> int:
    return int(r["label"] >= (2 if r["graded"] else 1))


def fit_combo(train: list[dict], feats: tuple):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = design(train, feats), np.array([relevant(r) for r in train])
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)).fit(x, y)
    score = model.decision_function(x)
    return model, cut_points(score, train)


def cut_points(score: np.ndarray, rows: list[dict]) -> list[float]:
    """The library's cut points (the same rule a shipped calibration uses)."""
    from spacelm.lib.judge.calibrated import cut_points as fit_cuts

    return fit_cuts(score, np.array([r["label"] for r in rows]), np.array([r["graded"] for r in rows]))


def metrics(rows: list[dict], score: list, grade: list | None, n_boot: int = 1000, seed: int = 0) -> dict:
    """AUC of the score and binary kappa of grade >= 2 (and weighted kappa on graded labels),
    with 95% bootstrap intervals over queries (pairs of one query resampled together)."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    y = np.array([relevant(r) for r in rows])
    s = np.array(score, dtype=float)
    g = None if grade is None else np.array(grade)
    h = np.array([r["label"] for r in rows])
    qids = sorted({r["qid"] for r in rows})
    idx = {q: [i for i, r in enumerate(rows) if r["qid"] == q] for q in qids}

    def stat(ix):
        out = {"auc": roc_auc_score(y[ix], s[ix]) if 0 < y[ix].sum() < len(ix) else np.nan}
        if g is not None:
            out["kappa_binary"] = cohen_kappa_score(y[ix], (g[ix] >= 2).astype(int))
            if rows[0]["graded"]:
                out["kappa_weighted"] = cohen_kappa_score(h[ix], g[ix], weights="quadratic", labels=[0, 1, 2, 3])
        return out

    point = stat(np.arange(len(rows)))
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        pick = rng.choice(len(qids), len(qids))
        boots.append(stat(np.concatenate([idx[qids[i]] for i in pick])))
    res = {"n_pairs": len(rows), "n_queries": len(qids)}
    for k, v in point.items():
        vals = np.array([b[k] for b in boots], dtype=float)
        vals = vals[~np.isnan(vals)]
        res[k] = round(float(v), 4)
        res[k + "_ci"] = [round(float(np.quantile(vals, 0.025)), 4), round(float(np.quantile(vals, 0.975)), 4)]
    return res


def reference_labels(folder: Path) -> dict:
    refs = {}
    for f in sorted((folder / "reference_judges").glob("*.qrels.txt")):
        lab = {}
        for line in f.read_text().splitlines():
            q, _, d, g = line.split()
            lab[(q, d)] = int(g)
        if max(lab.values(), default=0) <= 1:  # a binary judge: its 1 reads as grade 2 (relevant)
            lab = {k: 2 * v for k, v in lab.items()}
        refs[f.name.replace(".qrels.txt", "")] = lab
    return refs


def cost(rows: list[dict], passes: tuple) -> dict:
    secs = [sum(r["seconds"].get(p, 0) for p in passes) for r in rows if all(p in r["seconds"] for p in passes)]
    toks = [sum(r["tokens"].get(p, 0) for p in passes) for r in rows if all(p in r["tokens"] for p in passes)]
    return {
        "seconds_per_pair": round(float(np.mean(secs)), 3) if secs else None,
        "tokens_evaluated_per_pair": round(float(np.mean(toks)), 1) if toks else None,
    }


PASSES_OF = {
    "digit (today: expected grade)": ("digit",),
    "yes/no P(yes)": ("yesno",),
    "few-shot digit (expected grade)": ("fewshot",),
    "few-shot yes/no P(yes)": ("fewshot",),
    "query likelihood": ("ql",),
    "query likelihood - empty passage (PMI)": ("ql",),
    "MiniLM cosine": (),
}


def combo_passes(feats: tuple) -> tuple:
    p = {
        "digit_expected": "digit",
        "yesno_p": "yesno",
        "fewshot_expected": "fewshot",
        "fewshot_yes": "fewshot",
        "pmi": "ql",
        "ql": "ql",
    }
    return tuple(sorted({p[f] for f in feats if f in p}))


def has(r: dict, feats: tuple) -> bool:
    need = {"pmi": "ql"}
    return all(r.get(need.get(f, f)) is not None for f in feats)


def analyse(args) -> int:
    from sklearn.model_selection import GroupKFold

    rows = load_rows()
    tables = {s: feature_table(s, args.seed, rows) for s in SOURCES}
    out = {"sources": {}, "note": __doc__.split("\n\n")[0]}
    trec = [r for r in tables["trec-dl-2020"] if r["kind"].startswith("grade_")]
    refs = reference_labels(ROOT / SOURCES["trec-dl-2020"][0])
    for name, table in tables.items():
        judged = [r for r in table if not r["kind"].startswith("random")]  # the LLM passes skip them
        res = {}
        for label, fn in SCORES.items():
            sub = [r for r in judged if fn(r) is not None]
            if len(sub) < 20:
                continue
            grade = [round(fn(r)) for r in sub] if "digit" in label else None
            res[label] = {**metrics(sub, [fn(r) for r in sub], grade), **cost(sub, PASSES_OF[label])}
        out["sources"][name] = {"single": res}
    # combinations, held out: TREC by 5 query folds (+ SciFact train always in training), and a
    # final fit on TREC + SciFact train applied to SciFact test
    for combo, feats in COMBOS.items():
        tr = [r for r in trec if has(r, feats)]
        sf_train = [r for r in tables["scifact-train"] if has(r, feats)]
        if len(tr) < 40:
            continue
        groups = [r["qid"] for r in tr]
        oof_score, oof_grade = np.zeros(len(tr)), np.zeros(len(tr), dtype=int)
        for fit_ix, test_ix in GroupKFold(n_splits=5).split(tr, groups=groups):
            train = [tr[i] for i in fit_ix] + sf_train
            model, cuts = fit_combo(train, feats)
            s = model.decision_function(design([tr[i] for i in test_ix], feats))
            oof_score[test_ix], oof_grade[test_ix] = s, np.digitize(s, cuts)
        held = {**metrics(tr, list(oof_score), list(oof_grade)), **cost(tr, combo_passes(feats))}
        out["sources"]["trec-dl-2020"].setdefault("combined_held_out", {})[combo] = held
        model, cuts = fit_combo(tr + sf_train, feats)
        sf_test = [r for r in tables["scifact-test"] if has(r, feats)]
        if len(sf_test) >= 20:
            s = model.decision_function(design(sf_test, feats))
            out["sources"]["scifact-test"].setdefault("combined", {})[combo] = {
                **metrics(sf_test, list(s), list(np.digitize(s, cuts))),
                **cost(sf_test, combo_passes(feats)),
            }
        lr = model[-1]
        out.setdefault("fits", {})[combo] = {
            "features": list(feats),
            "scaler_mean": model[0].mean_.tolist(),
            "scaler_scale": model[0].scale_.tolist(),
            "coef": lr.coef_[0].tolist(),
            "intercept": float(lr.intercept_[0]),
            "cut_points": cuts,
        }
    # reference judges on exactly the judged TREC pairs
    ref_res = {}
    for name, lab in refs.items():
        sub = [r for r in trec if (r["qid"], r["chunk_id"]) in lab]
        g = [lab[(r["qid"], r["chunk_id"])] for r in sub]
        ref_res[name] = metrics(sub, g, g)
    out["sources"]["trec-dl-2020"]["reference_judges"] = ref_res
    if args.export:
        out["exported"] = export(args, tables, out)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1)[:6000])
    return 0


def measure_cost(args) -> int:
    """Seconds and prompt tokens per graded pair, today's digit prompt against a calibration,
    on the same TREC DL pairs in one process (each method over all pairs in turn, twice, so
    prefix reuse is as in a run), through the library code a run uses; also checks that the
    library's features equal the study's."""
    from spacelm.lib.judge.calibrated import load_calibration
    from spacelm.lib.judge.relevance import RelevanceJudging, grade_pairs
    from spacelm.lib.llm import LLM

    pairs, passages, _ = source_pairs("trec-dl-2020", args.seed)
    pairs = [p for p in pairs if p["kind"] != "random_negative"][: args.n]
    cal_spec = args.calibration
    llm = LLM(LLMConfig(model=args.model, n_ctx=4096, max_tokens=2, n_threads=args.threads))
    methods = {
        "digit (today)": RelevanceJudging("prompt", "relevance"),
        "calibrated": RelevanceJudging("calibrated", "relevance", cal_spec),
    }
    llm.chat(render("relevance", question="warm up", passage="warm up"), choices=["0", "1"], max_tokens=2)
    out = {}
    for rep in range(2):
        for name, judging in methods.items():
            b = llm.backend
            ev0, t0 = b.prompt_tokens_evaluated, time.perf_counter()
            rows = grade_pairs(llm, pairs, passages, judging=judging)
            dt = time.perf_counter() - t0
            res = out.setdefault(name, {"seconds_per_pair": [], "tokens_evaluated_per_pair": []})
            res["seconds_per_pair"].append(round(dt / len(pairs), 3))
            res["tokens_evaluated_per_pair"].append(round((b.prompt_tokens_evaluated - ev0) / len(pairs), 1))
            if name == "calibrated" and rep == 0:
                study = load_rows()
                diffs = [
                    abs(r["features"][f] - study[("trec-dl-2020", r["qid"], r["chunk_id"], "fewshot")][f])
                    for r in rows
                    for f in ("fewshot_expected", "fewshot_yes")
                    if f in r["features"] and ("trec-dl-2020", r["qid"], r["chunk_id"], "fewshot") in study
                ]
                res["max_feature_difference_vs_study"] = round(max(diffs), 4) if diffs else None
    ratio = np.mean(out["calibrated"]["seconds_per_pair"]) / np.mean(out["digit (today)"]["seconds_per_pair"])
    result = {
        "pairs": len(pairs),
        "model": args.model,
        "calibration": load_calibration(cal_spec).name,
        "methods": out,
        "seconds_ratio_calibrated_to_today": round(float(ratio), 3),
    }
    print(json.dumps(result, indent=1))
    path = Path(args.out)
    full = json.loads(path.read_text()) if path.is_file() else {}
    full["cost"] = result
    path.write_text(json.dumps(full, indent=1) + "\n")
    return 0


def export(args, tables: dict, out: dict) -> str:
    """Fit the chosen combination on every training pair (TREC DL 2020's study queries and
    SciFact train) with the library's `fit_calibration` and write it as a shipped calibration,
    recording the queries it used (a run's judge check leaves them out)."""
    from spacelm.lib.judge.calibrated import calibration_path, fit_calibration
    from spacelm.lib.llm.models import model_identity

    feats = COMBOS[args.combo]
    train = [r for r in tables["trec-dl-2020"] if r["kind"].startswith("grade_") and has(r, feats)]
    train += [r for r in tables["scifact-train"] if has(r, feats)]
    raw = [dict(r, pmi=(r["ql"] - r["ql_empty"]) if r.get("ql") is not None else None) for r in train]
    fitted_on: dict = {}
    for r in train:
        fitted_on.setdefault(r["source"], set()).add(r["qid"])
    held = out["sources"]["trec-dl-2020"].get("combined_held_out", {}).get(args.combo, {})
    sf = out["sources"]["scifact-test"].get("combined", {}).get(args.combo, {})
    cal = fit_calibration(
        raw,
        feats,
        args.export,
        args.model,
        judge_sha256=model_identity(args.model).get("sha256"),
        fitted_on={k: sorted(v) for k, v in fitted_on.items()},
        description=(
            f"logistic combination of {', '.join(feats)} of {args.model} (prompts relevance_fewshot / "
            "relevance_yesno / relevance) and the MiniLM cosine, cut into 0-3; fitted on "
            f"{len(train)} human-labelled pairs of TREC DL 2020 ({len(fitted_on.get('trec-dl-2020', []))} "
            f"queries) and SciFact train ({len(fitted_on.get('scifact-train', []))} queries) by "
            "bench/judge_formulations.py"
        ),
        measured={
            "trec-dl-2020 held out (5 query folds)": {
                k: held.get(k)
                for k in (
                    "n_pairs",
                    "auc",
                    "auc_ci",
                    "kappa_binary",
                    "kappa_binary_ci",
                    "kappa_weighted",
                    "kappa_weighted_ci",
                )
            },
            "scifact-test": {k: sf.get(k) for k in ("n_pairs", "auc", "auc_ci", "kappa_binary", "kappa_binary_ci")},
        },
    )
    path = calibration_path(args.export)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cal.to_dict(), indent=1) + "\n")
    return str(path.relative_to(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["collect", "analyse", "cost"])
    ap.add_argument("--n", type=int, default=24, help="cost: pairs to time")
    ap.add_argument(
        "--export", metavar="NAME", help="analyse: write the calibration of --combo as spacelm/data/judges/NAME.json"
    )
    ap.add_argument("--combo", default="fewshot + cosine", help="analyse --export: which combination")
    ap.add_argument("--calibration", default="qwen2.5-coder-1.5b", help="cost: the calibration to time")
    ap.add_argument("--source", action="append", choices=sorted(SOURCES))
    ap.add_argument("--passes", nargs="+", default=list(PASSES), choices=PASSES)
    ap.add_argument("--model", default="embedded:qwen2.5-coder-1.5b")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--random-negatives", action="store_true", help="also grade the unjudged random negatives")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "judge_formulations.json"))
    args = ap.parse_args(argv)
    if args.command == "collect":
        args.source = args.source or list(SOURCES)
        return collect(args)
    return measure_cost(args) if args.command == "cost" else analyse(args)


if __name__ == "__main__":
    sys.exit(main())
