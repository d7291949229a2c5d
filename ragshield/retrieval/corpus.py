"""An ingested corpus in memory: its chunks, their stored embeddings, the BM25 and FAISS
indexes over them (row i of each is chunk i) and the manifest describing how it was built."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Sequence

import faiss
import numpy as np

from ragshield.retrieval.bm25_index import BM25Index
from ragshield.retrieval.chunking import Chunk
from ragshield.retrieval.index_config import DenseIndexConfig
from ragshield.types import Passage

FORMAT_VERSION = 1


@dataclass
class CorpusManifest:
    name: str
    chunk_tokens: int
    overlap: int
    embedding_model: str
    embedding_dim: int
    index: DenseIndexConfig
    documents: int
    chunks: int
    duplicates_dropped: int
    files: int
    created_at: str  # ISO 8601, UTC
    description: str = ""  # what the corpus holds, for people and for the source router
    inputs: list[str] = field(default_factory=list)  # the paths that were ingested
    skipped_files: list[str] = field(default_factory=list)
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "index": self.index.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusManifest:
        return cls(**{**data, "index": DenseIndexConfig(**data["index"])})


@dataclass
class Corpus:
    manifest: CorpusManifest
    chunks: Sequence[Chunk]  # a list, or the saved table read on demand
    embeddings: np.ndarray  # (chunks, dim) float32 unit rows; memory-mapped once saved
    bm25: BM25Index
    dense_index: faiss.Index
    chunk_ids: list[str] = field(default_factory=list)  # filled from `chunks` when not given

    def __post_init__(self) -> None:
        if not self.chunk_ids:
            self.chunk_ids = [chunk.id for chunk in self.chunks]

    @property
    def name(self) -> str:
        return self.manifest.name

    def __len__(self) -> int:
        return len(self.chunks)

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Row of each chunk id."""
        return {chunk_id: row for row, chunk_id in enumerate(self.chunk_ids)}

    def passage(self, row: int, score: float | None, **meta: Any) -> Passage:
        """Chunk `row` as a passage; `meta` gets the chunk's id, index and offsets, the corpus
        name, the given entries and, under "document", the further fields of its document."""
        chunk = self.chunks[row]
        details: dict[str, Any] = {
            "chunk_id": chunk.id, "chunk_index": chunk.index, "start": chunk.start,
            "end": chunk.end, "corpus": self.name, **meta,
        }
        if chunk.meta:
            details["document"] = dict(chunk.meta)
        return Passage(text=chunk.text, title=chunk.title, doc_id=chunk.doc_id,
                       score=None if score is None else float(score), meta=details)
