"""Is a policy keeping its promise? Its risk on labels it was not fitted on, with an
interval: a breach when even the interval's lower end lies above the promised alpha."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragshield.holdout import in_holdout
from ragshield.policies.policy import Policy, calibration_of

RANDOM_SLICE, UNUSED = "random slice", "every unused label"


@dataclass(frozen=True)
class WatchRow:
    labels: str  # which labels: RANDOM_SLICE (unbiased) or UNUSED
    samples: int
    answered: int
    withheld: int
    deferred: int
    bad_answered: int
    risk: float | None  # observed: bad among answered
    risk_interval: tuple[float, float] | None  # 95% Clopper-Pearson
    promised: float  # alpha

    @property
    def breach(self) -> bool:
        return self.risk_interval is not None and self.risk_interval[0] > self.promised


def _row(name: str, policy: Policy, scores: np.ndarray, good: np.ndarray) -> WatchRow:
    seen = calibration_of(policy.answer_at, policy.withhold_below, scores, good)
    return WatchRow(name, seen.labels, seen.answered, seen.withheld, seen.deferred,
                    seen.bad_answered, seen.risk, seen.risk_interval, policy.alpha)


def unused_mask(policy: Policy, dataset: str | None, sample_ids: np.ndarray) -> np.ndarray:
    """Which of these samples of `dataset` the policy was not fitted on."""
    used = (set(policy.fitted_on.sample_ids) if dataset == policy.fitted_on.dataset
            else set())
    return np.asarray([str(i) not in used for i in sample_ids], dtype=bool)


def watch(policy: Policy, dataset: str | None, sample_ids: np.ndarray, scores: np.ndarray,
          good: np.ndarray) -> list[WatchRow]:
    """The policy on labelled samples of `dataset` that it was not fitted on: the random
    slice kept apart (when the policy keeps one; nobody chose these labels, so their risk
    is unbiased) and every unused label."""
    unused = unused_mask(policy, dataset, sample_ids)
    rows = []
    if policy.holdout > 0:
        held = unused & np.asarray([in_holdout(str(i), policy.holdout) for i in sample_ids],
                                   dtype=bool)
        rows.append(_row(RANDOM_SLICE, policy, scores[held], good[held]))
    rows.append(_row(UNUSED, policy, scores[unused], good[unused]))
    return rows
