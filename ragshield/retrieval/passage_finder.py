"""Passages for a question from a named corpus: retrieval plus optional noise chunks, the
way `ask` and the run engine use it."""

from __future__ import annotations

import zlib

from ragshield.config import Settings
from ragshield.types import Passage, RetrievalMode


class PassageFinder:
    """Opens the corpus and builds the retriever once; `find` is then cheap per question."""

    def __init__(self, corpus: str, mode: RetrievalMode, k: int, *, noise: int = 0,
                 seed: int = 0, settings: Settings | None = None) -> None:
        from ragshield.retrieval.corpus_store import read_manifest
        from ragshield.retrieval.demo_corpus import DEMO_CORPUS_NAME, open_corpus
        from ragshield.retrieval.encoding import default_embedder
        from ragshield.retrieval.factory import make_retriever

        settings = settings or Settings()
        if corpus != DEMO_CORPUS_NAME:  # the demo one is ingested on first use
            read_manifest(settings.corpora_dir, corpus)  # missing: said before the model loads
        embedder = None if mode == "bm25" else default_embedder(settings)
        self.corpus = open_corpus(corpus, settings, embedder=embedder)
        self.retriever = make_retriever(self.corpus, mode, embedder=embedder, settings=settings)
        self.k, self.noise, self.seed = k, noise, seed

    def find(self, question: str) -> list[Passage]:
        """The top k passages, then `noise` random chunks. The noise depends on the seed and
        the question only, so a resumed run draws the same chunks as the first attempt."""
        from ragshield.retrieval.noise import inject_noise

        passages = self.retriever.search(question, self.k)
        if self.noise:
            seed = self.seed ^ zlib.crc32(question.encode())
            passages = inject_noise(passages, self.corpus, self.noise, seed=seed)
        return passages
