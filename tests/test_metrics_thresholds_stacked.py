"""Threshold selection (cross-validated, risk-controlled) and the stacked judge
(METHODS 5.3, 4.12)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold

from ragshield.metrics.stacked import (
    NotEnoughLabels,
    fit_stacked_judge,
    stack_features,
    stacked_oof_probabilities,
)
from ragshield.metrics.thresholds import (
    clopper_pearson_upper,
    cv_threshold,
    risk_controlled_threshold,
)

nan = math.nan


# -- cross-validated threshold -----------------------------------------------------------

def test_cv_threshold_on_separable_scores():
    truth = np.array([True, False] * 20)
    score = truth.astype(float)  # correct answers score 1, the others 0
    result = cv_threshold(score, truth, folds=5, seed=3)
    # every training split is separated by threshold 1.0, which is exact on the held-out fold
    np.testing.assert_array_equal(result.thresholds, [1.0] * 5)
    np.testing.assert_array_equal(result.values, [1.0] * 5)
    assert result.mean == 1.0 and result.std == 0.0
    f1 = cv_threshold(score, truth, objective="f1", folds=5, seed=3)
    assert f1.mean == 1.0


def test_cv_threshold_is_seeded():
    rng = np.random.default_rng(0)
    truth = rng.random(60) < 0.5
    score = truth + rng.normal(0, 0.8, 60)
    first = cv_threshold(score, truth, seed=7)
    again = cv_threshold(score, truth, seed=7)
    np.testing.assert_array_equal(first.thresholds, again.thresholds)
    np.testing.assert_array_equal(first.values, again.values)
    assert first.values.shape == (5,)
    assert first.std == pytest.approx(np.std(first.values, ddof=1))


def test_cv_threshold_rejects_bad_input():
    with pytest.raises(ValueError, match="objective"):
        cv_threshold([0.1] * 10, [True] * 10, objective="auc")
    with pytest.raises(ValueError, match="folds"):
        cv_threshold([0.1, 0.2], [True, False], folds=5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=10, max_size=40),
       st.integers(0, 1000))
def test_cv_threshold_fits_the_best_training_threshold(samples, seed):
    score = np.array([s for s, _ in samples], dtype=float)
    truth = np.array([t for _, t in samples])
    result = cv_threshold(score, truth, folds=5, seed=seed)
    splits = KFold(5, shuffle=True, random_state=seed).split(score)
    for (train, test), threshold, value in zip(splits, result.thresholds, result.values):
        def accuracy(t, rows):
            return np.mean((score[rows] >= t) == truth[rows])
        candidates = [np.inf, *np.unique(score[train])]
        assert accuracy(threshold, train) == pytest.approx(
            max(accuracy(t, train) for t in candidates))
        assert value == pytest.approx(accuracy(threshold, test))


# -- risk-controlled threshold -----------------------------------------------------------

def test_clopper_pearson_upper_by_hand():
    # no error in 10 trials: the bound solves (1 - p)^10 = delta, p = 1 - 0.05^(1/10)
    assert clopper_pearson_upper(0, 10, 0.95) == pytest.approx(1 - 0.05 ** 0.1)
    assert clopper_pearson_upper(4, 4, 0.95) == 1.0
    assert math.isnan(clopper_pearson_upper(0, 0, 0.95))


@pytest.mark.parametrize(("errors", "trials"), [(1, 10), (3, 50), (7, 20), (0, 3)])
def test_clopper_pearson_upper_matches_scipy_exact_interval(errors, trials):
    exact = binomtest(errors, trials, alternative="less").proportion_ci(0.9, method="exact")
    assert clopper_pearson_upper(errors, trials, 0.9) == pytest.approx(exact.high)


def test_risk_controlled_threshold_by_hand():
    # scores 100 .. 1; the 60 highest answers are right, the 40 lowest wrong. Keeping the top
    # m answers makes m - 60 errors once m > 60; the one-sided 95% Clopper-Pearson bound is
    # 0.0754 for 1 error in 61, 0.0981 for 2 in 62 and 0.1185 for 3 in 63, so with alpha 0.1
    # the loosest threshold keeps 62 answers: threshold 39, coverage 0.62, risk 2/62.
    for errors, kept, above in ((1, 61, False), (2, 62, False), (3, 63, True)):
        bound = binomtest(errors, kept, alternative="less").proportion_ci(0.95).high
        assert (bound > 0.1) == above
    score = np.arange(100, 0, -1, dtype=float)
    correct = np.arange(100) < 60
    result = risk_controlled_threshold(score, correct, alpha=0.1, delta=0.05)
    assert result.threshold == 39.0
    assert result.coverage == pytest.approx(0.62)
    assert result.risk == pytest.approx(2 / 62)
    assert result.upper_bound == pytest.approx(
        binomtest(2, 62, alternative="less").proportion_ci(0.95).high)


def test_risk_controlled_threshold_none_when_nothing_qualifies():
    result = risk_controlled_threshold([0.9, 0.8, 0.7], [False, True, False], alpha=0.1)
    assert result.threshold is None
    assert math.isnan(result.coverage) and math.isnan(result.upper_bound)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), min_size=1, max_size=200),
       st.sampled_from([0.05, 0.1, 0.3]), st.sampled_from([0.05, 0.1]))
def test_risk_controlled_threshold_respects_alpha(samples, alpha, delta):
    score = np.array([s for s, _ in samples], dtype=float)
    correct = np.array([c for _, c in samples])
    result = risk_controlled_threshold(score, correct, alpha, delta)
    if result.threshold is None:
        return
    keep = score >= result.threshold
    wrong = int(np.count_nonzero(keep & ~correct))
    assert result.upper_bound <= alpha
    assert result.coverage == pytest.approx(keep.mean())
    assert result.risk == pytest.approx(wrong / keep.sum())
    assert result.upper_bound >= result.risk
    # no looser threshold qualifies
    for looser in np.unique(score[score < result.threshold]):
        kept = score >= looser
        errors = int(np.count_nonzero(kept & ~correct))
        assert clopper_pearson_upper(errors, kept.sum(), 1 - delta) > alpha


# -- stacked judge -----------------------------------------------------------------------

def synthetic_judges(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.5
    informative = labels + rng.normal(0, 0.6, n)
    partial = np.where(rng.random(n) < 0.2, nan, labels + rng.normal(0, 1.0, n))
    keeps = [bool(k) if rng.random() > 0.1 else None for k in informative > 0.5]
    features = stack_features({"nli": informative, "p_true": partial,
                               "noise": rng.random(n)}, {"nli": keeps})
    return features, labels


def test_stack_features_marks_missing_values():
    features = stack_features({"a": [0.5, nan]}, {"a": [True, None], "b": [False, True]})
    assert list(features.columns) == ["a:score", "a:keep", "b:keep"]
    np.testing.assert_array_equal(features["a:keep"], [1.0, nan])
    np.testing.assert_array_equal(features["b:keep"], [0.0, 1.0])


def test_stacked_judge_beats_chance_out_of_fold():
    features, labels = synthetic_judges(300)
    probabilities = stacked_oof_probabilities(features, labels, folds=5, seed=0)
    assert probabilities.shape == (300,)
    assert np.all((probabilities >= 0) & (probabilities <= 1))
    assert roc_auc_score(labels, probabilities) > 0.8
    assert np.mean((probabilities > 0.5) == labels) > 0.7
    np.testing.assert_array_equal(
        probabilities, stacked_oof_probabilities(features, labels, folds=5, seed=0))


def test_fitted_stacked_judge_scores_new_samples():
    features, labels = synthetic_judges(200, seed=1)
    model = fit_stacked_judge(features, labels)
    new_features, new_labels = synthetic_judges(200, seed=2)
    assert roc_auc_score(new_labels, model.predict_proba(new_features)[:, 1]) > 0.8


def test_stacked_judge_refuses_fewer_than_20_labels_per_class():
    features, labels = synthetic_judges(300)
    positives = np.flatnonzero(labels)[:19]
    negatives = np.flatnonzero(~labels)[:100]
    rows = np.concatenate([positives, negatives])
    with pytest.raises(NotEnoughLabels, match="19 positive"):
        stacked_oof_probabilities(features.iloc[rows], labels[rows])
    with pytest.raises(ValueError):  # NotEnoughLabels is a ValueError
        fit_stacked_judge(features.iloc[rows], labels[rows])
    rows = np.concatenate([np.flatnonzero(labels)[:20], np.flatnonzero(~labels)[:20]])
    assert stacked_oof_probabilities(features.iloc[rows], labels[rows]).shape == (40,)
