"""Every-threshold sweep of a score, shared by the PR, risk-coverage and replacement curves
and by threshold selection: sort once, cumulative sums, one point per distinct score.

At threshold t a sample is kept when score >= t; thresholds are the distinct finite scores,
strictest (highest) first. A NaN score (the judge gave none) is never kept."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class Sweep:
    thresholds: np.ndarray  # descending
    kept: np.ndarray  # number of samples kept at each threshold
    sums: tuple[np.ndarray, ...]  # per column: its sum over the kept samples
    n: int  # all samples, NaN scores included


def threshold_sweep(score: ArrayLike, *columns: ArrayLike, include_empty: bool = False) -> Sweep:
    """Cumulative sums of `columns` over the kept samples at every distinct threshold. With
    `include_empty`, the sweep starts with threshold +inf, where nothing is kept."""
    score = np.asarray(score, dtype=float)
    scored = ~np.isnan(score)
    order = np.argsort(-score[scored], kind="stable")
    ranked = score[scored][order]
    last_of_value = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], ranked.size > 0))
    thresholds = ranked[last_of_value]
    kept = last_of_value + 1
    sums = tuple(np.cumsum(np.asarray(c, dtype=float)[scored][order])[last_of_value]
                 for c in columns)
    if include_empty:
        thresholds = np.append(np.inf, thresholds)
        kept = np.append(0, kept)
        sums = tuple(np.append(0.0, s) for s in sums)
    return Sweep(thresholds, kept, sums, score.size)
