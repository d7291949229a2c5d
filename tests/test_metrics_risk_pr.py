"""RC-RAG risk metrics and AwF precision / recall (METHODS 5.1, 5.2) against hand-computed
cases, plus properties of the threshold sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.metrics.precision_recall import (
    f1_score,
    max_f1,
    pr_auc,
    pr_curve,
    precision_recall,
    qpp_metrics,
)
from ragshield.metrics.ratio import ratio
from ragshield.metrics.risk import fold_counts, risk_metrics

nan = math.nan
T, F = True, False


def bools(min_size: int = 0, max_size: int = 60):
    return st.lists(st.booleans(), min_size=min_size, max_size=max_size)


# -- ratio -------------------------------------------------------------------------------

def test_ratio_zero_denominator_is_nan_without_warning(recwarn):
    assert math.isnan(ratio(0, 0))
    assert math.isnan(ratio(3, 0))
    assert ratio(1, 4) == 0.25
    out = ratio(np.array([1, 0, 2]), np.array([2, 0, 0]))
    assert out[0] == 0.5 and np.isnan(out[1:]).all()
    assert len(recwarn) == 0


# -- RC-RAG folds and ratios -------------------------------------------------------------

# sample:      0  1  2  3  4  5  6  7  8  9
ANSWERABLE = [T, T, T, F, F, F, T, F, F, T]
KEEP = [T, T, F, T, F, F, T, F, T, T]
# folds:       AK AK AD UK UD UD AK UD UK AK -> AK = 4, AD = 1, UK = 2, UD = 3, N = 10


def test_fold_counts_by_hand():
    assert fold_counts(ANSWERABLE, KEEP) == {"AK": 4, "AD": 1, "UK": 2, "UD": 3}


def test_risk_metrics_by_hand():
    metrics = risk_metrics(ANSWERABLE, KEEP)
    assert metrics["risk"] == pytest.approx(2 / 6)  # UK / (AK + UK)
    assert metrics["carefulness"] == pytest.approx(3 / 5)  # UD / (UK + UD)
    assert metrics["alignment"] == pytest.approx(7 / 10)  # (AK + UD) / N
    assert metrics["coverage"] == pytest.approx(6 / 10)  # (AK + UK) / N
    assert metrics["counts"] == {"AK": 4, "AD": 1, "UK": 2, "UD": 3}


def test_risk_metrics_zero_over_zero_is_nan(recwarn):
    # nothing kept, everything answerable: AK = UK = UD = 0, AD = 3
    metrics = risk_metrics([T, T, T], [F, F, F])
    assert math.isnan(metrics["risk"])  # 0 / (0 + 0)
    assert math.isnan(metrics["carefulness"])  # 0 / (0 + 0)
    assert metrics["alignment"] == 0.0  # (0 + 0) / 3
    assert metrics["coverage"] == 0.0
    empty = risk_metrics([], [])
    assert all(math.isnan(empty[name]) for name in ("risk", "carefulness", "alignment",
                                                      "coverage"))
    assert len(recwarn) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60))
def test_risk_metrics_bounds_and_identities(pairs):
    answerable = [a for a, _ in pairs]
    keep = [k for _, k in pairs]
    metrics = risk_metrics(answerable, keep)
    counts = metrics["counts"]
    assert sum(counts.values()) == len(pairs)
    for name in ("risk", "carefulness", "alignment", "coverage"):
        value = metrics[name]
        assert math.isnan(value) or 0.0 <= value <= 1.0
    if pairs:
        assert metrics["coverage"] == pytest.approx(sum(keep) / len(pairs))
        # alignment is the accuracy of the keep bit as a prediction of answerability
        agree = sum(a == k for a, k in pairs)
        assert metrics["alignment"] == pytest.approx(agree / len(pairs))


# -- AwF precision / recall --------------------------------------------------------------

# sample:    0  1  2  3  4  5
AWF_KEEP = [T, T, T, F, F, F]
CORRECT = [T, T, F, T, F, F]
SUPPORT = [T, F, T, T, T, F]  # F-Answerable = 4
TRUTH = [c and s for c, s in zip(CORRECT, SUPPORT)]  # V = [T, F, F, T, F, F], sum(V) = 2


def test_precision_recall_by_hand():
    metrics = precision_recall(AWF_KEEP, TRUTH, SUPPORT)
    # TP = keep & V = sample 0 -> 1; kept = 3; F-Answerable = 4
    assert metrics["precision"] == pytest.approx(1 / 3)
    assert metrics["recall"] == pytest.approx(1 / 4)
    # F1 = 2 * (1/3) * (1/4) / (1/3 + 1/4) = (1/6) / (7/12) = 2/7
    assert metrics["f1"] == pytest.approx(2 / 7)


def test_recall_denominator_is_f_answerable_not_truth_nor_kept():
    assert sum(TRUTH) != sum(SUPPORT) != sum(AWF_KEEP)
    recall = precision_recall(AWF_KEEP, TRUTH, SUPPORT)["recall"]
    tp = sum(k and v for k, v in zip(AWF_KEEP, TRUTH))
    assert recall == pytest.approx(tp / sum(SUPPORT))  # 1/4
    assert recall != pytest.approx(tp / sum(TRUTH))  # 1/2 would be the sum(V) reading
    assert recall != pytest.approx(tp / sum(AWF_KEEP))  # 1/3 would be precision


def test_qpp_uses_support_as_truth():
    metrics = qpp_metrics(AWF_KEEP, SUPPORT)
    # TP = keep & support = samples 0, 2 -> 2; kept = 3; support = 4
    assert metrics["precision"] == pytest.approx(2 / 3)
    assert metrics["recall"] == pytest.approx(2 / 4)
    # F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    assert metrics["f1"] == pytest.approx(4 / 7)


def test_f1_edge_cases():
    assert f1_score(0.0, 0.0) == 0.0
    assert math.isnan(f1_score(nan, 0.5))
    assert math.isnan(f1_score(0.5, nan))
    assert f1_score(1.0, 1.0) == 1.0
    assert f1_score(0.5, 1.0) == pytest.approx(2 * 0.5 / 1.5)


def test_precision_recall_undefined_parts(recwarn):
    nothing_kept = precision_recall([F, F], [T, F], [T, F])
    assert math.isnan(nothing_kept["precision"])  # 0 / 0
    assert nothing_kept["recall"] == 0.0  # 0 / 1
    assert math.isnan(nothing_kept["f1"])  # precision undefined
    no_support = precision_recall([T, F], [F, F], [F, F])
    assert no_support["precision"] == 0.0  # 0 / 1
    assert math.isnan(no_support["recall"])  # 0 / 0
    assert len(recwarn) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=60))
def test_precision_recall_bounds(triples):
    keep = [k for k, _, _ in triples]
    support = [s for _, _, s in triples]
    truth = [c and s for _, c, s in triples]
    for metrics in (precision_recall(keep, truth, support), qpp_metrics(keep, support)):
        for value in metrics.values():
            assert math.isnan(value) or 0.0 <= value <= 1.0


# -- PR curve over a score ---------------------------------------------------------------

def test_pr_curve_by_hand():
    score = [0.9, 0.8, 0.8, 0.5, 0.3, nan]
    truth = [T, F, T, F, T, T]
    support = [T, T, T, F, T, T]  # F-Answerable = 5
    curve = pr_curve(score, truth, support)
    # t = 0.9: kept 1, TP 1 -> P 1,   R 1/5, F1 = 2*0.2/1.2 = 1/3
    # t = 0.8: kept 3, TP 2 -> P 2/3, R 2/5, F1 = (8/15)/(16/15) = 1/2
    # t = 0.5: kept 4, TP 2 -> P 1/2, R 2/5, F1 = 0.4/0.9 = 4/9
    # t = 0.3: kept 5, TP 3 -> P 3/5, R 3/5, F1 = 3/5
    # the NaN-scored sample is never kept, so recall stops at 3/5
    np.testing.assert_allclose(curve.thresholds, [0.9, 0.8, 0.5, 0.3])
    np.testing.assert_allclose(curve.precision, [1, 2 / 3, 1 / 2, 3 / 5])
    np.testing.assert_allclose(curve.recall, [1 / 5, 2 / 5, 2 / 5, 3 / 5])
    np.testing.assert_allclose(curve.f1, [1 / 3, 1 / 2, 4 / 9, 3 / 5])
    assert max_f1(curve) == (pytest.approx(3 / 5), 0.3)
    # step-wise area from recall 0: 0.2*1 + 0.2*(2/3) + 0*(1/2) + 0.2*(3/5)
    assert pr_auc(curve) == pytest.approx(0.2 + 0.4 / 3 + 0.12)


def test_max_f1_prefers_the_strictest_threshold_on_ties():
    curve = pr_curve([3.0, 2.0, 1.0, 0.0], [T, F, F, T], [T, F, F, T])
    # t = 3: kept 1, TP 1 -> P 1,   R 1/2 -> F1 2/3
    # t = 2: kept 2, TP 1 -> P 1/2, R 1/2 -> F1 1/2
    # t = 1: kept 3, TP 1 -> P 1/3, R 1/2 -> F1 2/5
    # t = 0: kept 4, TP 2 -> P 1/2, R 1   -> F1 2/3 (ties with t = 3)
    np.testing.assert_allclose(curve.f1, [2 / 3, 1 / 2, 2 / 5, 2 / 3])
    assert max_f1(curve) == (pytest.approx(2 / 3), 3.0)


def test_pr_curve_without_scores_is_empty():
    curve = pr_curve([nan, nan], [T, F], [T, T])
    assert curve.thresholds.size == 0
    best, threshold = max_f1(curve)
    assert math.isnan(best) and threshold is None
    assert math.isnan(pr_auc(curve))


def test_pr_auc_of_a_single_operating_point_is_precision_times_recall():
    # one distinct score: the whole set is kept at the only threshold
    keep = [T, T, T, T]
    truth = [T, F, T, F]
    support = [T, T, T, F]
    point = precision_recall(keep, truth, support)
    assert pr_auc(pr_curve([1.0] * 4, truth, support)) == pytest.approx(
        point["precision"] * point["recall"])  # (2/4) * (2/3)


scored_samples = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 8)), st.booleans(), st.booleans()),
    min_size=1, max_size=50)


@settings(max_examples=200, deadline=None)
@given(scored_samples)
def test_pr_curve_matches_keeping_score_at_least_threshold(samples):
    score = np.array([nan if s is None else s / 8 for s, _, _ in samples])
    support = np.array([s for _, _, s in samples])
    truth = np.array([c for _, c, _ in samples]) & support
    curve = pr_curve(score, truth, support)
    assert np.all(np.diff(curve.thresholds) < 0)
    assert np.all(np.diff(curve.recall[~np.isnan(curve.recall)]) >= 0)  # recall only grows
    for i, threshold in enumerate(curve.thresholds):
        direct = precision_recall(score >= threshold, truth, support)
        for name, values in (("precision", curve.precision), ("recall", curve.recall),
                             ("f1", curve.f1)):
            np.testing.assert_allclose(values[i], direct[name])
    best, threshold = max_f1(curve)
    if threshold is not None:
        assert best == pytest.approx(np.nanmax(curve.f1))
        assert 0.0 <= best <= 1.0
    area = pr_auc(curve)
    assert math.isnan(area) or 0.0 <= area <= 1.0 + 1e-12
