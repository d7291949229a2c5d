"""Per-judge metrics from a long verdict table: the engine behind the metrics CLI.

The table has one row per (sample_id, judge) with columns sample_id, judge, keep (bool; null
when the judge was unavailable or failed on that sample: the row is left out for that
judge), score (float or NaN), answer_correct (bool: the RC-RAG label J) and
passages_support (bool: F-Answerable). Risk metrics use J; AwF metrics use
V = answer_correct & passages_support with recall over sum(passages_support); QPP metrics
use truth = passages_support.

A judge without any score (a hard judge) has max_f1 = its f1 with max_f1_threshold None,
pr_auc = precision x recall (docs/METHODS.md 5.2), qpp_pr_auc = qpp_precision x qpp_recall
and aurc None. qpp_pr_auc ranks the judge's score against passages_support alone: how well
it tells answerable questions from the others, whatever the answer. For a scored judge the sweeps
use keep = score >= threshold and never keep a sample whose score is NaN. Confidence intervals
(percentile bootstrap over the sample ids, the same resamples for every judge) cover the
count-based metrics only; see ragshield.metrics.bootstrap for why. Undefined values are None.
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from ragshield.errors import UserError
from ragshield.metrics.bootstrap import N_RESAMPLES, percentile_interval, resampled_counts
from ragshield.metrics.curves import aurc, risk_coverage_curve
from ragshield.metrics.precision_recall import max_f1, pr_auc, pr_curve, pr_from_counts
from ragshield.metrics.risk import FOLDS, risk_from_counts

COLUMNS = ("sample_id", "judge", "keep", "score", "answer_correct", "passages_support")
# Per-sample indicators whose sums give every count-based metric of a judge.
INDICATORS = (*FOLDS, "TP", "support", "QPP_TP")
CI_METRICS = ("risk", "carefulness", "alignment", "coverage", "precision", "recall", "f1",
              "qpp_precision", "qpp_recall", "qpp_f1")
OUTPUT_METRICS = ("risk", "carefulness", "alignment", "coverage", "precision", "recall", "f1",
                  "max_f1", "max_f1_threshold", "pr_auc", "qpp_precision", "qpp_recall",
                  "qpp_f1", "qpp_pr_auc", "aurc")


class VerdictTableError(UserError, ValueError):
    """A malformed verdict table; `line` is the 1-based row (None for the whole table)."""

    def __init__(self, message: str, line: int | None = None, field: str | None = None):
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line
        self.field = field


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not _is_bool(value)


_FIELD_CHECKS = {
    "sample_id": (lambda v: isinstance(v, (str, numbers.Integral)) and not _is_bool(v),
                  "a string or an integer"),
    "judge": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "keep": (lambda v: v is None or _is_bool(v), "true, false or null"),
    "score": (lambda v: v is None or _is_number(v), "a number or null"),
    "answer_correct": (_is_bool, "true or false"),
    "passages_support": (_is_bool, "true or false"),
}


def validate_verdict_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Check every row (fields present, types, no repeated (sample_id, judge)) and return the
    table for `judge_metrics`. Raises VerdictTableError naming the 1-based line and field."""
    seen: dict[tuple[Any, str], int] = {}
    records = []
    for line, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise VerdictTableError(f"expected an object, got {type(row).__name__}", line)
        for field, (check, expected) in _FIELD_CHECKS.items():
            if field not in row:
                raise VerdictTableError(f"missing field {field!r}", line, field)
            if not check(row[field]):
                raise VerdictTableError(f"field {field!r} must be {expected}, got "
                                        f"{row[field]!r}", line, field)
        # Ids are text, as stored samples' are: 1 and "1" name one sample.
        values = {**{field: row[field] for field in COLUMNS}, "sample_id": str(row["sample_id"])}
        key = (values["sample_id"], values["judge"])
        if key in seen:
            raise VerdictTableError(f"sample {key[0]!r} judged twice by {key[1]!r} (first on "
                                    f"line {seen[key]})", line, "sample_id")
        seen[key] = line
        records.append(tuple(values[field] for field in COLUMNS))
    table = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    return table.astype({"keep": "boolean", "score": float, "answer_correct": bool,
                         "passages_support": bool})


