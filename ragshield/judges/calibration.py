"""Verbalized calibration (docs/METHODS.md 4.9): continuing the answer's conversation, ask only for
the probability (0.0-1.0) that the answer is correct; keep = p >= threshold; score = p.

An unreadable reply discards the answer (keep=False, score None, parse_error set): the model
did not vouch for it, and withholding is the conservative side of risk control; keep=None
stays reserved for unavailable or failed judges.
"""

from __future__ import annotations

from ragshield.answerers.context import PromptOptions
from ragshield.judges.base import Judge
from ragshield.judges.readers import read_probability
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, Verdict

QUESTION = (
    "What is the probability that your answer is correct? Reply with only the probability, "
    "a number between 0.0 and 1.0."
)
MAX_TOKENS = 8


class CalibrationJudge(Judge):
    name = "calibration"
    continues_answer = True

    def __init__(self, threshold: float = 0.6, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        messages = [*answer.conversation, {"role": "user", "content": QUESTION}]
        completion = llm.chat(messages, purpose=f"{self.name}: probability", max_tokens=MAX_TOKENS)
        p = read_probability(completion.text)
        error = None if p is not None else "no probability in the reply"
        llm.record_parse(p, error)
        details = {"reply": completion.text, "probability": p, "threshold": self.threshold}
        if p is None:
            return Verdict(
                judge=self.name, keep=False, score=None, parse_error=error, details=details,
                rationale=f"could not read a probability in {completion.text!r}; withheld",
            )
        keep = p >= self.threshold
        return Verdict(
            judge=self.name, keep=keep, score=p, details=details,
            rationale=(f"the model gives its answer a {p:.2f} chance of being correct "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g})"),
        )
