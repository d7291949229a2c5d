"""Cheap signals of whether the passages answer a question (and support an answer), for the
learned judge (docs/METHODS.md 4.13). No LLM call: word overlap after stemming, the names and
numbers of the question that the passages lack, a negation, and the packaged MiniLM's
similarity between the question and the passages' best-matching sentences.

Why these: SQuAD 2.0's unanswerable questions are written against the paragraph by changing a
name or a number, adding a negation or asking about something the paragraph only nearly says;
ClapNQ's are real questions whose passage is on topic but silent. A signal that says "the
question names X and no passage does" holds on any corpus; a fine-tuned encoder learns the
articles it was trained on (docs/QUALITY.md)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Sequence

import numpy as np

from ragshield.refusal import is_refusal
from ragshield.types import Sample

QUESTION_SIGNALS = ("coverage", "window_coverage", "names_missing", "numbers_missing",
                    "negation", "number_asked_not_found", "similarity", "passage_similarity")
ANSWER_SIGNALS = ("answer_coverage", "answer_in_window", "answer_refusal", "answer_words")

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NEGATION = re.compile(r"\b(not|never|no|none|nothing|without|n't)\b|n't\b", re.IGNORECASE)
_ASKS_NUMBER = re.compile(r"^\s*(how (many|much|long|old|far|large|big|tall|high)|when|what "
                          r"(year|century|decade|date|percentage|age)|in what year|which year)",
                          re.IGNORECASE)
_DATE_WORD = re.compile(r"\b(\d{1,4}|january|february|march|april|may|june|july|august|"
                        r"september|october|november|december|century|decade|hundred|"
                        r"thousand|million|billion|one|two|three|four|five|six|seven|eight|"
                        r"nine|ten|twelve|twenty|thirty|forty|fifty)\b", re.IGNORECASE)
WINDOW = 2  # sentences read together: an answer often sits one sentence after its subject
MAX_SENTENCES = 64  # per sample, so a long document costs a bounded embedding pass


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    question_words = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how"}
    return frozenset(STOPWORDS_EN) | question_words | {"many", "much", "also", "name", "named"}


@dataclass(frozen=True)
class Window:
    text: str
    stems: frozenset[str]


class SignalReader:
    """Computes the signals of samples; holds the stemmer and (lazily) the embedder.

    `embedder`: anything with `encode(texts, normalize_embeddings=True)` (a
    SentenceTransformer); None loads the packaged MiniLM on first use."""

    def __init__(self, embedder: Any | None = None) -> None:
        self._embedder = embedder
        self._stem = _stemmer().stemWord
        self._stop = _stopwords()

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ragshield.config import Settings
            from ragshield.retrieval.embeddings import load_embedder

            self._embedder = load_embedder(Settings(embedding_model=None))
        return self._embedder

    def stems(self, text: str) -> list[str]:
        """Content words, lower-cased and stemmed, stop words left out."""
        words = (w.lower().strip("'-") for w in _WORD.findall(text))
        return [self._stem(w) for w in words if w and w not in self._stop]

    def windows(self, sample: Sample) -> list[Window]:
        """Runs of WINDOW consecutive sentences of each passage (a passage shorter than that
        is one window), at most MAX_SENTENCES sentences in all."""
        found: list[Window] = []
        budget = MAX_SENTENCES
        for passage in sample.passages:
            sentences = [s for s in _SENTENCE_END.split(passage.text.strip()) if s][:budget]
            budget -= len(sentences)
            for first in range(max(1, len(sentences) - WINDOW + 1)):
                text = " ".join(sentences[first:first + WINDOW])
                if text:
                    found.append(Window(text, frozenset(self.stems(text))))
            if budget <= 0:
                break
        return found

    def read(self, samples: Sequence[Sample],
             answers: Sequence[str | None] | None = None) -> np.ndarray:
        """One row per sample: QUESTION_SIGNALS, then ANSWER_SIGNALS when `answers` is given
        (None for a sample without an answer reads as a refusal)."""
        rows = []
        for index, sample in enumerate(samples):
            passages = self._passages(sample)
            row = self._question_signals(sample, passages)
            if answers is not None:
                row += self._answer_signals(passages, answers[index])
            rows.append(row)
        width = len(QUESTION_SIGNALS) + (len(ANSWER_SIGNALS) if answers is not None else 0)
        return np.asarray(rows, dtype=float).reshape(len(rows), width)

    def _passages(self, sample: Sample) -> "Passages":
        """What both kinds of signals read of a sample, computed once."""
        asked = frozenset(self.stems(sample.question))
        windows = self.windows(sample)
        everything = frozenset().union(*(w.stems for w in windows)) if windows else frozenset()
        best = max(windows, key=lambda w: len(asked & w.stems), default=None)
        return Passages(asked, windows, everything, best)

    def _question_signals(self, sample: Sample, passages: "Passages") -> list[float]:
        question = sample.question
        asked, best = passages.asked, passages.best
        passages_text = " ".join(p.text for p in sample.passages).lower()
        coverage = len(asked & passages.everything) / len(asked) if asked else 0.0
        window_coverage = len(asked & best.stems) / len(asked) if asked and best else 0.0
        names = _names(question)
        names_missing = (sum(n.lower() not in passages_text for n in names) / len(names)
                         if names else 0.0)
        numbers = _NUMBER.findall(question)
        numbers_missing = float(any(n.rstrip(".,") not in passages_text for n in numbers))
        number_asked_not_found = float(bool(_ASKS_NUMBER.search(question)) and (
            best is None or not _DATE_WORD.search(best.text)))
        similarity, passage_similarity = self._similarities(sample, passages.windows)
        return [coverage, window_coverage, names_missing, numbers_missing,
                float(bool(_NEGATION.search(question))), number_asked_not_found,
                similarity, passage_similarity]

    def _similarities(self, sample: Sample, windows: list[Window]) -> tuple[float, float]:
        """Largest cosine between the question and a window, and a whole passage."""
        passages = [p.text for p in sample.passages if p.text.strip()]
        if not passages:
            return 0.0, 0.0
        texts = [sample.question] + [w.text for w in windows] + passages
        vectors = np.asarray(self.embedder.encode(texts, normalize_embeddings=True))
        cosines = vectors[1:] @ vectors[0]
        split = len(windows)
        return (float(cosines[:split].max()) if split else 0.0, float(cosines[split:].max()))

    def _answer_signals(self, passages: "Passages", answer: str | None) -> list[float]:
        if answer is None or is_refusal(answer):
            return [0.0, 0.0, 1.0, 0.0]
        said = set(self.stems(answer))
        new = said - passages.asked  # the words of the answer that the question did not bring
        coverage = len(new & passages.everything) / len(new) if new else 1.0
        best = passages.best
        in_window = len(new & best.stems) / len(new) if new and best else 0.0
        return [coverage, in_window, 0.0, math.log1p(len(said))]


@dataclass(frozen=True)
class Passages:
    """A sample's passages as the signals read them: the question's content stems, the
    windows, every stem of the passages, and the window that shares most with the question."""

    asked: frozenset[str]
    windows: list[Window]
    everything: frozenset[str]
    best: Window | None


def _names(question: str) -> list[str]:
    """The question's names: capitalised words that do not open it (e.g. 'Rouen', 'Deabolis'),
    with a following capitalised word joined ('New York')."""
    words = question.split()
    names, current = [], []
    for position, raw in enumerate(words):
        word = raw.strip("?,.;:!\"'()")
        if position > 0 and word[:1].isupper() and word.lower() not in {"i"}:
            current.append(word)
            continue
        if current:
            names.append(" ".join(current))
            current = []
    if current:
        names.append(" ".join(current))
    return names


@cache
def word_reader() -> SignalReader:
    """One reader for what only needs content words (its embedder is never loaded)."""
    return SignalReader()
