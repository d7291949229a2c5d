"""Correctness of an answer against references (docs/METHODS.md 2), also used to decide whether two
answers are "the same" (counterfactual prompting, IoE, self-consistency)."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from typing import Iterable, Sequence

from ragshield.refusal import is_refusal

TAU = 0.7
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _is_punctuation(char: str) -> bool:
    """ASCII punctuation and every Unicode punctuation mark (German and French quotes,
    dashes, CJK full stops); letters with combining marks are kept."""
    return char in string.punctuation or unicodedata.category(char).startswith("P")


class _PunctuationRemoval(dict):
    """A str.translate table filled on demand: punctuation maps to None (dropped), any
    other character to itself. Looking characters up once each keeps normalising long
    passages fast (a run's tables normalise every passage)."""

    def __missing__(self, code: int) -> int | None:
        self[code] = None if _is_punctuation(chr(code)) else code
        return self[code]


_DROP_PUNCTUATION = _PunctuationRemoval()


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles, collapse spaces."""
    text = text.lower().translate(_DROP_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, references: Iterable[str]) -> bool:
    normalized = normalize_answer(answer)
    return any(normalized == normalize_answer(ref) for ref in references)


def _f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: str, references: Iterable[str]) -> float:
    pred = normalize_answer(answer).split()
    return max((_f1(pred, normalize_answer(ref).split()) for ref in references), default=0.0)


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if token == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(answer: str, references: Iterable[str]) -> float:
    """ROUGE-L F-measure (LCS-based), best over the references."""
    pred = normalize_answer(answer).split()
    best = 0.0
    for ref in references:
        gold = normalize_answer(ref).split()
        lcs = _lcs_length(pred, gold)
        if lcs:
            precision, recall = lcs / len(pred), lcs / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def contains_reference(answer: str, references: Iterable[str]) -> bool:
    """A normalised reference occurs inside the normalised answer (on word boundaries)."""
    padded = f" {normalize_answer(answer)} "
    return any(
        (ref_norm := normalize_answer(ref)) and f" {ref_norm} " in padded for ref in references
    )


def is_correct(answer: str, references: Sequence[str], tau: float = TAU) -> bool:
    """EM, or F1 > tau, or ROUGE-L > tau, or containment. A refusal is never correct."""
    if not references or is_refusal(answer) or not normalize_answer(answer):
        return False
    return (
        exact_match(answer, references)
        or contains_reference(answer, references)
        or token_f1(answer, references) > tau
        or rouge_l(answer, references) > tau
    )


def same_answer(first: str, second: str, tau: float = TAU) -> bool:
    """Two answers agree: both refusals, the same text, or either one matches the other as a
    reference (the text check keeps answers that normalise to nothing, like "The", equal
    to themselves)."""
    if is_refusal(first) or is_refusal(second):
        return is_refusal(first) and is_refusal(second)
    if first.strip().casefold() == second.strip().casefold():
        return True
    return is_correct(first, [second], tau) or is_correct(second, [first], tau)


def answer_agreement(first: str, second: str, tau: float = TAU) -> float:
    """How far two answers agree, 0..1: 1 when they are the same answer (same_answer), 0
    when only one is a refusal, else their word overlap (the larger of token F1 and
    ROUGE-L, at most tau). Judges that compare answers score with it so that a near miss
    counts for more than a different answer ("river Seine" against "river Thames": 0.5)."""
    if same_answer(first, second, tau):
        return 1.0
    if is_refusal(first) or is_refusal(second):
        return 0.0
    return max(token_f1(first, [second]), rouge_l(first, [second]))
