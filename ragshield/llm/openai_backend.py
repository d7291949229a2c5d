"""Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp server, Ollama, TGI) via `openai`.

Retries are ours, not the client's, so the policy is explicit: connection errors, timeouts,
429 and 5xx are retried with exponential backoff (honouring Retry-After), a 4xx never is.
Capabilities are probed on first use: a one-token call tells whether log-probs come back.
Replies are untrusted: a body of the wrong shape is a ServerFailed naming what is wrong, and the
API key never appears in an error message, even when a server echoes it (cut short, too: the
upstream's scrub, llm/upstream_scrub.py), nor does the URL's password or query.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from functools import cached_property
from typing import Any, Callable, Sequence, TypeVar, Unpack, cast

import openai

from ragshield.llm.base import (CHAT, LOGPROBS, BackendBase, CapabilityError, ChatOptions,
                                ChatParams, ServerFailed)
from ragshield.llm.upstream_scrub import HIDDEN, Scrub, shown_url
from ragshield.types import Completion, ContinuationScore, Message, TokenLogprob

T = TypeVar("T")
MAX_RETRY_AFTER_S = 30.0
PROBE = [{"role": "user", "content": "Say yes."}]


def _retryable(exc: openai.APIConnectionError | openai.APIStatusError) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return True  # connection errors and timeouts


class ErrorReply(ServerFailed):
    """The server answered with an error status: a 4xx other than 429 at once (retrying
    cannot help), or a 429 or 5xx on every attempt."""


def _retry_after(exc: Exception) -> float | None:
    """Seconds the server asks us to wait (Retry-After as seconds or as an HTTP date), within
    [0, MAX_RETRY_AFTER_S]; None when absent or unreadable."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if math.isfinite(seconds) else None


