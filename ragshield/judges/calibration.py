"""Verbalized calibration (docs/METHODS.md 4.9): continuing the answer's conversation, ask how
likely the answer is to be correct, as one digit from 0 (surely wrong) to 9 (surely right).
score = the expected digit under the model's next-token distribution, divided by 9; keep =
score >= threshold.

The distribution is read rather than the digit written: asked in words, a 0.5B model states
the same confidence for nearly every answer (the written probability took one value on all of
100 SQuAD 2.0 samples), while the weight it spreads over the ten digits still moves with its
doubt. Without log-probs (a backend that has none) or without a digit among the first token's
alternatives, the written digit (or a written probability) is read instead, and the verdict
says which. An unreadable reply discards the answer (keep=False, score None, parse_error set):
the model did not vouch for it, and withholding is the conservative side of risk control.
"""

from __future__ import annotations

from ragshield.answerers.context import PromptOptions
from ragshield.judges.base import Judge
from ragshield.judges.readers import expected_digit, first_word_token, read_confidence_digit
from ragshield.llm.base import LOGPROBS
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Message, Sample, Verdict

QUESTION = (
    "How likely is your answer to be correct? Reply with one digit, from 0 (surely wrong) "
    "to 9 (surely right)."
)
MAX_TOKENS = 4
TOP_LOGPROBS = 20  # room for all ten digits beside a few other tokens


class CalibrationJudge(Judge):
    name = "calibration"
    continues_answer = True

    def __init__(self, threshold: float = 0.6, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        messages: list[Message] = [*answer.conversation, {"role": "user", "content": QUESTION}]
        with_logprobs = LOGPROBS in llm.capabilities
        completion = llm.chat(messages, purpose=f"{self.name}: confidence", max_tokens=MAX_TOKENS,
                              logprobs=with_logprobs,
                              top_logprobs=TOP_LOGPROBS if with_logprobs else 0)
        first = first_word_token(completion.tokens or [])
        p = expected_digit(first) if first is not None else None
        source = "the digits' distribution"
        if p is None:
            p, source = read_confidence_digit(completion.text), "the reply's text"
        error = None if p is not None else "no digit or probability in the reply"
        llm.record_parse(p, error)
        details = {"reply": completion.text, "probability": p, "read_from": source,
                   "threshold": self.threshold}
        if p is None:
            return Verdict(
                judge=self.name, keep=False, score=None, parse_error=error, details=details,
                rationale=f"could not read a confidence in {completion.text!r}; withheld",
            )
        keep = p >= self.threshold
        return Verdict(
            judge=self.name, keep=keep, score=p, details=details,
            rationale=(f"the model gives its answer a {p:.2f} chance of being correct, read "
                       f"from {source} ({'>=' if keep else '<'} threshold {self.threshold:g})"),
        )
