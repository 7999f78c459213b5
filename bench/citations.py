"""Citations a small generator can produce: the same questions and passages, shown by chunk id
(the old prompt) and numbered [1]..[n] (the default), answered by the same model; the share of
answers with at least one valid citation, the share where a claim (a sentence) carries one
(a bare "[1]" does not count), and the citation accuracy, each with its n and a 95% bootstrap
CI over answers.

    python bench/citations.py --config configs/quick.yaml --n 60 --with-golden --out results/bench/citations_bench.json

Questions are the run's kept answerable synthetic questions, with `--with-golden` also the
answerable golden samples found in the chunks (seeded sample of `--n`); each is
answered from its source chunk plus `--wrong` chunks of other documents (shuffled with a
seed), the Table 2 setting where citations can be checked. Model calls go through the suite's
cache (`paths.cache_dir`), so a re-run costs nothing and an interrupted one resumes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib.answer.answers import generate  # noqa: E402
from spacelm.lib.answer.citations import citation_check  # noqa: E402
from spacelm.lib.answer.claims import split_claims  # noqa: E402
from spacelm.lib.llm import open_llm  # noqa: E402
from spacelm.lib.stats import bootstrap_ci  # noqa: E402
from spacelm.lib.synth.golden import load_golden, locate_samples  # noqa: E402
from spacelm.runner.data import golden_path, load_chunks, load_questions  # noqa: E402


def contexts(questions: list[dict], chunks: list, n_wrong: int, seed: int) -> list[dict]:
    items = []
    for q in questions:
        rng = random.Random(f"{seed}|{q['qid']}|citations")
        others = [c.chunk_id for c in chunks if c.doc_id != q["doc_id"]]
        ids = [q["source_chunk_id"], *rng.sample(others, min(n_wrong, len(others)))]
        rng.shuffle(ids)
        items.append({"qid": q["qid"], "question": q["question"], "pipeline": "B", "passage_ids": ids})
    return items


def golden_questions(cfg, chunks) -> list[dict]:
    """The answerable golden samples whose passage is found in a chunk, as evaluation questions."""
    samples = load_golden(golden_path(cfg))
    found, _ = locate_samples(samples, chunks, golden_path(cfg))
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    return [
        {"qid": s.id, "question": s.question, "source_chunk_id": found[s.id], "doc_id": doc_of[found[s.id]]}
        for s in samples
        if s.id in found
    ]


def summary(items: list[dict], n_boot: int, seed: int) -> dict:
    valid = [float(it["citation"]["n_valid"] > 0) for it in items]
    # a marker alone ("[1]") is valid but says nothing: count answers where a claim carries one
    claimed = [float(any(c["cited"] for c in split_claims(it["answer"], it["passage_ids"]))) for it in items]
    acc = [it["citation"]["citation_accuracy"] for it in items if it["citation"]["citation_accuracy"] is not None]
    lo, hi = bootstrap_ci(valid, None, n_boot, seed)
    alo, ahi = bootstrap_ci(acc, None, n_boot, seed)
    clo, chi = bootstrap_ci(claimed, None, n_boot, seed)
    r = lambda x: None if x != x else round(x, 3)
    return {
        "n_answers": len(items),
        "answers_with_valid_citation": r(sum(valid) / len(valid)) if valid else None,
        "ci": [r(lo), r(hi)],
        "answers_with_any_marker": r(sum(it["citation"]["n_cited"] > 0 for it in items) / len(items))
        if items
        else None,
        "answers_with_cited_claim": r(sum(claimed) / len(claimed)) if claimed else None,
        "answers_with_cited_claim_ci": [r(clo), r(chi)],
        "citation_accuracy": r(sum(acc) / len(acc)) if acc else None,
        "citation_accuracy_ci": [r(alo), r(ahi)],
        "n_with_markers": len(acc),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/quick.yaml")
    ap.add_argument("--n", type=int, default=20, help="questions (seeded sample of the kept answerable ones)")
    ap.add_argument("--wrong", type=int, default=2, help="chunks of other documents added to each context")
    ap.add_argument(
        "--with-golden",
        action="store_true",
        help="add the answerable golden samples located in the chunks (more questions, tighter CIs)",
    )
    ap.add_argument("--out", default="results/bench/citations_bench.json")
    a = ap.parse_args()
    cfg = load_config(a.config)
    chunks = load_chunks(cfg)
    questions = load_questions(cfg, chunks)
    if a.with_golden:
        questions += golden_questions(cfg, chunks)
    questions = sorted(random.Random(cfg.seed).sample(questions, min(a.n, len(questions))), key=lambda q: q["qid"])
    text_of = {c.chunk_id: c.text for c in chunks}
    known = set(text_of)
    gen = open_llm(cfg.models.generator, cfg.cache_dir)
    gen.stage = "bench-citations"
    out = {
        "config": a.config,
        "command": "python bench/citations.py " + " ".join(sys.argv[1:]),
        "generator": gen.identity.get("name"),
        "n_questions": len(questions),
        "wrong_per_context": a.wrong,
        "styles": {},
    }
    for style in ("ids", "numbered"):
        cfg.answer.citations = style
        items = contexts(questions, chunks, a.wrong, cfg.seed)
        generate(gen, items, text_of, cfg.answer_design())
        for it in items:
            it["citation"] = citation_check(it["answer"], it["passage_ids"], known)
        out["styles"][style] = summary(items, cfg.answer.n_bootstrap, cfg.seed)
        out["styles"][style]["examples"] = [it["answer"][:200] for it in items[:3]]
    gen.release()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    for style, s in out["styles"].items():
        print(
            f"{style:9s} answers with a valid citation {s['answers_with_valid_citation']} {s['ci']}, with a cited "
            f"claim {s['answers_with_cited_claim']} {s['answers_with_cited_claim_ci']} (n={s['n_answers']}); "
            f"citation accuracy {s['citation_accuracy']} (n={s['n_with_markers']})"
        )


if __name__ == "__main__":
    main()
