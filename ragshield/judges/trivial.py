"""Trivial judge (docs/METHODS.md 4.2): always keep. The baseline every curve is compared with."""

from __future__ import annotations

from ragshield.judges.base import Judge
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, Verdict


class TrivialJudge(Judge):
    name = "trivial"
    cost = "free"
    requires = frozenset()

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        return Verdict(judge=self.name, keep=True, score=None, rationale="always keeps")
