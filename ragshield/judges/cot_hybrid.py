"""CoT few-shot hybrid (docs/METHODS.md 4.4): an InstructRAG-style rationale whose few-shot examples
show abstaining with __DONT_KNOW__ when the passages are not relevant; the final answer
follows "Response:"; keep = that answer is not a refusal.

The examples come after the shared prefix (so the cached passages are reused) and are
marked as being about other questions; they show the two-line format without passages of
their own (with passages, the 0.5B model echoed them). Replace them with `examples=`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ragshield.answerers.context import PromptOptions
from ragshield.judges.own_answer import OwnAnswerJudge
from ragshield.refusal import REFUSAL_TOKEN

ANSWER_PREFIX = "Response"


@dataclass(frozen=True)
class Example:
    question: str
    rationale: str  # names the passage that answers, or says none is relevant
    response: str


DEFAULT_EXAMPLES = (
    Example(
        question="Into which sea does the Nile flow?",
        rationale="Passage-2 says the Nile empties into the Mediterranean Sea.",
        response="the Mediterranean Sea",
    ),
    Example(
        question="Who painted the Mona Lisa?",
        rationale="The passages are about copper and rivers; none mentions the Mona Lisa.",
        response=REFUSAL_TOKEN,
    ),
)


def render_instructions(examples: Sequence[Example]) -> str:
    shots = "\n\n".join(
        f"Question: {e.question}\nRationale: {e.rationale}\n{ANSWER_PREFIX}: {e.response}"
        for e in examples
    )
    return (
        "Reply in two lines. First line: one sentence saying which passage answers the "
        "question, or that none of them is relevant. Second line: "
        f"\"{ANSWER_PREFIX}:\" followed by the answer in a few words, or "
        f"\"{ANSWER_PREFIX}: {REFUSAL_TOKEN}\" when no passage is relevant.\n\n"
        f"Examples, about other questions and passages:\n\n{shots}\n\n"
        "Now the question above."
    )


class CoTHybridJudge(OwnAnswerJudge):
    name = "cot_hybrid"
    cost = "costly"
    max_tokens = 64  # one sentence of rationale plus the Response line
    answer_prefix = ANSWER_PREFIX

    def __init__(
        self, examples: Sequence[Example] = DEFAULT_EXAMPLES,
        options: PromptOptions = PromptOptions(),
    ) -> None:
        super().__init__(options)
        self._instructions = render_instructions(examples)

    def instructions(self) -> str:
        return self._instructions
