"""The `grounded` rule: one logistic combination of whether the passages can answer the
question (pre_answer) and whether they say what the answer says (support), fitted on public
labelled sets and shipped as plain numbers in ragshield/assets/grounded_rule.json
(scripts/bench_default_rule.py fits it, each set left out in turn, and writes it).

The threshold is the highest that still shows RIGHT_SHOWN_AIM of the right answers on average
over the sets it was fitted on, each set weighted equally in the fit, short extractive answers
and long ones alike. A short answer ("Rollo.", judges/short_answer.py) must also reach
SHORT_SUPPORT_FLOOR of support: a wrong span of a passage that can answer the question gets a
high pre_answer, which alone would carry it over the threshold."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ragshield.config import GROUNDED_RULE as GROUNDED
from ragshield.decision_rule import ABSTAINED, KEPT, UNDECIDED, RunScores
from ragshield.judges.short_answer import SHORT_SUPPORT_FLOOR
from ragshield.metrics.stacked import stack_features
from ragshield.policies.rule_figures import RULE_FILE
from ragshield.policies.stacked_score import StackedScore, read_stacked, train_stacked_score
from ragshield.types import RuleDecision, Verdict

RIGHT_SHOWN_AIM = 0.75
MIN_SET = 20  # answers: a smaller set weighs in the fit as its answers, not as a whole set


@dataclass(frozen=True)
class AnswerRule:
    """A fitted score over judges' scores and the threshold it keeps at
    (decision_rule.ScoreRule)."""

    score: StackedScore
    threshold: float
    fitted_on: tuple[str, ...] = ()  # the labelled sets, for the page's "why this rule"
    short_floor: float = SHORT_SUPPORT_FLOOR  # the least support a short answer is kept at

    @property
    def rule(self) -> str:
        return GROUNDED

    @property
    def judges(self) -> list[str]:
        return self.score.judges

    def keep_frame(self, frame: pd.DataFrame) -> np.ndarray:
        """Keep bits of rows holding each judge's score as a column (NaN: not scored) and,
        where the frame has them, boolean `short` (a short answer) and `refusal` columns."""
        features = stack_features({j: frame[j] for j in self.judges if j in frame}, {})
        unset = np.zeros(len(frame), dtype=bool)
        kept, _ = self.decisions(
            features, frame["short"].to_numpy(bool) if "short" in frame else unset,
            frame["refusal"].to_numpy(bool) if "refusal" in frame else unset)
        return kept

    def decisions(self, features: pd.DataFrame, short: np.ndarray,
                  refusal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`decide` on many answers at once, one row of a stack_features frame each: (kept,
        decided). A row none of the judges scored is undecided; a refusal is withheld, as
        judging.decide withholds it; a short answer under the floor is withheld."""
        probability = self.score.score_frame(features)
        support = (features["support:score"].to_numpy(float) if "support:score" in features
                   else np.full(len(features), np.nan))
        decided = ~np.isnan(probability) | refusal
        kept = ((np.nan_to_num(probability, nan=-1.0) >= self.threshold)
                & ~self.below_floor(short, support) & ~refusal)
        return kept, decided

    def run_codes(self, run: RunScores) -> np.ndarray:
        kept, decided = self.decisions(run.features(), run.short, run.refusal)
        return np.where(~decided, UNDECIDED, np.where(kept, KEPT, ABSTAINED))

    def below_floor(self, short: np.ndarray, support: np.ndarray) -> np.ndarray:
        """Which answers the floor withholds: short ones whose support is under it or
        unread (NaN: support did not vouch for them)."""
        return short & (np.nan_to_num(support, nan=-1.0) < self.short_floor)

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision:
        scored = [v for v in verdicts if v.judge in self.judges and v.score is not None]
        if not scored:
            return RuleDecision(None, GROUNDED, f"none of {', '.join(self.judges)} gave a score")
        probability = self.score.score_verdicts(scored)
        assert probability is not None  # `scored` holds a score of its judges
        keep = probability >= self.threshold
        parts = ", ".join(f"{v.judge} {v.score:.2f}" for v in scored)
        missing = [j for j in self.judges if j not in {v.judge for v in scored}]
        gap = f" ({', '.join(missing)} gave no score: its usual value counted)" if missing else ""
        side = "at or above" if keep else "under"
        reason = (f"{GROUNDED}: {parts} combine to {probability:.2f}, {side} the threshold "
                  f"{self.threshold:.2f}{gap}")
        # A short answer support could not read is one it did not vouch for: under the floor.
        support = next((v for v in verdicts if v.judge == "support"), None)
        if keep and support is not None and self.below_floor(
                np.array([_read_short(support)]),
                np.array([np.nan if support.score is None else support.score]))[0]:
            return RuleDecision(False, GROUNDED, f"{reason}; but a short answer is kept only "
                                                 f"at support {self.short_floor:.2f} or more")
        return RuleDecision(keep, GROUNDED, reason)

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score.to_dict(), "threshold": self.threshold,
                "fitted_on": list(self.fitted_on)}


