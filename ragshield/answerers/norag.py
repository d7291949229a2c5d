"""No-RAG (docs/METHODS.md 4.1): the model's own knowledge only, no passages.

Used as the fallback answer (docs/METHODS.md 5.3) and by dual generation (4.11). Its prompt keeps
the common system text but not the passages, so it does not share the sample's cached
prefix: `shares_prefix` is False and the pipeline runs it after the judges.
"""

from __future__ import annotations

from ragshield.answerers.context import SYSTEM_TEXT
from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.types import Message, Sample

INSTRUCTIONS = (
    "No passages are given for this question: answer it from your own knowledge, in as few "
    "words as you can, without any explanation. If you do not know, reply \"I don't know\"."
)


class NoRagAnswerer(PromptedAnswerer):
    name = "norag"
    shares_prefix = False
    shows_passages = False

    def instructions(self, sample: Sample) -> str:
        return INSTRUCTIONS

    def messages(self, sample: Sample) -> list[Message]:
        question = f"Question: {sample.question}\n\n{self.instructions(sample)}"
        return [{"role": "system", "content": SYSTEM_TEXT}, {"role": "user", "content": question}]
