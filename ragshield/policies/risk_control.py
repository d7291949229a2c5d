"""Two thresholds on one score with a guarantee (docs/METHODS.md 6): answer when
score >= t_hi, withhold when score < t_lo, defer in between.

The guarantee is Learn-then-Test (Angelopoulos et al., 2021) with fixed-sequence testing
and binomial p-values. For a candidate t, the null hypothesis "the answered set's risk
P(bad | score >= t) exceeds alpha" gets the p-value P(Binomial(n_t, alpha) <= e_t), where
n_t calibration samples score >= t and e_t of them are bad: given n_t, their labels are
independent draws with that risk. The candidates are tested from the strictest to the
loosest, each at level delta, stopping at the first that fails; every candidate before it
is certified, and the loosest certified one is t_hi. With probability >= 1 - delta over the
calibration data, no certified threshold has a risk above alpha, however many candidates
were tried (the order is fixed before the labels are seen: by the score alone).

Candidates that answer fewer than `min_trials(alpha, delta)` samples cannot pass even with
no bad answer among them, so the sequence starts at the first one that can.

One sequence stops for good at its first failure, and the strictest candidates answer few
samples: one bad answer among the first 22 (alpha = delta = 0.1) ends the search even when
looser thresholds would pass easily. LTT's multi-start variant runs `starts` sequences from
starting points spread evenly over the testable candidates (placed by the scores alone), each
at level delta / starts, and certifies the union (Bonferroni over the sequences keeps the
family-wise error <= delta). `STARTS` is chosen by the simulation in
scripts/bench_policy_promise.py (docs/QUALITY.md).

A sample whose score is -inf (a refusal: it shows no answer) is never answered. The withhold
threshold is fitted the same way on the other side (the share of good answers among those
withheld <= beta, candidates from the loosest withholding upward, never above t_hi); with
beta the two tests share delta (delta / 2 each), so both promises hold together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_distribution
from scipy.stats import binom

from ragshield.errors import UserError
from ragshield.metrics.sweep import Sweep, threshold_sweep


class PolicyFitError(UserError, ValueError):
    """The labels cannot support the requested promise; the message says why and what
    would. `more_labels`: about how many more labels would certify a threshold at the
    current error rate (None: more labels alone would not, or the fit failed otherwise)."""

    def __init__(self, message: str, more_labels: int | None = None) -> None:
        super().__init__(message)
        self.more_labels = more_labels


def min_trials(alpha: float, delta: float) -> int:
    """The fewest samples in a set for its risk to be certified <= alpha at level delta:
    even with no bad one, P(Binomial(n, alpha) = 0) = (1 - alpha)^n must reach delta."""
    return max(1, math.ceil(math.log(delta) / math.log1p(-alpha)))


def binomial_p_values(bad: ArrayLike, trials: ArrayLike, alpha: float) -> np.ndarray:
    """P(Binomial(trials, alpha) <= bad): a valid p-value for "the rate exceeds alpha"."""
    return np.asarray(binom.cdf(np.asarray(bad), np.asarray(trials), alpha), dtype=float)


def fixed_sequence(p_values: ArrayLike, delta: float) -> int:
    """How many hypotheses, in the given order, fixed-sequence testing rejects at level
    delta: those before the first p-value above delta."""
    failed = np.flatnonzero(np.asarray(p_values) > delta)
    return int(failed[0]) if failed.size else len(np.asarray(p_values))


def clopper_pearson(bad: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided exact interval on a binomial rate; (NaN, NaN) without trials."""
    if trials == 0:
        return math.nan, math.nan
    tail = (1 - level) / 2
    low = 0.0 if bad == 0 else float(beta_distribution.ppf(tail, bad, trials - bad + 1))
    high = 1.0 if bad == trials else float(beta_distribution.ppf(1 - tail, bad + 1,
                                                                   trials - bad))
    return low, high


