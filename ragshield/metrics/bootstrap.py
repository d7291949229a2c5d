"""Percentile bootstrap over samples, vectorised (docs/METHODS.md 5.2: 1000 resamples, seeded, 95%).

Every count-based metric (risk, carefulness, alignment, coverage, precision, recall, F1 and
their QPP variants) is arithmetic on a few per-sample 0/1 indicators summed over the sample.
So a resample only needs those sums: draw the resample indices once, turn each chunk of
resamples into a (resamples x samples) multiplicity matrix with one bincount, and multiply it
by the (samples x indicators) matrix of all judges at once. 1000 resamples of 100,000 samples
cost about 1e8 random draws and one matrix product, whatever the number of judges.

max F1, PR-AUC and AURC get no interval: each needs its own threshold sweep (a reordering
and cumulative sums over all samples) per resample and per scored judge, about 1e8 element
operations per judge for 1000 x 100,000, which does not fit the budget of about 5 s for ten
judges on two cores."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits

N_RESAMPLES = 1000
LEVEL = 0.95
_CHUNK_DRAWS = 4_000_000  # resample indices held in memory at a time
_FLOAT32_EXACT = 2**24  # float32 holds every integer count below this


def resampled_counts(indicators: ArrayLike, n_resamples: int = N_RESAMPLES,
                     seed: int = 0) -> np.ndarray:
    """(samples x columns) 0/1 indicators -> (n_resamples x columns) integer column sums over
    each bootstrap resample (as many samples, drawn with replacement). The same resamples
    serve every column, so metrics computed from one call (several judges) are paired."""
    indicators = np.asarray(indicators)
    n, columns = indicators.shape
    out = np.zeros((n_resamples, columns), dtype=np.int64)
    if n == 0:
        return out
    dtype = np.float32 if n < _FLOAT32_EXACT else np.float64
    matrix: np.ndarray = indicators.astype(dtype)
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _CHUNK_DRAWS // n)
    # One BLAS thread: these short, wide products gain little from a second one, and on a
    # busy machine OpenBLAS threads spin-wait for each other (measured 0.2 s -> 8 s).
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, n_resamples, per_chunk):
            rows = min(per_chunk, n_resamples - start)
            draws = rng.integers(0, n, size=(rows, n))
            draws += np.arange(rows)[:, None] * n
            multiplicity = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n)
            weights: np.ndarray = multiplicity.astype(dtype)
            out[start:start + rows] = np.rint(weights @ matrix)
    return out


def percentile_interval(estimates: ArrayLike,
                        level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The central `level` percentile interval along axis 0 (the resamples), with linear
    interpolation as numpy's default quantile. Resamples where the metric is undefined (NaN,
    e.g. nothing kept) are left out; NaN bounds when all are."""
    ordered = np.sort(np.asarray(estimates, dtype=float), axis=0)  # NaN sorts last
    valid = np.count_nonzero(~np.isnan(ordered), axis=0)
    bounds = []
    for quantile in ((1 - level) / 2, (1 + level) / 2):
        position = np.maximum(valid - 1, 0) * quantile
        below = np.floor(position).astype(int)
        above = np.ceil(position).astype(int)
        low = np.take_along_axis(ordered, np.expand_dims(below, 0), axis=0)[0]
        high = np.take_along_axis(ordered, np.expand_dims(above, 0), axis=0)[0]
        bounds.append(np.where(valid > 0, low + (high - low) * (position - below), np.nan))
    return bounds[0], bounds[1]
