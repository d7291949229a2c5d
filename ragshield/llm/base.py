"""The one protocol every LLM backend implements, and the errors they raise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, TypedDict, Unpack, runtime_checkable

from ragshield.errors import UserError
from ragshield.types import Completion, ContinuationScore, Message

# Capability names a judge can require.
CHAT = "chat"
LOGPROBS = "logprobs"  # next-token log-probs with top alternatives on chat calls
SCORE = "score"  # log-probability of a given continuation after given messages


class ChatOptions(TypedDict, total=False):
    """The options of one chat call, as callers name them (ChatParams holds the defaults)."""

    max_tokens: int
    temperature: float
    seed: int
    logprobs: bool  # the log-probs of each generated token, with `top_logprobs` alternatives
    top_logprobs: int
    stop: Sequence[str] | None


@dataclass(frozen=True)
class ChatParams:
    """One chat call's options with their defaults, checked once for every backend."""

    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    logprobs: bool = False
    top_logprobs: int = 0
    stop: tuple[str, ...] = ()

    @classmethod
    def of(cls, options: ChatOptions) -> ChatParams:
        """The params of `options` (TypeError for an unknown one, ValueError for a bad one)."""
        given: dict[str, Any] = {**options, "stop": tuple(options.get("stop") or ())}
        params = cls(**given)
        if params.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {params.max_tokens}")
        return params

    @property
    def stops(self) -> list[str]:
        """The stop strings that can stop anything (an empty one cannot)."""
        return [stop for stop in self.stop if stop]

    def as_options(self) -> ChatOptions:
        return ChatOptions(max_tokens=self.max_tokens, temperature=self.temperature,
                           seed=self.seed, logprobs=self.logprobs,
                           top_logprobs=self.top_logprobs, stop=self.stop)

    def request(self) -> dict[str, Any]:
        """The params as the call cache keys them (JSON: the stop strings as a list)."""
        return {**self.as_options(), "stop": list(self.stop)}


class Backed(Protocol):
    """Anything that says which backend serves it: a model, or a model traced."""

    @property
    def backend(self) -> str: ...


def serves_at_once(llm: Backed) -> bool:
    """Whether `llm` takes several calls at once: a model server (the openai backend) does;
    an in-process model serves one call at a time and keeps one KV cache, which calls
    interleaved would only evict from each other."""
    return llm.backend == "openai"


class LLMError(UserError, RuntimeError):
    """A backend could not serve a call (after its retries, if any)."""


class CapabilityError(LLMError):
    """The backend lacks a capability the caller asked for."""


class ServerFailed(LLMError):
    """A model server (the openai backend's) could not be reached, refused a call or answered
    what cannot be read: the server's fault, not the caller's (the guard API answers 502)."""


@runtime_checkable
class LLM(Protocol):
    backend: str
    model: str

    @property
    def capabilities(self) -> frozenset[str]: ...

    @property
    def name(self) -> str: ...

    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        """A reply to `messages` (options: ChatParams)."""
        ...

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore: ...


class WrappedLLM:
    """An LLM around another (`inner`): its backend, model, name and capabilities are the
    inner one's; a subclass adds what it does around each call."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.backend, self.model = inner.backend, inner.model

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> frozenset[str]:
        return self.inner.capabilities


class BackendBase:
    """Shared plumbing: the display name and the capability check."""

    backend: str = ""
    model: str = ""
    capabilities: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.model}"

    def require(self, capability: str) -> None:
        if capability not in self.capabilities:
            raise CapabilityError(
                f"{self.name} cannot serve '{capability}' (it offers {sorted(self.capabilities)})"
            )
