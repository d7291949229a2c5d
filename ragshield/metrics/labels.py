"""Ground-truth labels (docs/METHODS.md 3): whether the passages support a reference, the AwF truth,
and the majority of several annotators' answerability labels."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence, overload

import numpy as np
from numpy.typing import ArrayLike

from ragshield.metrics.correctness import contains_reference

ANSWERABLE, UNANSWERABLE, UNSURE = "answerable", "unanswerable", "unsure"
_HUMAN_SUPPORT = {ANSWERABLE: True, UNANSWERABLE: False, UNSURE: None, None: None}


def passages_support(human_label: str | None, dataset_flag: bool | None,
                     reference_in_passages: bool) -> bool:
    """First source that has a say: the human label ("unsure" or None: no say), then the
    dataset's `answerable` flag (None: no say), then the reference check."""
    if human_label not in _HUMAN_SUPPORT:
        raise ValueError(f"unknown answerability label {human_label!r}; expected "
                         f"{ANSWERABLE!r}, {UNANSWERABLE!r}, {UNSURE!r} or None")
    for source in (_HUMAN_SUPPORT[human_label], dataset_flag):
        if source is not None:
            return bool(source)
    return bool(reference_in_passages)


def reference_in_passages(references: Sequence[str], passage_texts: Iterable[str]) -> bool:
    """A normalised reference occurs in a normalised passage (on word boundaries, as the
    containment rule of docs/METHODS.md 2)."""
    return any(contains_reference(text, references) for text in passage_texts)


@overload
def awf_truth(answer_correct: np.ndarray, support: ArrayLike) -> np.ndarray: ...
@overload
def awf_truth(answer_correct: bool, support: bool) -> bool: ...
@overload
def awf_truth(answer_correct: ArrayLike, support: ArrayLike) -> np.ndarray | bool: ...


def awf_truth(answer_correct: ArrayLike, support: ArrayLike) -> np.ndarray | bool:
    """V: the answer is correct AND the passages support a reference (elementwise)."""
    truth = np.logical_and(answer_correct, support)
    return bool(truth) if truth.ndim == 0 else truth


def majority_flag(flags: Iterable[bool | None]) -> bool | None:
    """The majority of yes/no votes (e.g. annotators' "answer correct" flags); None votes
    are ignored; a tie or no vote gives None."""
    votes = [flag for flag in flags if flag is not None]
    yes = sum(votes)
    return None if yes * 2 == len(votes) else yes * 2 > len(votes)


def majority_label(labels: Iterable[str | None]) -> str | None:
    """The answerable / unanswerable majority; "unsure" and None votes are ignored; a tie
    or no vote gives None (unlabelled). Unknown labels raise ValueError."""
    votes: Counter[str | None] = Counter()
    for label in labels:
        if label not in _HUMAN_SUPPORT:
            raise ValueError(f"unknown answerability label {label!r}")
        votes[label] += 1
    if votes[ANSWERABLE] == votes[UNANSWERABLE]:
        return None
    return ANSWERABLE if votes[ANSWERABLE] > votes[UNANSWERABLE] else UNANSWERABLE
