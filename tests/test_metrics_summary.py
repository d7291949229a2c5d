"""The metric engine behind the CLI (judge_metrics, the verdict table check), the bootstrap
and the ground-truth labels (METHODS 3, 5)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragshield.metrics.bootstrap import percentile_interval, resampled_counts
from ragshield.metrics.labels import (
    awf_truth,
    majority_label,
    passages_support,
    reference_in_passages,
)
from ragshield.metrics.summary import (
    CI_METRICS,
    VerdictTableError,
    judge_metrics,
    validate_verdict_table,
)

T, F = True, False
METRIC_KEYS = ["n", "counts", "risk", "carefulness", "alignment", "coverage", "precision",
               "recall", "f1", "max_f1", "max_f1_threshold", "pr_auc", "qpp_precision",
               "qpp_recall", "qpp_f1", "qpp_pr_auc", "aurc", "ci"]

# -- ground-truth labels -----------------------------------------------------------------


@pytest.mark.parametrize(("human", "flag", "reference", "expected"), [
    ("answerable", False, False, True),  # the human label wins
    ("unanswerable", True, True, False),
    ("unsure", True, False, True),  # no human say: the dataset flag
    (None, False, True, False),
    (None, None, True, True),  # neither: the reference check
    ("unsure", None, False, False),
])
def test_passages_support_source_order(human, flag, reference, expected):
    assert passages_support(human, flag, reference) is expected


def test_passages_support_rejects_unknown_labels():
    with pytest.raises(ValueError, match="maybe"):
        passages_support("maybe", None, True)


def test_reference_in_passages():
    passages = ["The prize went to Marie Curie in 1903.", "Nothing here."]
    assert reference_in_passages(["marie curie!"], passages)  # normalised both sides
    assert reference_in_passages(["Pierre", "The Marie Curie"], passages)
    assert not reference_in_passages(["Curies"], passages)
    assert not reference_in_passages(["903"], passages)  # word boundaries
    assert not reference_in_passages([], passages)
    assert not reference_in_passages(["Curie"], [])


def test_awf_truth():
    np.testing.assert_array_equal(awf_truth([T, T, F, F], [T, F, T, F]), [T, F, F, F])
    assert awf_truth(True, True) is True
    assert awf_truth(True, False) is False


@pytest.mark.parametrize(("labels", "expected"), [
    (["answerable", "answerable", "unanswerable"], "answerable"),
    (["unanswerable", "unsure", "unsure"], "unanswerable"),  # unsure votes ignored
    (["answerable", "unanswerable"], None),  # tie
    (["unsure", None], None),  # no vote
    ([], None),
])
def test_majority_label(labels, expected):
    assert majority_label(labels) == expected


def test_majority_label_rejects_unknown_labels():
    with pytest.raises(ValueError):
        majority_label(["answerable", "yes"])


# -- bootstrap ---------------------------------------------------------------------------

def test_percentile_interval_linear_like_numpy():
    values = np.arange(101, dtype=float)  # 0 .. 100
    assert percentile_interval(values) == (pytest.approx(2.5), pytest.approx(97.5))
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(500, 3))
    lo, hi = percentile_interval(matrix, 0.9)
    np.testing.assert_allclose(lo, np.percentile(matrix, 5, axis=0))
    np.testing.assert_allclose(hi, np.percentile(matrix, 95, axis=0))


def test_percentile_interval_drops_undefined_resamples(recwarn):
    with_nan = np.append(np.arange(101, dtype=float), [np.nan] * 50)
    lo, hi = percentile_interval(with_nan)
    assert (lo, hi) == (pytest.approx(2.5), pytest.approx(97.5))
    lo, hi = percentile_interval(np.full(10, np.nan))
    assert np.isnan(lo) and np.isnan(hi)
    assert len(recwarn) == 0


def test_resampled_counts_behave_like_a_bootstrap():
    rng = np.random.default_rng(1)
    n, p = 1000, 0.3
    column = rng.random(n) < p
    indicators = np.column_stack([column, column, np.ones(n, bool), np.zeros(n, bool)])
    counts = resampled_counts(indicators, n_resamples=2000, seed=5)
    assert counts.shape == (2000, 4)
    np.testing.assert_array_equal(counts[:, 0], counts[:, 1])  # paired: same resamples
    assert np.all(counts[:, 2] == n)  # every resample has n samples
    assert np.all(counts[:, 3] == 0)
    # a resampled sum of n Bernoulli(p_hat) draws: mean n * p_hat, sd sqrt(n p_hat (1 - p_hat))
    p_hat = column.mean()
    assert counts[:, 0].mean() == pytest.approx(n * p_hat, rel=0.01)
    assert counts[:, 0].std() == pytest.approx(math.sqrt(n * p_hat * (1 - p_hat)), rel=0.1)


def test_resampled_counts_are_seeded():
    indicators = np.random.default_rng(2).random((300, 2)) < 0.5
    first = resampled_counts(indicators, 50, seed=11)
    np.testing.assert_array_equal(first, resampled_counts(indicators, 50, seed=11))
    assert not np.array_equal(first, resampled_counts(indicators, 50, seed=12))
    assert resampled_counts(np.zeros((0, 3), bool), 4).tolist() == [[0, 0, 0]] * 4


# -- judge_metrics on a hand-computed table ----------------------------------------------

CORRECT = [T, T, F, F, T, F]  # J for samples s1 .. s6
SUPPORT = [T, F, T, F, T, T]  # F-Answerable; V = J & support = s1, s5
JUDGES = {
    # name: (keep, score)
    "hard": ([T, T, T, F, F, F], [None] * 6),
    "scored": ([T, F, T, F, T, None], [0.9, 0.4, 0.6, 0.2, 0.8, None]),
    "never": ([F] * 6, [None] * 6),
    "broken": ([None] * 6, [None] * 6),
}


def hand_rows() -> list[dict]:
    return [{"sample_id": f"s{i + 1}", "judge": judge, "keep": keep[i], "score": score[i],
             "answer_correct": CORRECT[i], "passages_support": SUPPORT[i]}
            for i in range(6) for judge, (keep, score) in JUDGES.items()]


@pytest.fixture(scope="module")
def hand_metrics() -> dict:
    return judge_metrics(validate_verdict_table(hand_rows()), n_resamples=0)


def test_output_shape(hand_metrics):
    assert list(hand_metrics) == list(JUDGES)
    for metrics in hand_metrics.values():
        assert list(metrics) == METRIC_KEYS
        assert metrics["ci"] == {}
    json.dumps(hand_metrics, allow_nan=False)  # NaN came out as null


def test_hard_judge_by_hand(hand_metrics):
    m = hand_metrics["hard"]
    # keep s1 s2 s3; J = T T F F T F -> AK s1 s2, AD s5, UK s3, UD s4 s6
    assert m["n"] == 6
    assert m["counts"] == {"AK": 2, "AD": 1, "UK": 1, "UD": 2}
    assert m["risk"] == pytest.approx(1 / 3)  # 1 / (2 + 1)
    assert m["carefulness"] == pytest.approx(2 / 3)  # 2 / (1 + 2)
    assert m["alignment"] == pytest.approx(4 / 6)
    assert m["coverage"] == pytest.approx(3 / 6)
    # TP = keep & V = s1; precision 1/3; recall 1 / F-Answerable 4; F1 2/7
    assert m["precision"] == pytest.approx(1 / 3)
    assert m["recall"] == pytest.approx(1 / 4)
    assert m["f1"] == pytest.approx(2 / 7)
    # hard judge: max F1 is its F1 (no threshold), PR-AUC = precision x recall, no AURC
    assert m["max_f1"] == pytest.approx(2 / 7) and m["max_f1_threshold"] is None
    assert m["pr_auc"] == pytest.approx(1 / 12)
    assert m["aurc"] is None
    # QPP: keep & support = s1 s3 -> precision 2/3, recall 2/4, F1 4/7
    assert m["qpp_precision"] == pytest.approx(2 / 3)
    assert m["qpp_recall"] == pytest.approx(1 / 2)
    assert m["qpp_f1"] == pytest.approx(4 / 7)


def test_scored_judge_by_hand(hand_metrics):
    m = hand_metrics["scored"]
    # s6 has a null keep: left out, n = 5. keep s1 s3 s5; J over s1..s5 = T T F F T
    assert m["n"] == 5
    assert m["counts"] == {"AK": 2, "AD": 1, "UK": 1, "UD": 1}
    assert m["risk"] == pytest.approx(1 / 3)
    assert m["carefulness"] == pytest.approx(1 / 2)
    assert m["alignment"] == pytest.approx(3 / 5)
    assert m["coverage"] == pytest.approx(3 / 5)
    # support over s1..s5 = T F T F T (3); V = s1 s5; TP = 2 -> P 2/3, R 2/3
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    # sweep by score: s1 .9 (V), s5 .8 (V), s3 .6, s2 .4, s4 .2
    # F1: t=.9 P1 R1/3 -> 1/2; t=.8 P1 R2/3 -> 4/5; t=.6 2/3; t=.4 4/7; t=.2 1/2
    assert m["max_f1"] == pytest.approx(4 / 5) and m["max_f1_threshold"] == 0.8
    # area: 1/3 * 1 + 1/3 * 1 + 0 (recall flat afterwards)
    assert m["pr_auc"] == pytest.approx(2 / 3)
    # risk-coverage with J (s1 T, s5 T, s3 F, s2 T, s4 F): risks 0, 0, 1/3, 1/4, 2/5 at
    # coverage steps of 1/5: AURC = (0 + 0 + 1/3 + 1/4 + 2/5) / 5 = 59/300
    assert m["aurc"] == pytest.approx(59 / 300)
    # QPP: keep & support = s1 s3 s5 = all 3 supported -> 1, 1, 1
    assert (m["qpp_precision"], m["qpp_recall"], m["qpp_f1"]) == (1.0, 1.0, 1.0)
    # QPP PR-AUC: support by score s1 .9 T, s5 .8 T, s3 .6 T, s2 .4 F, s4 .2 F: the three
    # supported first, each adding recall 1/3 at precision 1 -> 1
    assert m["qpp_pr_auc"] == pytest.approx(1.0)


def test_undefined_metrics_are_none(hand_metrics):
    never = hand_metrics["never"]
    # nothing kept: AK = UK = 0 -> risk 0/0; precision 0/0 and so F1; PR-AUC NaN x 0
    assert never["counts"] == {"AK": 0, "AD": 3, "UK": 0, "UD": 3}
    for name in ("risk", "precision", "f1", "max_f1", "pr_auc", "qpp_precision", "qpp_f1"):
        assert never[name] is None, name
    assert never["carefulness"] == 1.0 and never["coverage"] == 0.0
    assert never["recall"] == 0.0 and never["alignment"] == 0.5
    broken = hand_metrics["broken"]  # unavailable on every sample
    assert broken["n"] == 0
    assert broken["counts"] == {"AK": 0, "AD": 0, "UK": 0, "UD": 0}
    assert all(broken[name] is None for name in METRIC_KEYS[2:-1])


def test_confidence_intervals_on_the_hand_table():
    table = validate_verdict_table(hand_rows())
    metrics = judge_metrics(table, n_resamples=300, seed=1)
    assert set(metrics["hard"]["ci"]) == set(CI_METRICS)
    assert metrics == judge_metrics(table, n_resamples=300, seed=1)  # seeded
    assert metrics["never"]["ci"]["risk"] == [None, None]  # 0/0 in every resample
    assert metrics["never"]["ci"]["coverage"] == [0.0, 0.0]
    json.dumps(metrics, allow_nan=False)


def test_judge_metrics_names_missing_columns():
    table = validate_verdict_table(hand_rows()).drop(columns=["passages_support"])
    with pytest.raises(VerdictTableError, match="passages_support") as error:
        judge_metrics(table)
    assert error.value.field == "passages_support"


def random_table(draw_rows: list[tuple], judges: int) -> pd.DataFrame:
    rows = []
    for i, (correct, support, *verdicts) in enumerate(draw_rows):
        for j in range(judges):
            keep, score = verdicts[j]
            rows.append({"sample_id": i, "judge": f"j{j}", "keep": keep, "score": score,
                         "answer_correct": correct, "passages_support": support})
    return validate_verdict_table(rows)


verdict = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 4).map(lambda s: s / 4)))
sample_rows = st.lists(st.tuples(st.booleans(), st.booleans(), verdict, verdict),
                       min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(sample_rows)
def test_metrics_are_bounded_and_json(rows):
    metrics = judge_metrics(random_table(rows, 2), n_resamples=20)
    json.dumps(metrics, allow_nan=False)
    for judge in metrics.values():
        assert sum(judge["counts"].values()) == judge["n"] == len(rows)
        for name in METRIC_KEYS[2:-1]:
            value = judge[name]
            if name != "max_f1_threshold":
                assert value is None or 0.0 <= value <= 1.0 + 1e-12, name
        for lo, hi in judge["ci"].values():
            assert (lo is None) == (hi is None)
            assert lo is None or 0.0 <= lo <= hi <= 1.0 + 1e-12


@settings(max_examples=25, deadline=None)
@given(st.integers(60, 300), st.floats(0.2, 0.8), st.floats(0.2, 0.8), st.integers(0, 10**6))
def test_ci_contains_the_point_estimate(n, p_correct, p_keep, seed):
    rng = np.random.default_rng(seed)
    correct = rng.random(n) < p_correct
    support = correct | (rng.random(n) < 0.5)
    keep = np.where(correct, rng.random(n) < 0.9, rng.random(n) < p_keep)
    table = pd.DataFrame({"sample_id": np.arange(n), "judge": "j", "keep": keep,
                          "score": np.nan, "answer_correct": correct,
                          "passages_support": support})
    metrics = judge_metrics(table, n_resamples=400, seed=seed)["j"]
    for name, (lo, hi) in metrics["ci"].items():
        point = metrics[name]
        if point is not None and lo is not None:
            assert lo - 1e-9 <= point <= hi + 1e-9, name


# -- verdict table validation ------------------------------------------------------------

def good_row(**changes) -> dict:
    row = {"sample_id": "q1", "judge": "nli", "keep": True, "score": 0.7,
           "answer_correct": True, "passages_support": False}
    return row | changes


def test_validate_builds_a_typed_table():
    table = validate_verdict_table([good_row(), good_row(sample_id=2, keep=None, score=None)])
    assert list(table.columns) == ["sample_id", "judge", "keep", "score", "answer_correct",
                                   "passages_support"]
    assert table["keep"].isna().tolist() == [False, True]
    assert np.isnan(table["score"].iloc[1])
    assert table["answer_correct"].dtype == bool


@pytest.mark.parametrize(("bad", "field"), [
    ({"keep": "yes"}, "keep"),
    ({"keep": 1}, "keep"),
    ({"score": "high"}, "score"),
    ({"score": True}, "score"),
    ({"answer_correct": 1}, "answer_correct"),
    ({"answer_correct": None}, "answer_correct"),
    ({"passages_support": "true"}, "passages_support"),
    ({"sample_id": 1.5}, "sample_id"),
    ({"sample_id": None}, "sample_id"),
    ({"judge": ""}, "judge"),
    ({"judge": 3}, "judge"),
])
def test_validate_names_line_and_field_of_a_wrong_type(bad, field):
    rows = [good_row(sample_id="q0"), good_row(sample_id="q1"), good_row(sample_id="q2") | bad]
    with pytest.raises(VerdictTableError) as error:
        validate_verdict_table(rows)
    assert (error.value.line, error.value.field) == (3, field)
    assert "line 3" in str(error.value) and field in str(error.value)


def test_validate_names_a_missing_field():
    row = good_row()
    del row["score"]
    with pytest.raises(VerdictTableError, match="line 2: missing field 'score'") as error:
        validate_verdict_table([good_row(sample_id="q0"), row])
    assert error.value.field == "score"


def test_validate_rejects_repeated_verdicts_and_non_objects():
    with pytest.raises(VerdictTableError, match="line 2.*first on line 1"):
        validate_verdict_table([good_row(), good_row()])
    with pytest.raises(VerdictTableError, match="line 1"):
        validate_verdict_table([["q1", "nli"]])


def test_an_integer_id_and_its_text_name_one_sample():
    with pytest.raises(VerdictTableError, match="line 2: sample '1' judged twice"):
        validate_verdict_table([good_row(sample_id=1), good_row(sample_id="1")])
    table = validate_verdict_table([good_row(sample_id=7), good_row(sample_id="7", judge="p")])
    assert table["sample_id"].tolist() == ["7", "7"]


def test_qpp_pr_auc_ranks_the_score_against_support_alone():
    table = pd.DataFrame({
        "sample_id": ["a", "b", "c", "d"], "judge": "j", "keep": True,
        "score": [0.9, 0.8, 0.7, 0.6], "answer_correct": False,
        "passages_support": [True, False, True, False]})
    m = judge_metrics(table, n_resamples=0)["j"]
    # support by score: T F T F -> recall steps 1/2 at precision 1 and 1/2 at 2/3
    assert m["qpp_pr_auc"] == pytest.approx(1 / 2 + 1 / 3)
    assert m["pr_auc"] == 0.0  # no answer is right: AwF has nothing to find


def test_the_decision_view_counts_what_is_shown_and_says_it_plainly():
    from ragshield.metrics.decision_view import in_plain_words, one_in, shown_answers

    keep = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=bool)
    good = np.array([1, 1, 1, 1, 0, 1, 0, 0, 0, 0], dtype=bool)
    shield = shown_answers(keep, good)
    assert (shield.shown, shield.wrong_shown, shield.right_shown) == (0.5, 0.2, 0.8)
    every = shown_answers(np.ones(10, dtype=bool), good)
    assert every.wrong_shown == 0.5
    assert in_plain_words(shield, every) == ("with the shield: 50% of answers shown, 1 in 5 "
                                             "of them wrong; without it: all shown, 1 in 2 wrong")
    assert [one_in(x) for x in (0.0, 0.7, 0.705, 0.33, 1.0, 0.04, 0.96)] == [
        "none", "7 in 10", "7 in 10", "1 in 3", "all", "fewer than 1 in 10",
        "more than 9 in 10"]
    nothing = shown_answers(np.zeros(10, dtype=bool), good)
    assert np.isnan(nothing.wrong_shown)
    assert in_plain_words(nothing, every).startswith("with the shield: no answer shown")


def test_aurc_ranks_unscored_samples_last():
    """Left out, unscored samples shrank the area: a judge scoring one sample in ten of an
    uninformative score looked ten times better (0.05 against 0.5)."""
    rng = np.random.default_rng(0)
    n = 1000
    correct = rng.random(n) < 0.5
    score = rng.random(n)
    sparse = np.where(rng.random(n) < 0.9, np.nan, score)
    table = pd.DataFrame({"sample_id": np.arange(n).repeat(2), "judge": ["full", "sparse"] * n,
                          "keep": True, "score": np.column_stack([score, sparse]).ravel(),
                          "answer_correct": correct.repeat(2), "passages_support": True})
    metrics = judge_metrics(table, n_resamples=0)
    assert metrics["sparse"]["aurc"] == pytest.approx(metrics["full"]["aurc"], abs=0.03)


def test_what_people_see_leaves_refusals_out_of_the_answers_shown():
    """"I don't know" shows no answer: it counted as a wrong answer shown, which inflated
    keep-all's wrong share and credited a judge for hiding it."""
    from ragshield.evaluation import RunTables
    from ragshield.services.runs.decision_view import KEEP_ALL_ROW, decision_picture

    samples = pd.DataFrame({"sample_id": ["a", "b", "c", "d"],
                            "answer_correct": [True, False, False, False],
                            "passages_support": True,
                            "refusal": [False, False, True, True]})
    verdicts = pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "judge": "j",
                             "keep": pd.array([True, True, False, True], dtype="boolean"),
                             "score": np.nan, "answer_correct": samples["answer_correct"],
                             "passages_support": True})
    tables = RunTables(run_id=1, truth="auto", config={"rule": "j", "judges": ["j"]},
                       samples=samples, verdicts=verdicts)
    rows = {row[0]: row[1:] for row in decision_picture(tables, {}).table.rows}
    assert rows[KEEP_ALL_ROW] == ["50%", "50%", "100%"]  # a and b shown, b wrong
    assert rows["j"] == ["50%", "50%", "100%"]  # d's refusal is kept by j, but shows nothing
