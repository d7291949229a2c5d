"""The policy panel's services on the judged demo run of tests/test_policies.py: a preview
that stores nothing and equals what saving stores, its labels by kind and its promise in
words, the "more labels" answer of a promise the labels cannot keep, the pinned default rule
as every face reads it (asking, the API, runs), and the watch drawn in label order."""

from __future__ import annotations

import numpy as np
import pytest

from ragshield.config import DEFAULT_DECISION_RULE
from ragshield.policies.rule_figures import default_rule_reason
from ragshield.errors import OptionError
from ragshield.holdout import in_holdout
from ragshield.decision_rule import KEPT
from ragshield.policies.fitting import PERSON, REFERENCE, UNANSWERABLE_FLAG
from ragshield.policies.policy import Policy
from ragshield.policies.watch import UNUSED
from ragshield.reports.policy_figures import score_histogram, watch_figure
from ragshield.run_config import RunConfig
from ragshield.services.annotation.labelling import label_sample
from ragshield.services.learning.pinned_policy import pin_policy, pinned, unpin
from ragshield.services.learning.policies import (fit_run_policy, labelled_scores, list_policies,
                                                  policy_scores, watch_stored_policy)
from ragshield.services.learning.policy_preview import (preview_policy, promise_words,
                                                        versions_table, watch_curves)
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import ask, prepare
from ragshield.services.questions.settlement import default_judges, default_rule
from ragshield.services.runs.run_tables import RunTablesCache
from ragshield.services.runs.runs import record_run
from ragshield.store.policies import UnknownPolicyError
from ragshield.store.runs import get_run
from ragshield.claims import split_claims
from ragshield.services.annotation.sentence_labelling import label_sentence
from ragshield.store.labels import add_annotator
from ragshield.ui import policy_panel
from tests.fakes import FakeModels, ScriptedLLM
from tests.api_support import API_GUARD_POLICY, client_for, judge_body
from tests.judged_demo import JUDGE, judged_demo_run

PNG = b"\x89PNG\r\n\x1a\n"
SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


def test_the_promise_in_words_carries_alpha_and_the_confidence():
    assert promise_words(0.1, 0.1) == ("Of the answers shown, at most 10% are wrong or "
                                       "unsupported, with 90% confidence.")
    assert promise_words(0.125, 0.05, 0.2).endswith(
        "at most 12.5% are wrong or unsupported, with 95% confidence; of the answers "
        "withheld, at most 20% were good.")


def test_a_preview_stores_nothing_and_saving_stores_its_thresholds(store, settings):
    _, run_id = judged_demo_run(store, settings, [JUDGE])
    preview = preview_policy(store, run_id, JUDGE, alpha=0.2, delta=0.1, beta=0.1,
                             holdout=0.3)
    assert list_policies(store) == []
    policy = preview.policy
    assert policy is not None and preview.problem is None and preview.more_labels is None
    assert "at most 20%" in preview.promise and "90% confidence" in preview.promise
    # Every sample outside the slice is labelled by a person; the kinds add up.
    assert preview.labels == {PERSON: preview.calibration_size, REFERENCE: 0,
                              UNANSWERABLE_FLAG: 0}
    assert preview.calibration_size == policy.calibration.labels + preview.unscored
    assert preview.authors.people == {"flag-reader": preview.calibration_size}
    assert preview.authors.by_sentences == 0
    c = policy.calibration
    assert c.answered + c.deferred + c.withheld == c.labels and 0 < c.answered < c.labels
    assert preview.histogram.startswith(PNG)

    saved = fit_run_policy(store, run_id, JUDGE, "guard", alpha=0.2, delta=0.1, beta=0.1,
                           holdout=0.3)
    assert (saved.answer_at, saved.withhold_below) == (policy.answer_at, policy.withhold_below)
    assert saved.calibration == policy.calibration
    assert saved.fitted_on.fingerprint == policy.fitted_on.fingerprint
    assert [p.rule for p in list_policies(store)] == ["policy:guard@1"]


@SQLITE_ONLY
def test_references_and_flags_are_counted_by_kind_and_the_stacked_judge_too(store, settings):
    world, run_id = judged_demo_run(store, settings, [JUDGE, "token_prob", "trivial"],
                                    labelled=False)
    preview = preview_policy(store, run_id, JUDGE, alpha=0.3, delta=0.1, holdout=0.2)
    outside = [s for s in world.samples.values() if not in_holdout(s.id, 0.2)]
    flagged = sum(not s.answerable for s in outside)
    assert preview.labels == {PERSON: 0, REFERENCE: len(outside) - flagged,
                              UNANSWERABLE_FLAG: flagged}
    assert preview.calibration_size == len(outside)
    stacked = preview_policy(store, run_id, "stacked", alpha=0.3, delta=0.1, holdout=0.2)
    assert stacked.trained_on > 0
    assert stacked.calibration_size + stacked.trained_on == len(outside)
    saved = fit_run_policy(store, run_id, "stacked", "stack", alpha=0.3, delta=0.1,
                           holdout=0.2)
    assert stacked.policy is not None and saved.answer_at == stacked.policy.answer_at
    assert saved.stacker == stacked.policy.stacker


