"""A short answer judged as the answer to its question (docs/METHODS.md 4.14).

"Guy de Lusignan", "Guy de Lusignan." and "It was Guy de Lusignan." are the same answer to
"Who gave their name to Normandy?": what matters is whether the passages give it as the answer
to that question, not whether its words appear in them (a wrong span of the right passage has
all its words there). A short answer is the answer's only claim, of at most
SHORT_ANSWER_WORDS words, with or without a sentence end.

Three readings decide it:
- the judges' model's P(yes) that the passages give it as the answer to the question
  (SHORT_INSTRUCTIONS);
- where the backend scores continuations (SCORE), how likely the model finds the answer's core
  ("Guy de Lusignan", without "It was" and the question's own words) as its own reply to the
  question: log P(core | passages, question, "answer in as few words as you can"). A wrong
  span of the passage is one the model would not have written;
- where the core sits in the passages against what the question asks (answer_alignment.py:
  a logistic reading of word positions, trained on wrong spans of the right passage, never on
  SQuAD): a wrong span stands in a sentence the question does not echo.

They are combined by a logistic fit (SHORT_FIT, SHORT_FIT_YES_NO without a score), fitted by
`python scripts/bench_short_answers.py --data-dir DIR --fit` on SQuAD 2.0 articles that the
benchmark then holds out: gold answers, other answers of the same passage, the 1.5B's own
answers (docs/QUALITY.md, "Short answers").
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Sequence

from scipy.special import expit

from ragshield.answerers.context import PromptOptions, shared_messages
from ragshield.answerers.vanilla import INSTRUCTIONS as ANSWER_INSTRUCTIONS
from ragshield.claims import FILLER, Claim, split_claims
from ragshield.judges.answer_alignment import alignment
from ragshield.judges.learned import log_odds
from ragshield.judges.signals import word_reader
from ragshield.judges.yes_no import REPLY_YES_OR_NO, ask_yes_no
from ragshield.llm.base import SCORE
from ragshield.llm.traced import TracedLLM
from ragshield.types import Sample

SHORT_ANSWER_WORDS = 12

SHORT_INSTRUCTIONS = (
    "Do the passages above say that this is the answer to the question? Reply yes only if a "
    "passage gives it as the answer; reply no if it answers a different question or the "
    f"passages do not say it. {REPLY_YES_OR_NO}\n\nProposed answer: ")

# sigmoid(intercept + weight * logit P(yes) + weight * log P(core) + weight * logit
# P(aligned)), log P(core) floored at LOGPROB_FLOOR; and without a score, sigmoid(intercept +
# weight * logit P(yes) + weight * logit P(aligned)).
SHORT_FIT = (1.99, 1.28, 0.10, 2.43)
SHORT_FIT_YES_NO = (1.34, 1.63, 2.58)
LOGPROB_FLOOR = -30.0
# The least support at which the grounded rule keeps a short answer, whatever pre_answer says:
# that the passages can answer the question says nothing of whether this span is the answer.
# Fitted with SHORT_FIT (`--fit`): it kept 86% of the right short answers it was fitted on
# (and 5% of the wrong).
SHORT_SUPPORT_FLOOR = 0.78

# What may come before the answer itself: "It was", "The answer is", "They were called".
_LEAD_IN = re.compile(
    r"^(?:(?:the\s+)?answer(?:\s+to\s+(?:the|this|your)\s+question)?\s+is\s*:?"
    r"|(?:it|this|that|they|he|she)\s+(?:is|was|are|were)(?:\s+called|\s+named)?)\s+",
    re.IGNORECASE)
_WORD = re.compile(r"\S+")
# Words that frame an answer rather than give it, beside the claims' FILLER.
_FRAMING = FILLER | frozenset("he she him his her hers after before named called known".split())


def is_short_answer(claims: Sequence[Claim]) -> bool:
    """Whether an answer of these claims is a short answer: one claim, of at most
    SHORT_ANSWER_WORDS words."""
    return len(claims) == 1 and len(claims[0].text.split()) <= SHORT_ANSWER_WORDS


def answer_is_short(answer: str) -> bool:
    """Whether the support judge reads `answer` as a short answer."""
    return is_short_answer(split_claims(answer))


def answer_core(question: str, answer: str) -> str:
    """The answer without what only frames it: a lead-in ("It was"), the words at either end
    that the question already says or that say nothing ("... gave his name to Normandy"), and
    the closing stop. The whole answer when nothing else would be left."""
    text = answer.strip().rstrip(".!?").strip()
    text = _LEAD_IN.sub("", text, count=1) or text
    reader = word_reader()
    asked = set(reader.stems(question))
    words = list(_WORD.finditer(text))

    def framing(word: str) -> bool:
        bare = word.lower().strip(string.punctuation)
        return bare in _FRAMING or set(reader.stems(bare)) <= asked  # a stop word: no stem

    start, end = 0, len(words)
    while end > start and framing(words[end - 1].group()):
        end -= 1
    while start < end and framing(words[start].group()):
        start += 1
    if start == end:
        return text or answer.strip()
    return text[words[start].start():words[end - 1].end()].strip(" ,;:")


@dataclass(frozen=True)
class ShortReading:
    p_yes: float | None
    logprob: float | None  # log P(core) as the model's own reply; None without SCORE
    aligned: float  # P(the core is the answer) by where it sits (answer_alignment.py)
    core: str

    @property
    def score(self) -> float | None:
        """P(the passages give this answer to the question), as fitted; None unread."""
        if self.p_yes is None:
            return None
        odds, aligned = (float(value) for value in log_odds([self.p_yes, self.aligned]))
        if self.logprob is None:
            intercept, by_odds, by_aligned = SHORT_FIT_YES_NO
            return float(expit(intercept + by_odds * odds + by_aligned * aligned))
        intercept, by_odds, by_logprob, by_aligned = SHORT_FIT
        return float(expit(intercept + by_odds * odds + by_aligned * aligned
                           + by_logprob * max(self.logprob, LOGPROB_FLOOR)))


def read_short_answer(sample: Sample, answer: str, llm: TracedLLM, options: PromptOptions,
                      purpose: str) -> ShortReading:
    """The readings of a short answer (the score only where the backend has SCORE)."""
    reading = ask_yes_no(llm, shared_messages(sample, SHORT_INSTRUCTIONS + answer, options),
                         purpose=f"{purpose}: as the answer to the question")
    core = answer_core(sample.question, answer)
    aligned = alignment(sample.question, core, sample.passages).score
    logprob = None
    if SCORE in llm.capabilities and reading.p_yes is not None:
        scored = llm.score(shared_messages(sample, ANSWER_INSTRUCTIONS, options), core,
                           purpose=f"{purpose}: the answer's likelihood")
        logprob = scored.total_logprob
    return ShortReading(reading.p_yes, logprob, aligned, core)
