"""Turning texts into L2-normalised float32 vectors with a named sentence-embedding model.

The name travels with a corpus (in its manifest) so queries are never embedded by a different
model than the chunks were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from ragshield.config import Settings
from ragshield.retrieval.embeddings import load_embedder

PACKAGED_EMBEDDING_NAME = "all-MiniLM-L6-v2 (packaged)"


class SentenceEncoder(Protocol):
    """What ragshield uses of a sentence-transformers model."""

    def encode(self, sentences: list[str], **options: Any) -> np.ndarray: ...


@dataclass
class Embedder:
    name: str
    model: SentenceEncoder
    batch_size: int = 64

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """One batched call for all `texts`: a (len(texts), dim) float32 array of unit rows."""
        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, show_progress_bar=progress,
            convert_to_numpy=True, normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def embedding_model_name(settings: Settings) -> str:
    return settings.embedding_model or PACKAGED_EMBEDDING_NAME


def default_embedder(settings: Settings) -> Embedder:
    """The configured sentence-transformers model (the packaged MiniLM unless set)."""
    return Embedder(embedding_model_name(settings), load_embedder(settings))
