"""What reranking costs on this machine, per path: the trained cross-encoder in PyTorch fp32, PyTorch
dynamic int8, and ONNX Runtime (fp32 and dynamic int8), on the same pairs, beside its scores in fp32.

    python bench/reranker_speed.py --model trained:ce-minilm-space --chunks data/processed/space_corpus-256/chunks.jsonl

Takes --questions golden questions (or any query texts, --queries FILE one per line) and, for each, the first
--pool chunks BM25 ranks; scores every pair in each path (after one warm-up batch) and prints, per path,
milliseconds per pair, seconds per question at that pool, and agreement with fp32 (Spearman rank correlation
of the scores within each question, mean over questions; share of questions whose top 10 is the same set).
Paths are timed one after another in one process: compare their ratios, not absolute figures across machines.
Writes --out (JSON).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.lib.io import read_jsonl, write_json  # noqa: E402
from spacelm.lib.llm.models import resolve_model_path  # noqa: E402
from spacelm.lib.retrieval.bm25 import BM25Config, BM25Retriever  # noqa: E402
from spacelm.lib.retrieval.rerankers import quantise_int8  # noqa: E402
from spacelm.lib.retrieval.segment_cosine import SegmentCosineCrossEncoder  # noqa: E402


class OnnxScorer(SegmentCosineCrossEncoder):
    """The segment-cosine cross-encoder with its encoder exported to ONNX and run by ONNX Runtime; the
    tokenising, pooling and cosine are the model's own."""

    def __init__(self, ce: SegmentCosineCrossEncoder, folder: Path, int8: bool):
        import onnxruntime as ort
        import torch

        super().__init__(ce.model, ce.tokenizer, ce.max_length, ce.scale)
        path = folder / "encoder.onnx"
        f = ce.features(["a query"], ["a passage"])

        class Encoder(torch.nn.Module):  # positional inputs, one output: what the exporter traces
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.model(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state

        torch.onnx.export(
            Encoder(ce.model).eval(),
            (f["input_ids"], f["attention_mask"], torch.zeros_like(f["segment"])),
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")},
            opset_version=17,
            dynamo=False,
        )
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(path), str(folder / "encoder.int8.onnx"), weight_type=QuantType.QInt8)
            path = folder / "encoder.int8.onnx"
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 0
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def logits(self, queries, passages):
        import torch

        f = self.features(queries, passages)
        inputs = {
            "input_ids": f["input_ids"].numpy(),
            "attention_mask": f["attention_mask"].numpy(),
            "token_type_ids": torch.zeros_like(f["segment"]).numpy(),
        }
        (states,) = self.session.run(None, inputs)
        return self.score_states(torch.from_numpy(states), f["attention_mask"], f["segment"])


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a cross-encoder the suite trained: trained:<name>")
    ap.add_argument("--chunks", required=True, help="the chunks.jsonl to rank")
    ap.add_argument("--queries", default=str(ROOT / ".cache" / "spacelm" / "golden-beir" / "queries.jsonl"))
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--pool", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--paths", default="torch-fp32,torch-int8,onnx-fp32,onnx-int8")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "reranker_speed.json"))
    args = ap.parse_args(argv)
    rows = read_jsonl(Path(args.chunks))
    ids, texts = [r["chunk_id"] for r in rows], [r["text"] for r in rows]
    text_of = dict(zip(ids, texts))
    qpath = Path(args.queries)
    if qpath.suffix == ".jsonl":
        queries = [r["text"] for r in read_jsonl(qpath)][: args.questions]
    else:
        queries = [q.strip() for q in qpath.read_text(encoding="utf-8").splitlines() if q.strip()][: args.questions]
    pools = BM25Retriever(BM25Config(k1=0.9, b=0.4)).index(ids, texts).search(queries, args.pool)
    pairs = [[(q, text_of[d]) for d, _ in pool] for q, pool in zip(queries, pools)]
    folder = resolve_model_path(args.model)
    results, scores = {}, {}
    with tempfile.TemporaryDirectory(prefix="spacelm-onnx-") as tmp:
        for path in args.paths.split(","):
            if path.startswith("onnx") and importlib.util.find_spec("onnx") is None:
                results[path] = {"skipped": "the onnx package is not installed (pip install onnx)"}
                print(path, results[path], flush=True)
                continue
            ce = SegmentCosineCrossEncoder.load(folder)
            if path == "torch-int8":
                quantise_int8(ce)
            model = OnnxScorer(ce, Path(tmp), path.endswith("int8")) if path.startswith("onnx") else ce
            model.predict(pairs[0][: args.batch_size], batch_size=args.batch_size)  # warm-up
            t0 = time.perf_counter()
            scores[path] = [np.asarray(model.predict(p, batch_size=args.batch_size)) for p in pairs]
            seconds = time.perf_counter() - t0
            n = sum(map(len, pairs))
            results[path] = {
                "ms_per_pair": round(1000 * seconds / n, 2),
                "s_per_question": round(seconds / len(pairs), 2),
            }
            print(path, results[path], flush=True)
    for path, sc in scores.items():
        ref = scores.get("torch-fp32")
        if ref is None:
            break
        results[path]["spearman_vs_fp32"] = round(float(np.mean([spearman(a, b) for a, b in zip(sc, ref)])), 4)
        same = [set(np.argsort(-a)[:10]) == set(np.argsort(-b)[:10]) for a, b in zip(sc, ref)]
        results[path]["same_top10_share"] = round(float(np.mean(same)), 3)
    out = {
        "model": args.model,
        "chunks": args.chunks,
        "questions": len(pairs),
        "pool": args.pool,
        "batch_size": args.batch_size,
        "pairs": sum(map(len, pairs)),
        "paths": results,
        "note": "timed one path after another in one process on this machine; compare ratios",
    }
    write_json(Path(args.out), out)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
