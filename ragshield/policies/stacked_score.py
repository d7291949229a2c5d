"""The stacked judge (docs/METHODS.md 4.12) as a policy's score: a logistic regression over
other judges' scores and keep bits, trained on one part of the labels and kept in the
policy as plain numbers, so that a run, the Demo and the API score a sample with it
without scikit-learn objects or files.

The model is ragshield.metrics.stacked's pipeline (mean imputation with missing
indicators, standard scaling, logistic regression); `StackedScore` holds what each step
learnt and applies them in order."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ragshield.metrics.stacked import fit_stacked_judge, stack_features
from ragshield.types import Verdict

STACKED = "stacked"


@dataclass(frozen=True)
class StackedScore:
    columns: tuple[str, ...]  # "<judge>:score" and "<judge>:keep", as stack_features names them
    fill: tuple[float, ...]  # per column: the training mean, for a missing value
    flagged: tuple[int, ...]  # columns that get a missing-value indicator
    mean: tuple[float, ...]  # scaling, per column then per indicator
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    @property
    def judges(self) -> list[str]:
        return list(dict.fromkeys(column.rpartition(":")[0] for column in self.columns))

    def score_frame(self, features: pd.DataFrame) -> np.ndarray:
        """P(good) per row of a stack_features frame (columns it lacks count as missing);
        NaN (unscored: a policy defers it) for a row with no value at all."""
        x = features.reindex(columns=list(self.columns)).to_numpy(dtype=float)
        missing = np.isnan(x)
        z = np.hstack([np.where(missing, np.asarray(self.fill), x),
                       missing[:, list(self.flagged)].astype(float)])
        z = (z - np.asarray(self.mean)) / np.asarray(self.scale)
        logit = z @ np.asarray(self.coef) + self.intercept
        return np.where(missing.all(axis=1), np.nan, 1 / (1 + np.exp(-logit)))

    def score_verdicts(self, verdicts: Sequence[Verdict]) -> float | None:
        """P(good) of one sample from its verdicts; None (the policy defers) when none of
        its judges gave a score or a keep: every value filled in with the training means
        would read as a confident score."""
        mine = {v.judge: v for v in verdicts if v.judge in self.judges
                and (v.score is not None or v.keep is not None)}
        if not mine:
            return None
        features = stack_features({j: [v.score] for j, v in mine.items()},
                                  {j: [v.keep] for j, v in mine.items()})
        return float(self.score_frame(features)[0])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def train_stacked_score(features: pd.DataFrame, good: np.ndarray,
                        weights: np.ndarray | None = None) -> StackedScore:
    """Fit the stacked judge on labelled rows (NotEnoughLabels below 20 per class), each
    weighted by `weights` where given. A column with no value (a judge unavailable on every
    row) is left out: the imputer would drop it and the stored score would no longer fit
    together."""
    features = features.loc[:, features.notna().any()]
    pipeline = fit_stacked_judge(features, good, weights)
    imputer, scaler, regression = (step for _, step in pipeline.steps)
    flagged = (tuple(int(i) for i in imputer.indicator_.features_)
               if imputer.indicator_ is not None else ())
    return StackedScore(columns=tuple(features.columns),
                        fill=tuple(float(v) for v in imputer.statistics_), flagged=flagged,
                        mean=tuple(float(v) for v in scaler.mean_),
                        scale=tuple(float(v) for v in scaler.scale_),
                        coef=tuple(float(v) for v in regression.coef_[0]),
                        intercept=float(regression.intercept_[0]))


def run_features(verdicts: pd.DataFrame, sample_ids: pd.Series) -> pd.DataFrame:
    """stack_features of a run's verdict table (sample_id, judge, keep, score), one row
    per sample of `sample_ids`: a score column for each judge that gave a score."""
    scores = verdicts.pivot_table(index="sample_id", columns="judge", values="score",
                                  aggfunc="first", dropna=False)
    keeps = verdicts.assign(keep=verdicts["keep"].astype("float")).pivot_table(
        index="sample_id", columns="judge", values="keep", aggfunc="first", dropna=False)
    scores, keeps = scores.reindex(sample_ids), keeps.reindex(sample_ids)
    return stack_features({j: scores[j] for j in scores.columns if scores[j].notna().any()},
                          {j: keeps[j] for j in keeps.columns})


def read_stacked(body: Any, where: str) -> StackedScore:
    """A StackedScore from its JSON form; ValueError naming the field at fault."""
    if not isinstance(body, Mapping):
        raise ValueError(f"{where}: expected an object")
    lists = {}
    for key in ("columns", "fill", "flagged", "mean", "scale", "coef"):
        value = body.get(key)
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where}.{key}: expected a list")
        lists[key] = tuple(value)
    width = len(lists["columns"]) + len(lists["flagged"])
    if (len(lists["fill"]) != len(lists["columns"])
            or not len(lists["mean"]) == len(lists["scale"]) == len(lists["coef"]) == width):
        raise ValueError(f"{where}: the lengths of columns, fill, flagged, mean, scale and "
                         "coef do not fit together")
    numbers = [*lists["fill"], *lists["mean"], *lists["scale"], *lists["coef"],
               body.get("intercept")]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n)
               for n in numbers) or not all(isinstance(c, str) for c in lists["columns"]):
        raise ValueError(f"{where}: expected finite numbers and column names")
    if not all(isinstance(i, int) and 0 <= i < len(lists["columns"]) for i in lists["flagged"]):
        raise ValueError(f"{where}.flagged: expected column positions")
    return StackedScore(**lists, intercept=float(body["intercept"]))
