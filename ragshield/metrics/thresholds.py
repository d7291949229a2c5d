"""Choosing a keep threshold for a scored judge: by cross-validation (docs/METHODS.md 5.3) and
with a risk guarantee (docs/METHODS.md 4.12). keep = score >= threshold; NaN scores are never
kept."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta
from sklearn.model_selection import KFold

from ragshield.metrics.precision_recall import f1_score
from ragshield.metrics.ratio import ratio
from ragshield.metrics.sweep import threshold_sweep

Objective = Literal["accuracy", "f1"]


def _objective(tp: ArrayLike, kept: ArrayLike, positives: int, support: int, n: int,
               objective: Objective) -> np.ndarray | float:
    """accuracy: share of samples whose keep bit equals the truth; f1: AwF F1 (recall over
    the `support` count)."""
    tp, kept = np.asarray(tp, dtype=float), np.asarray(kept, dtype=float)
    if objective == "accuracy":
        return ratio(tp + (n - positives) - (kept - tp), n)
    return f1_score(ratio(tp, kept), ratio(tp, support))


@dataclass(frozen=True)
class CVThresholds:
    thresholds: np.ndarray  # fitted on the other folds, one per fold (NaN if none)
    values: np.ndarray  # the objective on the held-out fold
    mean: float
    std: float  # sample standard deviation over folds (ddof = 1)


def cv_threshold(score: ArrayLike, truth: ArrayLike, support: ArrayLike | None = None,
                 objective: Objective = "accuracy", folds: int = 5,
                 seed: int = 0) -> CVThresholds:
    """Fit the threshold maximising `objective` on folds - 1 folds (the strictest on ties;
    keeping nothing is a candidate for accuracy), evaluate it on the remaining fold.
    `support` is the F1 recall denominator per sample (F-Answerable); it defaults to `truth`.
    Folds are shuffled with `seed`. NaN folds (undefined F1) are left out of mean and std."""
    score = np.asarray(score, dtype=float)
    truth = np.asarray(truth, dtype=bool)
    support = truth if support is None else np.asarray(support, dtype=bool)
    if objective not in ("accuracy", "f1"):
        raise ValueError(f"unknown objective {objective!r}; expected 'accuracy' or 'f1'")
    if score.size < folds:
        raise ValueError(f"{score.size} samples cannot be split into {folds} folds")

    def value(kept_tp: ArrayLike, kept: ArrayLike, rows: np.ndarray) -> np.ndarray | float:
        return _objective(kept_tp, kept, int(np.count_nonzero(truth[rows])),
                          int(np.count_nonzero(support[rows])), rows.size, objective)

    thresholds, values = [], []
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(score):
        sweep = threshold_sweep(score[train], truth[train],
                                include_empty=objective == "accuracy")
        fitted = np.asarray(value(sweep.sums[0], sweep.kept, train))
        if fitted.size == 0 or np.isnan(fitted).all():
            thresholds.append(np.nan)
            values.append(np.nan)
            continue
        threshold = sweep.thresholds[np.nanargmax(fitted)]
        keep = score[test] >= threshold
        thresholds.append(threshold)
        values.append(float(value(np.count_nonzero(keep & truth[test]), np.count_nonzero(keep),
                                  test)))
    values_array = np.asarray(values, dtype=float)
    valid = values_array[~np.isnan(values_array)]
    return CVThresholds(
        thresholds=np.asarray(thresholds, dtype=float),
        values=values_array,
        mean=float(valid.mean()) if valid.size else float("nan"),
        std=float(valid.std(ddof=1)) if valid.size > 1 else float("nan"),
    )


def clopper_pearson_upper(errors: ArrayLike, trials: ArrayLike,
                          confidence: float) -> np.ndarray | float:
    """One-sided Clopper-Pearson upper bound on a binomial rate: 1 when every trial is an
    error, NaN without trials."""
    errors = np.asarray(errors, dtype=float)
    trials = np.asarray(trials, dtype=float)
    all_errors = errors >= trials
    bound = beta.ppf(confidence, errors + 1, np.where(all_errors, 1.0, trials - errors))
    out = np.where(trials == 0, np.nan, np.where(all_errors, 1.0, bound))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class RiskControlledThreshold:
    threshold: float | None  # None when no threshold qualifies
    coverage: float  # share of calibration samples kept (NaN when none qualifies)
    risk: float  # share of the kept calibration answers that are wrong
    upper_bound: float  # Clopper-Pearson upper bound on that risk


def fewest_to_certify(alpha: float, delta: float) -> int:
    """The fewest kept answers whose Clopper-Pearson bound at confidence 1 - delta can be
    <= alpha at all (with no error among them): 1 - delta^(1/n) <= alpha."""
    return max(1, math.ceil(math.log(delta) / math.log(1 - alpha) - 1e-9))


def risk_controlled_threshold(score: ArrayLike, correct: ArrayLike, alpha: float = 0.1,
                              delta: float = 0.05) -> RiskControlledThreshold:
    """The loosest threshold on a labelled calibration set certified by a fixed-sequence test
    of the Clopper-Pearson upper bound on risk (the Learn-then-Test order the policies use,
    docs/METHODS.md 5.6): the thresholds are tested from the strictest that keeps enough
    answers to pass with no error (`fewest_to_certify`, which the labels do not move),
    loosening one at a time, and the test stops at the first whose bound at confidence
    1 - delta exceeds alpha. At confidence 1 - delta the chosen threshold's risk is <= alpha,
    the search over thresholds included: testing in a fixed order needs no correction, where
    picking the loosest threshold that passes anywhere in the sweep would."""
    correct = np.asarray(correct, dtype=float)
    sweep = threshold_sweep(score, correct)
    errors = sweep.kept - sweep.sums[0]
    upper = np.asarray(clopper_pearson_upper(errors, sweep.kept, 1 - delta))
    first = int(np.searchsorted(sweep.kept, fewest_to_certify(alpha, delta)))
    passing = upper[first:] <= alpha
    tested = int(np.argmin(passing)) if not passing.all() else passing.size
    if tested == 0:
        return RiskControlledThreshold(None, float("nan"), float("nan"), float("nan"))
    best = first + tested - 1
    return RiskControlledThreshold(
        threshold=float(sweep.thresholds[best]),
        coverage=float(sweep.kept[best] / sweep.n),
        risk=float(errors[best] / sweep.kept[best]),
        upper_bound=float(upper[best]),
    )
