"""Priori judgment (docs/METHODS.md 4.10): before answering, the model may say it cannot answer from
the given passages and its own knowledge together; "unknown" -> discard."""

from __future__ import annotations

from ragshield.judges.own_answer import OwnAnswerJudge

INSTRUCTIONS = (
    "Can you answer the question using the passages above together with what you already "
    "know? If you can, reply with the answer in a few words. If you cannot, reply with the "
    "single word: unknown."
)


class PrioriJudge(OwnAnswerJudge):
    name = "priori"
    max_tokens = 32

    def instructions(self) -> str:
        return INSTRUCTIONS
