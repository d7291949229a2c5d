"""A BM25 index (bm25s, Lucene scoring) over lower-cased, English-stemmed words without English
stop words; saved and loaded with its vocabulary so queries are tokenized the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import bm25s
import numpy as np
import Stemmer
from bm25s.tokenization import Tokenizer

EMPTY_TOKEN = ""  # bm25s gives texts without any word this token; a query never matches it


def _tokenizer() -> Tokenizer:
    return Tokenizer(lower=True, stopwords="en", stemmer=Stemmer.Stemmer("english"))


def top_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the `k` highest positive scores, best first (ties: lower row first)."""
    if k < len(scores):
        candidates = np.argpartition(-scores, k - 1)[:k]
    else:
        candidates = np.arange(len(scores))
    candidates = candidates[scores[candidates] > 0]
    order = np.lexsort((candidates, -scores[candidates]))
    rows = candidates[order]
    return rows, scores[rows]


class BM25Index:
    def __init__(self, model: bm25s.BM25, tokenizer: Tokenizer):
        self.model = model
        self.tokenizer = tokenizer
        self._empty_id = tokenizer.get_vocab_dict().get(EMPTY_TOKEN)

    @classmethod
    def build(cls, texts: Sequence[str], *, progress: bool = False) -> BM25Index:
        tokenizer = _tokenizer()
        ids = tokenizer.tokenize(list(texts), update_vocab=True, show_progress=progress)
        model = bm25s.BM25(csc_backend="scipy")  # builds the matrix without numpy's sort copies
        model.index((ids, tokenizer.get_vocab_dict()), show_progress=progress)
        return cls(model, tokenizer)

    def save(self, folder: Path) -> None:
        self.model.save(str(folder))
        self.tokenizer.save_vocab(str(folder))
        self.tokenizer.save_stopwords(str(folder))

    @classmethod
    def load(cls, folder: Path) -> BM25Index:
        """Memory-maps the score matrix: loading is quick whatever the corpus size."""
        tokenizer = _tokenizer()
        tokenizer.load_vocab(str(folder))
        tokenizer.load_stopwords(str(folder))
        return cls(bm25s.BM25.load(str(folder), mmap=True), tokenizer)

    @property
    def size(self) -> int:
        return int(self.model.scores["num_docs"])

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every indexed text for `query` (zeros when no word matches)."""
        (ids,) = self.tokenizer.tokenize([query], update_vocab=False, show_progress=False)
        ids = [i for i in ids if i != self._empty_id]
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return self.model.get_scores_from_ids(ids)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the `k` best-scoring texts that share a word with `query`."""
        return top_rows(self.scores(query), k)
