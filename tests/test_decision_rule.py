"""The decision rule as one typed value (decision_rule.py): a rule's text parsed into its
kind, a stored run's rule read back, a policy deciding a run as it decides one answer, and the
faces' text read into an ask's typed choices."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ragshield.config import GROUNDED_JUDGES, Settings
from ragshield.decision_rule import (DEFERRED, JudgeRule, PolicyRule, Pooled, ShippedRule,
                                     named_judges, parse_rule_text)
from ragshield.errors import OptionError
from ragshield.judging import decide
from ragshield.policies.policy import Policy, config_rule
from ragshield.services.questions.settlement import AskInputError, one_of
from ragshield.services.runs.runs import form_defaults
from ragshield.types import Verdict


@pytest.mark.parametrize("text, kind, judges", [
    ("majority", Pooled("majority"), ()),
    ("all", Pooled("all"), ()),
    ("grounded", ShippedRule(), GROUNDED_JUDGES),
    ("p_true", JudgeRule("p_true"), ("p_true",)),
    ("policy:guard", PolicyRule("guard", None), ()),
    ("policy:guard@3", PolicyRule("guard", 3), ()),
])
def test_a_rules_text_is_read_into_its_kind(text, kind, judges) -> None:
    named = parse_rule_text(text)
    assert named == kind and named.rule == text and named_judges(named) == judges


def test_a_malformed_policy_rule_is_refused_once_read() -> None:
    with pytest.raises(OptionError, match="names no policy"):
        parse_rule_text("policy:")


def test_a_stored_runs_rule_is_read_back_as_it_decides() -> None:
    assert config_rule({"rule": "majority"}) == Pooled("majority")
    assert config_rule({}) == JudgeRule("")  # no rule: it decides nothing (undecided)
    with pytest.raises(OptionError, match="no stored policy"):
        config_rule({"rule": "policy:guard@1"})  # every writer keeps the policy's copy


def test_a_policy_decides_a_run_as_it_decides_each_answer_deferring_between() -> None:
    policy = Policy.from_dict({
        "format": "ragshield-policy/1", "name": "x", "source": "judge", "answer_at": 0.7,
        "withhold_below": 0.3, "alpha": 0.1, "delta": 0.1, "beta": 0.2,
        "calibration": {"labels": 10, "answered": 5, "withheld": 3, "deferred": 2,
                        "bad_answered": 0, "good_withheld": 0},
        "fitted_on": {"truth": "human", "human_labels": 10, "automatic_labels": 0,
                      "unscored": 0, "fingerprint": "f", "sample_ids": []},
        "code_version": "test", "created_at": "2026-11-25T00:00:00+00:00", "version": 4})
    asked = [0.9, 0.7, 0.5, 0.3, 0.1, np.nan, 0.95]
    refusal = np.array([False] * 6 + [True])
    run = SimpleNamespace(scores=lambda judge: np.asarray(asked), refusal=refusal)
    codes = policy.run_codes(run)
    codes_of = {True: 1, False: 0}
    for score, refused, code in zip(asked, refusal, codes):
        verdicts = [] if np.isnan(score) else [Verdict(judge="judge", keep=None, score=score)]
        one = decide(verdicts, policy, refusal=bool(refused))
        assert code == (DEFERRED if one.deferred else codes_of[one.keep]), score
    assert list(codes) == [1, 1, DEFERRED, DEFERRED, 0, DEFERRED, 0]  # a refusal: withheld


def test_the_start_form_of_a_configured_policy_not_stored_offers_the_pooled_rule() -> None:
    form = form_defaults(Settings(decision_rule="policy:nope"))
    assert form.judges == ["trivial"] and form.rule == "majority"


def test_a_faces_text_is_read_into_a_typed_choice_naming_the_field() -> None:
    assert one_of(("withhold", "redact"), "redact", "on_unsupported") == "redact"
    with pytest.raises(AskInputError, match="mode must be one of bm25, dense, not 'x+'"):
        one_of(("bm25", "dense"), "x" * 200, "mode")
