"""Costs that are true (issue 58, item 1): token_prob is free only where the answer carries
its log-probs; for a given answer without them it re-reads the prompt and the answer (a
moderate call), so an ask that names no judges leaves it out unless its rule reads it, and a
budget orders it after the rule's own judges. A judge that continues the answer's
conversation (calibration) finds nothing cached for a given answer either: it reads the
answerer's prompt and the answer again."""

from __future__ import annotations

from ragshield.config import GROUNDED_JUDGES, GROUNDED_RULE, Settings
from ragshield.judges.base import cost_for
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import make_judges, quick_judges
from ragshield.judging import deciding_first, rule_of
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.settlement import settle
from ragshield.types import GivenAnswer, Passage, TokenLogprob

BARE = GivenAnswer("The Seine.")
WITH_LOGPROBS = GivenAnswer("The Seine.", tokens=[TokenLogprob("The", -0.1),
                                                  TokenLogprob(" Seine.", -0.2)])


def test_token_prob_costs_a_read_for_a_given_answer_without_log_probs():
    token_prob = JUDGES["token_prob"]
    assert cost_for(token_prob, None) == "free"  # generated here: its log-probs are recorded
    assert cost_for(token_prob, WITH_LOGPROBS) == "free"
    assert cost_for(token_prob, BARE) == "moderate"
    assert cost_for(JUDGES["p_true"], BARE) == JUDGES["p_true"].cost  # others as they are


def test_a_judge_that_continues_the_answer_costs_a_read_for_any_given_answer():
    calibration = JUDGES["calibration"]
    assert calibration.cost == "cheap" and cost_for(calibration, None) == "cheap"
    assert cost_for(calibration, BARE) == cost_for(calibration, WITH_LOGPROBS) == "moderate"
    assert cost_for(JUDGES["self_consistency"], BARE) == "costly"  # never cheaper than it was
    assert "calibration" in quick_judges(GROUNDED_JUDGES)
    assert "calibration" not in quick_judges(GROUNDED_JUDGES, given=WITH_LOGPROBS)


def test_a_judge_that_quotes_the_answer_is_cheap_for_a_short_one_only():
    p_true = JUDGES["p_true"]
    long = GivenAnswer(" ".join(["The Seine flows through Paris and on to the sea."] * 4))
    assert cost_for(p_true, BARE) == cost_for(p_true, None) == "cheap"
    assert cost_for(p_true, long) == "moderate"
    assert "p_true" in quick_judges(GROUNDED_JUDGES, given=BARE)
    assert "p_true" not in quick_judges(GROUNDED_JUDGES, given=long)
    assert "p_true" in quick_judges(("p_true",), given=long)  # the rule reads it
    assert cost_for(JUDGES["pre_answer"], long) == "cheap"  # it never reads the answer


def test_the_quick_set_leaves_it_out_unless_the_rule_reads_it():
    assert "token_prob" in quick_judges(GROUNDED_JUDGES, given=WITH_LOGPROBS)
    bare = quick_judges(GROUNDED_JUDGES, given=BARE)
    assert "token_prob" not in bare and set(GROUNDED_JUDGES) <= set(bare)
    assert "token_prob" in quick_judges(("token_prob",), given=BARE)  # the rule reads it


def test_an_ask_of_a_given_answer_settles_on_the_judges_it_is_quick_for(store, settings):
    def judges(given: GivenAnswer) -> list[str]:
        request = AskRequest(question="Which river flows through Paris?",
                             passages=(Passage("Paris lies on the Seine."),),
                             given_answer=given, keep_record=False)
        return [judge.name for judge in settle(store, settings, request).judges]

    assert "token_prob" not in judges(BARE)
    carried = judges(WITH_LOGPROBS)  # free again: asked before the rule's judges
    assert carried.index("token_prob") < min(carried.index(j) for j in GROUNDED_JUDGES)


def test_a_budget_asks_the_rules_judges_before_a_token_prob_that_must_read():
    chosen = make_judges("token_prob,pre_answer,support,p_true", Settings())
    bare = [judge.name for judge in deciding_first(chosen, rule_of(GROUNDED_RULE), BARE)]
    assert bare.index("token_prob") > max(bare.index(j) for j in GROUNDED_JUDGES)
    carried = [judge.name for judge in deciding_first(chosen, rule_of(GROUNDED_RULE),
                                                       WITH_LOGPROBS)]
    assert carried.index("token_prob") < min(carried.index(j) for j in GROUNDED_JUDGES)
