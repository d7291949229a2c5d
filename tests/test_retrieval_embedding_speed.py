"""The embedder's fast path (texts sorted by token count, batches of at most N padded tokens)
against the exact path (one plain sentence-transformers call): the same unit vectors, in the
caller's order. Speed is measured by scripts/bench_retrieval.py, not here."""

from __future__ import annotations

import json
from itertools import islice

import numpy as np
import pytest

from ragshield.config import Settings
from ragshield.retrieval import encoding
from ragshield.retrieval.encoding import token_budget_batches
from tests.conftest import TEST_DATA


def real_texts() -> list[str]:
    """Questions and passages of real samples, from a few words to past the 256 tokens the
    model reads (the last text, truncated on either path)."""
    texts: list[str] = []
    with open(TEST_DATA / "clapnq_dev.jsonl", encoding="utf-8") as lines:
        for line in islice(lines, 16):
            record = json.loads(line)
            texts += [record["question"], *(p["text"] for p in record["passages"])]
    return texts + [" ".join(texts)]


def test_batches_hold_every_text_once_longest_first_within_the_budget():
    lengths = [5, 300, 40, 40, 7, 120, 2]
    batches = token_budget_batches(lengths, 100)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert [lengths[i] for batch in batches for i in batch] == sorted(lengths, reverse=True)
    assert batches[:2] == [[1], [5]]  # longer than the budget: a batch of its own
    assert all(len(batch) * lengths[batch[0]] <= 100 for batch in batches[2:])
    assert token_budget_batches([], 100) == []


@pytest.mark.parametrize("batch_tokens", [300, 2048])
def test_the_fast_path_gives_the_exact_vectors_in_order(batch_tokens, monkeypatch, embedder):
    monkeypatch.setenv("RAGSHIELD_EMBEDDING_BATCH_TOKENS", str(batch_tokens))
    # The model the `embedder` fixture loaded once, under the settings read from the variable.
    monkeypatch.setattr(encoding, "load_embedder", lambda settings: embedder.model)
    embedder = encoding.default_embedder(Settings())
    assert embedder.batch_tokens == batch_tokens
    texts = real_texts()
    exact = embedder.model.encode(texts, batch_size=len(texts), convert_to_numpy=True,
                                  normalize_embeddings=True)
    fast = embedder.encode(texts)
    assert fast.dtype == np.float32 and fast.shape == exact.shape == (len(texts), 384)
    assert np.sum(fast * exact, axis=1).min() >= 0.9999
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
