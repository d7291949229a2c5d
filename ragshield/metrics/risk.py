"""RC-RAG risk metrics (docs/METHODS.md 5.1). `answerable` is the RC-RAG label J (the RAG answer is
correct, docs/METHODS.md 3) and `keep` the judge's keep bit; the four folds are
AK = J & keep, AD = J & ~keep, UK = ~J & keep (the only real risk), UD = ~J & ~keep."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ragshield.metrics.ratio import ratio

FOLDS = ("AK", "AD", "UK", "UD")


def fold_counts(answerable: ArrayLike, keep: ArrayLike) -> dict[str, int]:
    answerable = np.asarray(answerable, dtype=bool)
    keep = np.asarray(keep, dtype=bool)
    return {
        "AK": int(np.count_nonzero(answerable & keep)),
        "AD": int(np.count_nonzero(answerable & ~keep)),
        "UK": int(np.count_nonzero(~answerable & keep)),
        "UD": int(np.count_nonzero(~answerable & ~keep)),
    }


def risk_from_counts(ak: ArrayLike, ad: ArrayLike, uk: ArrayLike,
                     ud: ArrayLike) -> dict[str, np.ndarray | float]:
    """The four ratios from fold counts; works elementwise on arrays of counts (one entry per
    bootstrap resample) as well as on plain numbers."""
    ak, ad, uk, ud = (np.asarray(x, dtype=float) for x in (ak, ad, uk, ud))
    n = ak + ad + uk + ud
    return {
        "risk": ratio(uk, ak + uk),
        "carefulness": ratio(ud, uk + ud),
        "alignment": ratio(ak + ud, n),
        "coverage": ratio(ak + uk, n),
    }


def risk_metrics(answerable: ArrayLike, keep: ArrayLike) -> dict[str, Any]:
    """risk, carefulness, alignment, coverage (NaN when undefined) and the four counts."""
    counts = fold_counts(answerable, keep)
    return {**risk_from_counts(*(counts[f] for f in FOLDS)), "counts": counts}
