"""The answerer protocol: a sample in, an Answer (with its trace) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ragshield.answerers.context import PromptOptions
from ragshield.llm.base import LLM
from ragshield.llm.traced import TracedLLM
from ragshield.types import Answer, Sample


class Answerer(ABC):
    name: ClassVar[str]
    max_tokens: ClassVar[int] = 64
    # False for answerers whose prompt does not start with the shared prefix (No-RAG): the
    # pipeline runs them after the judges so they do not evict the cached passages.
    shares_prefix: ClassVar[bool] = True

    def __init__(self, options: PromptOptions = PromptOptions()) -> None:
        self.options = options

    def answer(self, sample: Sample, llm: LLM) -> Answer:
        traced = TracedLLM(llm)
        answer = self.generate(sample, traced)
        answer.calls = traced.calls
        return answer

    def model_name(self, sample: Sample, llm: LLM) -> str | None:
        """The model that wrote the answer to `sample`: the one asked (None: unknown)."""
        return llm.name

    @abstractmethod
    def generate(self, sample: Sample, llm: TracedLLM) -> Answer:
        """Build the prompt, call the model through `llm`, parse the reply."""
