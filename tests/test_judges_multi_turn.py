"""Decision logic of the multi-turn and multi-sample judges (METHODS 4.7, 4.8, 4.11, 4.12),
pinned down with scripted model replies."""

from __future__ import annotations

import json
import math

import pytest

from ragshield.answerers.context import shared_messages
from ragshield.answerers.evidence import EvidenceAnswerer
from ragshield.judges.counterfactual import (
    PROBABILITY_QUESTION,
    ROUND_TEMPERATURE,
    CounterfactualJudge,
)
from ragshield.judges.dual_generation import (
    DualGenerationJudge,
    percentile_ranks,
    percentile_scores,
)
from ragshield.judges.ioe import IfOrElseJudge, read_choice
from ragshield.judges.self_consistency import SelfConsistencyJudge
from ragshield.llm.base import CHAT, LOGPROBS, LLMError
from ragshield.refusal import is_refusal
from ragshield.types import Answer, Passage, Sample
from tests.fakes import ScriptedLLM, ScriptedReply

SAMPLE = Sample(
    id="q1",
    question="What is the capital of France?",
    passages=[Passage("Paris is the capital of France."), Passage("Lyon is a city in France."),
              Passage("Marseille is a port.")],
    reference_answers=["Paris"],
)
PREFIX = shared_messages(SAMPLE, "")[1]["content"]  # system text aside: passages + question


def make_answer(
    text: str = "Paris", evidence: tuple[int, ...] = (0,), raw: str | None = None
) -> Answer:
    raw = raw if raw is not None else (
        f"Answer: {text}\nEvidence: ## {', '.join(f'Passage-{i}' for i in evidence)} ##")
    return Answer(answerer="evidence", text=text, raw=raw,
                  messages=EvidenceAnswerer().messages(SAMPLE),
                  evidence=list(evidence), refusal=is_refusal(text))


def said(text: str) -> dict:
    return {"role": "assistant", "content": text}


def continues(messages: list[dict], conversation: list[dict]) -> bool:
    """The call continues `conversation` with exactly one more user turn."""
    return messages[:-1] == conversation and messages[-1]["role"] == "user"


# -- counterfactual prompting (4.7) ---------------------------------------------------------

def test_counterfactual_keeps_when_both_scenarios_repeat_the_answer() -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Paris\nEvidence: ## Passage-0 ##", "Answer: Paris."])
    verdict = CounterfactualJudge().judge(SAMPLE, answer, llm)
    assert verdict.keep is True and verdict.score == 1.0 and verdict.parse_error is None
    assert [c.purpose for c in verdict.trace] == ["cf-quality round 1", "cf-usage round 1"]
    quality, usage = llm.seen
    # Both scenarios continue the base conversation: its prefix stays in the KV cache.
    assert continues(quality, answer.conversation) and continues(usage, answer.conversation)
    assert quality[1]["content"].startswith(PREFIX)
    assert "poor quality" in quality[-1]["content"] and "Evidence" in quality[-1]["content"]
    assert "improperly" in usage[-1]["content"] and "Evidence" not in usage[-1]["content"]
    # Round 1 is greedy; replies are short.
    assert all(p["temperature"] == 0.0 and p["max_tokens"] <= 32 for p in llm.params)
    assert verdict.details["fusion"] == {"method": "direct", "needed": False}
    rounds = verdict.details["scenarios"]["cf-quality"]["rounds"]
    assert rounds == [{"round": 1, "answer": "Paris", "evidence": [0], "same_answer": True,
                       "raw": "Answer: Paris\nEvidence: ## Passage-0 ##", "agreement": 1.0,
                       "same_evidence": None, "changed": False}]
    assert verdict.details["decision"] == {"keep": True, "reason": "both scenarios agree"}
    assert verdict.trace[0].parsed == {"answer": "Paris", "evidence": [0]}
    json.dumps(verdict.details)