def _count_metrics(counts: np.ndarray) -> dict[str, np.ndarray | float]:
    """Every count-based metric from the INDICATORS sums (last axis); vectorised over any
    leading axes, e.g. bootstrap resamples."""
    ak, ad, uk, ud, tp, support, qpp_tp = np.moveaxis(counts, -1, 0)
    qpp = pr_from_counts(qpp_tp, ak + uk, support)
    return {**risk_from_counts(ak, ad, uk, ud), **pr_from_counts(tp, ak + uk, support),
            **{f"qpp_{name}": value for name, value in qpp.items()}}


def _indicators(keep: np.ndarray, correct: np.ndarray, support: np.ndarray) -> np.ndarray:
    return np.column_stack([correct & keep, correct & ~keep, ~correct & keep,
                            ~correct & ~keep, keep & correct & support, support,
                            keep & support])


def _none_if_nan(value: Any) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def _scored_metrics(score: np.ndarray, correct: np.ndarray,
                    support: np.ndarray) -> dict[str, Any]:
    curve = pr_curve(score, correct & support, support)
    best, threshold = max_f1(curve)
    return {"max_f1": best, "max_f1_threshold": threshold, "pr_auc": pr_auc(curve),
            "qpp_pr_auc": pr_auc(pr_curve(score, support, support)),
            # Unscored samples rank last, so the curve reaches coverage 1: left out, they
            # would shrink the area, and a judge that scores fewer would look better.
            "aurc": aurc(risk_coverage_curve(np.where(np.isnan(score), -np.inf, score),
                                             correct))}


def judge_metrics(table: pd.DataFrame, n_resamples: int = N_RESAMPLES,
                  seed: int = 0) -> dict[str, dict[str, Any]]:
    """Metrics per judge, judges in order of first appearance (a judge unavailable on every
    sample is listed with n = 0); n_resamples = 0: no CIs ("ci": {})."""
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise VerdictTableError(f"missing column(s) {', '.join(missing)}", field=missing[0])
    judge_codes, judges = pd.factorize(table["judge"])
    sample_codes, samples = pd.factorize(table["sample_id"])
    available = table["keep"].notna().to_numpy()
    rows = table[available]
    judge_codes, sample_codes = judge_codes[available], sample_codes[available]
    keep = rows["keep"].to_numpy(dtype=bool)
    score = rows["score"].to_numpy(dtype=float)
    correct = rows["answer_correct"].to_numpy(dtype=bool)
    support = rows["passages_support"].to_numpy(dtype=bool)

    order = np.argsort(judge_codes, kind="stable")
    per_judge = np.split(order, np.cumsum(np.bincount(judge_codes, minlength=len(judges)))[:-1])
    width = len(INDICATORS)
    resampled = np.zeros((len(samples), width * len(judges)), dtype=bool) if n_resamples else None
    results: dict[str, dict[str, Any]] = {}
    for code, (judge, index) in enumerate(zip(judges, per_judge)):
        indicators = _indicators(keep[index], correct[index], support[index])
        if resampled is not None:
            resampled[sample_codes[index], code * width:(code + 1) * width] = indicators
        counts = indicators.sum(axis=0)
        point = _count_metrics(counts)
        if np.isnan(score[index]).all():
            ranked = {"max_f1": point["f1"], "max_f1_threshold": None,
                      "pr_auc": point["precision"] * point["recall"],
                      "qpp_pr_auc": point["qpp_precision"] * point["qpp_recall"], "aurc": None}
        else:
            ranked = _scored_metrics(score[index], correct[index], support[index])
        metrics = {**point, **ranked}
        results[str(judge)] = {
            "n": int(index.size),
            "counts": {fold: int(c) for fold, c in zip(FOLDS, counts)},
            **{name: _none_if_nan(metrics[name]) for name in OUTPUT_METRICS},
            "ci": {},
        }
    if resampled is not None:
        counts = resampled_counts(resampled, n_resamples, seed)
        for code, judge in enumerate(judges):
            estimates = _count_metrics(counts[:, code * width:(code + 1) * width])
            results[str(judge)]["ci"] = {
                name: [_none_if_nan(bound) for bound in percentile_interval(estimates[name])]
                for name in CI_METRICS}
    return results
