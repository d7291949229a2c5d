"""Hybrid retrieval: dense and BM25 rankings combined by a dense share or by reciprocal-rank
fusion (RRF)."""

from __future__ import annotations

import math
from typing import Literal, Sequence

from ragshield.errors import OptionError
from ragshield.retrieval.dense import DenseRetriever
from ragshield.retrieval.retriever import CorpusRetriever, Hit
from ragshield.retrieval.sparse import BM25Retriever

Fusion = Literal["share", "rrf"]
RRF_K = 60  # the constant of Cormack et al. (2009)
RRF_DEPTH = 50  # how deep each ranking is read for RRF


def check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise OptionError(f"the dense share alpha must be between 0 and 1, got {alpha}")


def merge_by_share(dense: Sequence[Hit], sparse: Sequence[Hit], k: int, alpha: float) -> list[Hit]:
    """The best round(alpha * k) dense hits (halves round up), then the best BM25 hits not
    already taken up to k; when BM25 runs short, further dense hits fill the list."""
    check_alpha(alpha)
    chosen: dict[int, Hit] = {}

    def take(hits: Sequence[Hit], limit: int) -> None:
        for hit in hits:
            if len(chosen) >= limit:
                return
            chosen.setdefault(hit.row, hit)

    take(dense, math.floor(alpha * k + 0.5))
    take(sparse, k)
    take(dense, k)
    return list(chosen.values())


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hit]], k: int, c: int = RRF_K) -> list[Hit]:
    """Rows by the sum over rankings of 1 / (c + rank), rank counted from 1; ties keep the order
    in which rows were first seen (the first ranking wins)."""
    fused: dict[int, float] = {}
    vias: dict[int, list[str]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.row] = fused.get(hit.row, 0.0) + 1.0 / (c + rank)
            vias.setdefault(hit.row, []).append(hit.via or "?")
    best = sorted(fused, key=lambda row: -fused[row])[:k]
    return [Hit(row, fused[row], "+".join(vias[row])) for row in best]


def fuse(
    dense: Sequence[Hit], sparse: Sequence[Hit], k: int, *, fusion: Fusion, alpha: float
) -> list[Hit]:
    if fusion == "share":
        return merge_by_share(dense, sparse, k, alpha)
    return reciprocal_rank_fusion([dense, sparse], k)


class HybridRetriever(CorpusRetriever):
    def __init__(self, dense: DenseRetriever, sparse: BM25Retriever, *, fusion: Fusion = "share",
                 alpha: float = 0.5):
        super().__init__(dense.corpus)
        check_alpha(alpha)
        self.dense, self.sparse = dense, sparse
        self.fusion, self.alpha = fusion, alpha
        self.name = "hybrid" if fusion == "share" else "rrf"

    def rank_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        depth = k if self.fusion == "share" else max(k, RRF_DEPTH)
        dense = self.dense.rank_many(queries, depth)
        sparse = self.sparse.rank_many(queries, depth)
        return [fuse(d, s, k, fusion=self.fusion, alpha=self.alpha) for d, s in zip(dense, sparse)]
