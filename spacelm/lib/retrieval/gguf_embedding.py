"""Dense embeddings from a GGUF embedding model through llama.cpp's embedding mode.

`GGUFEncoder` has the interface of `retrieval.Encoder` (``encode_passages``, ``encode_queries``,
``key``, ``encoded``, the same SQLite embedding cache) but runs a GGUF file with
llama-cpp-python: mean pooling, L2-normalised vectors, texts cut to the context by tokens (the
end is dropped, the model's [SEP] kept), several texts packed into one llama.cpp batch as
separate sequences. The embedded default is nomic-embed-text-v1.5 (2,048 tokens, 768-d), which
wants the task prefixes ``search_query: `` / ``search_document: ``; they are used when the
config leaves the prefixes empty.

`retrieval.make_encoder` picks this encoder for ``embedded:<a gguf-embedding model>`` or a
``*.gguf`` path and the sentence-transformers `Encoder` otherwise.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..deps import require as _require
from ..progress import progress_bar

DEFAULT_N_CTX = 2048
NOMIC_QUERY_PREFIX = "search_query: "
NOMIC_PASSAGE_PREFIX = "search_document: "
# tokens per llama.cpp batch: several short texts share one batch (sequence-isolated). Attention
# in a batch spans all its tokens, so on CPU small packs are as fast per token as one text per
# call (~600 tokens/s on 2 cores for SciFact abstracts) and much faster for short texts (queries).
PACK_TOKENS = 512
CACHE_EVERY = 64  # passages encoded between two writes to the embedding cache (a long run resumes)


def is_gguf_embedding(spec: str) -> bool:
    """True for `embedded:<name>` of a gguf-embedding model, or a path ending in .gguf."""
    if spec.startswith("embedded:"):
        from ..llm.models import EMBEDDED

        m = EMBEDDED.get(spec.split(":", 1)[1])
        return bool(m and m.kind == "gguf-embedding")
    return spec.lower().endswith(".gguf")


def is_nomic(spec: str, metadata: dict | None = None) -> bool:
    """A nomic-embed model: by name, or by the GGUF's architecture (nomic-bert)."""
    return "nomic-embed" in spec.lower() or (metadata or {}).get("general.architecture") == "nomic-bert"


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def pack(lengths: Sequence[int], max_tokens: int, max_texts: int) -> list[list[int]]:
    """Consecutive groups of indices whose token counts sum to at most `max_tokens` (a text
    longer than that alone) and that hold at most `max_texts` texts."""
    groups, cur, tot = [], [], 0
    for i, n in enumerate(lengths):
        if cur and (tot + n > max_tokens or len(cur) >= max_texts):
            groups.append(cur)
            cur, tot = [], 0
        cur.append(i)
        tot += n
    if cur:
        groups.append(cur)
    return groups


