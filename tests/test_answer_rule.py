"""The `grounded` rule (policies/answer_rule.py): fitted with each set weighing the same, its
threshold showing the aimed share of the right answers on average over the sets, its decisions
and reasons, and the shipped file read back with errors naming the field."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ragshield.judging import decide
from ragshield.metrics.stacked import stack_features
from ragshield.policies.answer_rule import (GROUNDED, RULE_FILE, fit_answer_rule,
                                            read_answer_rule)
from ragshield.types import Verdict


def _frame(seed: int = 0) -> pd.DataFrame:
    """Two sets: in both, right answers score higher on both judges; the second is small."""
    rng = np.random.default_rng(seed)
    parts = []
    for name, size, shift in (("big", 400, 0.0), ("small", 60, 0.1)):
        good = rng.random(size) < 0.5
        parts.append(pd.DataFrame({
            "pre_answer": np.clip(0.35 + 0.3 * good + shift + rng.normal(0, 0.15, size), 0, 1),
            "support": np.clip(0.3 + 0.4 * good + rng.normal(0, 0.15, size), 0, 1),
            "good": good, "set": name}))
    return pd.concat(parts, ignore_index=True)


def _verdict(judge: str, score: float | None) -> Verdict:
    return Verdict(judge=judge, keep=None if score is None else score >= 0.5, score=score,
                   rationale="")


def test_fitted_rule_shows_the_aimed_share_of_the_right_answers_on_average_over_sets():
    frame = _frame()
    rule = fit_answer_rule(frame, ("pre_answer", "support"), aim=0.75)
    keep = rule.keep_frame(frame)
    shares = [keep[frame["good"].to_numpy(bool) & (frame["set"] == n).to_numpy()].mean()
              for n in ("big", "small")]
    # each set counts once, whatever its size; the threshold is the highest that keeps the aim
    assert 0.75 <= np.mean(shares) < 0.78
    # both judges carry weight, and the rule withholds far more wrong answers than right
    assert all(c > 0 for c in rule.score.coef)
    wrong = ~frame["good"].to_numpy(bool)
    assert keep[wrong].mean() < 0.35
    assert rule.fitted_on == ("big", "small")


def test_decide_reads_both_scores_and_says_so():
    rule = fit_answer_rule(_frame(), ("pre_answer", "support"))
    good = rule.decide([_verdict("pre_answer", 0.95), _verdict("support", 0.95)])
    bad = rule.decide([_verdict("pre_answer", 0.95), _verdict("support", 0.05)])
    assert good.keep is True and bad.keep is False
    assert good.rule == GROUNDED
    assert "pre_answer 0.95" in bad.reason and "support 0.05" in bad.reason
    assert "under the threshold" in bad.reason
    alone = rule.decide([_verdict("support", 0.95), _verdict("token_prob", 0.1)])
    assert "pre_answer gave no score" in alone.reason
    nothing = rule.decide([_verdict("token_prob", 0.9)])
    assert nothing.keep is None and "gave a score" in nothing.reason


def test_a_short_answer_under_the_floor_is_withheld_whatever_pre_answer_says():
    rule = replace(fit_answer_rule(_frame(), ("pre_answer", "support")), short_floor=0.9)
    short = {"claims": [{"text": "Rollo.", "short_answer": "Rollo", "score": 0.85}]}
    verdicts = [_verdict("pre_answer", 0.95), replace(_verdict("support", 0.85), details=short)]
    withheld = rule.decide(verdicts)
    assert withheld.keep is False
    assert "combine to" in withheld.reason and "short answer is kept only at support 0.90" \
        in withheld.reason
    # the same scores for an answer not read as a short one, and a short one over the floor
    assert rule.decide([_verdict("pre_answer", 0.95), _verdict("support", 0.85)]).keep is True
    over = [_verdict("pre_answer", 0.95), replace(_verdict("support", 0.92), details=short)]
    assert rule.decide(over).keep is True
    frame = pd.DataFrame({"pre_answer": [0.95, 0.95, 0.95], "support": [0.85, 0.85, 0.92],
                          "short": [True, False, True]})
    assert rule.keep_frame(frame).tolist() == [False, True, True]
    assert rule.keep_frame(frame.drop(columns="short")).tolist() == [True, True, True]


def test_a_judge_missing_on_a_few_answers_counts_as_its_mean_but_a_whole_set_keeps_its_flag():
    frame = _frame()
    frame.loc[frame.index[frame["good"]][:1], "support"] = np.nan  # one unreadable answer
    rule = fit_answer_rule(frame, ("pre_answer", "support"))
    assert rule.score.flagged == ()
    # the decision on an answer support cannot score is as if support gave its mean
    unscored = rule.decide([_verdict("pre_answer", 0.8)])
    average = rule.decide([_verdict("pre_answer", 0.8),
                           _verdict("support", frame["support"].mean())])
    assert unscored.keep == average.keep and "support gave no score" in unscored.reason
    frame.loc[frame["set"] == "small", "pre_answer"] = np.nan  # a set without a question
    rule = fit_answer_rule(frame, ("pre_answer", "support"))
    assert rule.score.flagged == (0,)


def test_rule_round_trips_and_bad_files_name_the_field(tmp_path):
    rule = fit_answer_rule(_frame(), ("pre_answer", "support"))
    path = tmp_path / "rule.json"
    path.write_text(json.dumps(rule.to_dict()))
    back = read_answer_rule(path)
    assert back == rule
    body = rule.to_dict()
    body["threshold"] = 2
    path.write_text(json.dumps(body))
    with pytest.raises(ValueError, match="threshold"):
        read_answer_rule(path)
    body = rule.to_dict()
    body["score"]["coef"] = "x"
    path.write_text(json.dumps(body))
    with pytest.raises(ValueError, match=r"score\.coef"):
        read_answer_rule(path)


def test_the_shipped_rule_reads_answerability_and_support():
    rule = read_answer_rule(RULE_FILE)
    assert set(rule.judges) == {"pre_answer", "support"}
    assert 0 < rule.threshold < 1
    assert len(rule.fitted_on) >= 6


def test_the_batch_decisions_agree_with_deciding_one_answer_at_a_time():
    """Browse and the benchmark decide many answers at once (AnswerRule.decisions); the
    Demo, the guard and a run decide one (judging.decide): the same answer gets the same
    decision, unscored (undecided), refused (withheld) and short under the floor included."""
    rule = read_answer_rule()
    cases = [(pre, support, short, refusal)
             for pre in (None, 0.2, 0.6, 0.95) for support in (None, 0.3, 0.7, 0.9)
             for short in (False, True) for refusal in (False, True)]
    kept, decided = rule.decisions(
        stack_features({"pre_answer": [c[0] for c in cases],
                        "support": [c[1] for c in cases]}, {}),
        np.array([c[2] for c in cases]), np.array([c[3] for c in cases]))
    for (pre, support, short, refusal), keep, known in zip(cases, kept, decided):
        read = {"claims": [{"text": "Rollo.", "short_answer": "Rollo", "score": support}]}
        verdicts = [_verdict("pre_answer", pre),
                    replace(_verdict("support", support), details=read if short else {})]
        one = decide(verdicts, rule, refusal=refusal).keep
        assert one == (bool(keep) if known else None), (pre, support, short, refusal)
