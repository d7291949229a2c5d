"""InstructRAG (docs/METHODS.md 4.1): few-shot chain of thought. The model explains how the passages
lead to the answer (or that they do not help, and then answers from its own knowledge) and
gives the final answer after "Response:".

The examples show the shape of a reply; give dataset-specific ones through `examples`.
They come after the shared prefix, so changing them never invalidates the cached passages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ragshield.answerers.context import PromptOptions
from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.errors import OptionError
from ragshield.types import Sample


@dataclass(frozen=True)
class FewShotExample:
    question: str
    rationale: str  # how the (example's) passages lead to the answer, citing their labels
    answer: str


DEFAULT_EXAMPLES = (
    FewShotExample(
        question="Which river flows through Vienna?",
        rationale="Passage-1 says that Vienna was built on the banks of the Danube.",
        answer="the Danube",
    ),
    FewShotExample(
        question="Who painted the ceiling of the Sistine Chapel?",
        rationale="The passages describe Florentine buildings and do not mention the chapel. "
                  "From my own knowledge, it was painted by Michelangelo.",
        answer="Michelangelo",
    ),
)

INSTRUCTIONS = (
    "First explain, in one or two short sentences, how the passages above lead to the answer, "
    "naming the passages you rely on. If they do not help, say so and answer from your own "
    "knowledge. Then write the answer, in a few words, on a last line that starts with "
    "\"Response:\"."
)


def as_example(value: FewShotExample | Mapping[str, Any]) -> FewShotExample:
    """An example from a FewShotExample or a mapping with keys question, rationale, answer
    (as written in a run's JSON configuration)."""
    if isinstance(value, FewShotExample):
        return value
    try:
        return FewShotExample(
            str(value["question"]), str(value["rationale"]), str(value["answer"])
        )
    except (KeyError, TypeError) as exc:
        raise OptionError(
            f"a few-shot example needs the keys question, rationale and answer; got {value!r}"
        ) from exc


class InstructRagAnswerer(PromptedAnswerer):
    name = "instructrag"
    expected_prefix = "Response"

    def __init__(
        self,
        options: PromptOptions = PromptOptions(),
        examples: Sequence[FewShotExample | Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(options)
        chosen = DEFAULT_EXAMPLES if examples is None else examples
        self.examples = tuple(as_example(e) for e in chosen)

    def instructions(self, sample: Sample) -> str:
        shots = "\n\n".join(
            f"Example {i} (question: {e.question})\n{e.rationale}\nResponse: {e.answer}"
            for i, e in enumerate(self.examples, start=1)
        )
        if not shots:
            return INSTRUCTIONS
        return (f"{INSTRUCTIONS}\n\nExample replies to other questions (with other passages):"
                f"\n\n{shots}\n\nNow your reply to the question above:")
