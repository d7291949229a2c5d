"""Given answers: the answer an outside system wrote, read from the sample and judged as it
is. No model is asked.

The answer's prompt is the vanilla answerer's (system text, passages, question, then the
instructions), and the given text is its reply, so judges that continue the conversation or
ask the prompt again find the given answer in the assistant's turn. Its evidence is the
passages it cites. Token log-probs that came with it are kept in the trace as one entry of
kind GIVEN_CALL (no model call, no cost) whose output is the answer: token_prob reads them
there as it reads a generation's, and re-scores the text with the judge model without them.
"""

from __future__ import annotations

from ragshield.answerers.base import Answerer
from ragshield.answerers.context import shared_messages
from ragshield.answerers.vanilla import INSTRUCTIONS
from ragshield.errors import UserError
from ragshield.llm.base import LLM
from ragshield.llm.traced import TracedLLM
from ragshield.refusal import is_refusal
from ragshield.types import GIVEN_CALL, Answer, GivenAnswer, LLMCall, Sample

PURPOSE = "given answer"


class MissingGivenAnswerError(UserError, ValueError):
    """The sample carries no given answer to judge."""


def given_answer_of(sample: Sample) -> GivenAnswer:
    """The sample's given answer; MissingGivenAnswerError, naming the sample, without one."""
    if sample.given_answer is None:
        raise MissingGivenAnswerError(
            f"sample {sample.id!r} has no given answer: its dataset row needs an `answer`")
    return sample.given_answer


class GivenAnswerer(Answerer):
    name = "given"

    def model_name(self, sample: Sample, llm: LLM) -> str | None:
        return given_answer_of(sample).model

    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        given = given_answer_of(sample)
        messages = shared_messages(sample, INSTRUCTIONS, self.options)
        if given.tokens:
            llm.calls.append(LLMCall(purpose=PURPOSE, messages=list(messages),
                                     output=given.text, kind=GIVEN_CALL,
                                     logprobs=list(given.tokens)))
        return Answer(answerer=self.name, text=given.text, raw=given.text, messages=messages,
                      evidence=list(given.cited or []), refusal=is_refusal(given.text))
