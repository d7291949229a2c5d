"""CRAG scoring (docs/METHODS.md 5.4): each answer scores +1 correct, 0 missing (a refusal), -1
incorrect (hallucination); accuracy, hallucination and missing are rates over all N answers
and score = accuracy - hallucination.

False-premise questions carry the reference "invalid question": only a prediction saying
the question is invalid is correct there. Elsewhere "invalid question" is an ordinary refusal
(docs/METHODS.md 1), so it counts as missing."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ragshield.metrics.correctness import TAU, is_correct, normalize_answer
from ragshield.metrics.ratio import ratio
from ragshield.refusal import is_invalid_question, is_refusal

TOKEN_BUDGET = 75
CORRECT, MISSING, INCORRECT = 1, 0, -1
BREAKDOWN_COLUMNS = ("domain", "question_type", "static_or_dynamic")
_INVALID = normalize_answer("invalid question")


def truncate_tokens(text: str, budget: int = TOKEN_BUDGET) -> str:
    """The first `budget` whitespace-separated tokens."""
    return " ".join(text.split()[:budget])


def is_false_premise(references: Sequence[str]) -> bool:
    return any(normalize_answer(ref) == _INVALID for ref in references)


def crag_grade(prediction: str | None, references: Sequence[str],
               budget: int = TOKEN_BUDGET, tau: float = TAU) -> int:
    """+1, 0 or -1 for one prediction, graded after truncation to `budget` tokens."""
    prediction = truncate_tokens(prediction or "", budget)
    false_premise = is_false_premise(references)
    if false_premise and is_invalid_question(prediction):
        return CORRECT
    if is_refusal(prediction):
        return MISSING
    if not false_premise and is_correct(prediction, references, tau):
        return CORRECT
    return INCORRECT


def crag_grades(predictions: Iterable[str | None], references: Iterable[Sequence[str]],
                budget: int = TOKEN_BUDGET, tau: float = TAU) -> np.ndarray:
    return np.array([crag_grade(p, refs, budget, tau)
                     for p, refs in zip(predictions, references, strict=True)], dtype=int)


def crag_scores(grades: ArrayLike) -> dict[str, float | int]:
    """n, accuracy, hallucination, missing, score from +1 / 0 / -1 grades (NaN when n = 0)."""
    grades = np.asarray(grades, dtype=int)
    n = grades.size
    accuracy = ratio(np.count_nonzero(grades == CORRECT), n)
    hallucination = ratio(np.count_nonzero(grades == INCORRECT), n)
    return {"n": n, "accuracy": accuracy, "hallucination": hallucination,
            "missing": ratio(np.count_nonzero(grades == MISSING), n),
            "score": accuracy - hallucination}


def crag_breakdown(frame: pd.DataFrame, by: Sequence[str] = BREAKDOWN_COLUMNS,
                   grade_column: str = "grade") -> dict[str, pd.DataFrame]:
    """One table per column of `by` present in `frame`: a row per group value (missing
    values form their own group) with n, accuracy, hallucination, missing, score."""
    grades = frame[grade_column].to_numpy(dtype=int)
    indicators = pd.DataFrame({
        "accuracy": grades == CORRECT,
        "hallucination": grades == INCORRECT,
        "missing": grades == MISSING,
    }, index=frame.index)
    tables = {}
    for column in (c for c in by if c in frame.columns):
        groups = indicators.groupby(frame[column], dropna=False)
        table = groups.mean()
        table.insert(0, "n", groups.size())
        table["score"] = table["accuracy"] - table["hallucination"]
        tables[column] = table
    return tables
