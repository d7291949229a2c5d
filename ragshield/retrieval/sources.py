"""Named knowledge sources and the LLM router that picks where to search (RAG-X): source a,
source b, or both. A reply that names neither falls back to both, and says so."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, Sequence

from ragshield.llm.base import LLM
from ragshield.retrieval.corpus import Corpus
from ragshield.retrieval.retriever import Retriever
from ragshield.types import Message, Passage

RouteChoice = Literal["a", "b", "both"]
ROUTER_SYSTEM = "You decide where to look for the answer to a question."
BOTH = re.compile(r"\bboth\b|\b[ab]\s*(?:and|&|\+|,)\s*[ab]\b")
LETTER_PATTERNS = (
    re.compile(r"^\W*\(?([ab])\)?\W*$"),  # the whole reply is the letter: "b", "(a)."
    re.compile(r"^\W*\(?([ab])(?:\)|[.:,-]|\s*\n)"),  # opening the reply: "a) wiki", "b: ..."
    re.compile(r"\b(?:option|source|answer|choice)\s*[:-]?\s*\(?([ab])\b"),  # "Answer: b"
)


@dataclass(frozen=True)
class KnowledgeSource:
    name: str
    description: str  # one line on what it holds, shown to the router
    retriever: Retriever

    @classmethod
    def of_corpus(cls, corpus: Corpus, retriever: Retriever) -> KnowledgeSource:
        """Named and described as the corpus was at ingestion."""
        description = corpus.manifest.description or f"the documents of corpus '{corpus.name}'"
        return cls(corpus.name, description, retriever)


@dataclass(frozen=True)
class Route:
    choice: RouteChoice
    sources: tuple[KnowledgeSource, ...]
    reply: str  # the router's raw reply
    fell_back: bool  # the reply named no source, so both are searched


def gather(sources: Sequence[KnowledgeSource], question: str, k: int) -> list[Passage]:
    """The top `k` passages of each source in turn, tagged meta["knowledge_source"]."""
    return [
        replace(p, meta={**p.meta, "knowledge_source": source.name})
        for source in sources
        for p in source.retriever.search(question, k)
    ]


def parse_route(reply: str, names: tuple[str, str]) -> RouteChoice | None:
    """The choice in a reply: "both" (or "a and b"), a letter, or the one source name it
    mentions; None when it names none of them."""
    text = reply.strip().lower()
    if BOTH.search(text):
        return "both"
    for pattern in LETTER_PATTERNS:
        if match := pattern.search(text):
            return match.group(1)  # type: ignore[return-value]
    mentioned = [letter for letter, name in zip("ab", names)
                 if re.search(rf"\b{re.escape(name.lower())}\b", text)]
    if len(mentioned) == 1:
        return mentioned[0]  # type: ignore[return-value]
    return "both" if mentioned else None


class SourceRouter:
    def __init__(self, llm: LLM, a: KnowledgeSource, b: KnowledgeSource, *, max_tokens: int = 8):
        self.llm, self.a, self.b, self.max_tokens = llm, a, b, max_tokens

    def messages(self, question: str) -> list[Message]:
        return [
            {"role": "system", "content": ROUTER_SYSTEM},
            {"role": "user", "content": (
                f"Sources:\n(a) {self.a.name}: {self.a.description}\n"
                f"(b) {self.b.name}: {self.b.description}\n\nQuestion: {question}\n\n"
                "Which source should be searched to answer the question? "
                "Reply with one of: a, b, both."
            )},
        ]

    def route(self, question: str) -> Route:
        reply = self.llm.chat(
            self.messages(question), max_tokens=self.max_tokens, temperature=0.0
        ).text
        choice = parse_route(reply, (self.a.name, self.b.name))
        chosen = choice or "both"
        sources = {"a": (self.a,), "b": (self.b,), "both": (self.a, self.b)}[chosen]
        return Route(chosen, sources, reply, fell_back=choice is None)

    def retrieve(self, question: str, k: int) -> tuple[Route, list[Passage]]:
        route = self.route(question)
        return route, gather(route.sources, question, k)
