"""Where a short answer sits in the passages, against what the question asks (issue 56): the
trained answer check that reads (question, passages, answer) without a model call.

A wrong span of the right passage ("Rollo" for "Who gave their name to Normandy?") has all
its words in the passages, so the judges' model, asked yes or no, reads it as supported. What
tells it from the right one is where it sits: the right answer stands among the question's
own words ("the people who ... gave their name to Normandy"), a wrong one in another sentence
that the question does not echo. FEATURES reads that (the old sliding-window reading of
answer selection), and ALIGNMENT_FIT weighs it, a logistic fit by `python
scripts/train_verifier.py --data-dir DIR --train alignment` on NQ-open (gold answers against
spans of the same kind from their own passage, judges/answer_distractors.py) and HaluEval's
first half, never on SQuAD 2.0 (docs/QUALITY.md, "Answer alignment, held out").
"""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass
from typing import Sequence

from scipy.special import expit

from ragshield.judges.signals import word_reader
from ragshield.types import Passage

NEAR_WORDS = 10  # the words on either side of the answer that count as its neighbourhood
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"\S+")

FEATURES = ("found", "sentence_overlap", "behind_best", "near_overlap", "echo")
# sigmoid(intercept + the weights . FEATURES), fitted on NQ-open and HaluEval (see above).
ALIGNMENT_FIT = (-1.713, (1.096, 0.609, 0.707, 0.538, -1.308))


@dataclass(frozen=True)
class Alignment:
    found: float  # 1.0 when the answer's text is in a passage, else the share of its words
    sentence_overlap: float  # the share of the question's words in the answer's sentence
    behind_best: float  # how far that falls short of the sentence that shares most (<= 0)
    near_overlap: float  # the share of the question's words within NEAR_WORDS of the answer
    echo: float  # the share of the answer's words the question already says

    def values(self) -> tuple[float, ...]:
        return astuple(self)

    @property
    def score(self) -> float:
        """P(this is the answer the passages give), as fitted (ALIGNMENT_FIT)."""
        intercept, weights = ALIGNMENT_FIT
        return float(expit(intercept + sum(w * v for w, v in zip(weights, self.values()))))


def _stems(text: str) -> set[str]:
    return set(word_reader().stems(text))


def _near(sentence: str, at: int, length: int, asked: set[str]) -> float:
    """The share of `asked` within NEAR_WORDS words of the answer at character `at`."""
    words = [(m.start(), m.group()) for m in _WORD.finditer(sentence)]
    first = next((i for i, (start, _) in enumerate(words) if start >= at), len(words))
    last = next((i for i, (start, _) in enumerate(words) if start >= at + length), len(words))
    around = " ".join(w for _, w in words[max(0, first - NEAR_WORDS):first]
                      + words[last:last + NEAR_WORDS])
    return len(asked & _stems(around)) / len(asked) if asked else 0.0


def alignment(question: str, answer: str, passages: Sequence[Passage]) -> Alignment:
    """How `answer` (its core: no lead-in, no closing stop) sits in `passages` against
    `question`."""
    asked = _stems(question)
    own = _stems(answer)
    sentences = [s for p in passages for s in _SENTENCE_END.split(p.text.strip()) if s]
    words = [_stems(s) for s in sentences]  # each sentence's, read once
    overlaps = [len((asked - own) & w) / len(asked) if asked else 0.0 for w in words]
    best = max(overlaps, default=0.0)
    needle = answer.lower().strip()
    holding = [i for i, s in enumerate(sentences) if needle and needle in s.lower()]
    if holding:
        found = 1.0
        chosen = max(holding, key=lambda i: overlaps[i])
        sentence = sentences[chosen]
        near = _near(sentence, sentence.lower().index(needle), len(needle), asked - own)
    else:  # not verbatim: the sentence sharing most of its words stands in
        shares = [len(own & w) / len(own) if own else 0.0 for w in words]
        found = max(shares, default=0.0)
        chosen = shares.index(found) if found > 0 else -1  # none holds a word of it
        near = overlaps[chosen] if chosen >= 0 else 0.0
    overlap = overlaps[chosen] if chosen >= 0 else 0.0
    echo = len(own & asked) / len(own) if own else 0.0
    return Alignment(found, overlap, overlap - best, near, echo)
