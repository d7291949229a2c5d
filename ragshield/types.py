"""Plain data types shared across the package."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict


class Message(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class TokenLogprob:
    """One generated (or scored) token, its log-probability and the top alternatives."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass
class Completion:
    """The result of one chat call, whichever backend served it."""

    text: str
    backend: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str | None = None
    cached_prompt_tokens: int = 0  # prompt tokens reused from the backend's prefix cache
    tokens: list[TokenLogprob] | None = None  # set when log-probs were asked for
    cache_hit: bool = False  # served from ragshield's call cache, not the model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        tokens = data.get("tokens")
        return cls(
            **{**data, "tokens": None if tokens is None else [TokenLogprob(**t) for t in tokens]}
        )


@dataclass
class ContinuationScore:
    """Log-probability of a given continuation after given messages (one entry per token)."""

    tokens: list[TokenLogprob]
    backend: str
    model: str
    seconds: float
    cache_hit: bool = False

    @property
    def total_logprob(self) -> float:
        return sum(t.logprob for t in self.tokens)

    @property
    def mean_logprob(self) -> float:
        return self.total_logprob / len(self.tokens) if self.tokens else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContinuationScore:
        return cls(**{**data, "tokens": [TokenLogprob(**t) for t in data["tokens"]]})


@dataclass
class Passage:
    """A piece of text shown to the model: given by a dataset or found by retrieval."""

    text: str
    title: str | None = None
    doc_id: str | None = None  # the document (or chunk) it comes from
    score: float | None = None  # retrieval score, when retrieved
    meta: dict[str, Any] = field(default_factory=dict)  # offsets, relevance flags, source...


@dataclass
class Sample:
    """One question with its passages and what is known about its answer (METHODS 1)."""

    id: str
    question: str
    passages: list[Passage] = field(default_factory=list)
    reference_answers: list[str] = field(default_factory=list)
    answerable: bool | None = None  # do the passages contain an answer, when known
    meta: dict[str, Any] = field(default_factory=dict)  # domain, question type, query time...
