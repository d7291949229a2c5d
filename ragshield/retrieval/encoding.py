"""Turning texts into L2-normalised float32 vectors with a named sentence-embedding model.

The name travels with a corpus (in its manifest) so queries are never embedded by a different
model than the chunks were.

Speed (all-MiniLM-L6-v2 on these 2-core AVX-512 machines, without AMX). The model costs about
4.5 GFLOP per 200-token chunk, nearly all of it in matrix products, which fp32 runs at about
100 GFLOP/s per core, so about 20 such chunks per CPU-second is the ceiling in fp32. What
helps is not computing padding: sentence-transformers sorts a call's texts by characters and
pads each batch of 64 to its longest text; on the demo corpus (141 tokens on average) that
embeds 32% padding. `Embedder` sorts by the tokenizer's own counts and cuts batches of at most
`batch_tokens` padded tokens (8% padding there), which embedded the demo corpus 1.4x and
uniform 200-token chunks 1.1x faster per CPU-second, with the same vectors (cosine to the old
path >= 0.99999: padding is masked out, only summation order changes).

Tried and rejected, measured on real Wikipedia chunks: bf16 (autocast or a bf16 model) and
fp16 were no faster or slower than fp32 here (oneDNN's bf16 GEMM reached about 75 GFLOP/s
against MKL's fp32 100; bf16 cosine >= 0.9999); dynamic int8 quantisation of the linear
layers was 1.4x faster but moved embeddings too far (cosine down to 0.86 per-tensor, 0.96
per-channel); ONNX Runtime with its BERT fusions, torch.compile and eager attention were
slower or no faster. On a CPU with AMX, bf16 would likely pay off; that is not this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
from tqdm import tqdm

from ragshield.config import EMBEDDING_BATCH_TOKENS, Settings
from ragshield.retrieval.embeddings import load_embedder

PACKAGED_EMBEDDING_NAME = "all-MiniLM-L6-v2 (packaged)"
UNTOKENIZED_BATCH = 64  # batch size for an encoder that exposes no tokenizer


class SentenceEncoder(Protocol):
    """What ragshield uses of a sentence-transformers model. A real one also has `tokenizer`
    and `max_seq_length`, which length-sorted batching needs; stand-ins may lack them."""

    def encode(self, sentences: list[str], **options: Any) -> np.ndarray: ...


def token_budget_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices into `lengths`, longest first, cut into batches whose padded size (count times
    the longest) is at most `budget`; a text longer than the budget gets a batch of its own."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    first = 0
    while first < len(order):
        size = max(1, budget // max(1, lengths[order[first]]))
        batches.append(order[first : first + size])
        first += size
    return batches


@dataclass
class Embedder:
    name: str
    model: SentenceEncoder
    batch_tokens: int = EMBEDDING_BATCH_TOKENS

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """A (len(texts), dim) float32 array of unit rows, in the order of `texts`: batches of
        similar token counts (see the module docstring), one model call each."""
        texts = list(texts)
        tokenizer = getattr(self.model, "tokenizer", None)
        if tokenizer is None or not texts:
            return self._encode(texts, UNTOKENIZED_BATCH, progress)
        lengths = [len(ids) for ids in tokenizer(
            texts, truncation=True, max_length=getattr(self.model, "max_seq_length", None),
        )["input_ids"]]
        batches = token_budget_batches(lengths, self.batch_tokens)
        parts = []
        with tqdm(total=len(texts), unit=" texts", disable=not progress) as bar:
            for batch in batches:
                parts.append(self._encode([texts[i] for i in batch], len(batch), False))
                bar.update(len(batch))
        embedded = np.concatenate(parts)
        vectors = np.empty_like(embedded)
        vectors[[i for batch in batches for i in batch]] = embedded
        return vectors

    def _encode(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        vectors = self.model.encode(
            texts, batch_size=batch_size, show_progress_bar=progress,
            convert_to_numpy=True, normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def embedding_model_name(settings: Settings) -> str:
    return settings.embedding_model or PACKAGED_EMBEDDING_NAME


def default_embedder(settings: Settings) -> Embedder:
    """The configured sentence-transformers model (the packaged MiniLM unless set)."""
    return Embedder(embedding_model_name(settings), load_embedder(settings),
                    batch_tokens=settings.embedding_batch_tokens)