def test_counterfactual_scores_a_reworded_answer_by_its_word_overlap() -> None:
    """A changed answer still discards, but one that shares words with the base answer
    lowers the score less than a new one: the score is graded, not 0 / 0.5 / 1."""
    answer = make_answer("the river Seine")
    llm = ScriptedLLM(["Answer: the river Thames\nEvidence: ## Passage-0 ##",
                       "Answer: the Seine", "$$discard$$"])
    verdict = CounterfactualJudge().judge(SAMPLE, answer, llm)
    quality = verdict.details["scenarios"]["cf-quality"]["rounds"][0]
    assert quality["agreement"] == 0.5 and quality["changed"] is True
    assert verdict.keep is False and verdict.score == pytest.approx((0.5 + 1.0) / 2)
    # with evidence_change, a round citing other passages adds nothing, whatever it says
    llm = ScriptedLLM(["Answer: the river Seine\nEvidence: ## Passage-1 ##",
                       "Answer: the river Seine", "$$discard$$"])
    verdict = CounterfactualJudge(evidence_change=True).judge(SAMPLE, answer, llm)
    assert verdict.score == pytest.approx(0.5)


def test_counterfactual_discards_when_both_scenarios_change_without_fusion() -> None:
    llm = ScriptedLLM(["Answer: Lyon\nEvidence: ## Passage-1 ##", "Answer: Marseille"])
    verdict = CounterfactualJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score == 0.0
    assert len(verdict.trace) == 2
    assert "cf-quality changed the answer to 'Lyon' in round 1" in verdict.rationale
    assert "cf-usage changed the answer to 'Marseille' in round 1" in verdict.rationale


@pytest.mark.parametrize("reply, keep", [("$$keep$$", True), ("$$discard$$", False),
                                         ("Decision: keep", True)])
def test_counterfactual_direct_fusion_continues_the_discarding_branch(
    reply: str, keep: bool
) -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Lyon\nEvidence: ## Passage-1 ##", "Answer: Paris", reply])
    verdict = CounterfactualJudge().judge(SAMPLE, answer, llm)
    assert verdict.keep is keep and verdict.score == 0.5 and verdict.parse_error is None
    assert verdict.trace[-1].purpose == "fusion (direct) on cf-quality"
    fusion_prompt = llm.seen[-1]
    assert continues(fusion_prompt,
                     [*llm.seen[0], said("Answer: Lyon\nEvidence: ## Passage-1 ##")])
    question = fusion_prompt[-1]["content"]
    assert "poor quality" in question and "$$keep$$" in question and '"Paris"' in question
    fusion = verdict.details["fusion"]
    assert fusion["branch"] == "cf-quality"
    assert fusion["decision"] == ("keep" if keep else "discard")
    assert verdict.details["scenarios"]["cf-quality"]["judgment"] == "discard"
    assert verdict.details["scenarios"]["cf-usage"]["judgment"] == "keep"
    assert f"direct fusion on cf-quality said {'keep' if keep else 'discard'}" in verdict.rationale


def test_counterfactual_direct_fusion_on_usage_names_improper_use() -> None:
    llm = ScriptedLLM(["Answer: Paris\nEvidence: ## Passage-0 ##", "Answer: Lyon", "$$discard$$"])
    verdict = CounterfactualJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False
    assert verdict.trace[-1].purpose == "fusion (direct) on cf-usage"
    assert "improperly" in llm.seen[-1][-1]["content"]


@pytest.mark.parametrize("garbage", ["hmm, hard to say", "", "keep or discard, both fine"])
def test_counterfactual_unreadable_direct_fusion_discards_and_flags(garbage: str) -> None:
    llm = ScriptedLLM(["Answer: Lyon", "Answer: Paris", garbage])
    verdict = CounterfactualJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score == 0.5
    assert "no keep/discard marker" in verdict.parse_error
    assert verdict.trace[-1].parse_error and verdict.trace[-1].output == garbage
    assert verdict.details["fusion"]["decision"] is None


def test_counterfactual_safety_fusion_discards_without_asking() -> None:
    llm = ScriptedLLM(["Answer: Lyon", "Answer: Paris"])
    verdict = CounterfactualJudge(fusion="safety").judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and len(verdict.trace) == 2
    assert verdict.details["fusion"] == {"method": "safety", "needed": True}


