"""Risk-coverage, No-RAG fallback and model-switch curves (METHODS 5.3) and CRAG scoring
(METHODS 5.4) against hand-computed cases and properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.metrics.crag import (
    crag_breakdown,
    crag_grade,
    crag_grades,
    crag_scores,
    truncate_tokens,
)
from ragshield.metrics.curves import (
    accuracy_at_rate,
    aurc,
    fallback_curve,
    risk_coverage_curve,
    random_switch_accuracy,
    switch_curve,
)

nan = math.nan
T, F = True, False


# -- risk-coverage and AURC --------------------------------------------------------------

def test_risk_coverage_by_hand():
    curve = risk_coverage_curve([0.9, 0.7, 0.7, 0.2], [T, F, T, F])
    # t = 0.9: kept {0}       -> coverage 1/4, risk 0/1
    # t = 0.7: kept {0, 1, 2} -> coverage 3/4, risk 1/3
    # t = 0.2: kept all       -> coverage 1,   risk 2/4
    np.testing.assert_allclose(curve.thresholds, [0.9, 0.7, 0.2])
    np.testing.assert_allclose(curve.coverage, [0.25, 0.75, 1.0])
    np.testing.assert_allclose(curve.risk, [0.0, 1 / 3, 0.5])
    # step-wise area: 0.25 * 0 + 0.5 * 1/3 + 0.25 * 1/2 = 1/6 + 1/8 = 7/24
    assert aurc(curve) == pytest.approx(7 / 24)


def test_risk_coverage_nan_scores_are_never_kept():
    curve = risk_coverage_curve([0.5, nan], [T, F])
    np.testing.assert_allclose(curve.coverage, [0.5])  # 1 of 2 samples
    np.testing.assert_allclose(curve.risk, [0.0])
    assert math.isnan(aurc(risk_coverage_curve([nan], [T])))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=40))
def test_coverage_does_not_grow_as_the_threshold_rises(samples):
    score = [s for s, _ in samples]
    correct = [c for _, c in samples]
    curve = risk_coverage_curve(score, correct)
    order = np.argsort(curve.thresholds)  # rising thresholds
    assert np.all(np.diff(curve.coverage[order]) <= 0)
    assert np.all((curve.risk >= 0) & (curve.risk <= 1))
    assert curve.coverage[-1] == 1.0  # the lowest threshold keeps everything


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_aurc_without_ties_is_the_mean_top_k_risk(correct, random):
    score = list(range(len(correct)))
    random.shuffle(score)
    ranked = [c for _, c in sorted(zip(score, correct), reverse=True)]
    top_k_risk = [sum(not c for c in ranked[:k]) / k for k in range(1, len(ranked) + 1)]
    assert aurc(risk_coverage_curve(score, correct)) == pytest.approx(np.mean(top_k_risk))


# -- replacement curves ------------------------------------------------------------------

def test_fallback_curve_by_hand():
    curve = fallback_curve([0.9, 0.6, 0.3], rag_correct=[T, F, F], norag_correct=[F, T, T])
    # t = inf: replace all   -> rate 1,   accuracy 2/3; replaced: RAG 1/3, No-RAG 2/3
    # t = 0.9: keep {0}      -> rate 2/3, accuracy (1 + 1 + 1)/3; replaced {1, 2}: 0/2, 2/2
    # t = 0.6: keep {0, 1}   -> rate 1/3, accuracy (1 + 0 + 1)/3; replaced {2}: 0/1, 1/1
    # t = 0.3: keep all      -> rate 0,   accuracy 1/3; nothing replaced: n/a
    np.testing.assert_allclose(curve.thresholds, [np.inf, 0.9, 0.6, 0.3])
    np.testing.assert_allclose(curve.rate, [1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(curve.accuracy, [2 / 3, 1, 2 / 3, 1 / 3])
    np.testing.assert_allclose(curve.replaced_own_accuracy, [1 / 3, 0, 0, nan])
    np.testing.assert_allclose(curve.replaced_new_accuracy, [2 / 3, 1, 1, nan])


def test_switch_curve_and_random_baseline():
    small = [T, F, F, F]
    large = [T, T, T, F]
    curve = switch_curve([0.4, 0.3, 0.2, 0.1], small, large)
    # rates 1, 3/4, 1/2, 1/4, 0; switching the k lowest-scored answers to the large model:
    # accuracy 3/4 (all large), then keep 0: 1 + (1 + 1 + 0) = 3/4, keep 0, 1: 1 + 0 + 1 + 0
    # = 2/4, keep 0, 1, 2: 1/4, keep all: 1/4
    np.testing.assert_allclose(curve.rate, [1, 3 / 4, 1 / 2, 1 / 4, 0])
    np.testing.assert_allclose(curve.accuracy, [3 / 4, 3 / 4, 2 / 4, 1 / 4, 1 / 4])
    # random switching: (1 - r) * 1/4 + r * 3/4
    np.testing.assert_allclose(random_switch_accuracy([0, 0.5, 1], small, large),
                               [0.25, 0.5, 0.75])


def test_accuracy_at_rate_interpolates_between_curve_points():
    rates = [1, 2 / 3, 1 / 3, 0]
    accuracies = [2 / 3, 1, 2 / 3, 1 / 3]
    # 0.2 lies 0.6 of the way from rate 0 (1/3) to rate 1/3 (2/3): 1/3 + 0.6 * 1/3
    assert accuracy_at_rate(rates, accuracies, 0.2) == pytest.approx(1 / 3 + 0.2)
    assert accuracy_at_rate(rates, accuracies, 1 / 3) == pytest.approx(2 / 3)
    # a curve whose smallest rate is 0.5 (half the scores missing) has no point at 0.2
    assert math.isnan(accuracy_at_rate([1.0, 0.5], [0.4, 0.6], 0.2))
    assert math.isnan(accuracy_at_rate([], [], 0.2))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.booleans()),
                min_size=1, max_size=40))
def test_replacement_curve_matches_direct_replacement(samples):
    score = np.array([s for s, _, _ in samples], dtype=float)
    own = np.array([o for _, o, _ in samples])
    new = np.array([n for _, _, n in samples])
    curve = fallback_curve(score, own, new)
    assert curve.rate[0] == 1.0 and curve.rate[-1] == 0.0
    for threshold, rate, accuracy in zip(curve.thresholds, curve.rate, curve.accuracy):
        keep = score >= threshold
        assert rate == pytest.approx(1 - keep.mean())
        assert accuracy == pytest.approx(np.where(keep, own, new).mean())


# -- CRAG --------------------------------------------------------------------------------

def test_truncate_tokens():
    assert truncate_tokens("a  b\nc d", 3) == "a b c"
    assert truncate_tokens("short", 75) == "short"


@pytest.mark.parametrize(("prediction", "references", "grade"), [
    ("Paris", ["Paris"], 1),
    ("It is Paris.", ["Paris"], 1),
    ("London", ["Paris"], -1),
    ("I don't know", ["Paris"], 0),
    (None, ["Paris"], 0),
    # false premise: only saying the question is invalid is correct
    ("invalid question", ["invalid question"], 1),
    ("This is an invalid question.", ["Invalid question"], 1),
    ("I don't know", ["invalid question"], 0),
    ("Paris", ["invalid question"], -1),
    # elsewhere "invalid question" is a refusal (METHODS 1): missing, not correct
    ("Invalid question", ["Paris"], 0),
])
def test_crag_grade(prediction, references, grade):
    assert crag_grade(prediction, references) == grade


def test_crag_grade_truncates_before_grading():
    prediction = "well " * 80 + "Paris"  # the answer sits after token 80
    assert crag_grade(prediction, ["Paris"]) == -1  # cut at 75 tokens
    assert crag_grade(prediction, ["Paris"], budget=100) == 1


def test_crag_scores_by_hand():
    grades = crag_grades(["Paris", "Rome", "Bern", "I don't know", "Oslo"],
                         [["Paris"], ["Rome"], ["Bern"], ["Lima"], ["Lima"]])
    np.testing.assert_array_equal(grades, [1, 1, 1, 0, -1])
    scores = crag_scores(grades)
    # accuracy 3/5, hallucination 1/5, missing 1/5, score 3/5 - 1/5
    assert scores["n"] == 5
    assert scores["accuracy"] == pytest.approx(0.6)
    assert scores["hallucination"] == pytest.approx(0.2)
    assert scores["missing"] == pytest.approx(0.2)
    assert scores["score"] == pytest.approx(0.4)


def test_crag_scores_empty_is_nan(recwarn):
    scores = crag_scores([])
    assert scores["n"] == 0
    assert all(math.isnan(scores[k]) for k in ("accuracy", "hallucination", "missing", "score"))
    assert len(recwarn) == 0


def test_crag_breakdown_by_hand():
    frame = pd.DataFrame({"domain": ["a", "a", "b", "b", "b"],
                          "question_type": ["x", "y", "x", "x", "y"],
                          "grade": [1, -1, 0, 1, 1]})
    tables = crag_breakdown(frame)
    assert set(tables) == {"domain", "question_type"}  # no static_or_dynamic column
    domain = tables["domain"]
    # a: grades 1, -1 -> accuracy 1/2, hallucination 1/2, missing 0, score 0
    # b: grades 0, 1, 1 -> accuracy 2/3, hallucination 0, missing 1/3, score 2/3
    assert domain.loc["a"].to_dict() == pytest.approx(
        {"n": 2, "accuracy": 0.5, "hallucination": 0.5, "missing": 0.0, "score": 0.0})
    assert domain.loc["b"].to_dict() == pytest.approx(
        {"n": 3, "accuracy": 2 / 3, "hallucination": 0.0, "missing": 1 / 3, "score": 2 / 3})
    # x: grades 1, 0, 1; y: grades -1, 1
    assert tables["question_type"].loc["x", "score"] == pytest.approx(2 / 3)
    assert tables["question_type"].loc["y", "score"] == pytest.approx(0.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from([-1, 0, 1])),
                min_size=1, max_size=40))
def test_crag_rates_add_up_and_groups_cover_all(rows):
    frame = pd.DataFrame(rows, columns=["domain", "grade"])
    overall = crag_scores(frame["grade"])
    assert overall["accuracy"] + overall["hallucination"] + overall["missing"] == pytest.approx(1)
    assert -1 <= overall["score"] <= 1
    table = crag_breakdown(frame, by=["domain"])["domain"]
    assert table["n"].sum() == len(rows)  # a missing domain is a group of its own
    weighted = (table["accuracy"] * table["n"]).sum() / len(rows)
    assert weighted == pytest.approx(overall["accuracy"])
