"""P(True) (docs/METHODS.md 4.12): show the proposed answer and ask whether it is true;
score = P(yes)."""

from __future__ import annotations

from ragshield.judges.yes_no import REPLY_YES_OR_NO, YesNoJudge
from ragshield.types import Answer, Sample


class PTrueJudge(YesNoJudge):
    name = "p_true"
    claim = "the proposed answer is true"
    quotes_answer = True

    def instructions(self, sample: Sample, answer: Answer) -> str:
        return (f"Proposed answer: {answer.text}\n\n"
                f"Is the proposed answer to the question true? {REPLY_YES_OR_NO}")
