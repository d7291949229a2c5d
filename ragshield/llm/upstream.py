"""The guarded system's own model: an OpenAI-compatible chat endpoint that the guard API's
proxy forwards requests to, as they are, and whose answer ragshield then judges.

Unlike the openai backend (llm/openai_backend.py), which asks a model for ragshield's own
prompts, this client passes a caller's request through unchanged (temperature, log-probs and
all), so it speaks raw JSON over HTTP. Its failures are told apart because the proxy answers
each with its own status: the endpoint cannot be reached (502), it took too long (504: the
whole exchange has one deadline, however slowly the upstream drips its reply), it refused the
request (its 4xx, passed on, a 429 with its Retry-After), or it replied with something that is
not a text answer in a chat completion the guard could store and send on (502). No message
ever carries the upstream's key, and URLs are shown masked.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import CancelledError
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ragshield import strict_json
from ragshield.errors import UserError
from ragshield.llm.upstream_scrub import Scrub
from ragshield.strict_json import JsonValueError
from ragshield.types import TokenLogprob

MAX_REPLY_BYTES = 4_000_000  # a chat completion is kilobytes; more is not a reply we read
THROTTLE_HEADERS = ("retry-after", "retry-after-ms")  # passed on with a 429, as OpenAI sends them
HEAD_FIELDS = ("id", "created", "model", "system_fingerprint")  # a completion's, kept from a stream
GUARD_FIELD = "ragshield"  # the guard's verdicts, in its answers


class UpstreamError(UserError):
    """The upstream did not give a usable completion. `status` is the HTTP status the guard
    answers with; the message names the masked upstream URL, never its key."""

    status = 502
    headers: dict[str, str] | None = None  # for the guard's answer (an upstream's Retry-After)


class UpstreamUnreachable(UpstreamError):
    status = 502


class UpstreamTimeout(UpstreamError):
    status = 504


class UpstreamRefused(UpstreamError):
    """The upstream answered 4xx: the request is at fault, so its status is passed on (with
    the headers that say when to retry, for a 429)."""

    def __init__(self, message: str, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers


class UpstreamBadReply(UpstreamError):
    status = 502


class UpstreamAbandoned(UpstreamError):
    """The caller gave up (its client left) while the upstream answered: the exchange was
    stopped, rather than waited for in a place of the guard's queue. Nobody reads it."""

    status = 499


# Takes what stops an exchange, to call should its caller give up (Outcome.when_given_up).
StopHook = Callable[[Callable[[], object]], None]


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
    own key. The exchanges run on one event loop thread, with one connection pool, for the
    threads that call it: there each has one deadline for all of it (httpx's timeouts bound
    each read, so an upstream dripping a byte at a time would hold its caller's thread, and
    its place in the guard's queue, for as long as it liked)."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = _masked(self.base_url)
        self.scrub = Scrub(api_key)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(headers=headers, follow_redirects=False,
                                         timeout=None,  # each exchange's deadline bounds it
                                         limits=httpx.Limits(max_connections=64))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._opening = threading.Lock()

    def _io(self) -> asyncio.AbstractEventLoop:
        """The event loop the exchanges run on, started with the first."""
        with self._opening:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever,
                                                name="upstream", daemon=True)
                self._thread.start()
            return self._loop

    def close(self) -> None:
        with self._opening:
            loop, thread, self._loop = self._loop, self._thread, None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def complete(self, body: dict[str, Any], timeout_s: float,
                 on_chunk: Callable[[dict[str, Any]], None] | None = None,
                 on_give_up: StopHook | None = None) -> UpstreamReply:
        """One completion, all of it within `timeout_s`; an UpstreamError saying what went
        wrong otherwise. A request with `"stream": true` is read as the server-sent events it
        brings, each chunk handed to `on_chunk` as it comes (on the exchange's thread), and
        the reply is the completion the chunks add up to. `on_give_up` is handed what stops
        the exchange at once (UpstreamAbandoned)."""
        chunks = (ChunkReader(self.shown_url, on_chunk, self.scrub) if body.get("stream")
                  else None)
        exchange = asyncio.run_coroutine_threadsafe(self._exchange(body, timeout_s, chunks),
                                                    self._io())
        if on_give_up is not None:
            on_give_up(exchange.cancel)
        try:
            status, headers, raw = exchange.result()
        except CancelledError:
            raise UpstreamAbandoned(f"the caller left while the upstream {self.shown_url} "
                                    "answered") from None
        if status >= 400:
            raise self._refusal(status, headers, raw)
        if chunks is not None and chunks.streamed:
            return chunks.reply()
        return _reply(raw, self.shown_url, self.scrub)

    async def _exchange(self, body: dict[str, Any], timeout_s: float,
                        chunks: ChunkReader | None) -> tuple[int, httpx.Headers, bytes]:
        """The upstream's status, headers and whole body (run on the loop); a stream of
        events is read by `chunks` as it comes instead (its body is then left empty)."""
        url = self.base_url + "/chat/completions"
        try:
            async with (asyncio.timeout(timeout_s),
                        self._client.stream("POST", url, json=body) as response):
                if (chunks is not None and response.status_code < 400 and response.headers
                        .get("content-type", "").startswith("text/event-stream")):
                    await chunks.read(response.aiter_bytes())
                    return response.status_code, response.headers, b""
                raw = bytearray()
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_REPLY_BYTES:
                        raise UpstreamBadReply(f"the upstream {self.shown_url} sent a reply "
                                               f"over {MAX_REPLY_BYTES} bytes")
                return response.status_code, response.headers, bytes(raw)
        except TimeoutError as exc:
            raise UpstreamTimeout(f"the upstream {self.shown_url} did not answer within "
                                  f"{timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise UpstreamUnreachable(f"cannot reach the upstream {self.shown_url}: "
                                      f"{type(exc).__name__}") from exc

    def _refusal(self, status: int, headers: httpx.Headers, raw: bytes) -> UpstreamError:
        """The error for an upstream's 4xx or 5xx, with its message scrubbed."""
        detail = self.scrub.message(_error_message(raw))
        message = f"the upstream {self.shown_url} answered {status}: {detail}"
        if 400 <= status < 500 and status not in (401, 403):
            retry = {name: headers[name] for name in THROTTLE_HEADERS
                     if status == 429 and 0 < len(headers.get(name, "")) <= 64}
            return UpstreamRefused(message, status, retry or None)
        # Its own server errors, and refusing our key, are the upstream's fault, not the
        # caller's: a bad gateway.
        return UpstreamBadReply(message)


