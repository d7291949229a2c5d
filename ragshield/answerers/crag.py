"""CRAG prompts (docs/METHODS.md 4.1, RAG-X on the KDD Cup 2024 CRAG benchmark): the question's
query time, an answer in few words, "invalid question" for a false premise and "I don't
know" when unsure; with or without a chain of thought ("Thought:" then "Final Answer:"), and
with or without permission to answer from the model's own knowledge."""

from __future__ import annotations

from ragshield.answerers.context import PromptOptions
from ragshield.answerers.prompted import PromptedAnswerer
from ragshield.types import Sample

ONLY_PASSAGES = (
    "Use only the passages above; if they do not contain the answer, reply \"I don't know\"."
)
OWN_KNOWLEDGE = (
    "Prefer the passages above; if they do not contain the answer, you may use your own "
    "knowledge, but reply \"I don't know\" if you are not sure."
)
RULES = (
    "Answer in as few words as you can. If the question rests on a false premise (it assumes "
    "something that is not true), reply \"invalid question\". If you are not sure of the "
    "answer, reply \"I don't know\"."
)
WITH_THOUGHT = (
    "First think briefly, in one or two short sentences, on a line that starts with "
    "\"Thought:\". Then give the answer on a last line that starts with \"Final Answer:\"."
)
WITHOUT_THOUGHT = "Reply with the answer only, without any explanation."


class CragAnswerer(PromptedAnswerer):
    name = "crag"

    def __init__(
        self, options: PromptOptions = PromptOptions(), *, cot: bool = False,
        own_knowledge: bool = False,
    ) -> None:
        super().__init__(options)
        self.cot = cot
        self.own_knowledge = own_knowledge
        self.expected_prefix = "Final Answer" if cot else None

    def instructions(self, sample: Sample) -> str:
        query_time = sample.meta.get("query_time")
        parts = [
            f"The question was asked at this time: {query_time}." if query_time else "",
            RULES,
            OWN_KNOWLEDGE if self.own_knowledge else ONLY_PASSAGES,
            WITH_THOUGHT if self.cot else WITHOUT_THOUGHT,
        ]
        return " ".join(p for p in parts if p)
