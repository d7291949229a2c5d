"""AwF precision / recall (docs/METHODS.md 5.2).

Inputs are per-sample bool arrays: `keep` (the judge's keep bit v), `truth` (the AwF truth
V = answer correct AND passages support a reference) and `support` (F-Answerable: the
passages support a reference). TP = sum(v * V); precision = TP / sum(v); recall =
TP / sum(support). The recall denominator is the F-Answerable count, neither the kept
answers nor sum(V).

QPP-precision / QPP-recall are the same functions with truth = support (`qpp_metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ragshield.metrics.ratio import ratio
from ragshield.metrics.sweep import threshold_sweep


def f1_score(precision: ArrayLike, recall: ArrayLike) -> np.ndarray | float:
    """Harmonic mean: NaN if either is NaN, 0 if both are 0."""
    p = np.asarray(precision, dtype=float)
    r = np.asarray(recall, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(p + r == 0, 0.0, 2 * p * r / (p + r))
    return float(out) if out.ndim == 0 else out


def pr_from_counts(tp: ArrayLike, kept: ArrayLike,
                   support: ArrayLike) -> dict[str, np.ndarray | float]:
    """precision, recall, f1 from counts (elementwise over arrays of counts too)."""
    precision = ratio(tp, kept)
    recall = ratio(tp, support)
    return {"precision": precision, "recall": recall, "f1": f1_score(precision, recall)}


def precision_recall(keep: ArrayLike, truth: ArrayLike,
                     support: ArrayLike) -> dict[str, np.ndarray | float]:
    keep = np.asarray(keep, dtype=bool)
    return pr_from_counts(np.count_nonzero(keep & np.asarray(truth, dtype=bool)),
                          np.count_nonzero(keep), np.count_nonzero(np.asarray(support, bool)))


def qpp_metrics(keep: ArrayLike, support: ArrayLike) -> dict[str, np.ndarray | float]:
    """QPP-precision / recall / F1: did the judge keep exactly the samples whose passages
    support a reference, whatever the generated answer."""
    return precision_recall(keep, support, support)


@dataclass(frozen=True)
class PRCurve:
    thresholds: np.ndarray  # descending; keep = score >= threshold
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray


def pr_curve(score: ArrayLike, truth: ArrayLike, support: ArrayLike) -> PRCurve:
    """Precision, recall and F1 at every distinct score threshold (NaN scores never kept;
    they still count in the recall denominator)."""
    sweep = threshold_sweep(score, truth)
    (tp,) = sweep.sums
    metrics = pr_from_counts(tp, sweep.kept, np.count_nonzero(np.asarray(support, bool)))
    precision, recall, f1 = (np.asarray(metrics[name]) for name in ("precision", "recall", "f1"))
    return PRCurve(sweep.thresholds, precision, recall, f1)


def max_f1(curve: PRCurve) -> tuple[float, float | None]:
    """The best F1 of the sweep and its threshold (the strictest one on ties); (NaN, None)
    when no point has an F1."""
    if curve.f1.size == 0 or np.isnan(curve.f1).all():
        return float("nan"), None
    best = int(np.nanargmax(curve.f1))
    return float(curve.f1[best]), float(curve.thresholds[best])


def pr_auc(curve: PRCurve) -> float:
    """Area under precision over recall, step-wise as in average precision: the sum over the
    sweep of (recall_k - recall_{k-1}) * precision_k, starting from recall 0. Recall here tops
    out at sum(V) / sum(support), so the area can stay below 1 even for a perfect ranking. A
    hard judge's single point gives precision x recall, the docs/METHODS.md 5.2 value for hard
    judges. NaN for an empty sweep or an undefined recall."""
    if curve.recall.size == 0:
        return float("nan")
    gains = np.diff(curve.recall, prepend=0.0)
    return float(np.sum(gains * curve.precision))
