"""What keep = score >= t would have done on a stored run: the judges with scores, the range
of a judge's scores, and the coverage and risk of its own decisions beside those of the
threshold (ragshield.metrics.risk)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ragshield.errors import UserError
from ragshield.metrics.risk import risk_metrics
from ragshield.services.form_values import whole_number
from ragshield.services.runs.run_choices import RunChoice, run_choices
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.store.database import Store

OWN_DECISIONS = "the judge's own"


class ThresholdInputError(UserError, ValueError):
    """The chosen run or judge has no scores to threshold."""


def _decided(tables: RunTablesCache, run_id: Any) -> pd.DataFrame:
    """The run's verdicts that reached a decision (unavailable and failed ones left out)."""
    verdicts = tables.get(whole_number(run_id, "run", minimum=1), "auto").verdicts
    return verdicts[verdicts["keep"].notna()]


def scored_judges(tables: RunTablesCache, run_id: Any) -> list[str]:
    decided = _decided(tables, run_id)
    return list(dict.fromkeys(decided.loc[decided["score"].notna(), "judge"]))


def _judge_rows(tables: RunTablesCache, run_id: Any, judge: str | None) -> pd.DataFrame:
    """The judge's decided verdicts in the run; ThresholdInputError if it has no scores there."""
    decided = _decided(tables, run_id)
    rows = decided[decided["judge"] == judge]
    if judge is None or rows["score"].notna().sum() == 0:
        scored = ", ".join(scored_judges(tables, run_id)) or "none"
        raise ThresholdInputError(f"run {run_id} has no scores from judge {judge!r}; judges "
                                  f"with scores: {scored}")
    return rows


@dataclass(frozen=True)
class ScoreRange:
    low: float
    high: float
    middle: float  # the median score, where a slider starts


def score_range(tables: RunTablesCache, run_id: Any, judge: str | None) -> ScoreRange:
    scores = _judge_rows(tables, run_id, judge)["score"].dropna()
    low, high = float(scores.min()), float(scores.max())
    return ScoreRange(low, high if high > low else low + 1.0, float(scores.median()))


def operating_points(tables: RunTablesCache, run_id: Any, judge: str | None,
                     threshold: float) -> dict[str, dict[str, Any]]:
    """risk_metrics (coverage, risk, counts) of the judge's own decisions and of
    keep = score >= threshold, by a label for each."""
    rows = _judge_rows(tables, run_id, judge)
    answerable = rows["answer_correct"].to_numpy(dtype=bool)
    scores = rows["score"].to_numpy(dtype=float)
    at_threshold = scores >= threshold  # NaN (unscored) compares False: never kept
    return {OWN_DECISIONS: risk_metrics(answerable, rows["keep"].to_numpy(dtype=bool)),
            f"score >= {threshold:.4g}": risk_metrics(answerable, at_threshold)}


@dataclass(frozen=True)
class ThresholdChoice:
    """A run, one of its scored judges and the range of its scores (the threshold starts
    at their median), with defaults filled in: the newest run, its first scored judge.
    `problem` says why the chosen run cannot be thresholded."""

    runs: list[RunChoice]
    run_id: Any = None  # None: no run stored
    judges: list[str] = field(default_factory=list)
    judge: str | None = None
    scores: ScoreRange | None = None
    problem: str | None = None


def threshold_choice(store: Store, tables: RunTablesCache, run_id: Any = None,
                     judge: str | None = None) -> ThresholdChoice:
    runs = run_choices(store)
    run_id = run_id if run_id is not None else next((value for _, value in runs), None)
    if run_id is None:
        return ThresholdChoice(runs)
    judges: list[str] = []
    try:
        judges = scored_judges(tables, run_id)
        chosen = judge if judge in judges else next(iter(judges), None)
        return ThresholdChoice(runs, run_id, judges, chosen, score_range(tables, run_id, chosen))
    except UserError as exc:
        return ThresholdChoice(runs, run_id, judges, problem=str(exc))