@pytest.mark.parametrize("p_quality, p_usage, keep, winner", [
    ("0.9", "0.4", False, "cf-quality"),  # the discarding branch is surer: discard
    ("Probability: 30%", "0.8", True, "cf-usage"),  # the keeping branch is surer: keep
])
def test_counterfactual_probability_fusion_follows_the_surer_branch(
    p_quality: str, p_usage: str, keep: bool, winner: str
) -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Lyon", "Answer: Paris", p_quality, p_usage])
    verdict = CounterfactualJudge(fusion="probability").judge(SAMPLE, answer, llm)
    assert verdict.keep is keep and verdict.parse_error is None
    assert [c.purpose for c in verdict.trace[2:]] == ["fusion (probability) on cf-quality",
                                                      "fusion (probability) on cf-usage"]
    quality_prompt, usage_prompt = llm.seen[2:]
    assert continues(quality_prompt, [*llm.seen[0], said("Answer: Lyon")])
    assert continues(usage_prompt, [*llm.seen[1], said("Answer: Paris")])
    assert usage_prompt[-1]["content"] == PROBABILITY_QUESTION
    assert verdict.details["fusion"]["winner"] == winner


def test_counterfactual_probability_fusion_tie_discards_and_flags() -> None:
    llm = ScriptedLLM(["Answer: Lyon", "Answer: Paris", "0.7", "70%"])
    verdict = CounterfactualJudge(fusion="probability").judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.details["fusion"]["flag"] == "tie"
    assert "tied" in verdict.rationale


def test_counterfactual_probability_fusion_unreadable_discards_and_flags() -> None:
    llm = ScriptedLLM(["Answer: Paris", "Answer: Lyon", "0.9", "very likely!"])
    verdict = CounterfactualJudge(fusion="probability").judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.details["fusion"]["flag"] == "unreadable"
    assert "cf-usage" in verdict.parse_error
    assert verdict.details["fusion"]["probabilities"] == {"cf-quality": 0.9, "cf-usage": None}


def test_counterfactual_rounds_sample_after_the_first_and_any_change_discards() -> None:
    answer = make_answer()
    replies = ["Answer: Paris", "Answer: Lyon", "Answer: Paris",  # cf-quality rounds 1-3
               "Answer: Paris", "Answer: Paris", "Answer: Paris",  # cf-usage rounds 1-3
               "$$discard$$"]
    llm = ScriptedLLM(replies)
    verdict = CounterfactualJudge(rounds=3).judge(SAMPLE, answer, llm)
    assert verdict.keep is False and verdict.score == pytest.approx(5 / 6)
    assert [c.purpose for c in verdict.trace] == [
        "cf-quality round 1", "cf-quality round 2", "cf-quality round 3",
        "cf-usage round 1", "cf-usage round 2", "cf-usage round 3", "fusion (direct) on cf-quality"]
    temperatures = [(p["temperature"], p["seed"]) for p in llm.params[:6]]
    assert temperatures == [(0.0, 0), (ROUND_TEMPERATURE, 1), (ROUND_TEMPERATURE, 2)] * 2
    # Fusion continues the round that changed (round 2).
    assert continues(llm.seen[-1], [*llm.seen[1], said("Answer: Lyon")])
    assert verdict.details["fusion"]["round"] == 2
    assert "cf-quality changed the answer to 'Lyon' in round 2" in verdict.rationale
    assert [r["changed"] for r in verdict.details["scenarios"]["cf-quality"]["rounds"]] == [
        False, True, False]


@pytest.mark.parametrize("evidence_change, keep", [(True, False), (False, True)])
def test_counterfactual_evidence_change_option(evidence_change: bool, keep: bool) -> None:
    llm = ScriptedLLM(["Answer: Paris\nEvidence: ## Passage-1, Passage-2 ##", "Answer: Paris",
                       "$$discard$$"])
    judge = CounterfactualJudge(evidence_change=evidence_change)
    verdict = judge.judge(SAMPLE, make_answer(evidence=(0,)), llm)
    assert verdict.keep is keep
    round_1 = verdict.details["scenarios"]["cf-quality"]["rounds"][0]
    assert round_1["evidence"] == [1, 2] and round_1["same_answer"] is True
    assert round_1["same_evidence"] is (False if evidence_change else None)
    if evidence_change:
        assert "changed the cited passages to [1, 2]" in verdict.rationale


def test_counterfactual_evidence_in_another_order_is_the_same() -> None:
    llm = ScriptedLLM(["Answer: Paris\nEvidence: ## Passage-2, Passage-0 ##", "Answer: Paris"])
    judge = CounterfactualJudge(evidence_change=True)
    verdict = judge.judge(SAMPLE, make_answer(evidence=(0, 2)), llm)
    assert verdict.keep is True