class ChunkReader:
    """Reads an upstream's stream of chat completion chunks (`data: {...}` lines, then
    `data: [DONE]`), hands each on as it comes and adds up the first choice's text and token
    log-probs into the completion they make, which is judged as a whole answer is."""

    def __init__(self, shown_url: str,
                 on_chunk: Callable[[dict[str, Any]], None] | None = None,
                 scrub: Scrub | None = None) -> None:
        self.shown_url, self.on_chunk, self.scrub = shown_url, on_chunk, scrub or Scrub(None)
        self.streamed = False  # the upstream did answer with events
        self._chunks = 0
        # The completion's id, created, model and system fingerprint: each from the first
        # chunk that gives it (Azure's first chunk has them empty).
        self._head: dict[str, Any] = {}
        self._text: list[str] = []
        self._tokens: list[Any] = []
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._size = 0
        self._event: list[bytes] = []  # the data lines of an event not yet whole
        self._named = False  # the event has a name (`event: ping`): not a chunk

    async def read(self, pieces: AsyncIterator[bytes]) -> None:
        """Reads the stream's bytes as they come, line by line; the size is counted as bytes
        arrive, so one endless line cannot grow past MAX_REPLY_BYTES either."""
        self.streamed = True
        pending = b""
        async for piece in pieces:
            self._size += len(piece)
            if self._size > MAX_REPLY_BYTES:
                raise UpstreamBadReply(f"the upstream {self.shown_url} streamed over "
                                       f"{MAX_REPLY_BYTES} bytes")
            *lines, pending = (pending + piece).split(b"\n")
            for line in lines:
                if self._line(line.rstrip(b"\r")):
                    return
        if pending and self._line(pending.rstrip(b"\r")):
            return
        if self._event_end():
            return
        raise UpstreamBadReply(f"the upstream {self.shown_url} ended its stream without "
                               "[DONE]")

    def _line(self, line: bytes) -> bool:
        """Takes one line of the stream; True at its end ([DONE]). An event's data is one
        `data:` line, taken at once; data spread over several lines is joined at the blank
        line that ends its event, as server-sent events have it."""
        if not line.strip():
            self._named, ended = False, self._event_end()
            return ended
        if line.startswith(b"event:"):  # chunks come in unnamed events (or `message`)
            self._named = line[len(b"event:"):].strip() not in (b"", b"message")
        if not line.startswith(b"data:") or self._named:
            return False  # comments, other fields and named events carry no chunk
        data = line[len(b"data:"):]
        if not self._event:
            if data.strip() == b"[DONE]":
                return True
            try:
                chunk = _json(data, self.shown_url, self.scrub)
            except UpstreamBadReply as error:
                if not isinstance(error.__cause__, json.JSONDecodeError):
                    raise
            else:
                self._take(chunk)
                return False
        self._event.append(data)  # not whole: the first line of several, or more of them
        return False

    def _event_end(self) -> bool:
        """Takes the data of an event that spread over several lines; True at [DONE]."""
        if not self._event:
            return False
        data, self._event = b"\n".join(self._event), []
        if data.strip() == b"[DONE]":
            return True
        self._take(_json(data, self.shown_url, self.scrub))
        return False

    def _take(self, chunk: Any) -> None:
        if chunk == {}:
            return  # a keep-alive
        if isinstance(chunk, dict) and isinstance(chunk.get("error"), dict):
            raise UpstreamBadReply(f"the upstream {self.shown_url} stopped its stream with an "
                                   f"error: {self.scrub.message(_error_text(chunk))}")
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed something that is "
                                   "not a chat completion chunk")
        self._chunks += 1
        for key in HEAD_FIELDS:  # the first that is not empty (else the first given: 0)
            if chunk.get(key) is not None and not self._head.get(key):
                self._head[key] = chunk[key]
        if isinstance(chunk.get("usage"), dict):  # with stream_options.include_usage
            self._usage = chunk["usage"]
        for choice in chunk["choices"]:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n is 1: another index is not an answer anyone asked for
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if delta.get("tool_calls") or delta.get("function_call"):
                raise UpstreamBadReply(f"the upstream {self.shown_url} streamed a tool call; "
                                       "only text answers are judged")
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            logprobs = choice.get("logprobs")
            if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
                self._tokens += logprobs["content"]
            if isinstance(choice.get("finish_reason"), str):
                self._finish = choice["finish_reason"]
        if self.on_chunk is not None:
            self.on_chunk(_judged_part(chunk))

    def reply(self) -> UpstreamReply:
        """The completion the chunks make, in the shape of a non-streamed one."""
        if not self._chunks:
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed no chunk")
        text = "".join(self._text)
        logprobs = {"content": self._tokens} if self._tokens else None
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": logprobs, "finish_reason": self._finish}
        body = {**self._head, "object": "chat.completion", "choices": [choice],
                **({"usage": self._usage} if self._usage else {})}
        return UpstreamReply(body, text, _model(body), _tokens(logprobs))


