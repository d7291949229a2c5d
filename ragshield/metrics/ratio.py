"""Division where 0/0 (any x/0) is NaN, silently: every metric of docs/METHODS.md 5 is a ratio of
counts, and an empty denominator means "undefined" ("n/a"), not an error."""

from __future__ import annotations

from typing import Union, overload

import numpy as np
from numpy.typing import ArrayLike

Count = Union[int, float, np.integer, np.floating]


@overload
def ratio(numerator: Count, denominator: Count) -> float: ...
@overload
def ratio(numerator: np.ndarray, denominator: ArrayLike) -> np.ndarray: ...
@overload
def ratio(numerator: ArrayLike, denominator: np.ndarray) -> np.ndarray: ...
@overload
def ratio(numerator: ArrayLike, denominator: ArrayLike) -> np.ndarray | float: ...


def ratio(numerator: ArrayLike, denominator: ArrayLike) -> np.ndarray | float:
    """Elementwise numerator / denominator, NaN where the denominator is 0. Scalars in, a
    float out; arrays in, an array out."""
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den == 0, np.nan, num / den)
    return float(out) if out.ndim == 0 else out
