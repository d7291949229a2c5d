"""An LLM wrapper that records every call as an LLMCall: the trace of an answer or verdict."""

from __future__ import annotations

from typing import Any, Sequence, Unpack

from ragshield.llm.base import LLM, ChatOptions
from ragshield.types import Completion, ContinuationScore, LLMCall, Message


class TracedLLM:
    """Same protocol as the wrapped LLM; each call takes a `purpose` and lands in `calls`."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.calls: list[LLMCall] = []

    @property
    def capabilities(self) -> frozenset[str]:
        return self.inner.capabilities

    @property
    def backend(self) -> str:
        return self.inner.backend

    @property
    def name(self) -> str:
        return self.inner.name

    def chat(self, messages: Sequence[Message], *, purpose: str,
             **params: Unpack[ChatOptions]) -> Completion:
        completion = self.inner.chat(messages, **params)
        self.calls.append(LLMCall(
            purpose=purpose,
            messages=[dict(m) for m in messages],  # type: ignore[misc]
            output=completion.text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cached_prompt_tokens=completion.cached_prompt_tokens,
            cache_hit=completion.cache_hit,
            seconds=completion.seconds,
            logprobs=completion.tokens,
            model=self.inner.name,
        ))
        return completion

    def score(self, messages: Sequence[Message], continuation: str, *,
              purpose: str) -> ContinuationScore:
        result = self.inner.score(messages, continuation)
        self.calls.append(LLMCall(
            purpose=purpose,
            messages=[dict(m) for m in messages],  # type: ignore[misc]
            output=continuation,
            parsed=result.mean_logprob,
            completion_tokens=len(result.tokens),
            cache_hit=result.cache_hit,
            seconds=result.seconds,
            kind="score",
            logprobs=result.tokens,
            model=self.inner.name,
        ))
        return result

    def record_parse(self, parsed: Any, error: str | None = None) -> None:
        """Attach what was read from the last call's output (and why it could not be read)."""
        self.calls[-1].parsed = parsed
        self.calls[-1].parse_error = error
