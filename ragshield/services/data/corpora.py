"""Corpora for the faces: ingest documents as a named corpus, list the ingested ones, and
search one (the packaged demo corpus is ingested on first use)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ragshield.config import Settings
from ragshield.retrieval.index_config import DenseIndexConfig
from ragshield.types import Passage, RetrievalMode

if TYPE_CHECKING:
    from ragshield.retrieval.corpus import Corpus, CorpusManifest

def ingest(name: str, paths: Sequence[Path], settings: Settings, *, index: DenseIndexConfig,
           chunk_tokens: int = 200, overlap: int = 0, description: str = "",
           replace: bool = False, progress: bool = False) -> Corpus:
    """Chunk, embed and index the documents under `paths` as corpus `name`."""
    from ragshield.retrieval.ingest import IngestOptions, ingest_corpus  # loads the models

    options = IngestOptions(chunk_tokens=chunk_tokens, overlap=overlap,
                            description=description, index=index)
    return ingest_corpus(name, list(paths), settings, options, replace=replace,
                         progress=progress)


def corpora(settings: Settings) -> list[CorpusManifest]:
    """The ingested corpora's manifests."""
    from ragshield.retrieval.corpus_store import list_corpora

    return list_corpora(settings.corpora_dir)


def search(settings: Settings, corpus: str, query: str, k: int,
           retrieval: RetrievalMode = "hybrid", *, alpha: float = 0.5,
           progress: bool = False) -> list[Passage]:
    """The best `k` passages of `corpus` for `query`."""
    from ragshield.retrieval.demo_corpus import open_corpus  # these load the search stack
    from ragshield.retrieval.encoding import default_embedder
    from ragshield.retrieval.factory import make_retriever

    embedder = None if retrieval == "bm25" else default_embedder(settings)
    opened = open_corpus(corpus, settings, embedder=embedder, progress=progress)
    retriever = make_retriever(opened, retrieval, embedder=embedder, settings=settings,
                               alpha=alpha)
    return retriever.search(query, k)
