"""Reranking the top-n retrieved passages: by a cross-encoder, by embedding similarity, or (in
llm_rerank.py) by the LLM. A reranker keeps each passage's retrieval score and adds its own
under meta["rerank_score"]."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, Sequence

import numpy as np

from ragshield.errors import OptionError
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.retriever import BatchRetriever, Retriever
from ragshield.types import Passage


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]: ...


def reorder(passages: Sequence[Passage], scores: Sequence[float | None], reranker: str,
            extra: Sequence[dict[str, Any]] | None = None) -> list[Passage]:
    """Copies of `passages` by descending score (stable). A passage without a score keeps its
    place; the scored ones are sorted among the remaining places."""
    scored = {i: score for i, score in enumerate(scores) if score is not None}
    order = list(range(len(passages)))
    for place, i in zip(scored, sorted(scored, key=lambda i: -scored[i])):
        order[place] = i
    return [
        replace(passages[i], meta={**passages[i].meta, "reranker": reranker,
                                   "rerank_score": scores[i], **(extra[i] if extra else {})})
        for i in order
    ]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder that gives one relevance score per (query, passage)."""

    def __init__(self, model: Any, *, batch_size: int = 32):
        if isinstance(model, str):
            from sentence_transformers import CrossEncoder

            self.name = f"cross-encoder:{model}"
            model = CrossEncoder(model)
        else:
            self.name = "cross-encoder"
        self.model, self.batch_size = model, batch_size

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        scores = np.asarray(self.model.predict([(query, p.text) for p in passages],
                                               batch_size=self.batch_size, show_progress_bar=False))
        if scores.ndim != 1:
            raise OptionError(f"{self.name} gives {scores.shape[-1]} scores per pair; a relevance "
                             "cross-encoder gives one")
        return reorder(passages, [float(s) for s in scores], self.name)


class EmbeddingReranker:
    """Cosine similarity between the query and each passage, by an embedding model (possibly a
    stronger one than the corpus was indexed with)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.name = f"embedding:{embedder.name}"

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        if not passages:
            return []
        vectors = self.embedder.encode([query, *(p.text for p in passages)])
        return reorder(passages, [float(s) for s in vectors[1:] @ vectors[0]], self.name)


class RerankingRetriever(BatchRetriever):
    """Retrieves `top_n` candidates (at least k), reranks them and keeps the best k."""

    def __init__(self, retriever: Retriever, reranker: Reranker, *, top_n: int = 20):
        if top_n < 1:
            raise OptionError(f"top_n must be at least 1, got {top_n}")
        self.retriever, self.reranker, self.top_n = retriever, reranker, top_n
        self.name = f"{retriever.name}+rerank"

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        candidates = self.retriever.search_many(queries, max(k, self.top_n))
        return [self.reranker.rerank(q, c)[:k] for q, c in zip(queries, candidates)]
