"""The one retriever interface, and the base of retrievers that rank the rows of one corpus.

Every retriever answers a batch of queries at once (`search_many`), so dense retrievers embed
all the queries in one call; `search` is the batch of one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from ragshield.errors import OptionError
from ragshield.retrieval.corpus import Corpus
from ragshield.types import Passage


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, query: str, k: int) -> list[Passage]: ...

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]: ...


@dataclass(frozen=True)
class Hit:
    """A ranked corpus row; `via` names the component that supplied it in a hybrid ranking."""

    row: int
    score: float
    via: str | None = None


class BatchRetriever(ABC):
    """A retriever defined by its batch search."""

    name: str

    @abstractmethod
    def search_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        """The best `k` passages for each query, best first."""

    def search(self, query: str, k: int) -> list[Passage]:
        return self.search_many([query], k)[0]


class CorpusRetriever(BatchRetriever):
    """Ranks rows of `corpus`; passages carry the chunk id, offsets and the retriever's name."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus

    @abstractmethod
    def rank_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The best `k` rows for each query, best first."""

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Passage]]:
        if k < 1:
            raise OptionError(f"k must be at least 1, got {k}")
        return [[self._passage(hit) for hit in hits] for hits in self.rank_many(queries, k)]

    def _passage(self, hit: Hit) -> Passage:
        extra = {"via": hit.via} if hit.via and hit.via != self.name else {}
        return self.corpus.passage(hit.row, hit.score, retriever=self.name, **extra)
