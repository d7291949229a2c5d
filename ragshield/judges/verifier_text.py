"""What the trained claim verifier reads (judges/verifier.py; scripts/train_verifier.py trains
it on the same texts): one claim with the question it answers, against the window of the
passages that shares the most of its content words.

A cross-encoder of MAX_TOKENS tokens cannot read a long page, and cutting the passages from their
end would drop the evidence as often as not. So the passages are cut into overlapping
windows of WINDOW_WORDS words, and a claim is read against the READ_WINDOWS windows that hold
the most of its content words (MiniCheck reads every chunk of a document and takes the best;
with word overlap choosing, each claim costs two reads whatever the passages' length). The
claim's score is the best of those reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from ragshield.judges.signals import SignalReader
from ragshield.types import Passage

# About 100 tokens of a window: with the claim's side, a read fits MAX_TOKENS (a read costs
# in proportion: 256 tokens took 3.5 s a training batch of 16 on 2 cores, and 0.1 s a read).
WINDOW_WORDS, STRIDE_WORDS = 70, 50
MAX_TOKENS = 160
READ_WINDOWS = 2


@dataclass(frozen=True)
class Window:
    passage: int  # the passage it was cut from
    text: str


@cache
def _reader() -> SignalReader:
    return SignalReader()


@lru_cache(maxsize=4096)  # a window is compared with every claim of its answer
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words (stop words out), as the learned judge's signals read them."""
    return frozenset(_reader().stems(text))


def windows(passages: Sequence[Passage]) -> list[Window]:
    """Each passage cut into windows of WINDOW_WORDS words, STRIDE_WORDS apart, its title
    before each (a window of a long page keeps the page's name)."""
    cut: list[Window] = []
    for number, passage in enumerate(passages):
        words = passage.text.split()
        title = f"{passage.title}: " if passage.title else ""
        for start in range(0, max(1, len(words) - WINDOW_WORDS + STRIDE_WORDS), STRIDE_WORDS):
            cut.append(Window(number, title + " ".join(words[start:start + WINDOW_WORDS])))
    return cut


def closest_windows(claim: str, cut: Sequence[Window],
                    count: int = READ_WINDOWS) -> list[Window]:
    """The `count` windows sharing the most of the claim's content words (ties: the
    earlier); the first windows when it shares none."""
    words = content_words(claim)
    shared = [len(words & content_words(window.text)) for window in cut]
    order = sorted(range(len(cut)), key=lambda index: (-shared[index], index))
    return [cut[index] for index in order[:count]]


def claim_side(question: str | None, claim: str) -> str:
    """The first text of the pair: the claim, after the question it answers when there is
    one (a short answer says nothing without it)."""
    question = (question or "").strip()
    return f"Question: {question}\nClaim: {claim}" if question else f"Claim: {claim}"
