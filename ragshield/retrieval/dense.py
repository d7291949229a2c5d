"""Dense retrieval: the queries embedded in one batch, searched in the corpus's FAISS index."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ragshield.retrieval.corpus import Corpus
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.errors import EmbeddingModelMismatch
from ragshield.retrieval.faiss_index import search_index, search_parameters
from ragshield.retrieval.retriever import CorpusRetriever, Hit


def check_embedder(corpus: Corpus, embedder: Embedder) -> None:
    if embedder.name != corpus.manifest.embedding_model:
        raise EmbeddingModelMismatch(
            f"corpus '{corpus.name}' was embedded with {corpus.manifest.embedding_model}, but "
            f"queries would be embedded with {embedder.name}; ingest it again or configure "
            "the same model"
        )


class DenseRetriever(CorpusRetriever):
    """Scores are cosine similarities. `nprobe` (IVF) and `ef_search` (HNSW) override the
    defaults saved with the index, trading speed for recall."""

    name = "dense"

    def __init__(self, corpus: Corpus, embedder: Embedder, *, nprobe: int | None = None,
                 ef_search: int | None = None):
        super().__init__(corpus)
        check_embedder(corpus, embedder)
        self.embedder = embedder
        self.params = search_parameters(corpus.manifest.index, nprobe=nprobe, ef_search=ef_search)

    def rank_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self.rank_vectors(self.embedder.encode(queries), k)

    def rank_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        return [[Hit(int(r), float(s), "dense") for r, s in zip(rows, scores)]
                for rows, scores in search_index(self.corpus.dense_index, vectors, k, self.params)]
