"""Token-based chunking with the embedding model's own tokenizer, keeping char offsets, and
de-duplication of identical chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from tokenizers import Tokenizer

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.retrieval.documents import Document
from ragshield.retrieval.embeddings import packaged_embedding_path

ENCODE_BATCH = 256  # documents tokenized at once: bounds the memory the token offsets take


@dataclass
class Chunk:
    """A run of consecutive tokens of one document: `text == document.text[start:end]`."""

    id: str  # "<doc_id>#<index>"
    doc_id: str
    index: int  # position of the chunk within its document
    start: int  # char offsets into the document text
    end: int
    text: str
    title: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # further fields of the document

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.id, "doc_id": self.doc_id, "index": self.index,
                                  "start": self.start, "end": self.end, "text": self.text}
        if self.title is not None:
            record["title"] = self.title
        if self.meta:
            record["meta"] = self.meta
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Chunk:
        return cls(**record)


def load_chunk_tokenizer(settings: Settings) -> Tokenizer:
    """The fast tokenizer of the configured embedding model, without truncation or padding."""
    if settings.embedding_model is None:
        tokenizer = Tokenizer.from_file(str(packaged_embedding_path() / "tokenizer.json"))
    elif (Path(settings.embedding_model) / "tokenizer.json").is_file():
        tokenizer = Tokenizer.from_file(str(Path(settings.embedding_model) / "tokenizer.json"))
    else:
        from transformers import AutoTokenizer

        loaded = AutoTokenizer.from_pretrained(settings.embedding_model)
        if not loaded.is_fast:
            raise OptionError(f"{settings.embedding_model}: chunking needs a fast tokenizer")
        tokenizer = loaded.backend_tokenizer
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class TokenChunker:
    """Windows of `chunk_tokens` tokens; consecutive windows share `overlap` tokens."""

    def __init__(self, tokenizer: Tokenizer, chunk_tokens: int = 200, overlap: int = 0):
        if chunk_tokens < 1:
            raise OptionError(f"chunk size must be at least 1 token, got {chunk_tokens}")
        if not 0 <= overlap < chunk_tokens:
            raise OptionError(
                f"overlap must be at least 0 and smaller than the chunk size ({chunk_tokens}), "
                f"got {overlap}"
            )
        self.tokenizer = tokenizer
        self.chunk_tokens = chunk_tokens
        self.overlap = overlap

    def chunk(self, documents: Sequence[Document]) -> Iterator[Chunk]:
        for first in range(0, len(documents), ENCODE_BATCH):
            batch = documents[first : first + ENCODE_BATCH]
            texts = [document.text for document in batch]
            encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
            for document, encoding in zip(batch, encodings):
                yield from self._windows(document, encoding.offsets)

    def _windows(self, document: Document, offsets: list[tuple[int, int]]) -> Iterator[Chunk]:
        step = self.chunk_tokens - self.overlap
        for index, first in enumerate(range(0, len(offsets), step)):
            last = min(first + self.chunk_tokens, len(offsets)) - 1
            start, end = offsets[first][0], offsets[last][1]
            yield Chunk(
                id=f"{document.id}#{index}", doc_id=document.id, index=index, start=start, end=end,
                text=document.text[start:end], title=document.title, meta=document.meta,
            )
            if last == len(offsets) - 1:
                return


def deduplicate(chunks: Sequence[Chunk]) -> tuple[list[Chunk], int]:
    """The chunks without repeats of a text seen before (whitespace differences ignored), and
    how many were dropped; the first occurrence is kept."""
    seen: set[str] = set()
    kept: list[Chunk] = []
    for chunk in chunks:
        key = " ".join(chunk.text.split())
        if key not in seen:
            seen.add(key)
            kept.append(chunk)
    return kept, len(chunks) - len(kept)
