"""The statistics of fitted policies (ragshield.policies.risk_control): p-values and
thresholds against hand-computed ones, refusals, and the promise itself checked by
simulation against the uncorrected per-threshold bound it replaces."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ragshield.metrics.sweep import threshold_sweep
from ragshield.metrics.thresholds import clopper_pearson_upper, risk_controlled_threshold
from ragshield.policies.fitting import REFERENCE, LabelledScores, fit_policy
from ragshield.policies.risk_control import (PolicyFitError, binomial_p_values, clopper_pearson,
                                             fit_thresholds, fixed_sequence, labels_needed,
                                             min_trials)

# Eight answers, scores 8 (best) .. 1; good, good, good, bad, good, bad, bad, bad.
SCORES = np.arange(8, 0, -1, dtype=float)
GOOD = np.array([1, 1, 1, 0, 1, 0, 0, 0], dtype=bool)


def test_min_trials_is_the_smallest_set_that_can_pass_with_no_error():
    # (1 - 0.5)^n <= 0.2 first at n = 3 (0.125); (0.9)^n <= 0.05 first at n = 29 (0.047)
    assert min_trials(0.5, 0.2) == 3
    assert min_trials(0.1, 0.05) == 29
    assert 0.9 ** 28 > 0.05 >= 0.9 ** 29


def test_binomial_p_values_match_hand_computed_binomial_tails():
    # P(Bin(3, .5) <= 0) = 1/8; P(Bin(4, .5) <= 1) = 5/16; P(Bin(5, .5) <= 1) = 6/32;
    # P(Bin(6, .5) <= 2) = 22/64
    assert binomial_p_values([0, 1, 1, 2], [3, 4, 5, 6], 0.5) == pytest.approx(
        [1 / 8, 5 / 16, 6 / 32, 22 / 64])


def test_fixed_sequence_stops_at_the_first_failure():
    assert fixed_sequence([0.01, 0.02, 0.3, 0.01], 0.05) == 2
    assert fixed_sequence([0.3, 0.01], 0.05) == 0
    assert fixed_sequence([0.01, 0.02], 0.05) == 2


def test_answer_threshold_on_a_hand_worked_table():
    # alpha .5, delta .2: sets smaller than 3 cannot pass. Top 3 (score >= 6): 0 bad,
    # p = 1/8 <= .2, certified. Top 4: 1 bad, p = 5/16 > .2: the sequence stops there, so
    # the top 5 (1 bad, p = 6/32, which would pass alone) is never certified.
    fitted = fit_thresholds(SCORES, GOOD, alpha=0.5, delta=0.2, starts=1)
    assert fitted.answer_at == 6
    assert fitted.withhold_below == 6  # no beta: everything not answered is withheld
    assert (fitted.certified, fitted.tested) == (1, 2)
    assert fitted.p_value == pytest.approx(1 / 8)


def test_withhold_threshold_with_beta_leaves_a_band_to_defer():
    # With beta, delta .4 is split: .2 for each side. Withheld from the bottom: scores
    # <= 3 hold 0 good (p = 1/8, certified); <= 4 hold 1 good of 4 (p = 5/16): stop.
    fitted = fit_thresholds(SCORES, GOOD, alpha=0.5, delta=0.4, beta=0.5, starts=1)
    assert fitted.answer_at == 6
    assert 3 < fitted.withhold_below <= 3 + 1e-9  # withhold exactly the scores <= 3
    data = LabelledScores(np.array([f"s{i}" for i in range(8)]), SCORES, GOOD,
                          np.full(8, REFERENCE))
    policy = fit_policy("band", "judge", data, alpha=0.5, delta=0.4, beta=0.5, starts=1)
    c = policy.calibration
    assert (c.answered, c.withheld, c.deferred) == (3, 3, 2)  # scores 5 and 4 deferred
    assert (c.bad_answered, c.good_withheld, c.risk) == (0, 0, 0.0)
    assert [policy.outcome(s) for s in (6, 5.5, 4, 3, float("nan"))] == [
        "answer", "defer", "defer", "withhold", "defer"]


def test_too_few_labels_are_refused_saying_how_many_are_needed():
    with pytest.raises(PolicyFitError, match="needs at least 29 labelled samples.*got 20"):
        fit_thresholds(np.linspace(0, 1, 20), np.arange(20) % 2 == 0, alpha=0.1, delta=0.05,
                       starts=1)
    # Two sequences test each at delta / 2: 0.9^n <= 0.025 first at n = 36.
    with pytest.raises(PolicyFitError, match=r"needs at least 36 labelled samples with a "
                                             r"score \(2 test sequences at 0.025 each\)"):
        fit_thresholds(np.linspace(0, 1, 20), np.arange(20) % 2 == 0, alpha=0.1, delta=0.05,
                       starts=2)


def test_one_class_and_out_of_range_settings_are_refused():
    with pytest.raises(PolicyFitError, match="every one of the 50 labelled answers is good"):
        fit_thresholds(np.linspace(0, 1, 50), np.ones(50, dtype=bool), 0.1, 0.1)
    with pytest.raises(PolicyFitError, match="alpha must lie strictly between 0 and 1"):
        fit_thresholds(SCORES, GOOD, alpha=1.5, delta=0.1)


def test_no_certifiable_threshold_is_refused_with_the_strictest_candidate():
    scores = np.linspace(1, 0, 100)
    good = np.arange(100) % 2 == 0  # half bad everywhere
    with pytest.raises(PolicyFitError, match=r"no threshold certifies risk <= 0.1.*"
                                             r"29 answers\) has 14 bad"):
        fit_thresholds(scores, good, alpha=0.1, delta=0.05, starts=1)


def test_a_failed_fit_says_how_many_labels_would_certify_at_the_current_error_rate():
    # The top 30 of 40 answers hold one bad one (3.3%), the rest are bad. At alpha .1 and
    # delta .1 no set passes: 30 answers with 1 bad give p = P(Binomial(30, .1) <= 1) = 0.18.
    scores = np.linspace(1, 0, 40)
    good = np.arange(40) < 30
    good[1] = False
    with pytest.raises(PolicyFitError, match=r"about (\d+) labels in all \((\d+) more\) "
                                             r"would certify score >= ") as failure:
        fit_thresholds(scores, good, alpha=0.1, delta=0.1)
    total, more = map(int, re.search(r"about (\d+) labels in all \((\d+) more",
                                     str(failure.value)).groups())
    assert total == more + 40 and more > 0


def test_labels_needed_is_the_smallest_size_that_passes_at_the_same_rates():
    total, index = labels_needed(np.array([30]), np.array([1]), 40, 0.1, 0.1)
    assert index == 0
    answered = math.ceil(total * 30 / 40)  # 3/4 answered, 1 in 30 of them bad
    assert binomial_p_values(math.floor(answered / 30), answered, 0.1) <= 0.1
    fewer = math.ceil((total - 2) * 30 / 40)
    assert binomial_p_values(math.floor(fewer / 30), fewer, 0.1) > 0.1
    assert labels_needed(np.array([30]), np.array([3]), 40, 0.1, 0.1) is None  # rate = alpha


def test_a_failed_fit_with_every_rate_above_alpha_says_labels_will_not_help():
    scores = np.linspace(1, 0, 100)
    good = np.arange(100) % 3 != 0  # a third bad everywhere
    with pytest.raises(PolicyFitError, match="more labels at this error rate will not"):
        fit_thresholds(scores, good, alpha=0.2, delta=0.1)


def test_multi_start_certifies_past_an_early_unlucky_failure():
    # The two strictest answers hold one bad one: a single sequence fails at once; a second
    # start further down certifies a looser threshold with the remaining delta.
    scores = np.arange(200, 0, -1, dtype=float)
    good = np.ones(200, dtype=bool)
    good[[0, 1, 2, 5]] = False
    good[150:] = False
    with pytest.raises(PolicyFitError, match="the test stops at the first stricter"):
        fit_thresholds(scores, good, alpha=0.1, delta=0.2, starts=1)
    fitted = fit_thresholds(scores, good, alpha=0.1, delta=0.2, starts=2)
    assert fitted.certified > 0 and fitted.answer_at < 200


def test_a_refusal_is_never_answered():
    # -inf marks a refusal: no threshold answers it. Answering all 43 (4 bad) would pass
    # the test too (p = 0.04), so only the rule keeps the answer threshold a real score.
    scores = np.concatenate([np.linspace(1, 0.5, 40), np.full(3, -np.inf)])
    good = np.concatenate([np.ones(40, dtype=bool), np.zeros(3, dtype=bool)])
    good[39] = False
    assert binomial_p_values(4, 43, 0.2) < 0.1
    fitted = fit_thresholds(scores, good, alpha=0.2, delta=0.1)
    assert fitted.answer_at == 0.5
    data = LabelledScores(np.array([f"s{i}" for i in range(43)]), scores, good,
                          np.full(43, REFERENCE))
    c = fit_policy("r", "judge", data, alpha=0.2, delta=0.1).calibration
    assert (c.labels, c.answered, c.withheld) == (43, 40, 3)


def test_unscored_samples_are_left_out_and_deferred():
    scores = np.concatenate([SCORES, [np.nan, np.nan]])
    good = np.concatenate([GOOD, [False, False]])
    data = LabelledScores(np.array([f"s{i}" for i in range(10)]), scores, good,
                          np.full(10, REFERENCE))
    policy = fit_policy("p", "judge", data, alpha=0.5, delta=0.2, starts=1)
    assert policy.answer_at == 6 and policy.fitted_on.unscored == 2
    assert policy.calibration.labels == 8


def test_clopper_pearson_interval_hand_values():
    assert clopper_pearson(0, 10)[0] == 0.0
    assert clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025 ** (1 / 10))
    assert clopper_pearson(10, 10) == (pytest.approx(0.025 ** (1 / 10)), 1.0)
    assert all(math.isnan(x) for x in clopper_pearson(0, 0))


# ---------------------------------------------------------------------------- the promise

ALPHA, DELTA, N, DRAWS = 0.1, 0.1, 400, 2000
# Monte Carlo allowance: three standard errors of a share near delta over DRAWS draws.
ALLOWANCE = 3 * math.sqrt(DELTA * (1 - DELTA) / DRAWS)


def _uncorrected(scores: np.ndarray, good: np.ndarray) -> float | None:
    """The loosest threshold whose own Clopper-Pearson bound is <= ALPHA anywhere in the
    sweep: the search the reports made before it was corrected."""
    sweep = threshold_sweep(scores, good)
    upper = clopper_pearson_upper(sweep.kept - sweep.sums[0], sweep.kept, 1 - DELTA)
    passing = np.flatnonzero(upper <= ALPHA)
    return float(sweep.thresholds[passing[-1]]) if passing.size else None


def _violations(true_risk, bad_rate, seed: int) -> tuple[float, float, float, int]:
    """Over DRAWS calibration sets of N uniform scores: the share of fitted policies whose
    true answered risk exceeds ALPHA, the same for the reports' risk-controlled threshold
    and for the uncorrected search, and how many fits were refused."""
    rng = np.random.default_rng(seed)
    fitted_bad = report_bad = naive_bad = refused = 0
    for _ in range(DRAWS):
        scores = rng.random(N)
        good = rng.random(N) >= bad_rate(scores)
        try:
            fitted_bad += true_risk(fit_thresholds(scores, good, ALPHA, DELTA).answer_at) > ALPHA
        except PolicyFitError:
            refused += 1
        report = risk_controlled_threshold(scores, good, ALPHA, DELTA).threshold
        report_bad += report is not None and true_risk(report) > ALPHA
        naive = _uncorrected(scores, good)
        naive_bad += naive is not None and true_risk(naive) > ALPHA
    return fitted_bad / DRAWS, report_bad / DRAWS, naive_bad / DRAWS, refused


@pytest.mark.usefixtures("long_computation")
def test_the_promise_holds_where_the_uncorrected_bound_breaks_it():
    # A score that tells nothing, and every answer wrong 11% of the time: every threshold's
    # risk is 0.11 > alpha, so any threshold chosen breaks the promise. Learn-then-Test (the
    # policies) and the reports' fixed-sequence test keep that below delta; the best of many
    # per-threshold Clopper-Pearson bounds does not.
    fitted, report, naive, _ = _violations(lambda t: 0.11, lambda s: np.full_like(s, 0.11),
                                           seed=1)
    assert fitted <= DELTA + ALLOWANCE and report <= DELTA + ALLOWANCE
    assert naive > DELTA + ALLOWANCE


@pytest.mark.usefixtures("long_computation")
def test_the_promise_holds_for_an_informative_score():
    # P(bad | s) = 0.6 (1 - s), so the risk of answering s >= t is 0.3 (1 - t): alpha is
    # reached at t = 2/3. Most fits succeed, and few overshoot.
    fitted, report, _, refused = _violations(lambda t: 0.3 * (1 - t), lambda s: 0.6 * (1 - s),
                                             seed=2)
    assert fitted <= DELTA + ALLOWANCE and report <= DELTA + ALLOWANCE
    assert refused < DRAWS / 2


@pytest.mark.usefixtures("long_computation")
def test_both_promises_hold_together_with_beta():
    rng = np.random.default_rng(3)
    beta, broken = 0.5, 0
    for _ in range(DRAWS):
        scores = rng.random(N)
        good = rng.random(N) >= 0.6 * (1 - scores)
        try:
            fitted = fit_thresholds(scores, good, ALPHA, DELTA, beta=beta)
        except PolicyFitError:
            continue
        # good share among s < t_lo: mean of 1 - 0.6 (1 - s) = 0.4 + 0.3 t over [0, t)
        t_lo = fitted.withhold_below
        kept_good = t_lo is not None and t_lo > 0 and 0.4 + 0.3 * t_lo > beta
        broken += (0.3 * (1 - fitted.answer_at) > ALPHA) or kept_good
    assert broken / DRAWS <= DELTA + ALLOWANCE


def test_a_policy_that_answers_everything_is_stored_and_read_back():
    """The loosest threshold certified (a good judge's usual case): its count of tested
    thresholds was a numpy integer that JSON, the store and from_dict refused."""
    import json

    from ragshield.policies.policy import Policy

    rng = np.random.default_rng(0)
    n = 300
    data = LabelledScores(np.array([str(i) for i in range(n)]), rng.random(n),
                          rng.random(n) > 0.04, np.full(n, REFERENCE))
    policy = fit_policy("p", "p_true", data, alpha=0.1, delta=0.1)
    assert type(policy.tested) is int and 0 < policy.tested <= n  # each counted once
    assert Policy.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy


def test_no_scored_label_is_said_plainly():
    with pytest.raises(PolicyFitError, match="no labelled sample has a score"):
        fit_thresholds(np.full(30, np.nan), np.arange(30) % 2 == 0, alpha=0.1, delta=0.05)
    with pytest.raises(PolicyFitError, match="no labelled sample has a score"):
        fit_thresholds(np.array([]), np.array([], dtype=bool), alpha=0.1, delta=0.05)


def test_a_stacked_score_leaves_out_an_unavailable_judge_and_defers_when_all_fail():
    """A judge with no value on any training row (nli without a model) broke the stored
    score; a sample whose judges all failed got the training means: a confident answer."""
    import pandas as pd

    from ragshield.policies.stacked_score import (read_stacked, run_features,
                                                  train_stacked_score)
    from ragshield.types import Verdict

    rng = np.random.default_rng(0)
    n = 80
    good = rng.random(n) < 0.5
    ids = [f"s{i}" for i in range(n)]
    scores = np.clip(0.3 + 0.4 * good + rng.normal(0, 0.2, n), 0, 1)
    rows = [row for i in range(n) for row in (
        {"sample_id": ids[i], "judge": "p_true", "keep": scores[i] >= 0.5, "score": scores[i]},
        {"sample_id": ids[i], "judge": "nli", "keep": None, "score": None})]
    verdicts = pd.DataFrame(rows).astype({"keep": "boolean"})
    features = run_features(verdicts, pd.Series(ids))
    stacked = train_stacked_score(features, good)
    assert stacked.judges == ["p_true"]
    read_stacked(stacked.to_dict(), "policy.stacker")  # it fits together
    assert np.isfinite(stacked.score_frame(features)).all()
    failed = Verdict(judge="p_true", keep=None, score=None, error="backend timeout")
    assert stacked.score_verdicts([failed]) is None
    assert np.isnan(stacked.score_frame(features.iloc[:1] * np.nan)).all()


def test_a_refusal_is_withheld_at_ask_time_as_when_fitting():
    """Fitting counts a refusal as withheld; deciding by its raw score answered a refusal a
    judge scored high, and the withheld side's share of good answers broke beta."""
    from ragshield.judging import decide
    from ragshield.types import Verdict

    data = LabelledScores(np.array([f"s{i}" for i in range(8)]), SCORES, GOOD,
                          np.full(8, REFERENCE))
    policy = fit_policy("p", "judge", data, alpha=0.5, delta=0.2, starts=1)
    sure = [Verdict(judge="judge", keep=True, score=8.0)]
    assert decide(sure, policy).keep is True
    refused = decide(sure, policy, refusal=True)
    assert refused.keep is False and not refused.deferred and "refusal" in refused.reason
