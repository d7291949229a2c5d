"""Unanswerable questions made from a team's own answerable ones, for training the learned
judge when people have labelled few unanswerable questions (docs/METHODS.md 4.13).

Three kinds, each the way real unanswerable questions look close to answerable ones:
- `other_passage`: the question put against the passages of another sample of the same corpus
  (of the same group when it has one: on topic, silent on the question);
- `swapped_name`: a name or number of the question replaced by one the corpus holds and these
  passages do not (SQuAD 2.0's entity swap);
- `negated`: "not" put after the question's first auxiliary verb (SQuAD 2.0's negation).

A made sample keeps its source's group, so a held-out group never sees its own copies, and its
id says where it came from (`<id>#swapped_name`)."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import replace
from typing import Callable, Sequence

from ragshield.types import Sample

KINDS = ("other_passage", "swapped_name", "negated")
# "did", "does" and "do" are left out: their "not" goes after the subject ("did the Norse
# not ..."), which a pattern cannot find.
_AUXILIARY = re.compile(r"\b(is|was|are|were|can|could|has|have|had|will|would|should)\b",
                        re.IGNORECASE)
_NEGATED = re.compile(r"\b(not|never|no)\b|n't", re.IGNORECASE)
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b([A-Z][a-z]+(?: [A-Z][a-z]+)*)\b")
_NUMBER = re.compile(r"\b\d+\b")


def _other_passage(sample: Sample, pool: Sequence[Sample], texts: dict[str, str],
                   rng: random.Random) -> Sample | None:
    """`texts`: each answerable sample's passages, lower-cased, by id."""
    references = [r.lower() for r in sample.reference_answers if r.strip()]
    own = texts[sample.id]
    others = [s for s in pool if s.passages and texts[s.id] != own
              and not any(r in texts[s.id] for r in references)]
    if not others:
        return None
    chosen = rng.choice(others)
    return replace(sample, passages=list(chosen.passages))


def _swapped_name(sample: Sample, names: Sequence[str], numbers: Sequence[str], text: str,
                  rng: random.Random) -> Sample | None:
    question = sample.question
    found = [m for m in _NAME.finditer(question)] + [m for m in _NUMBER.finditer(question)]
    if not found:
        return None
    target = rng.choice(found)
    choices = numbers if target.group().isdigit() else names
    absent = [c for c in choices if c.lower() not in text and c != target.group()]
    if not absent:
        return None
    swapped = question[:target.start()] + rng.choice(absent) + question[target.end():]
    return replace(sample, question=swapped)


def _negated(sample: Sample) -> Sample | None:
    question = sample.question
    if _NEGATED.search(question):
        return None
    verb = _AUXILIARY.search(question)
    if verb is None:
        return None
    return replace(sample, question=f"{question[:verb.end()]} not{question[verb.end():]}")


def hard_negatives(samples: Sequence[Sample], group_of: Callable[[Sample], str], *,
                   per_sample: int = 1, seed: int = 0) -> list[Sample]:
    """Up to `per_sample` made unanswerable samples for each answerable one (answerable
    True), of the kinds in turn; each is marked answerable=False and keeps no references."""
    rng = random.Random(seed)
    answerable = [s for s in samples if s.answerable]
    by_group: dict[str, list[Sample]] = defaultdict(list)
    for sample in answerable:
        by_group[group_of(sample)].append(sample)
    names = sorted({m.group() for s in answerable for m in _NAME.finditer(s.question)})
    numbers = sorted({m.group() for s in answerable for m in _NUMBER.finditer(s.question)})
    texts = {s.id: " ".join(p.text for p in s.passages).lower() for s in answerable}
    made: list[Sample] = []
    for index, sample in enumerate(answerable):
        tried = 0
        for offset in range(len(KINDS)):
            if tried >= per_sample:
                break
            kind = KINDS[(index + offset) % len(KINDS)]
            if kind == "other_passage":
                pool = [s for s in by_group[group_of(sample)] if s is not sample] or answerable
                new = _other_passage(sample, pool, texts, rng)
            elif kind == "swapped_name":
                new = _swapped_name(sample, names, numbers, texts[sample.id], rng)
            else:
                new = _negated(sample)
            if new is not None:
                made.append(replace(new, id=f"{sample.id}#{kind}", answerable=False,
                                    reference_answers=[]))
                tried += 1
    return made
