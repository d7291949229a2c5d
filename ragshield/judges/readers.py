"""Reading judges' model outputs tolerantly: probabilities, yes/no distributions, markers.

Model output is untrusted: every reader returns None when it cannot read a value, and the
caller flags the verdict with a parse error (keeping the raw text in the trace).
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

from ragshield.types import TokenLogprob

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?|\.\d+)\s*(%|percent)?")
# A reply that starts with one digit, not a longer number or a decimal ("7", "**7**", "7/9"),
# or with 10 (the top of the scale, overshot).
_LONE_DIGIT = re.compile(r"^\W*(10|\d)(?!\d|[.,]\d)")
_YES = {"yes", "y", "true"}
_NO = {"no", "n", "false"}


def read_probability(text: str) -> float | None:
    """A probability in [0, 1] from text like "0.8", "Probability: 0.8", "80%", "80 percent".

    Numbers above 1 count as percentages when followed by % or when <= 100.
    """
    for match in _NUMBER.finditer(text or ""):
        value = float(match.group(1))
        if match.group(2) or value > 1:
            value /= 100
        if 0 <= value <= 1:
            return value
    return None


def read_marker(text: str, choices: Iterable[str]) -> str | None:
    """The marked choice in text such as "$$keep$$", "$keep$", "**keep**", "Decision: keep".

    A marked choice wins; otherwise the single choice named as a whole word; None when
    none or several are named.
    """
    lowered = (text or "").lower()
    options = [c.lower() for c in choices]
    marked = re.findall(r"[$*#\[]{1,3}\s*(" + "|".join(map(re.escape, options))
                        + r")\s*[$*#\]]{1,3}", lowered)
    if marked:
        return marked[-1]
    named = {c for c in options if re.search(rf"\b{re.escape(c)}\b", lowered)}
    return named.pop() if len(named) == 1 else None


def read_yes_no(text: str) -> bool | None:
    """yes -> True, no -> False, from the first word of a reply."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    if words and words[0] in _YES:
        return True
    if words and words[0] in _NO:
        return False
    return None


def yes_probability(first_token: TokenLogprob) -> float | None:
    """P(yes) / (P(yes) + P(no)) from the next-token distribution of a yes/no question,
    summing case and leading-space variants found among the top alternatives (docs/METHODS.md 4.5).
    None when neither appears."""
    candidates = dict(first_token.top)
    candidates.setdefault(first_token.token, first_token.logprob)
    p_yes = p_no = 0.0
    for token, logprob in candidates.items():
        word = token.strip().lower()
        if word in ("yes", "y"):
            p_yes += math.exp(logprob)
        elif word in ("no", "n"):
            p_no += math.exp(logprob)
    if p_yes + p_no == 0:
        return None
    return p_yes / (p_yes + p_no)


def first_word_token(tokens: Sequence[TokenLogprob]) -> TokenLogprob | None:
    """The reply's first token that holds a letter or a digit: leading tokens without one (a
    space, "**", a quote) are skipped."""
    return next((t for t in tokens if any(ch.isalnum() for ch in t.token)), None)


def expected_digit(first_token: TokenLogprob) -> float | None:
    """The expected value, divided by 9, of a digit 0-9 asked for as a reply, over the digit
    tokens among the first token's top alternatives (their weights renormalised). None when
    no digit is among them."""
    candidates = dict(first_token.top)
    candidates.setdefault(first_token.token, first_token.logprob)
    weights = [0.0] * 10
    for token, logprob in candidates.items():
        text = token.strip()
        if len(text) == 1 and text in "0123456789":  # not "²" or other digit-like signs
            weights[int(text)] += math.exp(logprob)
    total = sum(weights)
    if total == 0:
        return None
    return sum(digit * weight for digit, weight in enumerate(weights)) / (9 * total)


def same_start_probability(tokens: Sequence[TokenLogprob], marker: str,
                           expected: str) -> float | None:
    """The probability that the reply's first word after `marker` (e.g. "Answer:"; the
    reply's first word when it has no marker) starts as `expected` starts: the summed
    probability of the alternatives at that token that are a beginning of `expected` (case
    and spaces ignored). None when no word is found, or `expected` is empty."""
    target = expected.strip().lower()
    text, after = "", 0
    for index, token in enumerate(tokens):
        text += token.token
        if marker.lower() in text.lower():
            after = index + 1
            break
    if not target:
        return None
    first = first_word_token(tokens[after:])
    if first is None:
        return None
    candidates = dict(first.top)
    candidates.setdefault(first.token, first.logprob)
    return min(1.0, sum(math.exp(logprob) for token, logprob in candidates.items()
                        if token.strip() and target.startswith(token.strip().lower())))


def read_confidence_digit(text: str) -> float | None:
    """A confidence in [0, 1] from a written reply: a lone digit 0-9 (divided by 9; a 10 is
    read as 9), else a probability as `read_probability` reads it ("0.8", "80%")."""
    lone = _LONE_DIGIT.match(text or "")
    if lone:
        return min(int(lone.group(1)), 9) / 9
    return read_probability(text)
