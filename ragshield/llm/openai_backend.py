"""Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp server, Ollama, TGI) via `openai`.

Retries are ours, not the client's, so the policy is explicit: connection errors, timeouts,
429 and 5xx are retried with exponential backoff (honouring Retry-After), a 4xx never is.
Capabilities are probed on first use: a one-token call tells whether log-probs come back.
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any, Callable, Sequence, TypeVar

import openai

from ragshield.llm.base import CHAT, LOGPROBS, BackendBase, CapabilityError, LLMError
from ragshield.types import Completion, ContinuationScore, Message, TokenLogprob

T = TypeVar("T")
MAX_RETRY_AFTER_S = 30.0
PROBE = [{"role": "user", "content": "Say yes."}]


def _retryable(exc: openai.APIConnectionError | openai.APIStatusError) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return True  # connection errors and timeouts


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class OpenAICompatibleLLM(BackendBase):
    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = base_url
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        # The key is only handed to the client: never stored, logged or put in a message.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0
        )
        self.model = model or self._served_model()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        for attempt in range(self.max_retries + 1):
            try:
                return fn()
            except (openai.APIConnectionError, openai.APIStatusError) as exc:  # timeouts too
                if not _retryable(exc):
                    raise LLMError(f"{self.base_url}: {what} was refused: {exc}") from exc
                if attempt == self.max_retries:
                    raise LLMError(
                        f"{self.base_url}: {what} failed after {attempt + 1} attempts: {exc}"
                    ) from exc
                time.sleep(_retry_after(exc) or self.backoff_s * 2**attempt)
            except (openai.OpenAIError, ValueError) as exc:  # a body we cannot read
                raise LLMError(f"{self.base_url}: {what} returned an unreadable response: {exc}") from exc
        raise AssertionError("unreachable: the loop returns or raises")

    def _served_model(self) -> str:
        models = self._call("listing models", lambda: self._client.models.list().data)
        if not models:
            raise LLMError(f"{self.base_url}: the server lists no model; set one explicitly")
        return models[0].id

    @cached_property
    def capabilities(self) -> frozenset[str]:  # type: ignore[override]
        """Probe once: does the server return log-probs with top alternatives?"""
        try:
            response = self._client.chat.completions.create(
                model=self.model, messages=PROBE, max_tokens=1, temperature=0.0,
                logprobs=True, top_logprobs=2,
            )
        except openai.APIStatusError:
            return frozenset({CHAT})  # the server rejects the log-probs parameters
        except openai.OpenAIError as exc:
            raise LLMError(f"{self.base_url}: cannot reach the server: {exc}") from exc
        content = response.choices[0].logprobs.content if response.choices[0].logprobs else None
        if content and content[0].top_logprobs:
            return frozenset({CHAT, LOGPROBS})
        return frozenset({CHAT})

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        logprobs: bool = False,
        top_logprobs: int = 0,
        stop: Sequence[str] | None = None,
    ) -> Completion:
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        extra: dict[str, Any] = {}
        if logprobs:
            self.require(LOGPROBS)
            extra = {"logprobs": True, "top_logprobs": top_logprobs or None}
        started = time.perf_counter()
        response = self._call(
            "chat completion",
            lambda: self._client.chat.completions.create(
                model=self.model, messages=list(messages), max_tokens=max_tokens,
                temperature=temperature, seed=seed, stop=list(stop) if stop else None, **extra,
            ),
        )
        seconds = time.perf_counter() - started
        if not response.choices:
            raise LLMError(f"{self.base_url}: the server returned no choices")
        choice = response.choices[0]
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        tokens = None
        if logprobs and choice.logprobs and choice.logprobs.content is not None:
            tokens = [
                TokenLogprob(
                    token=item.token,
                    logprob=item.logprob,
                    top={alt.token: alt.logprob for alt in (item.top_logprobs or [])},
                )
                for item in choice.logprobs.content
            ]
        return Completion(
            text=choice.message.content or "",
            backend=self.backend,
            model=self.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            seconds=seconds,
            finish_reason=choice.finish_reason,
            cached_prompt_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
            tokens=tokens,
        )

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        raise CapabilityError(
            f"{self.name} cannot score a continuation: the chat API returns no log-probs "
            "for given tokens"
        )
