"""The `grounded` rule: one logistic combination of whether the passages can answer the
question (pre_answer) and whether they say what the answer says (support), fitted on public
labelled sets and shipped as plain numbers in ragshield/assets/grounded_rule.json
(scripts/bench_default_rule.py fits it, each set left out in turn, and writes it).

The threshold is the highest that still shows RIGHT_SHOWN_AIM of the right answers on average
over the sets it was fitted on, each set weighted equally in the fit, short extractive answers
and long ones alike."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ragshield.claims import split_claims
from ragshield.config import GROUNDED_RULE as GROUNDED
from ragshield.metrics.stacked import stack_features
from ragshield.policies.stacked_score import StackedScore, read_stacked, train_stacked_score
from ragshield.types import RuleDecision, Verdict

RULE_FILE = Path(__file__).resolve().parents[1] / "assets" / "grounded_rule.json"
RIGHT_SHOWN_AIM = 0.75
SUPPORT = "support"
MIN_SET = 20  # answers: a smaller set weighs in the fit as its answers, not as a whole set


@dataclass(frozen=True)
class Cut:
    """One fitted score over the judges' scores and the threshold it keeps at."""

    score: StackedScore
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score.to_dict(), "threshold": self.threshold}


@dataclass(frozen=True)
class AnswerRule:
    """The fitted rule (judging.ScoreRule): `long` decides every answer, except, where
    `short` is fitted, the answers of at most `short_words` words (of the claims the support
    judge checked), which `short` decides. Short extractive answers and long ones need
    different weights: support tells little about a name, answerability little about a
    paragraph (docs/QUALITY.md)."""

    long: Cut
    short: Cut | None = None
    short_words: int = 0
    fitted_on: tuple[str, ...] = ()  # the labelled sets, for the page's "why this rule"

    @property
    def rule(self) -> str:
        return GROUNDED

    @property
    def judges(self) -> list[str]:
        cuts = [self.long] + ([self.short] if self.short else [])
        return list(dict.fromkeys(j for cut in cuts for j in cut.score.judges))

    def _is_short(self, words: np.ndarray) -> np.ndarray:
        """Which answers the short cut decides (a NaN word count: not known, the long cut)."""
        if self.short is None:
            return np.zeros(len(words), bool)
        return np.nan_to_num(words, nan=np.inf) <= self.short_words

    def scores(self, features: pd.DataFrame,
               words: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(P(good), the threshold it is held to) per row of a stack_features frame, each row
        by the cut of its answer's `words` (None: all long); NaN where no judge scored."""
        short = self._is_short(np.full(len(features), np.nan) if words is None
                               else np.asarray(words, float))
        probability = self.long.score.score_frame(features)
        threshold = np.full(len(features), self.long.threshold)
        if self.short is not None and short.any():
            probability = np.where(short, self.short.score.score_frame(features), probability)
            threshold = np.where(short, self.short.threshold, threshold)
        return probability, threshold

    def keep_frame(self, frame: pd.DataFrame) -> np.ndarray:
        """Keep bits of rows holding each judge's score as a column (NaN: not scored) and,
        for a rule with a short cut, the answer's claim words (`words`)."""
        features = stack_features({j: frame[j] for j in self.judges if j in frame}, {})
        words = frame["words"].to_numpy(float) if "words" in frame else None
        probability, threshold = self.scores(features, words)
        return np.nan_to_num(probability, nan=-1.0) >= threshold

    def decide(self, verdicts: Sequence[Verdict]) -> RuleDecision:
        scored = [v for v in verdicts if v.judge in self.judges and v.score is not None]
        if not scored:
            return RuleDecision(None, GROUNDED, f"none of {', '.join(self.judges)} gave a score")
        words = verdict_words(verdicts)
        short = bool(self._is_short(np.array([np.nan if words is None else words]))[0])
        cut = self.short if short and self.short is not None else self.long
        probability = cut.score.score_verdicts(scored)
        keep = probability >= cut.threshold
        parts = ", ".join(f"{v.judge} {v.score:.2f}" for v in scored if v.judge in
                          cut.score.judges)
        missing = [j for j in cut.score.judges if j not in {v.judge for v in scored}]
        gap = f" ({', '.join(missing)} gave no score: its usual value counted)" if missing else ""
        side = "at or above" if keep else "under"
        return RuleDecision(keep, GROUNDED, f"{GROUNDED}{self._length_words(short, words)}: "
                                            f"{parts} combine to {probability:.2f}, {side} the "
                                            f"threshold {cut.threshold:.2f}{gap}")

    def _length_words(self, short: bool, words: int | None) -> str:
        if self.short is None:
            return ""
        if words is None:
            return " (the answer's length unknown: decided as a long one)"
        kind = "short" if short else "long"
        return f" (a {kind} answer: {words} words, the cut at {self.short_words})"

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"long": self.long.to_dict(), "fitted_on": list(self.fitted_on)}
        if self.short is not None:
            body.update(short=self.short.to_dict(), short_words=self.short_words)
        return body


