"""The judge protocol: a judge declares what it needs from the backend and decides.

`Judge.judge` is the one entry point. It reports a judge the backend cannot serve as
unavailable (never skipped or faked), turns a backend failure into a verdict with `error`,
and attaches the full trace of calls. Subclasses implement `decide` only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ragshield.answerers.context import PromptOptions
from ragshield.llm.base import CHAT, LLM, LLMError
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample, Verdict


class Judge(ABC):
    name: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset({CHAT})
    # False for judges whose calls do not start with the sample's shared prefix (e.g. a
    # no-passage answer): the pipeline runs them last so they do not evict the cached prefix.
    shares_prefix: ClassVar[bool] = True
    # True for judges whose calls start with the base answer's whole prompt (they continue
    # its conversation or sample it again): run right after the base answer, they find all
    # of it, the answerer's instructions and the answer included, in the cached prefix.
    continues_answer: ClassVar[bool] = False

    def __init__(self, options: PromptOptions = PromptOptions()) -> None:
        self.options = options

    def judge(self, sample: Sample, answer: Answer, llm: LLM) -> Verdict:
        missing = self.requires - llm.capabilities
        if missing:
            return Verdict(
                judge=self.name, keep=None, available=False,
                rationale=f"unavailable: {llm.name} cannot provide {', '.join(sorted(missing))}",
            )
        traced = TracedLLM(llm)
        try:
            verdict = self.decide(sample, answer, traced)
        except LLMError as exc:
            return Verdict(judge=self.name, keep=None, error=str(exc),
                           rationale=f"error: {exc}", trace=traced.calls)
        verdict.trace = traced.calls
        return verdict

    @abstractmethod
    def decide(self, sample: Sample, answer: Answer, llm: TracedLLM) -> Verdict:
        """The judge's own logic; every model call goes through `llm` (and into the trace)."""
