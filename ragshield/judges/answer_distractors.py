"""Wrong answers made from a question's own passage, for training and measuring the answer
verifier (scripts/train_verifier.py): a span of the same kind as the gold answer (a number
for a number, a name for a name, words for words) that is not the answer.

They are the hard case for a verifier: every word of such an answer is in the passages, so
only reading the answer against the question tells it from the right one ("Rollo" and "the
Normans" are both in the Normandy passage; one of them gave Normandy its name)."""

from __future__ import annotations

import random
import re
from typing import Sequence

_MONTHS = ("January February March April May June July August September October November "
           "December").split()
# A number, a date ("May 18, 2018", "1901", "10th") or an amount ("150,782 SEK" reads as
# "150,782").
_MONTH = "|".join(_MONTHS)
_NUMBER = re.compile(rf"\b(?:(?:{_MONTH})\s+\d{{1,2}},?\s+)?\d[\d,.]*(?:st|nd|rd|th|s)?"
                     rf"(?:\s+(?:{_MONTH}))?\b")
# Capitalised words in a run, with the small words names hold ("Guy de Lusignan").
_NAME = re.compile(r"\b[A-Z][\w'\-]+(?:\s+(?:(?:of|de|the|von|van|and|la|le|du)\s+)?"
                   r"[A-Z][\w'\-]+)*")
_WORD = re.compile(r"[\w'\-]+")
_PAUSE = re.compile(r"[.,;:!?()\"]")
_SMALL = frozenset("a an the of to in on at by for and or but is are was were be been it its "
                   "this that these those with as from which who whom".split())


def kind_of(answer: str) -> str:
    """'number' (it holds a digit), 'name' (it starts with a capital) or 'words'."""
    if any(character.isdigit() for character in answer):
        return "number"
    stripped = answer.strip()
    return "name" if stripped[:1].isupper() else "words"


def _overlaps(candidate: str, golds: Sequence[str]) -> bool:
    low = candidate.lower()
    return any(low in gold.lower() or gold.lower() in low for gold in golds if gold.strip())


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?:\"'("


def _spans(passage: str, kind: str, length: int) -> list[str]:
    if kind == "number":
        return [m.group().rstrip(".,") for m in _NUMBER.finditer(passage)]
    if kind == "name":  # a lone capitalised word opening a sentence is no name ("Because")
        return [m.group() for m in _NAME.finditer(passage)
                if " " in m.group() or not _opens_sentence(passage, m.start())]
    words = list(_WORD.finditer(passage))
    out = []
    for start in range(0, max(0, len(words) - length + 1)):
        first, last = words[start], words[start + length - 1]
        span = passage[first.start():last.end()]
        if (first.group().lower() not in _SMALL and last.group().lower() not in _SMALL
                and not _PAUSE.search(span)):  # a span as written, within one clause
            out.append(span)
    return out


def wrong_spans(passage: str, golds: Sequence[str], count: int,
                rng: random.Random) -> list[str]:
    """Up to `count` distinct spans of `passage` of the first gold answer's kind that neither
    hold nor lie inside any gold answer."""
    if not golds:
        return []
    golds = [g.strip(" .,;:") for g in golds]
    gold = golds[0]
    length = max(1, min(len(gold.split()), 6))
    seen: dict[str, None] = {}
    for span in _spans(passage, kind_of(gold), length):
        if span and not _overlaps(span, golds):
            seen.setdefault(span, None)
    candidates = list(seen)
    rng.shuffle(candidates)
    return candidates[:count]
