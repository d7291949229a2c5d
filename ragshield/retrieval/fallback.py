"""The fixed fallback path (RAG-X): answer from the LLM alone first, and search the external
sources only when that answer is a refusal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ragshield.refusal import is_refusal
from ragshield.retrieval.sources import KnowledgeSource, gather
from ragshield.types import Passage


@dataclass
class FallbackResult:
    closed_book_answer: str
    refused: bool
    passages: list[Passage] = field(default_factory=list)  # searched only after a refusal


class FallbackRetrieval:
    def __init__(self, answer_alone: Callable[[str], str], sources: Sequence[KnowledgeSource], *,
                 refusal: Callable[[str], bool] = is_refusal):
        if not sources:
            raise ValueError("the fallback path needs at least one knowledge source")
        self.answer_alone, self.sources, self.refusal = answer_alone, list(sources), refusal

    def run(self, question: str, k: int) -> FallbackResult:
        answer = self.answer_alone(question)
        if not self.refusal(answer):
            return FallbackResult(answer, refused=False)
        return FallbackResult(answer, refused=True, passages=gather(self.sources, question, k))
