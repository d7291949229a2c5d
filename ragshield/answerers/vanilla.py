"""Vanilla RAG (docs/METHODS.md 4.1): answer from the passages, as concisely as possible."""

from __future__ import annotations

from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.types import Sample

INSTRUCTIONS = (
    "Answer the question using the passages above. Give only the answer, in as few words as "
    "you can, without any explanation."
)


class VanillaAnswerer(PromptedAnswerer):
    name = "vanilla"

    def instructions(self, sample: Sample) -> str:
        return INSTRUCTIONS
