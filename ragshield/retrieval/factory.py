"""A retriever over one corpus by mode name, as the CLI and the UI offer them."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.errors import OptionError
from ragshield.retrieval.corpus import Corpus
from ragshield.retrieval.dense import DenseRetriever
from ragshield.retrieval.encoding import Embedder, default_embedder
from ragshield.retrieval.hybrid import Fusion, HybridRetriever
from ragshield.types import RetrievalMode
from ragshield.retrieval.retriever import CorpusRetriever
from ragshield.retrieval.sparse import BM25Retriever
from ragshield.retrieval.two_stage import TwoStageRetriever


def make_retriever(
    corpus: Corpus,
    mode: RetrievalMode,
    *,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    alpha: float = 0.5,
    nprobe: int | None = None,
    ef_search: int | None = None,
    broad_k: int = 100,
) -> CorpusRetriever:
    """`hybrid` mixes by dense share `alpha`, `rrf` by reciprocal-rank fusion, `two-stage`
    ranks the BM25 top `broad_k` densely. Without `embedder`, modes that need one load the
    configured model."""
    sparse = BM25Retriever(corpus)
    if mode == "bm25":
        return sparse
    embedder = embedder or default_embedder(settings or Settings())
    if mode == "two-stage":
        return TwoStageRetriever(sparse, embedder, broad_k=broad_k)
    dense = DenseRetriever(corpus, embedder, nprobe=nprobe, ef_search=ef_search)
    if mode == "dense":
        return dense
    if mode in ("hybrid", "rrf"):
        fusion: Fusion = "share" if mode == "hybrid" else "rrf"
        return HybridRetriever(dense, sparse, fusion=fusion, alpha=alpha)
    raise OptionError(f"unknown retrieval mode '{mode}'")
