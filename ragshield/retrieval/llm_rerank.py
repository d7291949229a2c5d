"""Reranking by the LLM: it rates each passage's relevance to the question from 0 to 10.

Ratings are read tolerantly ("8", "Rating: 8/10", "**7**"); a passage whose reply holds no
rating keeps its place and is flagged with meta["rerank_unparsed"].
"""

from __future__ import annotations

import re
from typing import Sequence

from ragshield.llm.base import LLM
from ragshield.retrieval.rerank import reorder
from ragshield.types import Message, Passage

RATING_SYSTEM = "You judge how useful a passage is for answering a question."
RATING_INSTRUCTION = (
    "How relevant is the passage to the question, from 0 (unrelated) to 10 (it answers the "
    "question)? Reply with the number only."
)
SCALE_MENTION = re.compile(r"(?:out\s+of|/)\s*10(?!\d)|(?<!\d)0\s*(?:-|–|to)\s*10(?!\d)", re.I)
NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")


def rating_messages(question: str, passage: str) -> list[Message]:
    """The question comes before the passage so that calls for one question share a prefix."""
    return [
        {"role": "system", "content": RATING_SYSTEM},
        {"role": "user",
         "content": f"Question: {question}\n\nPassage:\n{passage}\n\n{RATING_INSTRUCTION}"},
    ]


def parse_rating(reply: str) -> float | None:
    """The first number in the reply once mentions of the scale are removed, if within 0-10."""
    match = NUMBER.search(SCALE_MENTION.sub(" ", reply))
    if match is None:
        return None
    value = float(match.group())
    return value if value <= 10 else None


class LLMReranker:
    def __init__(self, llm: LLM, *, max_tokens: int = 8, max_passage_chars: int = 2000):
        self.llm, self.max_tokens, self.max_passage_chars = llm, max_tokens, max_passage_chars
        self.name = f"llm:{llm.name}"

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        replies = [
            self.llm.chat(rating_messages(query, p.text[: self.max_passage_chars]),
                          max_tokens=self.max_tokens, temperature=0.0).text
            for p in passages
        ]
        ratings = [parse_rating(reply) for reply in replies]
        extra = [{"rerank_raw": reply, **({"rerank_unparsed": True} if rating is None else {})}
                 for reply, rating in zip(replies, ratings)]
        return reorder(passages, ratings, self.name, extra)