def _judged_part(chunk: dict[str, Any]) -> dict[str, Any]:
    """What of a chunk is handed on: the first choice (the one judged: another index is an
    answer nobody judged), and no `ragshield` field, which only the guard's own decision
    event carries (an upstream's would be a forged decision)."""
    return {**{key: value for key, value in chunk.items() if key != GUARD_FIELD},
            "choices": [choice for choice in chunk["choices"]
                        if isinstance(choice, dict) and choice.get("index", 0) == 0]}


def _error_message(raw: bytes) -> str:
    """The message of an error body (Scrub.message makes it fit to show)."""
    try:
        return _error_text(json.loads(raw))
    except (ValueError, RecursionError):
        return raw.decode("utf-8", "replace")


def _error_text(body: Any) -> str:
    """The message of an OpenAI-style error body, as text even when it is not a string (an
    object is written out again, its escapes read: the raw body could spell a key with
    them), else the whole body."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message", error) if isinstance(error, dict) else body
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


def _json(raw: bytes, shown_url: str, scrub: Scrub) -> Any:
    """The reply's JSON, scrubbed, if the guard can store it and send it on (strict_json: no
    NaN, no nesting deeper than its MAX_DEPTH, no lone surrogate, which JSON can spell but
    UTF-8 cannot encode, and no NUL, which PostgreSQL cannot store)."""
    try:
        return scrub.value(strict_json.loads(raw.decode("utf-8"), storable=True))
    except JsonValueError as exc:  # it names a field: a key of the upstream's
        raise UpstreamBadReply(f"the upstream {shown_url} sent JSON the guard cannot pass on: "
                               f"{scrub.message(str(exc))}") from exc
    except ValueError as exc:
        raise UpstreamBadReply(f"the upstream {shown_url} did not reply with a chat "
                               f"completion ({type(exc).__name__})") from exc


def _reply(raw: bytes, shown_url: str, scrub: Scrub) -> UpstreamReply:
    body = _json(raw, shown_url, scrub)
    try:
        choice = body["choices"][0]
        message = choice["message"]
        text = message["content"]
    except (TypeError, KeyError, IndexError) as exc:
        raise UpstreamBadReply(f"the upstream {shown_url} did not reply with a chat "
                               f"completion ({type(exc).__name__})") from exc
    if message.get("tool_calls") or message.get("function_call"):
        raise UpstreamBadReply(f"the upstream {shown_url} replied with a tool call; only text "
                               "answers are judged")
    if not isinstance(text, str):
        raise UpstreamBadReply(f"the upstream {shown_url} replied without text (content "
                               f"{json.dumps(text)[:20]}); only text answers are judged")
    return UpstreamReply(body, text, _model(body), _tokens(choice.get("logprobs")))


def _model(body: dict[str, Any]) -> str | None:
    """The model the upstream says answered, when it names one."""
    model = body.get("model")
    return model if isinstance(model, str) and model.strip() else None


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
