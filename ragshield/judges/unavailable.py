"""A stand-in for a judge that cannot be built here; every verdict says why."""

from __future__ import annotations

from ragshield.judges.base import Judge
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, Verdict


class UnavailableJudge(Judge):
    name = "unavailable"
    cost = "free"
    requires = frozenset()

    def __init__(self, name: str, reason: str) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]  # an instance name: the judge it stands for
        self.reason = reason

    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        return Verdict(judge=self.name, keep=None, available=False,
                       rationale=f"unavailable: {self.reason}")
