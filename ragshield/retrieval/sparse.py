"""BM25 retrieval over a corpus."""

from __future__ import annotations

from typing import Sequence

from ragshield.retrieval.retriever import CorpusRetriever, Hit


class BM25Retriever(CorpusRetriever):
    """Only chunks sharing a (stemmed, non-stop) word with the query are returned, so a query
    can get fewer than k passages, or none."""

    name = "bm25"

    def rank_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        ranked = []
        for query in queries:
            rows, scores = self.corpus.bm25.top(query, k)
            ranked.append([Hit(int(r), float(s), "bm25") for r, s in zip(rows, scores)])
        return ranked
