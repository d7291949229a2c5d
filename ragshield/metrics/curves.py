"""Curves of a scored judge (docs/METHODS.md 5.3): risk-coverage and its area (AURC), and the two
applications that replace the answers a judge discards (keep = score < threshold is
false): by the No-RAG answer (fallback) or by a larger model's answer (switch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ragshield.metrics.ratio import ratio
from ragshield.metrics.sweep import threshold_sweep


@dataclass(frozen=True)
class RiskCoverageCurve:
    thresholds: np.ndarray  # descending; keep = score >= threshold
    coverage: np.ndarray  # share of all samples kept
    risk: np.ndarray  # share of the kept answers that are incorrect


def risk_coverage_curve(score: ArrayLike, correct: ArrayLike) -> RiskCoverageCurve:
    """NaN scores are never kept, so coverage ends below 1 when some are missing."""
    sweep = threshold_sweep(score, correct)
    (correct_kept,) = sweep.sums
    return RiskCoverageCurve(sweep.thresholds, ratio(sweep.kept, sweep.n),
                             ratio(sweep.kept - correct_kept, sweep.kept))


def aurc(curve: RiskCoverageCurve) -> float:
    """Area under risk over coverage, step-wise from coverage 0: the sum of
    (coverage_k - coverage_{k-1}) * risk_k. Without ties this is the usual AURC, the mean
    over k of the risk of the top-k answers. Lower is better; NaN for an empty curve."""
    if curve.coverage.size == 0:
        return float("nan")
    return float(np.sum(np.diff(curve.coverage, prepend=0.0) * curve.risk))


@dataclass(frozen=True)
class ReplacementCurve:
    thresholds: np.ndarray  # descending from +inf (everything replaced)
    rate: np.ndarray  # share of the answers replaced (fallback rate / switch rate)
    accuracy: np.ndarray  # accuracy after replacement
    replaced_own_accuracy: np.ndarray  # accuracy of the replaced answers as they were
    replaced_new_accuracy: np.ndarray  # accuracy of their replacements


def replacement_curve(score: ArrayLike, own_correct: ArrayLike,
                      new_correct: ArrayLike) -> ReplacementCurve:
    """At each threshold, answers with score < threshold (and NaN scores) are replaced by
    another system's answer to the same question."""
    own = np.asarray(own_correct, dtype=float)
    new = np.asarray(new_correct, dtype=float)
    sweep = threshold_sweep(score, own, new, include_empty=True)
    own_kept, new_kept = sweep.sums
    replaced = sweep.n - sweep.kept
    return ReplacementCurve(
        thresholds=sweep.thresholds,
        rate=ratio(replaced, sweep.n),
        accuracy=ratio(new.sum() - new_kept + own_kept, sweep.n),
        replaced_own_accuracy=ratio(own.sum() - own_kept, replaced),
        replaced_new_accuracy=ratio(new.sum() - new_kept, replaced),
    )


def fallback_curve(score: ArrayLike, rag_correct: ArrayLike,
                   norag_correct: ArrayLike) -> ReplacementCurve:
    """No-RAG fallback: `rate` is the fallback rate; the replaced answers' accuracy with RAG
    is `replaced_own_accuracy`, without RAG `replaced_new_accuracy`."""
    return replacement_curve(score, rag_correct, norag_correct)


def switch_curve(score: ArrayLike, small_correct: ArrayLike,
                 large_correct: ArrayLike) -> ReplacementCurve:
    """Switch to a larger model: `rate` is the switch rate."""
    return replacement_curve(score, small_correct, large_correct)


def random_switch_accuracy(rates: ArrayLike, small_correct: ArrayLike,
                           large_correct: ArrayLike) -> np.ndarray:
    """Baseline: switching a random share r of the answers gives, in expectation,
    (1 - r) * mean(small) + r * mean(large)."""
    rates = np.asarray(rates, dtype=float)
    small = np.asarray(small_correct, dtype=float)
    large = np.asarray(large_correct, dtype=float)
    small_mean = ratio(small.sum(), small.size)
    large_mean = ratio(large.sum(), large.size)
    return (1 - rates) * small_mean + rates * large_mean


def accuracy_at_rate(rates: ArrayLike, accuracies: ArrayLike, rate: float = 0.2) -> float:
    """Accuracy at a replacement rate, linearly interpolated between the two curve points
    around it: replacing at random between their two thresholds reaches exactly that rate
    and, in expectation, that accuracy. NaN outside the curve's range of rates."""
    rates = np.asarray(rates, dtype=float)
    accuracies = np.asarray(accuracies, dtype=float)
    if rates.size == 0 or not rates.min() <= rate <= rates.max():
        return float("nan")
    order = np.argsort(rates)
    return float(np.interp(rate, rates[order], accuracies[order]))
