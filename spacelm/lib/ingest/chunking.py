"""Chunking: cleaned documents → semchunk passages with stable ids and page spans.

semchunk splits at the most meaningful boundary available (paragraphs, then lines, sentences,
clauses, words) so that every chunk fits a token budget. Tokens are counted with a tokenizer
that works offline (by default the embedded bi-encoder's WordPiece tokenizer, which is also the
dense retriever's, so the budget matches what that model sees). Same input and config give
byte-identical output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from ..llm.models import load_tokenizer
from .documents import Document


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    text: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    n_tokens: int

    def to_dict(self) -> dict:
        return asdict(self)


def token_counter(spec: str) -> Callable[[str], int]:
    """A function counting tokens of a text, without special tokens."""
    tok = load_tokenizer(spec)
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def chunk_document(doc: Document, chunker, counter: Callable[[str], int], overlap: float = 0.0) -> list[Chunk]:
    """Split one document; each chunk keeps its character span and the pages it covers."""
    texts, offsets = chunker(doc.text, offsets=True, overlap=overlap or None)
    chunks = []
    for n, (text, (a, b)) in enumerate(zip(texts, offsets)):
        chunks.append(
            Chunk(
                chunk_id=f"{doc.doc_id}:{n}",
                doc_id=doc.doc_id,
                text=text,
                page_start=doc.page_of(a),
                page_end=doc.page_of(max(a, b - 1)),
                char_start=a,
                char_end=b,
                n_tokens=counter(text),
            )
        )
    return chunks


def chunk_documents(
    docs: Iterable[Document], max_tokens: int, tokenizer: str = "embedded:minilm", overlap: float = 0.0
) -> list[Chunk]:
    """Chunk every document with one semchunk chunker (token budget `max_tokens`)."""
    import semchunk

    counter = token_counter(tokenizer)
    chunker = semchunk.chunkerify(counter, chunk_size=max_tokens)
    out: list[Chunk] = []
    for d in docs:
        out.extend(chunk_document(d, chunker, counter, overlap))
    return out