def test_counterfactual_without_asking_ids() -> None:
    llm = ScriptedLLM(["Answer: Paris", "Answer: Paris"])
    verdict = CounterfactualJudge(ask_ids=False).judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is True
    assert "poor quality" in llm.seen[0][-1]["content"]
    assert "Evidence" not in llm.seen[0][-1]["content"]


def test_counterfactual_empty_regenerated_answer_counts_as_a_change_and_is_flagged() -> None:
    llm = ScriptedLLM(["Evidence: ## Passage-0 ##", "Answer: Paris", "$$discard$$"])
    verdict = CounterfactualJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False
    assert "empty regenerated answer in cf-quality round 1" in verdict.parse_error


def test_counterfactual_refusal_base_answer_is_discarded_without_calls() -> None:
    llm = ScriptedLLM([])
    verdict = CounterfactualJudge().judge(SAMPLE, make_answer("I don't know", evidence=()), llm)
    assert verdict.keep is False and verdict.score == 0.0 and verdict.trace == []
    assert "refusal" in verdict.rationale


@pytest.mark.parametrize("options", [
    {"rounds": 0}, {"rounds": 6}, {"rounds": 1.5}, {"fusion": "vote"},
    {"evidence_change": True, "ask_ids": False},
])
def test_counterfactual_rejects_bad_options(options: dict) -> None:
    with pytest.raises(ValueError):
        CounterfactualJudge(**options)


def test_counterfactual_needs_only_chat() -> None:
    verdict = CounterfactualJudge().judge(
        SAMPLE, make_answer(), ScriptedLLM(["Answer: Paris", "Answer: Paris"],
                                           capabilities=frozenset({CHAT})))
    assert verdict.available and verdict.keep is True
    unavailable = CounterfactualJudge().judge(SAMPLE, make_answer(),
                                              ScriptedLLM(capabilities=frozenset()))
    assert unavailable.available is False and unavailable.keep is None


def test_counterfactual_backend_failure_is_an_error_verdict() -> None:
    def fail(messages):
        raise LLMError("server down")

    verdict = CounterfactualJudge().judge(SAMPLE, make_answer(), ScriptedLLM(respond=fail))
    assert verdict.keep is None and "server down" in verdict.error


# -- If-or-Else (4.8) -----------------------------------------------------------------------

def test_ioe_keeps_an_unchanged_answer_with_one_call() -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Paris"])
    verdict = IfOrElseJudge().judge(SAMPLE, answer, llm)
    # the scripted model gives " Paris" log-prob -0.1: P(it starts the same way) = e^-0.1
    assert verdict.keep is True and verdict.score == pytest.approx(math.exp(-0.1))
    assert continues(llm.seen[0], answer.conversation)
    assert "confident" in llm.seen[0][-1]["content"]
    assert verdict.details["changed"] is False and verdict.details["updated"] == "Paris"
    assert [c.purpose for c in verdict.trace] == ["ioe: keep or update"]


@pytest.mark.parametrize("reply, keep", [("A", True), ("(B).", False), ("The answer is A", True),
                                         ("Lyon", False)])
def test_ioe_changed_answer_asks_for_a_choice(reply: str, keep: bool) -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Lyon", reply])
    verdict = IfOrElseJudge().judge(SAMPLE, answer, llm)
    assert verdict.keep is keep and verdict.parse_error is None
    assert continues(llm.seen[1], [*llm.seen[0], said("Answer: Lyon")])
    assert "A: Paris\nB: Lyon" in llm.seen[1][-1]["content"]
    assert verdict.details["choice"] == ("A" if keep else "B")
    assert verdict.details["updated"] == "Lyon" and verdict.details["changed"] is True
    json.dumps(verdict.details)


def test_ioe_score_reads_how_firmly_the_model_repeats_its_answer() -> None:
    # The update's first answer token: "Paris" with probability e^-0.5, "Lyon" the rest.
    firm = ScriptedLLM([ScriptedReply("Paris", top={"Paris": -0.5, "Lyon": -1.0})])
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), firm)
    assert verdict.keep is True and verdict.score == pytest.approx(math.exp(-0.5))
    assert firm.params[0]["logprobs"] and verdict.details["p_same_start"] == verdict.score
    # Changed, then back to A: kept, but the score says it wavered.
    wavered = ScriptedLLM([ScriptedReply("Lyon", top={"Lyon": -0.2, "Paris": -2.0}), "A"])
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), wavered)
    assert verdict.keep is True and verdict.score == pytest.approx(math.exp(-2.0))
    # Without log-probs the verdict stays hard.
    plain = ScriptedLLM(["Answer: Paris"], capabilities=frozenset({CHAT}))
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), plain)
    assert verdict.keep is True and verdict.score is None and not plain.params[0]["logprobs"]


