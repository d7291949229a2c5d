"""Two-stage retrieval (RAG-X): a broad BM25 stage narrows the corpus to `broad_k` chunks, then a
focused stage ranks only those, by dense similarity or by a hybrid of both.

The focused stage scores candidates against their stored embeddings: only the queries are
embedded.
"""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np

from ragshield.errors import OptionError
from ragshield.retrieval.dense import check_embedder
from ragshield.retrieval.encoding import Embedder
from ragshield.retrieval.hybrid import Fusion, check_alpha, fuse
from ragshield.retrieval.retriever import CorpusRetriever, Hit
from ragshield.retrieval.sparse import BM25Retriever

Focus = Literal["dense", "hybrid", "rrf"]
FOCUS_FUSION: dict[Focus, Fusion] = {"hybrid": "share", "rrf": "rrf"}


class TwoStageRetriever(CorpusRetriever):
    name = "two-stage"

    def __init__(self, sparse: BM25Retriever, embedder: Embedder, *, broad_k: int = 100,
                 focus: Focus = "dense", alpha: float = 0.5):
        super().__init__(sparse.corpus)
        check_embedder(sparse.corpus, embedder)
        check_alpha(alpha)
        if broad_k < 1:
            raise OptionError(f"the broad stage needs broad_k >= 1, got {broad_k}")
        self.sparse, self.embedder = sparse, embedder
        self.broad_k, self.focus, self.alpha = broad_k, focus, alpha

    def rank_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        broad = self.sparse.rank_many(queries, max(k, self.broad_k))
        vectors = self.embedder.encode(queries)
        return [self._focus(hits, vector, k) for hits, vector in zip(broad, vectors)]

    def _focus(self, broad: list[Hit], vector: np.ndarray, k: int) -> list[Hit]:
        if not broad:
            return []
        rows = np.array([hit.row for hit in broad])
        similarities = np.asarray(self.corpus.embeddings[rows]) @ vector
        order = np.argsort(-similarities, kind="stable")
        dense = [Hit(int(rows[i]), float(similarities[i]), "dense") for i in order]
        if self.focus == "dense":
            return dense[:k]
        return fuse(dense, broad, k, fusion=FOCUS_FUSION[self.focus], alpha=self.alpha)