@dataclass(frozen=True)
class FittedThresholds:
    answer_at: float  # t_hi: answer when score >= answer_at
    withhold_below: float | None  # t_lo: withhold when score < it; None: withhold nothing
    tested: int  # candidates tested for t_hi (their p-values, in order, up to the first fail)
    certified: int  # candidates certified for t_hi
    p_value: float  # the p-value of the chosen t_hi


def _check(name: str, value: float | None) -> None:
    if value is not None and not 0 < value < 1:
        raise PolicyFitError(f"{name} must lie strictly between 0 and 1, got {value}")


STARTS = 2


def _sequence_starts(count: int, starts: int) -> np.ndarray:
    """Up to `starts` distinct positions spread evenly over `count` testable candidates."""
    return np.unique(np.floor(np.arange(starts) * count / starts).astype(int))


def labels_needed(kept: np.ndarray, bad: np.ndarray, total: int, alpha: float,
                  delta: float) -> tuple[int, int] | None:
    """If each candidate's error rate and share answered stayed as they are: the fewest
    labels in all at which one of them would pass its test alone, and that candidate's index;
    None when every candidate's error rate is already >= alpha. An estimate for the message
    of a failed fit: the real sequence must also pass the stricter candidates before it."""
    hopeful = np.flatnonzero((kept > 0) & (bad < alpha * kept))
    if hopeful.size == 0 or total == 0:
        return None
    rate = bad[hopeful] / kept[hopeful]

    def passes(answered: np.ndarray) -> np.ndarray:
        return binomial_p_values(np.floor(rate * answered), answered, alpha) <= delta

    low = np.zeros(hopeful.size)  # fails (no answer passes)
    high = kept[hopeful].astype(float)  # doubled until it passes
    for _ in range(40):
        failing = ~passes(high)
        if not failing.any():
            break
        low[failing], high[failing] = high[failing], high[failing] * 2
    while np.any(high - low > 1):  # bisect each candidate between a fail and a pass
        middle = np.floor((low + high) / 2)
        ok = passes(middle)
        high, low = np.where(ok, middle, high), np.where(ok, low, middle)
    needed = np.ceil(high * total / kept[hopeful])
    best = int(np.argmin(needed))
    return int(needed[best]), int(hopeful[best])


def _no_threshold(sweep: Sweep, candidates: np.ndarray, alpha: float, level: float,
                  reason: str) -> PolicyFitError:
    """The error for a fit that certified nothing: why, and how many labels would do."""
    total = int(sweep.kept[candidates[-1]]) if candidates.size else 0
    needed = labels_needed(sweep.kept[candidates], sweep.sums[0][candidates], total, alpha,
                           level) if candidates.size else None
    more_labels = None
    if needed is None:
        more = ("every threshold's error rate on these labels is at or above "
                f"{alpha:g}: more labels at this error rate will not certify it; allow a "
                "higher alpha or use a better judge")
    else:
        count, index = needed
        at = candidates[index]
        rate = sweep.sums[0][at] / sweep.kept[at]
        threshold = (f"score >= {sweep.thresholds[at]:.4g} ({int(sweep.kept[at])} of "
                     f"{total} answered, {rate:.1%} of them bad)")
        more_labels = count - total if count > total else None
        more = (f"at the current error rate, about {count} labels in all ({count - total} "
                f"more) would certify {threshold}; or allow a higher alpha or delta"
                if count > total else
                f"{threshold} would pass on its own, but the test stops at the first "
                "stricter threshold that fails: label more of the high-scoring samples, or "
                "allow a higher alpha or delta")
    return PolicyFitError(f"{reason}; {more}", more_labels)