def test_ioe_unreadable_choice_discards_and_flags() -> None:
    llm = ScriptedLLM(["Answer: Lyon", "both could be right"])
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and "A or B" in verdict.parse_error
    assert verdict.trace[-1].parse_error == "neither A nor B"


def test_ioe_empty_update_discards_and_flags() -> None:
    llm = ScriptedLLM(["   "])
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.parse_error and len(verdict.trace) == 1


@pytest.mark.parametrize("text, choice", [
    ("A", "A"), ("**B**", "B"), ("B: Lyon", "B"), ("A is correct.", "A"), ("Answer: B", "B"),
    ("I pick option (A)", "A"), ("Paris.", "A"), ("Lyon", "B"), ("A city in France", None),
    ("the answer is a city", None), ("A or B", None), ("", None), ("Paris or Lyon", None),
])
def test_read_choice(text: str, choice: str | None) -> None:
    assert read_choice(text, "Paris", "Lyon") == choice


def test_ioe_unavailable_without_chat() -> None:
    verdict = IfOrElseJudge().judge(SAMPLE, make_answer(), ScriptedLLM(capabilities=frozenset()))
    assert verdict.available is False


# -- self-consistency (4.12) ----------------------------------------------------------------

def test_self_consistency_samples_the_base_prompt_and_counts_matches() -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Answer: Paris\nEvidence: ## Passage-0 ##", "Answer: Lyon", "Paris.",
                        "garbage!!", "Answer: paris"])
    verdict = SelfConsistencyJudge().judge(SAMPLE, answer, llm)
    assert verdict.score == pytest.approx(3 / 5) and verdict.keep is True
    assert all(seen == answer.messages for seen in llm.seen)  # the whole prompt is shared
    assert [(p["temperature"], p["seed"]) for p in llm.params] == [(0.7, s) for s in range(1, 6)]
    # only the answers are compared: no sample spends tokens on an evidence line
    assert all(p["stop"] == ["\nEvidence"] for p in llm.params)
    assert [s["match"] for s in verdict.details["samples"]] == [True, False, True, False, True]
    assert [s["answer"] for s in verdict.details["samples"]][:2] == ["Paris", "Lyon"]
    assert "3/5 samples agree" in verdict.rationale and "'Lyon'" in verdict.rationale
    json.dumps(verdict.details)


def test_self_consistency_counts_a_near_miss_by_its_word_overlap() -> None:
    llm = ScriptedLLM(["the river Seine", "the river Thames", "Lyon"])
    verdict = SelfConsistencyJudge(k=3).judge(SAMPLE, make_answer("the river Seine"), llm)
    assert [s["agreement"] for s in verdict.details["samples"]] == [1.0, 0.5, 0.0]
    assert [s["match"] for s in verdict.details["samples"]] == [True, False, False]
    # keep follows the share of matching samples (1/3); the score grades the near miss
    assert verdict.score == pytest.approx(1.5 / 3) and verdict.keep is False
    assert "1/3 samples agree" in verdict.rationale and "mean agreement 0.50" in verdict.rationale


def test_self_consistency_below_threshold_discards() -> None:
    llm = ScriptedLLM(["Answer: Paris", "Answer: Lyon", "Answer: Lyon"])
    verdict = SelfConsistencyJudge(k=3, threshold=0.5).judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score == pytest.approx(1 / 3)


def test_self_consistency_refusals_agree_with_a_refusal() -> None:
    llm = ScriptedLLM(["I don't know", "", "Unknown."])
    verdict = SelfConsistencyJudge(k=3).judge(SAMPLE, make_answer("I don't know", ()), llm)
    assert verdict.score == 1.0


@pytest.mark.parametrize("options", [{"k": 0}, {"k": 2.5}, {"temperature": 0.0}])
def test_self_consistency_rejects_bad_options(options: dict) -> None:
    with pytest.raises(ValueError):
        SelfConsistencyJudge(**options)


# -- dual generation (4.11) -----------------------------------------------------------------

