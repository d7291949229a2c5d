"""The shared step of every answerer: one chat call, its reply parsed into an Answer."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from ragshield.answerers.base import Answerer
from ragshield.answerers.context import shared_messages
from ragshield.answerers.parsing import parse_answer
from ragshield.llm.base import LOGPROBS
from ragshield.llm.traced import TracedLLM
from ragshield.refusal import is_refusal
from ragshield.types import Answer, Message, Sample

# Extra reply tokens for an answerer that reasons before its labelled final answer.
REASONING_TOKENS = 32


class PromptedAnswerer(Answerer):
    """An answerer whose prompt is the sample's shared prefix followed by its instructions.

    Subclasses write `instructions`; those that ask for a labelled final answer or for cited
    passages say so with `expected_prefix` / `wants_evidence`, so that a reply without
    them is flagged (the answer is still read as well as it can be).
    """

    shows_passages: ClassVar[bool] = True  # cited ids are checked against the passages shown
    # Label the prompt asks for before the final answer ("Response"); set when the model is
    # asked to reason first, which also earns the reply REASONING_TOKENS more tokens.
    expected_prefix: str | None = None
    wants_evidence: ClassVar[bool] = False

    @abstractmethod
    def instructions(self, sample: Sample) -> str:
        """What the model is asked to do, written after the passages and the question."""

    def messages(self, sample: Sample) -> list[Message]:
        return shared_messages(sample, self.instructions(sample), self.options)

    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        messages = self.messages(sample)
        budget = self.max_tokens + (REASONING_TOKENS if self.expected_prefix else 0)
        # Log-probs cost nothing extra where the backend has them, and spare judges such as
        # token_prob a second pass over the answer.
        raw = llm.chat(messages, purpose=f"{self.name} answer", max_tokens=budget,
                       logprobs=LOGPROBS in llm.capabilities).text
        shown = len(sample.passages) if self.shows_passages else 0
        parsed = parse_answer(raw, shown, expected_prefix=self.expected_prefix,
                              wants_evidence=self.wants_evidence)
        llm.record_parse({"answer": parsed.text, "evidence": parsed.evidence,
                          "internal_knowledge": parsed.cites_internal_knowledge},
                         parsed.parse_error)
        return Answer(
            answerer=self.name, text=parsed.text, raw=raw, messages=messages,
            evidence=parsed.evidence, cites_internal_knowledge=parsed.cites_internal_knowledge,
            refusal=is_refusal(parsed.text), parse_error=parsed.parse_error,
        )
