"""Does a fitted policy keep its promise on labels it never saw? Split the labelled samples
of a run at random, fit on one half, count the wrong answers the policy shows on the other,
many times over. The promise is that risk <= alpha with probability >= 1 - delta, so the
share of splits whose unseen half shows more than alpha wrong should be at most about
delta (a finite half adds its own noise on top; Learn-then-Test's margin absorbs it)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ragshield.policies.policy import calibration_of
from ragshield.policies.risk_control import STARTS, PolicyFitError, fit_thresholds


@dataclass(frozen=True)
class PromiseCheck:
    delta: float
    splits: int
    fitted: int  # splits where a threshold was certified (the rest refused: no risk taken)
    breaches: int  # fitted splits whose unseen half shows risk > alpha
    coverage: float  # median share of the unseen half answered, over fitted splits (NaN: none)
    risk: float  # median risk on the unseen half, over fitted splits with an answer

    @property
    def breach_share(self) -> float:
        return self.breaches / self.splits

    @property
    def allowance(self) -> float:
        """Three Monte Carlo standard errors of a breach share of delta: how far above delta
        the share may lie by the chance of the splits alone."""
        return 3 * math.sqrt(self.delta * (1 - self.delta) / self.splits)

    @property
    def held(self) -> bool:
        return self.breach_share <= self.delta + self.allowance


def check_promise(scores: np.ndarray, good: np.ndarray, alpha: float, delta: float,
                  splits: int = 200, seed: int = 0, starts: int = STARTS) -> PromiseCheck:
    """Fit on a random half and watch the other, `splits` times. `scores` as a policy is
    fitted on (NaN: unscored, -inf: a refusal); `good`: the answer is right and supported."""
    scores, good = np.asarray(scores, dtype=float), np.asarray(good, dtype=bool)
    rng = np.random.default_rng(seed)
    fitted = breaches = 0
    coverages, risks = [], []
    for _ in range(splits):
        first = rng.permutation(scores.size) < scores.size // 2
        try:
            answer_at = fit_thresholds(scores[first], good[first], alpha, delta,
                                       starts=starts).answer_at
        except PolicyFitError:
            continue
        fitted += 1
        seen = calibration_of(answer_at, None, scores[~first], good[~first])
        coverages.append(seen.coverage)
        if seen.risk is not None:
            risks.append(seen.risk)
            breaches += seen.risk > alpha
    return PromiseCheck(delta, splits, fitted, breaches,
                        float(np.median(coverages)) if coverages else math.nan,
                        float(np.median(risks)) if risks else math.nan)
