"""The shared steps of the multi-turn and multi-sample judges (counterfactual prompting,
IoE, self-consistency, dual generation): continue a conversation with one more user turn,
ask for an answer and read it like an answerer's reply, or ask for a value and read it with
a tolerant reader. Every call is recorded with what was read from it (`record_parse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from ragshield.answerers.parsing import ParsedAnswer, parse_answer
from ragshield.llm.traced import TracedLLM
from ragshield.types import Message, TokenLogprob

T = TypeVar("T")


def follow_up(conversation: list[Message], text: str) -> list[Message]:
    """The conversation (ending with the assistant's reply) plus one more user turn."""
    return [*conversation, {"role": "user", "content": text}]


@dataclass(frozen=True)
class Reply:
    """An answer the model gave to `messages`, as read by the answerers' parser."""

    messages: list[Message]
    raw: str
    parsed: ParsedAnswer
    tokens: list[TokenLogprob] | None = None  # with their alternatives, when asked for

    @property
    def text(self) -> str:
        return self.parsed.text

    @property
    def evidence(self) -> list[int]:
        return self.parsed.evidence

    @property
    def conversation(self) -> list[Message]:
        return [*self.messages, {"role": "assistant", "content": self.raw}]


def ask_answer(
    llm: TracedLLM, messages: list[Message], n_passages: int, *, purpose: str,
    max_tokens: int, temperature: float = 0.0, seed: int = 0, wants_evidence: bool = False,
    stop: list[str] | None = None, top_logprobs: int = 0,
) -> Reply:
    """One answer, parsed as answerers parse theirs (final answer, cited passage ids); with
    `top_logprobs`, its tokens and their alternatives too."""
    completion = llm.chat(messages, purpose=purpose, max_tokens=max_tokens,
                          temperature=temperature, seed=seed, stop=stop,
                          logprobs=bool(top_logprobs), top_logprobs=top_logprobs)
    parsed = parse_answer(completion.text, n_passages, wants_evidence=wants_evidence)
    llm.record_parse({"answer": parsed.text, "evidence": parsed.evidence}, parsed.parse_error)
    return Reply(messages, completion.text, parsed, completion.tokens)


def ask_value(
    llm: TracedLLM, messages: list[Message], read: Callable[[str], T | None], *,
    purpose: str, max_tokens: int, unreadable: str,
) -> tuple[T | None, str]:
    """A value read from the reply (None when `read` finds none; the call is then flagged
    with `unreadable`), and the reply's text."""
    text = llm.chat(messages, purpose=purpose, max_tokens=max_tokens).text
    value = read(text)
    llm.record_parse(value, None if value is not None else unreadable)
    return value, text
