"""Intrinsic abstention (docs/METHODS.md 4.3): answer with permission to reply __DONT_KNOW__."""

from __future__ import annotations

from ragshield.judges.own_answer import OwnAnswerJudge
from ragshield.refusal import REFUSAL_TOKEN

INSTRUCTIONS = (
    "Answer the question in as few words as possible, using only the passages. If the "
    f"passages do not contain the answer, reply with exactly {REFUSAL_TOKEN} and nothing else."
)


class IntrinsicJudge(OwnAnswerJudge):
    name = "intrinsic"

    def instructions(self) -> str:
        return INSTRUCTIONS
