"""Unified judges that write their own answer with a prompt allowing abstention, and keep iff
that answer is not a refusal: intrinsic abstention (docs/METHODS.md 4.3), the CoT few-shot hybrid
(4.4) and priori judgment (4.10).

The verdict is hard (a fixed precision/recall point), so score is None. The judge's own
answer is in `details["answer"]`; `details["same_as_base"]` says whether it agrees with the
answer being judged (matcher of docs/METHODS.md 2). An empty reply counts as a refusal (discard),
flagged as a parse error.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from ragshield.answerers.context import shared_messages
from ragshield.answerers.parsing import final_answer
from ragshield.judges.base import Cost, Judge
from ragshield.llm.traced import TracedLLM
from ragshield.metrics.correctness import same_answer
from ragshield.refusal import is_refusal
from ragshield.types import Answer, Sample, Verdict


class OwnAnswerJudge(Judge):
    cost: ClassVar[Cost] = "moderate"  # it writes an answer of its own
    max_tokens: ClassVar[int] = 48
    answer_prefix: ClassVar[str | None] = None  # the label before the final answer, if asked

    @abstractmethod
    def instructions(self) -> str:
        """What follows the shared prefix: how to answer and how to abstain."""

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        completion = llm.chat(shared_messages(sample, self.instructions(), self.options),
                              purpose=f"{self.name}: own answer", max_tokens=self.max_tokens)
        text, note = final_answer(completion.text, self.answer_prefix)
        llm.record_parse(text, note)
        refused = is_refusal(text)
        return Verdict(
            judge=self.name, keep=not refused, score=None, parse_error=note,
            rationale=(f"the model abstained: {text!r}" if refused
                       else f"the model answered {text!r}"),
            details={"answer": text, "raw": completion.text, "refusal": refused,
                     "same_as_base": same_answer(text, answer.text)},
        )
