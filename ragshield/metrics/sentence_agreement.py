"""A claim judge against people's sentence labels: the people's majority per sentence, and
how the judge's scores rank (AUROC) and its marks classify (balanced accuracy) the sentences
they call supported or not, each with a percentile bootstrap interval over sentences
(docs/METHODS.md 5.2: 1000 resamples, seeded, 95%). Pure functions of plain mappings."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ragshield.metrics.bootstrap import LEVEL, N_RESAMPLES, percentile_interval

SUPPORTED, UNSUPPORTED = "supported", "unsupported"


def sentence_majority(labels: Iterable[str]) -> str | None:
    """supported or unsupported by majority; "unsure" votes are ignored; a tie or no vote is
    None."""
    votes = Counter(label for label in labels if label in (SUPPORTED, UNSUPPORTED))
    if votes[SUPPORTED] == votes[UNSUPPORTED]:
        return None
    return SUPPORTED if votes[SUPPORTED] > votes[UNSUPPORTED] else UNSUPPORTED


def _auroc(truth: np.ndarray, scores: np.ndarray) -> float:
    """The Mann-Whitney AUROC, ties counted half; NaN without both classes."""
    positives = int(truth.sum())
    negatives = len(truth) - positives
    if positives == 0 or negatives == 0:
        return math.nan
    ranks = rankdata(scores)
    return float((ranks[truth].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def _balanced_accuracy(truth: np.ndarray, marks: np.ndarray) -> float:
    positives, negatives = truth.sum(), (~truth).sum()
    if positives == 0 or negatives == 0:
        return math.nan
    return float(((marks & truth).sum() / positives + (~marks & ~truth).sum() / negatives) / 2)


def _value(value: float) -> float | None:
    return None if math.isnan(value) else value


def judge_against_majority(scores: Mapping[Any, float | None],
                           marks: Mapping[Any, bool | None],
                           majority: Mapping[Any, str | None], *,
                           n_resamples: int = N_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """On the sentences with a majority (`sentence_majority`) and a judge's score: n, how many
    the people call supported, the judge's AUROC (supported as the positive class) and its
    balanced accuracy with its own marks, each with [low, high] bounds; None where a class
    is missing."""
    items = [item for item, label in majority.items()
             if label is not None and scores.get(item) is not None]
    truth = np.array([majority[item] == SUPPORTED for item in items], dtype=bool)
    score = np.asarray([scores[item] for item in items], dtype=np.float64)
    mark = np.array([bool(marks.get(item)) for item in items], dtype=bool)
    result: dict[str, Any] = {"n": len(items), "supported": int(truth.sum()),
                              "auroc": _value(_auroc(truth, score)),
                              "balanced_accuracy": _value(_balanced_accuracy(truth, mark))}
    draws = np.random.default_rng(seed).integers(0, max(len(items), 1),
                                                 size=(n_resamples, len(items)))
    for name, metric, values in (("auroc", _auroc, score),
                                 ("balanced_accuracy", _balanced_accuracy, mark)):
        if result[name] is None:
            result[f"{name}_interval"] = None
            continue
        estimates = np.array([metric(truth[rows], values[rows]) for rows in draws])
        low, high = percentile_interval(estimates[:, None], LEVEL)
        result[f"{name}_interval"] = [float(low[0]), float(high[0])]
    return result
