"""The guarded system's own model: an OpenAI-compatible chat endpoint that the guard API's
proxy forwards requests to, as they are, and whose answer ragshield then judges.

Unlike the openai backend (llm/openai_backend.py), which asks a model for ragshield's own
prompts, this client passes a caller's request through unchanged (tools, temperature,
log-probs and all), so it speaks raw JSON over HTTP. Its failures are told apart because the
proxy answers each with its own status: the endpoint cannot be reached (502), it took too long
(504), it refused the request (its 4xx, passed on), or it replied with something that is not a
chat completion (502). No message ever carries the upstream's key, and URLs are shown masked.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import httpx

from ragshield.errors import UserError
from ragshield.types import TokenLogprob

MAX_REPLY_BYTES = 4_000_000  # a chat completion is kilobytes; more is not a reply we read


class UpstreamError(UserError):
    """The upstream did not give a usable completion. `status` is the HTTP status the guard
    answers with; the message names the masked upstream URL, never its key."""

    status = 502


class UpstreamUnreachable(UpstreamError):
    status = 502


class UpstreamTimeout(UpstreamError):
    status = 504


class UpstreamRefused(UpstreamError):
    """The upstream answered 4xx: the request is at fault, so its status is passed on."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class UpstreamBadReply(UpstreamError):
    status = 502


@dataclass(frozen=True)
class UpstreamReply:
    """The upstream's completion as it came (to hand back to the caller) and what ragshield
    judges from it: the first choice's text, the model, and its token log-probs if asked for."""

    body: dict[str, Any]
    text: str
    model: str | None
    tokens: list[TokenLogprob] | None


def _masked(url: str) -> str:
    """The URL without user, password or query (a key can hide in any of them)."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))


class UpstreamChat:
    """POSTs chat completion requests to `base_url` + /chat/completions with the upstream's
    own key. One connection pool, shared by the threads that call it."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = _masked(self.base_url)
        self._key = api_key
        self._client: httpx.Client | None = None
        self._opening = threading.Lock()

    def _http(self) -> httpx.Client:
        with self._opening:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
                self._client = httpx.Client(headers=headers, follow_redirects=False,
                                            limits=httpx.Limits(max_connections=64))
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "[upstream key]") if self._key else text

    def complete(self, body: dict[str, Any], timeout_s: float) -> UpstreamReply:
        """One completion; an UpstreamError saying what went wrong otherwise."""
        url = self.base_url + "/chat/completions"
        try:
            with self._http().stream("POST", url, json=body, timeout=timeout_s) as response:
                raw = bytearray()
                for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > MAX_REPLY_BYTES:
                        raise UpstreamBadReply(f"the upstream {self.shown_url} sent a reply "
                                               f"over {MAX_REPLY_BYTES} bytes")
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"the upstream {self.shown_url} did not answer within "
                                  f"{timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise UpstreamUnreachable(f"cannot reach the upstream {self.shown_url}: "
                                      f"{type(exc).__name__}") from exc
        if response.status_code >= 400:
            detail = self._scrub(_error_message(bytes(raw)))
            message = f"the upstream {self.shown_url} answered {response.status_code}: {detail}"
            if 400 <= response.status_code < 500 and response.status_code not in (401, 403):
                raise UpstreamRefused(message, response.status_code)
            # Its own server errors, and refusing our key, are the upstream's fault, not the
            # caller's: a bad gateway.
            raise UpstreamBadReply(message)
        return _reply(bytes(raw), self.shown_url)


def _error_message(raw: bytes) -> str:
    """The message of an OpenAI-style error body, or the start of whatever came."""
    try:
        body = json.loads(raw)
        message = body["error"]["message"] if isinstance(body.get("error"), dict) else body
    except (ValueError, TypeError, KeyError, AttributeError):
        message = raw.decode("utf-8", "replace")
    return " ".join(str(message).split())[:300]


def _reply(raw: bytes, shown_url: str) -> UpstreamReply:
    try:
        body = json.loads(raw)
        choice = body["choices"][0]
        text = choice["message"]["content"]
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise UpstreamBadReply(f"the upstream {shown_url} did not reply with a chat "
                               f"completion ({type(exc).__name__})") from exc
    if not isinstance(text, str):
        raise UpstreamBadReply(f"the upstream {shown_url} replied without text (a tool call "
                               "or an empty message); only text answers are judged")
    model = body.get("model") if isinstance(body.get("model"), str) else None
    return UpstreamReply(body, text, model, _tokens(choice.get("logprobs")))


def _tokens(logprobs: Any) -> list[TokenLogprob] | None:
    """Token log-probs in the chat format ({"content": [{"token", "logprob"}, ...]}), when
    the caller asked for them and every entry reads; None otherwise."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None
    tokens = []
    for entry in logprobs["content"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        value = entry.get("logprob")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value > 0:
            return None
        tokens.append(TokenLogprob(entry["token"], float(value)))
    return tokens or None
