"""The learned judge's model (docs/METHODS.md 4.13): a logistic regression over the cheap
signals (judges/signals.py) and, when it was trained with them, the LLM's own probability
reads (pre_answer, p_true, token_prob, calibration), as log-odds.

Chosen over a fine-tuned encoder because it holds on articles it never saw (docs/QUALITY.md):
a dozen standardised inputs and one weight each leave little to memorise. Its strength C is
chosen by grouped cross-validation (whole groups, e.g. articles, held out, never a random
split of one article's questions), and its quality is reported by nested grouped
cross-validation: each held-out group is scored by a model whose C was chosen without it.

The model is a JSON file of weights: loading it runs no code, and a person can read it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from ragshield.metrics.precision_recall import pr_auc, pr_curve

STRENGTHS = (0.01, 0.1, 1.0, 10.0)  # C, the inverse of the L2 penalty
MAX_FOLDS = 8  # up to this many groups: leave one group out; more: this many grouped folds
READ_CLIP = 1e-4


def log_odds(probabilities: Sequence[float | None]) -> np.ndarray:
    """An LLM read P as log(P / (1 - P)), clipped; None (no read) stays missing (NaN)."""
    values = np.asarray([np.nan if p is None else p for p in probabilities], dtype=float)
    clipped = np.clip(values, READ_CLIP, 1 - READ_CLIP)
    return np.log(clipped / (1 - clipped))


@dataclass(frozen=True)
class FeatureModel:
    """P(good) = sigmoid(intercept + sum coef * (x - mean) / scale); a missing x counts as
    its mean."""

    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    strength: float

    def standardised(self, rows: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        mean = np.asarray(self.mean)
        filled = np.where(np.isnan(rows), mean, rows)
        return (filled - mean) / np.asarray(self.scale)

    def probability(self, rows: np.ndarray) -> np.ndarray:
        logits = self.standardised(rows) @ np.asarray(self.coef) + self.intercept
        return 1 / (1 + np.exp(-logits))

    def contributions(self, row: np.ndarray) -> list[tuple[str, float, float]]:
        """(feature, its value, its push on the log-odds) of one sample, strongest push
        first."""
        values = np.atleast_2d(np.asarray(row, dtype=float))[0]
        pushes = self.standardised(values)[0] * np.asarray(self.coef)
        found = [(name, float(value), float(push))
                 for name, value, push in zip(self.features, values, pushes)]
        return sorted(found, key=lambda item: -abs(item[2]))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> "FeatureModel":
        model = cls(features=[str(f) for f in body["features"]],
                    mean=[float(v) for v in body["mean"]], scale=[float(v) for v in body["scale"]],
                    coef=[float(v) for v in body["coef"]], intercept=float(body["intercept"]),
                    strength=float(body["strength"]))
        if not len(model.features) == len(model.mean) == len(model.scale) == len(model.coef):
            raise ValueError("features, mean, scale and coef differ in length")
        return model


def fit_model(rows: np.ndarray, labels: np.ndarray, features: Sequence[str],
              strength: float) -> FeatureModel:
    """Fit one logistic regression (classes weighed to balance)."""
    from sklearn.linear_model import LogisticRegression

    rows = np.asarray(rows, dtype=float)
    mean = np.nanmean(rows, axis=0) if len(rows) else np.zeros(rows.shape[1])
    mean = np.where(np.isnan(mean), 0.0, mean)
    filled = np.where(np.isnan(rows), mean, rows)
    scale = filled.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    fitted = LogisticRegression(C=strength, class_weight="balanced", max_iter=1000)
    fitted.fit((filled - mean) / scale, labels.astype(int))
    return FeatureModel(list(features), mean.tolist(), scale.tolist(),
                        fitted.coef_[0].tolist(), float(fitted.intercept_[0]), strength)


def area(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """PR-AUC of P(good) against good; None when one class is absent."""
    labels = np.asarray(labels, dtype=bool)
    if not 0 < labels.sum() < len(labels):
        return None
    return pr_auc(pr_curve(np.asarray(scores, dtype=float), labels, labels))


def folds_of(groups: Sequence[str], max_folds: int = MAX_FOLDS) -> np.ndarray:
    """A fold number per sample: one fold per group when there are at most `max_folds`
    groups, else groups dealt into `max_folds` folds of about equal size (largest first)."""
    names, counts = np.unique(np.asarray(groups, dtype=object), return_counts=True)
    if len(names) <= max_folds:
        fold = {name: index for index, name in enumerate(names)}
    else:
        sizes = [0] * max_folds
        fold = {}
        for name, count in sorted(zip(names, counts), key=lambda item: (-item[1], item[0])):
            smallest = sizes.index(min(sizes))
            fold[name] = smallest
            sizes[smallest] += count
    return np.asarray([fold[g] for g in groups])


@dataclass
class Extra:
    """Training-only rows (hard negatives): they join a fold's training part when their group
    is in it, and are never scored."""

    rows: np.ndarray
    labels: np.ndarray
    groups: np.ndarray

    @classmethod
    def empty(cls, width: int) -> "Extra":
        return cls(np.zeros((0, width)), np.zeros(0, dtype=bool), np.zeros(0, dtype=object))

    def where(self, mask: np.ndarray) -> "Extra":
        return Extra(self.rows[mask], self.labels[mask], self.groups[mask])


def _choose_strength(rows, labels, folds, extra: Extra, extra_folds, features) -> float:
    """The C whose grouped-CV median PR-AUC is highest (the smaller C on a tie)."""
    best, best_score = STRENGTHS[0], -math.inf
    for strength in STRENGTHS:
        scores = []
        for fold in np.unique(folds):
            train, test = folds != fold, folds == fold
            model = _fit_with_extra(rows[train], labels[train], extra.where(extra_folds != fold),
                                    features, strength)
            if model is None:
                continue
            found = area(model.probability(rows[test]), labels[test])
            if found is not None:
                scores.append(found)
        score = float(np.median(scores)) if scores else -math.inf
        if score > best_score + 1e-9:
            best, best_score = strength, score
    return best


def _fit_with_extra(rows, labels, extra: Extra, features, strength) -> FeatureModel | None:
    rows = np.vstack([rows, extra.rows])
    labels = np.concatenate([labels, extra.labels])
    if len(np.unique(labels)) < 2:
        return None
    return fit_model(rows, labels, features, strength)


def _folds_and_extra(rows, groups, extra: Extra | None) -> tuple[np.ndarray, Extra, np.ndarray]:
    """The samples' folds, the extra rows (empty when none), and each extra row's fold: that
    of its group (-1 when its group has no labelled sample)."""
    folds = folds_of(groups)
    extra = extra if extra is not None else Extra.empty(rows.shape[1])
    fold_of_group = dict(zip(np.asarray(groups, dtype=object), folds))
    extra_folds = np.asarray([fold_of_group.get(g, -1) for g in extra.groups], dtype=int)
    return folds, extra, extra_folds


@dataclass(frozen=True)
class GroupedCV:
    """Nested grouped cross-validation: each fold's PR-AUC, keep-all's, and the out-of-fold
    P(good) of every sample (NaN where its fold could not be trained)."""

    fold_areas: list[float]
    fold_keep_all: list[float]
    fold_sizes: list[int]
    out_of_fold: np.ndarray

    def summary(self) -> dict[str, Any]:
        areas = np.asarray(self.fold_areas)
        return {"folds": len(areas), "pr_auc_median": float(np.median(areas)),
                "pr_auc_min": float(areas.min()), "pr_auc_max": float(areas.max()),
                "keep_all_median": float(np.median(self.fold_keep_all)),
                "fold_pr_auc": [round(float(a), 4) for a in areas],
                "fold_sizes": self.fold_sizes}


def grouped_cv(rows: np.ndarray, labels: np.ndarray, groups: Sequence[str],
               features: Sequence[str], extra: Extra | None = None) -> GroupedCV:
    """Score every sample by a model trained without its group's fold, C chosen inside."""
    rows, labels = np.asarray(rows, dtype=float), np.asarray(labels, dtype=bool)
    folds, extra, extra_folds = _folds_and_extra(rows, groups, extra)
    out = np.full(len(labels), np.nan)
    areas, keep_all, sizes = [], [], []
    for fold in np.unique(folds):
        train, test = folds != fold, folds == fold
        inner, kept = folds[train], extra_folds != fold
        strength = (_choose_strength(rows[train], labels[train], inner, extra.where(kept),
                                     extra_folds[kept], features)
                    if len(np.unique(inner)) > 1 else 1.0)
        model = _fit_with_extra(rows[train], labels[train], extra.where(kept), features,
                                strength)
        if model is None:
            continue
        out[test] = model.probability(rows[test])
        found = area(out[test], labels[test])
        if found is not None:
            areas.append(found)
            keep_all.append(float(labels[test].mean()))
            sizes.append(int(test.sum()))
    if not areas:
        raise ValueError("no fold held both good and bad samples: grouped cross-validation "
                         "needs at least two groups with labels of each kind")
    return GroupedCV(areas, keep_all, sizes, out)


def fit_final(rows: np.ndarray, labels: np.ndarray, groups: Sequence[str],
              features: Sequence[str], extra: Extra | None = None) -> FeatureModel:
    """The model to keep: C chosen by grouped CV on all the labels, fitted on all of them."""
    rows, labels = np.asarray(rows, dtype=float), np.asarray(labels, dtype=bool)
    folds, extra, extra_folds = _folds_and_extra(rows, groups, extra)
    strength = (_choose_strength(rows, labels, folds, extra, extra_folds, features)
                if len(np.unique(folds)) > 1 else 1.0)
    model = _fit_with_extra(rows, labels, extra, features, strength)
    if model is None:
        raise ValueError("the labels hold one class only")
    return model