def _read_short(support: Verdict) -> bool:
    """Whether the support judge read the answer as a short answer (judges/support.py)."""
    claims = support.details.get("claims") or []
    return len(claims) == 1 and "short_answer" in claims[0]


def fit_answer_rule(frame: pd.DataFrame, judges: Sequence[str],
                    aim: float = RIGHT_SHOWN_AIM) -> AnswerRule:
    """The rule fitted on `frame` (one row per answer: a score column per judge, `good`, `set`),
    each set weighing as much in the fit as any other (a set of fewer than MIN_SET answers by
    its answers, as if it had MIN_SET); its threshold the highest that shows `aim` of the right
    answers, on average over the sets (weighted the same way)."""
    counts = frame["set"].value_counts()
    sizes = frame["set"].map(counts.clip(lower=MIN_SET)).to_numpy(float)
    good = frame["good"].to_numpy(bool)
    features = _rarely_missing_filled(stack_features({j: frame[j] for j in judges}, {}))
    score = train_stacked_score(features, good, weights=len(frame) / sizes)
    probability = score.score_frame(features.reindex(columns=list(score.columns)))
    names = list(frame["set"].unique())
    right = [probability[(frame["set"] == s).to_numpy() & good] for s in names]
    weight = [min(counts[s], MIN_SET) for s in names]
    return AnswerRule(score, _showing(right, weight, aim), tuple(names))


def _rarely_missing_filled(features: pd.DataFrame) -> pd.DataFrame:
    """Features with a column's few gaps (fewer than MIN_SET: say, one passage too long for
    the reader) filled with its mean, so that the fit adds no missing flag for them: a flag
    learnt from one or two answers would decide every later answer its judge cannot score.
    A judge missing on a whole set (pre_answer on WiCE, which has no question) keeps its
    flag."""
    gaps = features.isna().sum()
    rare = [c for c in features.columns if 0 < gaps[c] < MIN_SET]
    return features.fillna({c: features[c].mean() for c in rare})


def _showing(right: list[np.ndarray], weight: Sequence[float], aim: float) -> float:
    """The highest threshold that keeps `aim` of the right answers on average over the sets
    (each set's share counted by its `weight`). Requiring it of every set let the weakest set
    set the threshold, which then kept nearly everything elsewhere (docs/QUALITY.md)."""
    candidates = np.unique(np.concatenate(right))
    candidates = candidates[~np.isnan(candidates)][::-1]
    kept = [(w, scores) for w, scores in zip(weight, right) if scores.size]
    for threshold in candidates:
        if np.average([(scores >= threshold).mean() for _, scores in kept],
                      weights=[w for w, _ in kept]) >= aim:
            return float(threshold)
    return 0.0


def read_answer_rule(path: Path = RULE_FILE) -> AnswerRule:
    """The shipped rule; ValueError naming the file and field at fault."""
    body = json.loads(path.read_text(encoding="utf-8"))
    threshold = body.get("threshold") if isinstance(body, dict) else None
    if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"{path}: threshold: expected a number from 0 to 1")
    fitted_on = body.get("fitted_on", [])
    return AnswerRule(read_stacked(body.get("score"), f"{path}: score"), float(threshold),
                      tuple(str(s) for s in fitted_on))


@lru_cache(maxsize=1)
def shipped_rule() -> AnswerRule:
    """The rule the package ships, read once."""
    return read_answer_rule(RULE_FILE)
