"""The torch models on CUDA against the CPU, on a machine with a GPU: encoding, reranking and a few
training steps of the cross-encoder, each timed on both devices, and the scores checked to agree.

    python bench/gpu_smoke.py --model PATH [--n 512] [--steps 8] [--out results/bench/gpu_smoke.json]

`--model`: a small sentence-transformers encoder folder given by path (the shipped MiniLM is at
`spacelm models path minilm`; nothing is downloaded). The same folder
is read as a segment-cosine cross-encoder (the suite's trained kind) for reranking and training.
Without a GPU it says so and exits 0 having measured nothing. Exit 1 when a device's scores
disagree: embeddings' cosine below 0.999, or reranking scores more than 1e-2 apart (the model's
scale is 20).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = (
    "orbit debris conjunction manoeuvre probability covariance screening operator satellite station "
    "telemetry ground pass attitude thruster reentry disposal altitude drag solar activity tracking"
).split()


def texts(n: int, length: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(length)) for _ in range(n)]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 3)


def encode(model: str, device: str, passages: list[str]):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model, device=device)
    st.encode(passages[:8], batch_size=8)  # warm up (CUDA context, kernels)
    return timed(lambda: st.encode(passages, batch_size=64, normalize_embeddings=True, convert_to_numpy=True))


def rerank(model: str, device: str, pairs: list[tuple[str, str]]):
    from spacelm.lib.retrieval.segment_cosine import SegmentCosineCrossEncoder

    ce = SegmentCosineCrossEncoder.from_encoder(model, 256).to(device)
    ce.predict(pairs[:8], batch_size=8)
    return timed(lambda: ce.predict(pairs, batch_size=32))


def train(model: str, device: str, steps: int, out: Path):
    from spacelm.lib.retrieval.cross_encoder import TrainingPair, train_cross_encoder
    from spacelm.lib.retrieval.rerankers.settings import RerankerTraining

    qs = texts(steps, 8, 1)
    ps = texts(steps * 4, 60, 2)
    pairs = [
        TrainingPair(f"q{i}", q, f"p{i}-{j}", ps[4 * i + j], 1.0 if j == 0 else 0.0, "smoke")
        for i, q in enumerate(qs)
        for j in range(4)
    ]
    settings = RerankerTraining(batch_size=4, epochs=1, max_length=128)
    result, seconds = timed(lambda: train_cross_encoder(pairs, model, settings, 13, out, None, device))
    return result, seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a sentence-transformers encoder folder (by path)")
    ap.add_argument("--n", type=int, default=512, help="passages to encode and pairs to rerank")
    ap.add_argument("--steps", type=int, default=8, help="training steps on each device")
    ap.add_argument("--out", default="results/bench/gpu_smoke.json")
    args = ap.parse_args(argv)
    if not Path(args.model).is_dir():
        print(
            f"--model {args.model}: not a folder; give a sentence-transformers encoder folder by path", file=sys.stderr
        )
        return 2
    import numpy as np
    import torch

    if not torch.cuda.is_available():
        print("bench/gpu_smoke.py needs a GPU: torch sees no CUDA device on this machine; nothing measured")
        return 0
    passages = texts(args.n, 120, 0)
    pairs = list(zip(texts(args.n, 8, 3), passages))
    rows, ok = {"device": torch.cuda.get_device_name(0), "n": args.n}, True
    (e_cpu, t_cpu), (e_gpu, t_gpu) = encode(args.model, "cpu", passages), encode(args.model, "cuda", passages)
    cos = float(np.min(np.sum(e_cpu * e_gpu, axis=1)))
    rows["encode"] = {"cpu_s": t_cpu, "cuda_s": t_gpu, "speedup": round(t_cpu / t_gpu, 2), "min_cosine": round(cos, 6)}
    ok &= cos >= 0.999
    (s_cpu, r_cpu), (s_gpu, r_gpu) = rerank(args.model, "cpu", pairs), rerank(args.model, "cuda", pairs)
    diff = float(np.max(np.abs(np.asarray(s_cpu) - np.asarray(s_gpu))))
    rows["rerank"] = {
        "cpu_s": r_cpu,
        "cuda_s": r_gpu,
        "speedup": round(r_cpu / r_gpu, 2),
        "max_abs_diff": round(diff, 6),
    }
    ok &= diff <= 1e-2
    tmp = Path(args.out).parent / "gpu_smoke_models"
    (res_cpu, tr_cpu), (res_gpu, tr_gpu) = (
        train(args.model, "cpu", args.steps, tmp / "cpu"),
        train(args.model, "cuda", args.steps, tmp / "cuda"),
    )
    rows["train"] = {
        "steps": res_gpu.steps,
        "cpu_s": tr_cpu,
        "cuda_s": tr_gpu,
        "speedup": round(tr_cpu / tr_gpu, 2),
        "loss_last_cpu": res_cpu.loss_last,
        "loss_last_cuda": res_gpu.loss_last,
    }
    ok &= bool(np.isfinite(res_gpu.loss_last))
    rows["agree"] = ok
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    print(json.dumps(rows, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