def test_dual_generation_compares_mean_loglikelihoods_with_and_without_passages() -> None:
    answer = make_answer()
    llm = ScriptedLLM(["Lyon"], scores={"Paris": [-0.1, -0.3], "Lyon": [-1.0, -2.0]})
    verdict = DualGenerationJudge().judge(SAMPLE, answer, llm)
    assert verdict.keep is True and verdict.score == pytest.approx(-0.2 - -1.5)
    assert verdict.details["rag_mean_logprob"] == pytest.approx(-0.2)
    assert verdict.details["norag_mean_logprob"] == pytest.approx(-1.5)
    assert verdict.details["norag_answer"] == "Lyon" and verdict.details["rag_answer"] == "Paris"
    assert [c.purpose for c in verdict.trace] == [
        "dual generation: score with passages", "dual generation: answer without passages",
        "dual generation: score without passages"]
    rag_scored, norag_prompt, norag_scored = llm.seen
    assert rag_scored == answer.messages  # scored right after the base prompt: cached prefix
    assert norag_scored == norag_prompt
    assert SAMPLE.question in norag_prompt[-1]["content"]
    assert not any(p.text in m["content"] for p in SAMPLE.passages for m in norag_prompt)
    assert DualGenerationJudge.shares_prefix is False
    json.dumps(verdict.details)


def test_dual_generation_discards_when_passages_lower_confidence() -> None:
    llm = ScriptedLLM(["Answer: Lyon"], scores={"Paris": [-2.0], "Lyon": [-0.5]})
    verdict = DualGenerationJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score == pytest.approx(-1.5)


def test_dual_generation_threshold() -> None:
    llm = ScriptedLLM(["Lyon"], scores={"Paris": [-1.0], "Lyon": [-1.5]})
    verdict = DualGenerationJudge(threshold=1.0).judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score == pytest.approx(0.5)


def test_dual_generation_empty_answer_without_passages_discards_and_flags() -> None:
    llm = ScriptedLLM(["  "], scores={"Paris": [-0.1]})
    verdict = DualGenerationJudge().judge(SAMPLE, make_answer(), llm)
    assert verdict.keep is False and verdict.score is None and verdict.parse_error
    assert verdict.details["rag_mean_logprob"] == pytest.approx(-0.1)


def test_dual_generation_empty_base_answer_discards_without_calls() -> None:
    llm = ScriptedLLM([])
    verdict = DualGenerationJudge().judge(SAMPLE, make_answer("", (), raw=""), llm)
    assert verdict.keep is False and verdict.parse_error and verdict.trace == []


@pytest.mark.parametrize("capabilities", [frozenset({CHAT}), frozenset({CHAT, LOGPROBS})])
def test_dual_generation_unavailable_without_scoring(capabilities: frozenset) -> None:
    verdict = DualGenerationJudge().judge(SAMPLE, make_answer(),
                                          ScriptedLLM(capabilities=capabilities))
    assert verdict.available is False and verdict.keep is None and "score" in verdict.rationale


def test_percentile_ranks_by_hand() -> None:
    assert percentile_ranks([3.0, 1.0, 2.0]) == pytest.approx([5 / 6, 1 / 6, 3 / 6])
    # Ties share the mid rank: below + half of the equal ones (itself included), over n.
    assert percentile_ranks([1.0, 1.0, 2.0, 2.0]) == pytest.approx([0.25, 0.25, 0.75, 0.75])
    assert percentile_ranks([-0.5]) == [0.5]


def test_percentile_scores_by_hand() -> None:
    assert percentile_scores([-1.0, -2.0, -3.0], [-3.0, -2.0, -1.0]) == pytest.approx(
        [4 / 6, 0.0, -4 / 6])
    assert percentile_scores([1.0, 1.0, 2.0, 2.0], [5.0, 5.0, 5.0, 5.0]) == pytest.approx(
        [-0.25, -0.25, 0.25, 0.25])
    assert percentile_scores([-0.2], [-1.5]) == [0.0]
    assert percentile_scores([], []) == []


@pytest.mark.parametrize("rag, norag", [([1.0], [1.0, 2.0]), ([math.nan], [1.0]),
                                        ([1.0], [-math.inf])])
def test_percentile_scores_rejects_bad_input(rag: list, norag: list) -> None:
    with pytest.raises(ValueError):
        percentile_scores(rag, norag)