@SQLITE_ONLY
def test_the_preview_says_whose_labels_and_which_came_from_sentences(store, settings):
    """A person who marked an answer's sentences only (no label of the whole answer) counts
    among the authors, and that answer as judged by sentence labels; "can't tell" on its one
    sentence says nothing of the whole."""
    world, run_id = judged_demo_run(store, settings, [JUDGE], labelled=False)
    add_annotator(store, "sentence-reader")
    judged = [s for s in world.samples.values() if not in_holdout(s.id, 0.2)][:3]
    assert all(len(split_claims(world.answer_of(s))) == 1 for s in judged)  # one sentence
    for sample in judged[:2]:
        label_sentence(store, "demo", sample.id, "sentence-reader", "supported", index=1)
    label_sentence(store, "demo", judged[2].id, "sentence-reader", "unsure", index=1)
    preview = preview_policy(store, run_id, JUDGE, alpha=0.3, delta=0.1, holdout=0.2)
    assert preview.authors.people == {"sentence-reader": 2}
    assert preview.authors.by_sentences == 2
    assert preview.labels[PERSON] == 2
    text = policy_panel._labels_text(preview)
    assert "People's labels are by sentence-reader (2)" in text
    assert "2 of these answers were judged by their sentence labels" in text


@SQLITE_ONLY
def test_a_promise_the_labels_cannot_keep_says_how_many_more_labels_it_needs(store, settings):
    _, run_id = judged_demo_run(store, settings, [JUDGE])
    preview = preview_policy(store, run_id, JUDGE, alpha=0.01, delta=0.05)
    assert preview.policy is None and "needs at least 368 labelled samples" in preview.problem
    assert preview.more_labels is not None and preview.more_labels > 0
    assert f"({preview.more_labels} more)" in preview.problem
    assert preview.histogram.startswith(PNG) and list_policies(store) == []


def test_the_pin_is_the_default_rule_of_asks_and_runs_until_unpinned(store, settings):
    world, run_id = judged_demo_run(store, settings, [JUDGE])
    configured = default_rule(settings, store)
    assert configured == (DEFAULT_DECISION_RULE, default_rule_reason())
    fit_run_policy(store, run_id, JUDGE, "guard", alpha=0.3, delta=0.1)
    with pytest.raises(OptionError, match="policy:NAME@VERSION"):
        pin_policy(store, "policy:guard")
    with pytest.raises(UnknownPolicyError, match="no policy 'guard' version 7"):
        pin_policy(store, "policy:guard@7")
    assert pinned(store) is None
    pin = pin_policy(store, "policy:guard@1", by="ann")
    rule, reason = default_rule(settings, store)
    assert rule == "policy:guard@1" == pin.rule
    assert reason.startswith(f"the pinned policy guard@1, pinned by ann on {pin.at:%Y-%m-%d}")
    assert JUDGE in default_judges(settings, store=store)

    sample = next(iter(world.samples.values()))
    request = AskRequest(sample_id=sample.id, dataset="demo", keep_record=False)
    prepared = prepare(store, settings, request)
    assert isinstance(prepared.rule, Policy) and prepared.rule.rule == "policy:guard@1"
    assert prepared.rule_reason.startswith("the pinned policy guard@1, pinned by ann")
    assert "at most 30% of the answers it shows" in prepared.rule_reason
    # The judges chosen lack the policy's: the default does not fit, majority decides.
    narrow = prepare(store, settings, AskRequest(sample_id=sample.id, dataset="demo",
                                                 judges=("trivial",), keep_record=False))
    assert narrow.rule.rule == "majority" and "reads p_true, not among" in narrow.rule_reason
    # An ask through the models is decided by the pinned policy.
    result = ask(store, settings, FakeModels(ScriptedLLM(respond=world.respond)),
                 AskRequest(sample_id=sample.id, dataset="demo", judges=(JUDGE,),
                            keep_record=False))
    assert result.judged.decision.rule == "policy:guard@1"
    # A run started without a rule decides by it too, pinned to that version.
    second = record_run(store, settings, RunConfig(dataset="demo", judges=[JUDGE])).run_id
    assert get_run(store, second).config["rule"] == "policy:guard@1"
    named = record_run(store, settings, RunConfig(dataset="demo", judges=[JUDGE],
                                                  rule="majority")).run_id
    assert get_run(store, named).config["rule"] == "majority"

    unpin(store)
    assert pinned(store) is None and default_rule(settings, store) == configured
    assert prepare(store, settings, request).rule_reason == default_rule_reason()