class GGUFEncoder:
    """A GGUF embedding model run by llama.cpp, with the on-disk embedding cache of `Encoder`."""

    def __init__(
        self,
        model: str,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
        cache_dir: Path | None = None,
        max_seq_length: int | None = None,
        n_threads: int | None = None,
        pack_tokens: int = PACK_TOKENS,
    ):
        from ..llm.models import model_identity, resolve_model_path

        llama_cpp = _require("llama_cpp", "GGUF embedding models (llama-cpp-python)")
        self.spec = model
        self.n_ctx = int(max_seq_length or DEFAULT_N_CTX)
        self.path = resolve_model_path(model)
        self.llm = llama_cpp.Llama(
            model_path=self.path,
            embedding=True,
            n_ctx=self.n_ctx,
            n_batch=self.n_ctx,
            n_ubatch=self.n_ctx,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            n_threads=n_threads or os.cpu_count(),
            n_threads_batch=n_threads or os.cpu_count(),
            flash_attn=True,
            verbose=False,
        )
        # flash attention: same vectors (cosine > 0.999999 to without), and a short text no longer
        # pays for attention over the whole 2,048-cell context (queries ~6x faster on CPU)
        nomic = is_nomic(model, getattr(self.llm, "metadata", None))
        self.query_prefix = query_prefix or (NOMIC_QUERY_PREFIX if nomic else "")
        self.passage_prefix = passage_prefix or (NOMIC_PASSAGE_PREFIX if nomic else "")
        self.batch_size = batch_size
        self.pack_tokens = min(pack_tokens, self.n_ctx)  # a longer text still runs, alone
        self.max_seq_length = self.n_ctx
        ident = model_identity(model)
        self.key = hashlib.sha256(
            f"gguf-mean|{ident.get('name')}|{ident.get('sha256')}|{self.n_ctx}".encode()
        ).hexdigest()[:16]
        self.cache = None
        if cache_dir:
            from ..llm.cache import EmbeddingCache

            self.cache = EmbeddingCache(Path(cache_dir) / "embeddings.sqlite")
        self.encoded = 0  # passages actually run through the model (cache misses)
        self.truncated = 0  # texts cut to the context
        self.tokens = 0  # tokens run through the model (after truncation, with [CLS]/[SEP])

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str) -> list[int]:
        """The token ids llama.cpp's `embed` feeds the model (with the [CLS]/[SEP] it adds)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    def fit(self, text: str) -> tuple[str, int]:
        """(text cut so that it holds at most n_ctx tokens, its token count). The cut is made on
        tokens and turned back into text, so the model still sees its closing [SEP]."""
        toks = self.tokenize(text)
        if len(toks) <= self.n_ctx:
            return text, len(toks)
        n_special = len(self.tokenize(""))
        keep = self.n_ctx - n_special
        body = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        while keep > 0:
            cut = self.llm.detokenize(body[:keep]).decode("utf-8", "ignore")
            n = len(self.tokenize(cut))
            if n <= self.n_ctx:
                self.truncated += 1
                return cut, n
            keep -= max(1, n - self.n_ctx)
        raise ValueError(f"cannot fit a text into {self.n_ctx} tokens")

    # ------------------------------------------------------------------ encoding
    def _embed(self, texts: list[str], progress: str | None = None, on_done=None) -> np.ndarray:
        """Normalised embeddings of `texts` (already prefixed); `on_done(indices, vectors)` is
        called after each llama.cpp batch."""
        if not texts:
            return np.zeros((0, self.llm.n_embd()), np.float32)
        fitted = [self.fit(t) for t in texts]
        out = np.zeros((len(texts), self.llm.n_embd()), np.float32)
        bar = progress_bar(len(texts), progress) if progress else None
        for group in pack([n for _, n in fitted], self.pack_tokens, max(1, self.batch_size)):
            vecs = _normalise(self.llm.embed([fitted[i][0] for i in group], normalize=False, truncate=True))
            out[group] = vecs
            self.tokens += sum(fitted[i][1] for i in group)
            if on_done:
                on_done(group, vecs)
            if bar is not None:
                bar.update(len(group))
        if bar is not None:
            bar.close()
        return out

    def encode_passages(self, texts: Sequence[str], progress: str | None = None) -> np.ndarray:
        texts = [self.passage_prefix + t for t in texts]
        if not self.cache:
            self.encoded += len(texts)
            return self._embed(texts, progress)
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = self.cache.get_many(self.key, hashes)
        miss = sorted({h: i for i, h in enumerate(hashes) if h not in found}.values())
        if miss:
            pending: list = []

            def store(group, vecs):
                for j, v in zip(group, vecs):
                    i = miss[j]
                    found[hashes[i]] = v
                    pending.append((hashes[i], v))
                if len(pending) >= CACHE_EVERY:
                    self.cache.put_many(self.key, pending)
                    pending.clear()

            self._embed([texts[i] for i in miss], progress, store)
            if pending:
                self.cache.put_many(self.key, pending)
            self.encoded += len(miss)
        return np.stack([found[h] for h in hashes]) if hashes else np.zeros((0, 1), np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.query_prefix + t for t in texts], None)
