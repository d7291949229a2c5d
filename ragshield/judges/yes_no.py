"""Asking the model a yes/no question and reading P(yes) from its next-token distribution.

Shared by the judges that turn a yes/no question into a score: pre-answering prediction
(docs/METHODS.md 4.5), the NLI judge's llm engine (4.6) and P(True) (4.12).

The distribution is read at the reply's first word: leading tokens without a letter or a
digit (a space, "**", a quote) are skipped. When that distribution holds neither yes nor no,
the reply's text is read instead (P(yes) becomes 1.0 or 0.0) and the reading is flagged.

Unreadable replies: a judge built on `YesNoJudge` then discards (keep=False, score None,
parse_error set). A judge that could not vouch for an answer withholds it, the conservative
side of risk control; keep=None stays reserved for unavailable or failed judges (Verdict).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from ragshield.answerers.context import PromptOptions, shared_messages
from ragshield.judges.base import Judge
from ragshield.judges.readers import first_word_token, read_yes_no, yes_probability
from ragshield.llm.base import CHAT, LOGPROBS
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Message, Sample, Verdict

REPLY_YES_OR_NO = "Reply with one word: yes or no."
YES_NO_MAX_TOKENS = 4  # enough for "Yes." and a text fallback; the score is read at token 1
TOP_LOGPROBS = 10


@dataclass(frozen=True)
class YesNoReading:
    p_yes: float | None  # P(yes) / (P(yes) + P(no)); None when nothing could be read
    reply: str
    parse_error: str | None = None


def ask_yes_no(llm: TracedLLM, messages: list[Message], *, purpose: str) -> YesNoReading:
    """Ask, then read P(yes) from the first word's top alternatives (text as a fallback)."""
    completion = llm.chat(messages, purpose=purpose, max_tokens=YES_NO_MAX_TOKENS,
                          logprobs=True, top_logprobs=TOP_LOGPROBS)
    first = first_word_token(completion.tokens or [])
    p_yes = yes_probability(first) if first is not None else None
    error = None
    if p_yes is None:
        said = read_yes_no(completion.text)
        if said is None:
            error = "neither yes nor no in the reply or among its first token's alternatives"
        else:
            p_yes = 1.0 if said else 0.0
            error = "no yes/no among the first token's alternatives; read the reply's text"
    llm.record_parse(p_yes, error)
    return YesNoReading(p_yes, completion.text, error)


class YesNoJudge(Judge):
    """Score = P(yes) to one question asked after the sample's shared prefix;
    keep = score >= threshold (a default: fit it, small models lean towards "no")."""

    requires = frozenset({CHAT, LOGPROBS})
    claim: ClassVar[str]  # what a "yes" asserts, for the rationale

    def __init__(self, threshold: float = 0.5, options: PromptOptions = PromptOptions()) -> None:
        super().__init__(options)
        self.threshold = threshold

    @abstractmethod
    def instructions(self, sample: Sample, answer: Answer) -> str:
        """The question, written after the shared prefix."""

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        messages = shared_messages(sample, self.instructions(sample, answer), self.options)
        reading = ask_yes_no(llm, messages, purpose=f"{self.name}: yes/no")
        details = {"reply": reading.reply, "p_yes": reading.p_yes, "threshold": self.threshold}
        if reading.p_yes is None:
            return Verdict(judge=self.name, keep=False, score=None, details=details,
                           parse_error=reading.parse_error,
                           rationale=f"could not read yes or no in {reading.reply!r}; withheld")
        keep = reading.p_yes >= self.threshold
        return Verdict(
            judge=self.name, keep=keep, score=reading.p_yes, details=details,
            parse_error=reading.parse_error,
            rationale=(f"P(yes) = {reading.p_yes:.2f} that {self.claim} "
                       f"({'>=' if keep else '<'} threshold {self.threshold:g})"),
        )
