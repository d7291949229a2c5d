"""What a shield trades, as data: wrong answers among those shown against the share of
answers shown, for the rule, for showing everything and for each judge swept over its
thresholds; and those numbers in words (the figures' text alternatives). The figures are
drawn by reports/tradeoff_figures.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

STRONGEST = 4  # judge curves on the large figure


@dataclass(frozen=True)
class JudgeCurve:
    """One judge swept over its thresholds: at each, the share of all answers shown and the
    share of those that are wrong; and the point its own keep decisions make."""

    judge: str
    shown: np.ndarray
    wrong: np.ndarray  # NaN where nothing is shown
    point: tuple[float, float]  # (shown, wrong among shown) by its keep decisions
    area: float  # mean wrong among shown over the sweep: lower is better; NaN: no scores

    def wrong_at(self, shown: float) -> float:
        """Wrong among shown where the sweep first shows at least `shown` (NaN: never)."""
        reached = np.flatnonzero(self.shown >= shown - 1e-12)
        return float(self.wrong[reached[0]]) if reached.size else math.nan


@dataclass(frozen=True)
class Tradeoff:
    rule: str
    rule_point: tuple[float, float]  # the shield: (shown, wrong among shown)
    keep_all: tuple[float, float]  # every answer shown (refusals are never shown)
    judges: list[JudgeCurve]  # strongest first (by area; judges without scores last)
    reads: tuple[str, ...] = ()  # the judges the rule reads, drawn on the large figure

    def drawn(self) -> list[JudgeCurve]:
        """The curves of the large figure: the rule's own judges, then the strongest others,
        STRONGEST in all (at least the rule's)."""
        own = [c for c in self.judges if c.judge in self.reads][:STRONGEST]
        others = [c for c in self.judges if c.judge not in self.reads and not math.isnan(c.area)]
        return own + others[:max(STRONGEST - len(own), 0)]


def shown_percent(share: float) -> str:
    return "n/a" if math.isnan(share) else f"{share:.0%}"


def tradeoff_text(tradeoff: Tradeoff) -> str:
    """The large figure's numbers in words: its text alternative and caption."""
    shown, wrong = tradeoff.rule_point
    parts = [f"Wrong answers among those shown, against the share of answers shown. The "
             f"shield ({tradeoff.rule}) shows {shown_percent(shown)} of answers, "
             f"{shown_percent(wrong)} of them wrong; showing everything shows "
             f"{shown_percent(tradeoff.keep_all[0])}, {shown_percent(tradeoff.keep_all[1])} wrong."]
    at = [f"{c.judge} {shown_percent(c.wrong_at(shown))}" for c in tradeoff.drawn()
          if not math.isnan(c.area)]
    if at and shown > 0:
        parts.append(f"Showing as many ({shown_percent(shown)}), wrong among shown by judge: "
                     + ", ".join(at) + ".")
    return " ".join(parts)


def judges_text(tradeoff: Tradeoff) -> str:
    """The small multiples' numbers in words: each judge's own operating point."""
    points = [f"{c.judge}: {shown_percent(c.point[0])} shown, {shown_percent(c.point[1])} wrong"
              for c in tradeoff.judges]
    return ("Each judge alone, by its own keep decisions (one panel each, same axes, the "
            "dashed line is showing everything): " + ("; ".join(points) or "no judges") + ".")
