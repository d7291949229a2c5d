"""Pre-answering prediction (docs/METHODS.md 4.5): do the passages contain the answer? Uses the
question and passages only, never the answer; score = P(yes)."""

from __future__ import annotations

from ragshield.judges.yes_no import REPLY_YES_OR_NO, YesNoJudge
from ragshield.types import Answer, Sample


class PreAnswerJudge(YesNoJudge):
    name = "pre_answer"
    claim = "the passages contain the answer"

    def instructions(self, sample: Sample, answer: Answer) -> str:
        return f"Do the passages above contain the answer to the question? {REPLY_YES_OR_NO}"