def _answer_threshold(score: np.ndarray, bad: np.ndarray, alpha: float, delta: float,
                      starts: int) -> tuple[float, int, int, float]:
    sweep = threshold_sweep(score, bad)
    candidates = np.flatnonzero(np.isfinite(sweep.thresholds))  # -inf: a refusal, never shown
    level = delta / starts
    needed = min_trials(alpha, level)
    testable = candidates[sweep.kept[candidates] >= needed]
    if testable.size == 0:
        scored = int(sweep.kept[candidates[-1]]) if candidates.size else 0
        raise _no_threshold(sweep, candidates, alpha, level, (
            f"too few labels: certifying risk <= {alpha:g} at delta {delta:g} needs at least "
            f"{needed} labelled samples with a score"
            + (f" ({starts} test sequences at {level:.3g} each)" if starts > 1 else "")
            + f", even if none is bad; got {scored}"))
    p_values = binomial_p_values(sweep.sums[0][testable], sweep.kept[testable], alpha)
    certified: set[int] = set()
    tested: set[int] = set()  # thresholds tested by any sequence (sequences overlap)
    for start in _sequence_starts(testable.size, starts):
        passed = int(fixed_sequence(p_values[start:], level))
        tested.update(range(start, start + min(passed + 1, p_values.size - start)))
        certified.update(range(start, start + passed))
    if not certified:
        first = testable[0]
        raise _no_threshold(sweep, candidates, alpha, level, (
            f"no threshold certifies risk <= {alpha:g} at delta {delta:g}: the strictest "
            f"testable one (score >= {sweep.thresholds[first]:.4g}, "
            f"{int(sweep.kept[first])} answers) has {int(sweep.sums[0][first])} bad answers "
            f"(p = {p_values[0]:.3g} > {level:.3g})"))
    chosen = max(certified)
    return (float(sweep.thresholds[testable[chosen]]), len(tested), len(certified),
            float(p_values[chosen]))


def _withhold_threshold(score: np.ndarray, good: np.ndarray, answer_at: float, beta: float,
                        delta: float) -> float | None:
    """The highest t_lo <= answer_at whose withheld set (score < t_lo) is certified to hold
    at most a beta share of good answers; None when none is."""
    below = score < answer_at
    sweep = threshold_sweep(-score[below], good[below])  # loosest withholding first
    testable = np.flatnonzero(sweep.kept >= min_trials(beta, delta))
    if testable.size == 0:
        return None
    first = testable[0]
    passed = fixed_sequence(binomial_p_values(sweep.sums[0][first:], sweep.kept[first:], beta),
                            delta)
    if passed == 0:
        return None
    highest_withheld = -float(sweep.thresholds[first + passed - 1])
    return float(np.nextafter(highest_withheld, np.inf))  # score < it <=> score <= that one


def fit_thresholds(score: ArrayLike, good: ArrayLike, alpha: float, delta: float,
                   beta: float | None = None, starts: int = STARTS) -> FittedThresholds:
    """t_hi (and, with beta, t_lo) on labelled calibration samples; samples without a
    score (NaN) are left out (a policy defers them). PolicyFitError when no threshold can
    be certified, saying why."""
    for name, value in (("alpha", alpha), ("delta", delta), ("beta", beta)):
        _check(name, value)
    scores, goods = np.asarray(score, dtype=float), np.asarray(good, dtype=bool)
    if scores.shape != goods.shape:
        raise ValueError(f"{scores.size} scores but {goods.size} labels")
    if goods.size and (goods.all() or not goods.any()):
        word = "good" if goods.all() else "bad"
        raise PolicyFitError(f"every one of the {goods.size} labelled answers is {word}: a "
                             "policy needs both good and bad answers to learn from")
    scored = ~np.isnan(scores)
    if not scored.any():
        raise PolicyFitError(
            "no labelled sample has a score: " + (
                f"the judge scored none of the {goods.size} labelled answers; pick a judge "
                "that scores them" if goods.size else "there are no labels to fit on"))
    scores, goods = scores[scored], goods[scored]
    risk_delta = delta / 2 if beta is not None else delta
    answer_at, tested, certified, p_value = _answer_threshold(scores, ~goods, alpha, risk_delta,
                                                              starts)
    withhold_below: float | None = answer_at
    if beta is not None:
        withhold_below = _withhold_threshold(scores, goods, answer_at, beta, delta / 2)
    return FittedThresholds(answer_at, withhold_below, tested, certified, p_value)
