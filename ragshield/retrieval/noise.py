"""Noise chunks (RAG-X): chunks drawn at random from the whole corpus, added after the
retrieved passages to study how distractors affect answers."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ragshield.errors import OptionError
from ragshield.retrieval.corpus import Corpus
from ragshield.types import Passage


def inject_noise(
    passages: Sequence[Passage], corpus: Corpus, n: int, *, seed: int
) -> list[Passage]:
    """`passages` followed by `n` distinct random chunks of `corpus` that are not among them,
    marked meta["noise"] = True. The same seed draws the same chunks."""
    if n < 0:
        raise OptionError(f"the number of noise chunks cannot be negative, got {n}")
    taken = {corpus.row_of[p.meta["chunk_id"]] for p in passages
             if p.meta.get("corpus") == corpus.name and p.meta.get("chunk_id") in corpus.row_of}
    available = len(corpus) - len(taken)
    if n > available:
        raise OptionError(f"cannot add {n} noise chunks: corpus '{corpus.name}' has only "
                         f"{available} chunks besides the retrieved ones")
    # Drawing n + |taken| distinct rows leaves at least n once the taken ones are removed.
    drawn = np.random.default_rng(seed).choice(len(corpus), size=min(len(corpus), n + len(taken)),
                                               replace=False)
    rows = [int(row) for row in drawn if row not in taken][:n]
    return [*passages, *(corpus.passage(row, None, noise=True) for row in rows)]
