"""Turning a row of logits into a token log-prob with its top alternatives."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ragshield.types import TokenLogprob


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    return shifted - np.log(np.sum(np.exp(shifted)))


def token_logprob(
    logits: np.ndarray, token_id: int, top_k: int, token_text: Callable[[int], str]
) -> TokenLogprob:
    """Log-prob of `token_id` under `logits`, plus the `top_k` most likely tokens.

    Alternatives whose text collides (two ids that decode to the same string) keep the
    higher log-prob, so callers can look tokens up by text.
    """
    logp = log_softmax(logits)
    top: dict[str, float] = {}
    if top_k > 0:
        best = np.argpartition(-logp, top_k - 1)[:top_k]
        for idx in best[np.argsort(-logp[best])]:
            text = token_text(int(idx))
            top.setdefault(text, float(logp[idx]))
    return TokenLogprob(token=token_text(token_id), logprob=float(logp[token_id]), top=top)
