"""Hostile model output: every reader of model replies fuzzed alone (probabilities, markers,
yes/no, next-token distributions, grades, A/B choices, refusals), then every answerer and
judge fed arbitrary replies and log-probs. Model output is untrusted: nothing may raise, and
what is read stays in range. (tests/test_answer_parsing.py already fuzzes parse_answer.)"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragshield.answerers.registry import ANSWERERS, make_answerer
from ragshield.config import Settings
from ragshield.grading import parse_grade
from ragshield.judges.ioe import read_choice
from ragshield.judges.readers import (expected_digit, read_confidence_digit, read_marker,
                                      read_probability, read_yes_no, yes_probability)
from ragshield.judges.registry import make_judges
from ragshield.judging import judge_sample, rule_of
from ragshield.refusal import is_invalid_question, is_refusal
from ragshield.types import Passage, Sample, TokenLogprob
from tests.fakes import ScriptedLLM, ScriptedReply
from tests.reliability.scale import sized

EXAMPLES = sized(300, 3000)
# Replies built from the pieces the readers look for, so that their branches are reached.
PIECES = st.sampled_from([
    "yes", "No", "TRUE", "false", "keep", "discard", "$$", "$", "**", "##", "[", "]", "A", "B",
    "(", ")", ":", "answer", "Answer:", "option", "is", "{", "}", '"accurate"', "accurate",
    "'", "=", "0.", "1", "80", "%", "percent", "1e999", "-", " ", "\n", "\x00", "\ud800",
    "I don't know", "Final Answer:", "Evidence:", "Passage-", "9" * 30, "\u00a0", "```",
])
REPLIES = st.one_of(st.text(), st.lists(PIECES, max_size=30).map("".join))
LOGPROBS = st.floats(max_value=0.0, allow_nan=False)  # log-probabilities: -inf..0
TOKENS = st.builds(TokenLogprob, token=REPLIES, logprob=LOGPROBS,
                   top=st.dictionaries(REPLIES, LOGPROBS, max_size=6))


def in_unit(value: float | None) -> bool:
    return value is None or 0.0 <= value <= 1.0


@pytest.mark.scenario("Hostile model output: every reply parser fuzzed")
def test_readers_never_raise_and_stay_in_range(scenario):
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(REPLIES, REPLIES, REPLIES, TOKENS)
    def check(reply: str, original: str, updated: str, token: TokenLogprob) -> None:
        assert in_unit(read_probability(reply))
        assert read_marker(reply, ("keep", "discard")) in (None, "keep", "discard")
        assert read_yes_no(reply) in (None, True, False)
        assert in_unit(yes_probability(token))
        assert in_unit(read_confidence_digit(reply)) and in_unit(expected_digit(token))
        accurate, reason = parse_grade(reply)
        assert accurate in (None, True, False) and (accurate is None) == (reason is not None)
        assert read_choice(reply, original, updated) in (None, "A", "B")
        assert isinstance(is_refusal(reply), bool)
        assert isinstance(is_invalid_question(reply), bool)

    check()
    scenario.figure("replies per reader", EXAMPLES)
    for reader in ("read_probability", "read_confidence_digit", "expected_digit", "read_marker",
                   "read_yes_no", "yes_probability", "parse_grade", "read_choice (ioe)",
                   "is_refusal"):
        scenario.check(f"{reader}: never raises, its value stays in range", True)


SAMPLE = Sample(id="s", question="What is the capital of France?",
                passages=[Passage("Paris is the capital of France.", title="Paris"),
                          Passage("Lyon is a city in France.")],
                reference_answers=["Paris"], answerable=True)


@pytest.mark.scenario("Hostile model output: every reply parser fuzzed")
def test_every_answerer_and_judge_survives_any_reply(scenario):
    judges = make_judges("all", Settings())
    answerers = [make_answerer(name) for name in ANSWERERS]

    @settings(max_examples=sized(40, 400), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        def respond(_messages: object) -> ScriptedReply:
            return ScriptedReply(data.draw(REPLIES), top=data.draw(
                st.dictionaries(REPLIES, LOGPROBS, max_size=4)))

        llm = ScriptedLLM(respond=respond, scores={})
        answerer = answerers[data.draw(st.integers(0, len(answerers) - 1))]
        result = judge_sample(SAMPLE, llm, answerer, judges, rule=rule_of("majority"))
        assert isinstance(result.answer.text, str)
        assert all(0 <= i < len(SAMPLE.passages) for i in result.answer.evidence)
        for verdict in result.verdicts:
            assert verdict.error is None, verdict
            assert verdict.keep in (True, False, None)
            assert verdict.score is None or math.isfinite(verdict.score), verdict
            assert verdict.keep is not None or not verdict.available, verdict

    check()
    scenario.figure("judges", len(judges))
    scenario.figure("samples judged", sized(40, 400))
    scenario.check("every answerer reads any reply into an answer with valid passage ids", True)
    scenario.check("every judge reads any reply and log-probs into a well-formed verdict "
                   "(no error, finite score)", True)
