"""Annotation agreement (docs/METHODS.md 5.5): percent agreement, Cohen's kappa for each pair of
raters, Fleiss' kappa, nominal Krippendorff's alpha, Gwet's AC1 (which stays meaningful when
nearly every item carries one label), and the agreement of a judge (or of the automatic label)
with the human majority, with the items where they differ.

Input (`Ratings`): the CURRENT label of each rater on each item, as a long table, either

* a pandas DataFrame with the columns ``item``, ``rater`` and ``label`` (other columns are
  ignored), or
* an iterable of ``(item, rater, label)`` triples.

Items and raters are any hashable values (sample ids, annotator ids). Every distinct label is
a nominal category (nothing is special about "answerable" / "unanswerable" / "unsure" here).
A missing label (None or NaN) is no rating and is dropped. Should a (item, rater) pair occur
more than once, the last row wins (the table is meant to hold current labels only).

Conventions: a ratio whose denominator is 0 is NaN (as ragshield.metrics.ratio), nothing
raises on degenerate data (no rows, one rater, one category) and nothing warns. Only items
with at least two ratings carry information on agreement; the others are left out of every
statistic. `agreement_summary` and `agreement_with_majority` turn NaN into None (JSON null).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Hashable, Iterable, Mapping, Union

import numpy as np
import pandas as pd

from ragshield.metrics.labels import ANSWERABLE, UNSURE, majority_label

COLUMNS = ("item", "rater", "label")
Ratings = Union[pd.DataFrame, Iterable[tuple[Hashable, Hashable, Hashable]]]
nan = math.nan


# ---------------------------------------------------------------------------- the table

def _table(ratings: Ratings) -> pd.DataFrame:
    """The ratings as a DataFrame (item, rater, label): null labels dropped, one row per
    (item, rater), the last one kept."""
    if isinstance(ratings, pd.DataFrame):
        missing = [c for c in COLUMNS if c not in ratings.columns]
        if missing:
            raise ValueError(f"ratings table lacks the column(s) {missing}; expected {COLUMNS}")
        frame = ratings.loc[:, list(COLUMNS)]
    else:
        rows = [tuple(row) for row in ratings]
        bad = [row for row in rows if len(row) != 3]
        if bad:
            raise ValueError(f"expected (item, rater, label) triples, got {bad[0]!r}")
        frame = pd.DataFrame(rows, columns=list(COLUMNS), dtype=object)
    frame = frame[frame["label"].notna()]
    return frame.drop_duplicates(subset=["item", "rater"], keep="last").reset_index(drop=True)


def _codes(values: pd.Series) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.int64), len(uniques)


def _count_matrix(frame: pd.DataFrame) -> np.ndarray:
    """Items x categories counts n_ij, restricted to the items with >= 2 ratings."""
    if frame.empty:
        return np.zeros((0, 0), dtype=np.int64)
    items, n_items = _codes(frame["item"])
    labels, n_labels = _codes(frame["label"])
    counts = np.zeros((n_items, n_labels), dtype=np.int64)
    np.add.at(counts, (items, labels), 1)
    return counts[counts.sum(axis=1) >= 2]


def kappa_from_counts(agree: int, n: int, counts_a: np.ndarray, counts_b: np.ndarray) -> float:
    """Cohen's kappa of two raters on n common items, from the number of items they agree
    on and their marginal category counts, in exact integer arithmetic:
    (p_o - p_e) / (1 - p_e) = (n * agree - S) / (n^2 - S), S = sum_k a_k b_k; NaN when
    p_e = 1 (S = n^2) or n = 0."""
    s = int(np.dot(counts_a, counts_b))
    den = n * n - s
    return nan if den == 0 else (n * agree - s) / den


# ---------------------------------------------------------------------------- statistics

def _pair_shares(counts: np.ndarray) -> np.ndarray:
    """Per item (row of a count matrix with >= 2 ratings a row), the share of agreeing rater
    pairs: sum_j n_ij (n_ij - 1) / (n_i (n_i - 1))."""
    n_i = counts.sum(axis=1)
    return (counts * (counts - 1)).sum(axis=1) / (n_i * (n_i - 1))


def percent_agreement(ratings: Ratings) -> float:
    """Pairwise percent agreement: over items with >= 2 ratings, the mean over items of the
    share of agreeing rater pairs, sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)). NaN without such
    an item."""
    counts = _count_matrix(_table(ratings))
    return nan if counts.shape[0] == 0 else float(_pair_shares(counts).mean())


def _pair_key(a: Hashable, b: Hashable) -> str:
    try:
        first, second = sorted((a, b))  # type: ignore[type-var]
    except TypeError:
        first, second = sorted((a, b), key=str)
    return f"{first}|{second}"


def cohen_kappa_pairs(ratings: Ratings) -> dict[str, float]:
    """Cohen's kappa for every pair of raters over the items both rated, keyed "a|b" with
    the two rater names sorted (natural order, by str where they cannot be compared). A
    pair without a common item is left out. Kappa is NaN when the chance agreement p_e is 1,
    i.e. both raters gave one and the same category on all their common items (0/0)."""
    frame = _table(ratings)
    if frame.empty:
        return {}
    items, n_items = _codes(frame["item"])
    raters, uniques = pd.factorize(frame["rater"], sort=False)
    labels, n_labels = _codes(frame["label"])
    grid = np.full((n_items, len(uniques)), -1, dtype=np.int64)
    grid[items, raters] = labels
    result: dict[str, float] = {}
    for a in range(len(uniques)):
        for b in range(a + 1, len(uniques)):
            both = (grid[:, a] >= 0) & (grid[:, b] >= 0)
            n = int(both.sum())
            if n == 0:
                continue
            la, lb = grid[both, a], grid[both, b]
            kappa = kappa_from_counts(int((la == lb).sum()), n,
                                       np.bincount(la, minlength=n_labels),
                                       np.bincount(lb, minlength=n_labels))
            result[_pair_key(uniques[a], uniques[b])] = kappa
    return dict(sorted(result.items()))


def fleiss_kappa(ratings: Ratings) -> float:
    """Fleiss' kappa over the items with >= 2 ratings, for a varying number of ratings per
    item: P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)), P_bar their mean, p_j the share of
    category j among all ratings of those items, P_e = sum_j p_j^2,
    kappa = (P_bar - P_e) / (1 - P_e). NaN when P_e = 1 (one category only) or no item."""
    counts = _count_matrix(_table(ratings))
    if counts.shape[0] == 0:
        return nan
    n_i = counts.sum(axis=1)
    totals = counts.sum(axis=0)
    total = int(totals.sum())
    sq = int(np.dot(totals, totals))
    if sq == total * total:  # P_e = 1
        return nan
    p_i = ((counts * counts).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_e = sq / (total * total)
    return float((p_i.mean() - p_e) / (1.0 - p_e))


def krippendorff_alpha_nominal(ratings: Ratings) -> float:
    """Nominal Krippendorff's alpha via the coincidence matrix over the items (units) with
    >= 2 values: o_ck = sum_u n_uc n_uk / (m_u - 1) (c != k; n_uc (n_uc - 1) / (m_u - 1) on
    the diagonal), n_c = sum_k o_ck, n = sum_c n_c, D_o = sum_{c!=k} o_ck / n,
    D_e = sum_{c!=k} n_c n_k / (n (n - 1)), alpha = 1 - D_o / D_e. NaN when D_e = 0 (one
    category only) or no item."""
    counts = _count_matrix(_table(ratings))
    if counts.shape[0] == 0:
        return nan
    m_u = counts.sum(axis=1)
    n_c = counts.sum(axis=0)
    n = int(n_c.sum())
    expected = n * n - int(np.dot(n_c, n_c))  # sum_{c!=k} n_c n_k
    if expected == 0:
        return nan
    observed = float(((m_u * m_u - (counts * counts).sum(axis=1)) / (m_u - 1)).sum())
    return 1.0 - (n - 1) * observed / expected


def _ac1_from_counts(counts: np.ndarray) -> float:
    """Gwet's AC1 of an items x categories count matrix whose rows hold >= 2 ratings each;
    NaN without a row. See `gwet_ac1`."""
    if counts.shape[0] == 0:
        return nan
    p_a = float(_pair_shares(counts).mean())
    pi = (counts / counts.sum(axis=1, keepdims=True)).mean(axis=0)
    pi = pi[pi > 0]  # the categories the items use: q of them
    q = len(pi)
    p_e = 0.0 if q < 2 else float((pi * (1.0 - pi)).sum()) / (q - 1)
    return (p_a - p_e) / (1.0 - p_e)


def gwet_ac1(ratings: Ratings) -> float:
    """Gwet's AC1 (Gwet 2008) for nominal labels, any number of raters per item, over the
    items with >= 2 ratings: p_a is the percent agreement above, pi_k the mean over those
    items of the share of their ratings in category k, q the number of categories they use,
    p_e = sum_k pi_k (1 - pi_k) / (q - 1) and AC1 = (p_a - p_e) / (1 - p_e). With a single
    category p_e is 0 (AC1 = p_a = 1); p_e <= 1/q < 1 otherwise, so AC1 is NaN only without
    an item. Unlike kappa, p_e shrinks as the labels get skewed, so that high agreement on a
    mostly one-label sample reads as high."""
    return _ac1_from_counts(_count_matrix(_table(ratings)))


def gwet_ac1_interval(ratings: Ratings, n_resamples: int = 1000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float] | None:
    """A percentile bootstrap interval of `gwet_ac1`, resampling the items with >= 2 ratings
    (None without one)."""
    counts = _count_matrix(_table(ratings))
    if counts.shape[0] == 0:
        return None
    draws = np.random.default_rng(seed).integers(0, len(counts), size=(n_resamples, len(counts)))
    estimates = np.sort([_ac1_from_counts(counts[rows]) for rows in draws])
    return (float(np.quantile(estimates, (1 - level) / 2)),
            float(np.quantile(estimates, (1 + level) / 2)))


def _none_if_nan(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) \
        else float(value)


def agreement_summary(ratings: Ratings) -> dict[str, Any]:
    """All of the above at once, NaN turned into None: keys percent, cohen (rater pair ->
    kappa or None), fleiss, krippendorff_alpha, gwet_ac1 and n_items (items with >= 2
    ratings)."""
    frame = _table(ratings)
    return {
        "percent": _none_if_nan(percent_agreement(frame)),
        "cohen": {pair: _none_if_nan(k) for pair, k in cohen_kappa_pairs(frame).items()},
        "fleiss": _none_if_nan(fleiss_kappa(frame)),
        "krippendorff_alpha": _none_if_nan(krippendorff_alpha_nominal(frame)),
        "gwet_ac1": _none_if_nan(gwet_ac1(frame)),
        "n_items": int(_count_matrix(frame).shape[0]),
    }


def majority_by_item(ratings: Ratings) -> dict[Hashable, str | None]:
    """Item -> the human majority label of docs/METHODS.md 3 (ragshield.metrics.labels.
    majority_label: "unsure" votes ignored, a tie is None). Unlike the statistics above this
    knows the answerability labels: an unknown label raises ValueError."""
    frame = _table(ratings)
    return {item: majority_label(group.tolist())
            for item, group in frame.groupby("item", sort=False)["label"]}


def _sorted_ids(items: list[Hashable]) -> list[Hashable]:
    try:
        return sorted(items)  # type: ignore[type-var]
    except TypeError:
        return sorted(items, key=str)


def agreement_with_majority(predictions: Mapping[Any, bool],
                            majority: Mapping[Any, str | None],
                            positive: str = ANSWERABLE) -> dict[str, Any]:
    """Agreement of binary predictions (a judge's keep bits, or the automatic "answerable"
    label) with the human majority label, on the items present in both mappings whose
    majority is neither None (unlabelled / tie) nor "unsure" and whose prediction is not
    None. The human side is majority == positive. Returns n, percent (share of items where
    the two agree), kappa (Cohen's kappa of the two binary series; NaN when p_e = 1), ac1
    (Gwet's AC1 of the two as two raters), NaN turned into None, and the sorted item ids
    where they differ: false_keeps (prediction True, human False: kept though the majority
    says unanswerable) and false_withholds (prediction False, human True)."""
    pairs: dict[Hashable, tuple[bool, bool]] = {}
    for item, label in majority.items():
        if label is None or label == UNSURE or item not in predictions:
            continue
        pred = predictions[item]
        if pred is None or (isinstance(pred, float) and math.isnan(pred)):
            continue
        pairs[item] = (bool(pred), label == positive)
    n = len(pairs)
    agree = sum(pred == human for pred, human in pairs.values())
    order = (True, False)
    pred_counts = Counter(pred for pred, _ in pairs.values())
    human_counts = Counter(human for _, human in pairs.values())
    kappa = nan if n == 0 else kappa_from_counts(
        agree, n, np.array([pred_counts[k] for k in order]),
        np.array([human_counts[k] for k in order]))
    # Each item as a row of counts (True, False) over its two "raters".
    counts = np.array([[pred + human, 2 - pred - human] for pred, human in pairs.values()],
                      dtype=np.int64).reshape(n, 2)
    return {"n": n, "percent": _none_if_nan(agree / n if n else nan),
            "kappa": _none_if_nan(kappa), "ac1": _none_if_nan(_ac1_from_counts(counts)),
            "false_keeps": _sorted_ids([i for i, (p, h) in pairs.items() if p and not h]),
            "false_withholds": _sorted_ids([i for i, (p, h) in pairs.items() if h and not p])}
