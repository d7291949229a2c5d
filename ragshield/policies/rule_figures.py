"""What the shipped default rule was measured to do, in words. The figures are written beside
the rule's fitted numbers (ragshield/assets/grounded_rule.json, "held_out") by the run that
fitted it (`scripts/bench_default_rule.py --write`), so the reason the faces show and the rule
they decide by come from one file. Light on purpose: it reads JSON only, not the rule."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

RULE_FILE = Path(__file__).resolve().parents[1] / "assets" / "grounded_rule.json"


@dataclass(frozen=True)
class Spread:
    """A figure over the held-out sets: its median set, lowest and highest."""

    median: float
    lowest: float
    highest: float


@dataclass(frozen=True)
class HeldOut:
    """Each labelled set decided by the rule fitted on the others (`sets` in all)."""

    sets: int
    times: Spread  # wrong among the shown answers, over that share when every one is shown
    right_shown: Spread  # the right answers shown
    baseline: str  # the one judge the rule replaced, at its own threshold
    baseline_right_shown: float  # the right answers it showed, on the median set
    # The floor a short answer's support must reach, and what it kept of the right and the
    # wrong short answers of the SQuAD 2.0 articles it was fitted on.
    short_floor: float
    short_articles: int
    short_right_kept: float
    short_wrong_kept: float

    def to_dict(self) -> dict[str, Any]:
        return {"sets": self.sets, "times": vars(self.times),
                "right_shown": vars(self.right_shown), "baseline": self.baseline,
                "baseline_right_shown": self.baseline_right_shown,
                "short_floor": {"floor": self.short_floor, "articles": self.short_articles,
                                "right_kept": self.short_right_kept,
                                "wrong_kept": self.short_wrong_kept}}


def read_held_out(path: Path = RULE_FILE) -> HeldOut:
    """The figures of the rule file; ValueError naming the file and the field at fault."""
    body = json.loads(path.read_text(encoding="utf-8"))
    held = body.get("held_out") if isinstance(body, dict) else None
    where = f"{path}: held_out"
    if not isinstance(held, dict):
        raise ValueError(f"{where}: expected an object of the rule's held-out figures")

    def number(part: dict[str, Any], key: str, place: str) -> float:
        value = part.get(key) if isinstance(part, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}.{place}{key}: expected a number")
        return float(value)

    def spread(key: str) -> Spread:
        return Spread(*(number(held.get(key, {}), name, f"{key}.")
                        for name in ("median", "lowest", "highest")))

    short = held.get("short_floor", {})
    baseline = held.get("baseline")
    if not isinstance(baseline, str) or not baseline:
        raise ValueError(f"{where}.baseline: expected a judge's name")
    return HeldOut(int(number(held, "sets", "")), spread("times"), spread("right_shown"),
                   baseline, number(held, "baseline_right_shown", ""),
                   number(short, "floor", "short_floor."),
                   int(number(short, "articles", "short_floor.")),
                   number(short, "right_kept", "short_floor."),
                   number(short, "wrong_kept", "short_floor."))


def reason_words(held: HeldOut) -> str:
    """Why the default rule decides, with what it was measured to do."""
    times, right = held.times, held.right_shown
    return (
        "the default rule: whether the passages can answer the question (pre_answer) and "
        "whether they say what the answer says (support), read by the packaged 1.5B and "
        f"combined as fitted on {held.sets} public labelled sets (docs/QUALITY.md). Each set "
        f"decided by the rule fitted on the other {held.sets - 1}, it showed {times.median:.2f} "
        "times the share of wrong answers that showing every answer gives on the median set "
        f"({times.lowest:.2f} to {times.highest:.2f}) and {right.median:.0%} of the right "
        f"answers ({right.lowest:.0%} to {right.highest:.0%}); {held.baseline} alone showed "
        f"{held.baseline_right_shown:.0%}. A short answer is kept only where support reaches "
        f"{held.short_floor:.2f}: fitted on {held.short_articles} SQuAD 2.0 articles, that kept "
        f"{held.short_right_kept:.0%} of their right short answers and "
        f"{held.short_wrong_kept:.0%} of the wrong ones, most of them other spans of the same "
        "passage")


@cache
def default_rule_reason() -> str:
    """The shipped rule's reason, read once."""
    return reason_words(read_held_out())