def verdict_words(verdicts: Sequence[Verdict]) -> int | None:
    """Words of the claims the support judge checked (claims.py), None without its claims."""
    support = next((v for v in verdicts if v.judge == SUPPORT), None)
    claims = support.details.get("claims") if support is not None else None
    if not isinstance(claims, list) or not claims:
        return None
    return sum(len(str(c.get("text", "")).split()) for c in claims if isinstance(c, dict))


def claim_words(text: str | None, refusal: bool = False) -> int:
    """Words of an answer's claims as the support judge splits them: what the short cut
    reads (0 for a refusal)."""
    return 0 if refusal or not text else sum(len(c.text.split()) for c in split_claims(text))


def fit_answer_rule(frame: pd.DataFrame, judges: Sequence[str], aim: float = RIGHT_SHOWN_AIM,
                    short_words: int | None = None) -> AnswerRule:
    """The rule fitted on `frame` (one row per answer: a score column per judge, `good`, `set`
    and, with `short_words`, `words`): with `short_words`, one cut fitted on the answers of at
    most that many claim words and one on the longer ones; else one cut for all."""
    sets = tuple(frame["set"].unique())
    if short_words is None:
        return AnswerRule(_fit_cut(frame, judges, aim), fitted_on=sets)
    short = (frame["words"] <= short_words).to_numpy()
    return AnswerRule(_fit_cut(frame[~short], judges, aim), _fit_cut(frame[short], judges, aim),
                      short_words, sets)


def _fit_cut(frame: pd.DataFrame, judges: Sequence[str], aim: float) -> Cut:
    """A cut fitted on `frame`, each set weighing as much in the fit as any other (a set of
    fewer than MIN_SET answers by its answers, as if it had MIN_SET); its threshold the highest
    that shows `aim` of the right answers, on average over the sets (weighted the same way)."""
    counts = frame["set"].value_counts()
    sizes = frame["set"].map(counts.clip(lower=MIN_SET)).to_numpy(float)
    good = frame["good"].to_numpy(bool)
    features = stack_features({j: frame[j] for j in judges}, {})
    score = train_stacked_score(features, good, weights=len(frame) / sizes)
    probability = score.score_frame(features.reindex(columns=list(score.columns)))
    names = list(frame["set"].unique())
    right = [probability[(frame["set"] == s).to_numpy() & good] for s in names]
    weight = [min(counts[s], MIN_SET) for s in names]
    return Cut(score, _showing(right, weight, aim))


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
    if not isinstance(body, dict):
        raise ValueError(f"{path}: expected an object")
    short_words = body.get("short_words", 0)
    if "short" in body and (not isinstance(short_words, int) or short_words < 1):
        raise ValueError(f"{path}: short_words: expected a whole number of at least 1")
    return AnswerRule(_read_cut(body.get("long"), f"{path}: long"),
                      _read_cut(body["short"], f"{path}: short") if "short" in body else None,
                      short_words if "short" in body else 0,
                      tuple(str(s) for s in body.get("fitted_on", [])))


def _read_cut(body: Any, where: str) -> Cut:
    threshold = body.get("threshold") if isinstance(body, dict) else None
    if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"{where}.threshold: expected a number from 0 to 1")
    return Cut(read_stacked(body.get("score"), f"{where}.score"), float(threshold))


@lru_cache(maxsize=1)
def shipped_rule() -> AnswerRule:
    """The rule the package ships, read once."""
    return read_answer_rule(RULE_FILE)