@SQLITE_ONLY
def test_the_api_decides_by_the_pinned_policy_when_no_rule_is_named(store, settings):
    from ragshield.services.learning.policies import save_policy

    save_policy(store, Policy.from_dict(API_GUARD_POLICY))
    client = client_for(settings, store)
    answer = judge_body(answer_logprobs=[{"token": "The", "logprob": -0.7}], store=False)
    before = client.post("/v1/judge", json=answer).json()
    assert before["rule"] != "policy:api-guard@1"
    pin_policy(store, "policy:api-guard@1")
    after = client.post("/v1/judge", json=answer).json()
    assert after["rule"] == "policy:api-guard@1" and after["decision"] == "defer"
    assert after["rule_reason"].startswith("the pinned policy api-guard@1, pinned on ")


def _cumulative_bad(tables, policy, ids: list[str]) -> np.ndarray:
    """Bad answers shown by the policy among the samples `ids`, counted in that order."""
    data = labelled_scores(tables, policy_scores(tables, policy))
    at = {str(i): n for n, i in enumerate(data.sample_ids)}
    rows = [at[i] for i in ids]
    shown = policy.decision_codes(data.scores[rows]) == KEPT
    return np.cumsum(shown & ~data.good[rows])


@SQLITE_ONLY
def test_the_watch_follows_the_labels_in_the_order_they_came(store, settings):
    world, run_id = judged_demo_run(store, settings, [JUDGE])
    policy = fit_run_policy(store, run_id, JUDGE, "watched", alpha=0.3, delta=0.1,
                            holdout=0.3)
    held = [s.id for s in world.samples.values() if in_holdout(s.id, 0.3)]
    cache = RunTablesCache(store)
    before = cache.get(run_id, "human")
    data = labelled_scores(before, policy_scores(before, policy))
    shown = {str(i) for i, code in zip(data.sample_ids, policy.decision_codes(data.scores))
             if code == KEPT}
    # A person changes their mind on three answers the policy shows, labelled early: they
    # are wrong after all, and those labels now came last.
    changed = [i for i in held if i in shown][:3]
    for sample_id in changed:
        label_sample(store, "demo", sample_id, "flag-reader", "unanswerable",
                     answer_correct=False)
    tables = cache.get(run_id, "human")
    [curve] = watch_curves(store, tables, "demo")
    assert curve.policy.rule == "policy:watched@1" and curve.png.startswith(PNG)
    assert list(curve.labels) == list(range(1, len(held) + 1))
    order = [i for i in held if i not in changed] + changed
    assert list(curve.bad) == list(_cumulative_bad(tables, policy, order))
    assert len(changed) == 3 and curve.bad[-1] - curve.bad[-4] == 3
    unused = next(row for row in watch_stored_policy(store, "watched", None, run_id)
                  if row.labels == UNUSED)
    assert (curve.answered[-1], curve.bad[-1]) == (unused.answered, unused.bad_answered)
    assert curve.risk[-1] == pytest.approx(unused.risk)
    answered = curve.answered > 0
    low, risk, high = curve.low[answered], curve.risk[answered], curve.high[answered]
    assert np.all((low <= risk) & (risk <= high)) and np.isnan(curve.low[~answered]).all()
    table = versions_table(store, tables, "demo")
    assert [row[0] for row in table.rows] == ["policy:watched@1"]
    assert table.rows[0][4].startswith(f"{unused.risk:.3f}") and table.rows[0][5] == ""
    # A pinned older version is watched beside the newest one.
    fit_run_policy(store, run_id, JUDGE, "watched", alpha=0.4, delta=0.1, holdout=0.3)
    pin_policy(store, "policy:watched@1")
    rules = [c.policy.rule for c in watch_curves(store, tables, "demo")]
    assert rules == ["policy:watched@1", "policy:watched@2"]
    assert versions_table(store, tables, "demo").rows[0][5] == "pinned"



def test_a_dollar_sign_in_a_name_is_drawn_as_it_is() -> None:
    """Policy and judge names reach figure titles: "$...$" there is not mathtext (a name that
    did not parse as mathtext broke the Policy panel for good)."""
    steps = np.arange(1.0, 4.0)
    png = watch_figure(steps, steps / 4, steps / 8, steps / 2, 0.2, "policy a$\\foo$b", dpi=40)
    assert png.startswith(b"\x89PNG")
    png = score_histogram(np.array([0.2, 0.8]), np.array([False, True]), "judge $\\x^$",
                          dpi=40)
    assert png.startswith(b"\x89PNG")
