"""Stacked judge (docs/METHODS.md 4.12): logistic regression over other judges' scores and
keep bits, fitted on labelled samples, evaluated by stratified k-fold cross-validation. A
missing score (NaN) is imputed with the training mean and flagged by a missing-indicator
feature; both are fitted inside each fold, so nothing leaks from the held-out samples."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneGroupOut, StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from ragshield.errors import UserError

MIN_LABELS_PER_CLASS = 20


class NotEnoughLabels(UserError, ValueError):
    """Fewer than MIN_LABELS_PER_CLASS labelled samples in a class."""


def stack_features(scores: Mapping[str, Any], keeps: Mapping[str, Any]) -> pd.DataFrame:
    """One column per judge score ("<judge>:score") and keep bit ("<judge>:keep", 0/1),
    NaN where a judge gave none (a keep bit of None is missing too)."""
    columns = {f"{judge}:score": np.asarray(values, dtype=float)
               for judge, values in scores.items()}
    columns |= {f"{judge}:keep": pd.array(values, dtype="boolean").to_numpy(float, na_value=np.nan)
                for judge, values in keeps.items()}
    return pd.DataFrame(columns)


def _check_labels(labels: ArrayLike) -> np.ndarray:
    labels = np.asarray(labels, dtype=bool)
    counts = np.bincount(labels.astype(int), minlength=2)
    if counts.min() < MIN_LABELS_PER_CLASS:
        raise NotEnoughLabels(
            f"the stacked judge needs at least {MIN_LABELS_PER_CLASS} labelled samples per "
            f"class; got {counts[1]} positive and {counts[0]} negative")
    return labels


def _model() -> Pipeline:
    return make_pipeline(SimpleImputer(strategy="mean", add_indicator=True), StandardScaler(),
                         LogisticRegression(max_iter=1000))


def fit_stacked_judge(features: pd.DataFrame | np.ndarray, labels: ArrayLike,
                      weights: ArrayLike | None = None) -> Pipeline:
    """The model fitted on all labelled samples (each weighted by `weights` where given);
    `predict_proba(X)[:, 1]` scores new ones."""
    return _model().fit(features, _check_labels(labels),
                        logisticregression__sample_weight=weights)


def stacked_oof_probabilities(features: pd.DataFrame | np.ndarray, labels: ArrayLike,
                              folds: int = 5, seed: int = 0,
                              groups: ArrayLike | None = None) -> np.ndarray:
    """Out-of-fold P(label) for every labelled sample: each fold's model never saw it. With
    `groups` (e.g. each sample's article), one fold per group: the model never saw the
    sample's group either, as on a new article."""
    labels = _check_labels(labels)
    if groups is not None:
        return cross_val_predict(_model(), features, labels, cv=LeaveOneGroupOut(),
                                 groups=np.asarray(groups), method="predict_proba")[:, 1]
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
    return cross_val_predict(_model(), features, labels, cv=splitter,
                             method="predict_proba")[:, 1]