def _field(item: Any, name: str) -> Any:
    """A field of a parsed reply part (the client's object, or a dict it left as is)."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _count(value: Any) -> int:
    """A token count from the server's usage block; 0 when missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _logprob(value: Any) -> float | None:
    """A log-probability, or None when it is not a finite number. Values above 0 are
    rounding noise of a probability of 1 and read as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return min(float(value), 0.0)


def _token(item: Any) -> TokenLogprob | None:
    token, logprob = _field(item, "token"), _logprob(_field(item, "logprob"))
    top: dict[str, float] = {}
    for alt in _field(item, "top_logprobs") or []:
        alt_token, alt_logprob = _field(alt, "token"), _logprob(_field(alt, "logprob"))
        if not isinstance(alt_token, str) or alt_logprob is None:
            return None
        top[alt_token] = alt_logprob
    if not isinstance(token, str) or logprob is None:
        return None
    return TokenLogprob(token=token, logprob=logprob, top=top)


def _logprob_items(choice: Any) -> list[Any] | None:
    """The per-token log-prob entries of a choice, None when it carries none."""
    items = _field(_field(choice, "logprobs"), "content")
    return items if isinstance(items, list) else None


def _first_choice(response: Any) -> Any:
    choices = _field(response, "choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("no choices")
    return choices[0]


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
        # The key is only handed to the client, and scrubbed out of error messages: never
        # stored, logged or put in a message.
        self._scrub = Scrub(api_key, HIDDEN)
        self.shown_url = shown_url(base_url)
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0
        )
        self.model = model or self._served_model()

    def _error(self, kind: type[ServerFailed], message: str) -> ServerFailed:
        """An error whose message cannot leak the API key (a server may echo it back, whole
        or cut short) nor the URL's secrets."""
        return kind(f"{self.shown_url}: {self._scrub.line(message)}")

    def _call(self, what: str, fn: Callable[[], T], read: Callable[[T], Any] = lambda r: r) -> Any:
        """`read(fn())`, retrying what may pass (connection errors, timeouts, 429, 5xx)."""
        for attempt in range(self.max_retries + 1):
            try:
                return read(fn())
            except (openai.APIConnectionError, openai.APIStatusError) as exc:  # timeouts too
                if not _retryable(exc):
                    raise self._error(ErrorReply, f"{what} was refused: {exc}") from exc
                if attempt == self.max_retries:
                    kind = (ErrorReply if isinstance(exc, openai.APIStatusError)
                            else ServerFailed)
                    raise self._error(
                        kind, f"{what} failed after {attempt + 1} attempts: {exc}") from exc
                wait = _retry_after(exc)
                time.sleep(self.backoff_s * 2**attempt if wait is None else wait)
            except (openai.OpenAIError, ValueError) as exc:  # a body we cannot read
                raise self._error(
                    ServerFailed, f"{what} returned an unreadable response: {exc}") from exc
        raise AssertionError("unreachable: the loop returns or raises")

    def _served_model(self) -> str:
        models = self._call("listing models", self._client.models.list,
                            lambda page: _field(page, "data"))
        first = models[0] if isinstance(models, list) and models else None
        if not isinstance(_field(first, "id"), str):
            raise self._error(ServerFailed, "the server lists no model; set one explicitly")
        return _field(first, "id")

    @cached_property
    def capabilities(self) -> frozenset[str]:  # type: ignore[override]
        """Probe once: does the server return log-probs with top alternatives? A passing
        failure (5xx, 429, timeout) is retried like any call rather than taken for a "no";
        an error status that persists means the server rejects the log-probs parameters."""
        try:
            items = self._call(
                "probing for log-probs",
                lambda: self._client.chat.completions.create(
                    model=self.model, messages=cast(Any, PROBE), max_tokens=1, temperature=0.0,
                    logprobs=True, top_logprobs=2,
                ),
                lambda response: _logprob_items(_first_choice(response)),
            )
        except ErrorReply:
            return frozenset({CHAT})
        first = _token(items[0]) if items else None
        if first is not None and first.top:
            return frozenset({CHAT, LOGPROBS})
        return frozenset({CHAT})

    def chat(self, messages: Sequence[Message], **options: Unpack[ChatOptions]) -> Completion:
        params = ChatParams.of(options)
        extra: dict[str, Any] = {}
        if params.logprobs:
            self.require(LOGPROBS)
            # At least one alternative: llama.cpp's server returns no log-probs at all
            # when top_logprobs is left out, whatever `logprobs` says.
            extra = {"logprobs": True, "top_logprobs": max(params.top_logprobs, 1)}
        started = time.perf_counter()
        return self._call(
            "chat completion",
            lambda: self._client.chat.completions.create(
                model=self.model, messages=cast(Any, list(messages)),
                max_tokens=params.max_tokens, temperature=params.temperature, seed=params.seed,
                stop=list(params.stop) or None, **extra,
            ),
            lambda response: self._completion(response, params.logprobs,
                                              time.perf_counter() - started),
        )

    def _completion(self, response: Any, logprobs: bool, seconds: float) -> Completion:
        """The reply as a Completion; ValueError naming the part of a malformed reply."""
        choice = _first_choice(response)
        message = _field(choice, "message")
        text = _field(message, "content")
        if message is None or not isinstance(text, (str, type(None))):
            raise ValueError("the first choice holds no text message")
        tokens = None
        items = _logprob_items(choice) if logprobs else None
        if items is not None:
            tokens = [_token(item) for item in items]
            if None in tokens:
                raise ValueError("malformed log-probs (a token without text or a finite value)")
        finish = _field(choice, "finish_reason")
        usage = _field(response, "usage")
        return Completion(
            text=text or "",
            backend=self.backend,
            model=self.model,
            prompt_tokens=_count(_field(usage, "prompt_tokens")),
            completion_tokens=_count(_field(usage, "completion_tokens")),
            seconds=seconds,
            finish_reason=finish if isinstance(finish, str) else None,
            cached_prompt_tokens=_count(_field(_field(usage, "prompt_tokens_details"),
                                               "cached_tokens")),
            tokens=tokens,  # type: ignore[arg-type]
        )

    def score(self, prompt_messages: Sequence[Message], continuation: str) -> ContinuationScore:
        raise CapabilityError(
            f"{self.name} cannot score a continuation: the chat API returns no log-probs "
            "for given tokens"
        )
