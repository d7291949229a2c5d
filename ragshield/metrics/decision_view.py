"""The decision view: what a person using the shield sees. Of all questions, the share whose
answer is shown; of those shown, the share that are wrong; of the right answers, the share
that got through. Beside keep-all (every answer shown) it says what the shield buys."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from ragshield.metrics.ratio import ratio


@dataclass(frozen=True)
class ShownAnswers:
    samples: int
    shown: float  # share of the answers shown
    wrong_shown: float  # share of the shown answers that are wrong (NaN: none shown)
    right_shown: float  # share of the right answers that are shown (NaN: none right)


def shown_answers(keep: ArrayLike, good: ArrayLike) -> ShownAnswers:
    """`keep`: the answer is shown (an undecided or deferred sample is not); `good`: it is
    right and supported."""
    keep = np.asarray(keep, dtype=bool)
    good = np.asarray(good, dtype=bool)
    return ShownAnswers(samples=int(keep.size), shown=ratio(keep.sum(), keep.size),
                        wrong_shown=ratio((keep & ~good).sum(), keep.sum()),
                        right_shown=ratio((keep & good).sum(), good.sum()))


def one_in(share: float) -> str:
    """A share in words a stakeholder reads at a glance: "none", "all", "1 in 5", "7 in 10"."""
    if math.isnan(share):
        return "-"
    if share <= 0:
        return "none"
    if share >= 1:
        return "all"
    near = Fraction(share).limit_denominator(10)
    if not near.numerator:
        return "fewer than 1 in 10"
    if near == 1:  # 0.95 and up: "1 in 1" would read as all
        return "more than 9 in 10"
    return f"{near.numerator} in {near.denominator}"


def in_plain_words(shield: ShownAnswers, keep_all: ShownAnswers) -> str:
    """"with the shield: 40% of answers shown, 1 in 5 of them wrong; without it: all shown,
    7 in 10 wrong"."""
    if shield.shown == 0:
        with_shield = "with the shield: no answer shown"
    else:
        with_shield = (f"with the shield: {shield.shown:.0%} of answers shown, "
                       f"{one_in(shield.wrong_shown)} of them wrong")
    return f"{with_shield}; without it: all shown, {one_in(keep_all.wrong_shown)} wrong"
