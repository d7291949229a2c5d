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
from ragshield.llm.upstream_scrub import Held, Scrub, shown_url
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


class UpstreamChat:
    """POSTs chat completion requests to `base_url` + /chat/completions with the upstream's
    own key. The exchanges run on one event loop thread, with one connection pool, for the
    threads that call it: there each has one deadline for all of it (httpx's timeouts bound
    each read, so an upstream dripping a byte at a time would hold its caller's thread, and
    its place in the guard's queue, for as long as it liked)."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = shown_url(self.base_url)
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
    log-probs into the completion they make, which is judged as a whole answer is.

    The text is scrubbed joined: a key streamed a few characters a chunk shows in no one
    chunk. So the chunks handed on carry the text a Held lets out (all but a tail that the
    key could straddle), and the rest goes with the first choice's finish, or in a chunk of
    its own at the stream's end."""

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
        self._held: Held = self.scrub.held()  # of the text handed on
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
        await self._events(pieces)
        self._hand_on_rest()

    async def _events(self, pieces: AsyncIterator[bytes]) -> None:
        """Takes the stream's events until its [DONE]; UpstreamBadReply when it ends first."""
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
        """Takes one chunk as it came: the answer's text goes to be scrubbed joined, all else
        is scrubbed here."""
        if chunk == {}:
            return  # a keep-alive
        if isinstance(chunk, dict) and isinstance(chunk.get("error"), dict):
            raise UpstreamBadReply(f"the upstream {self.shown_url} stopped its stream with an "
                                   f"error: {self.scrub.message(_error_text(chunk))}")
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed something that is "
                                   "not a chat completion chunk")
        self._chunks += 1
        scrubbed = unforged(self.scrub.value(chunk))  # its choices as many, in their order
        for key in HEAD_FIELDS:  # the first that is not empty (else the first given: 0)
            if scrubbed.get(key) is not None and not self._head.get(key):
                self._head[key] = scrubbed[key]
        if isinstance(scrubbed.get("usage"), dict):  # with stream_options.include_usage
            self._usage = scrubbed["usage"]
        texts = [self._choice(choice, _delta(raw).get("content"))
                 for raw, choice in zip(chunk["choices"], scrubbed["choices"])
                 if _judged(choice)]
        if self.on_chunk is not None:
            self.on_chunk(self._let_out(_judged_part(scrubbed), texts))

    def _choice(self, choice: dict[str, Any], text: Any) -> str | None:
        """Takes the judged choice of a chunk (scrubbed) and its text as it came; the text."""
        delta = _delta(choice)
        if delta.get("tool_calls") or delta.get("function_call"):
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed a tool call; "
                                   "only text answers are judged")
        if isinstance(text, str):
            self._add_text(text)
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            self._tokens += logprobs["content"]
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]
        return text if isinstance(text, str) else None

    def _add_text(self, text: str) -> None:
        """More of the answer's text; none may come after its finish, where what is handed
        on was let out whole (more text would be scrubbed apart from it)."""
        if text and self._finish is not None:
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed more text after "
                                   f"its answer's finish ({json.dumps(self._finish)})")
        self._text.append(text)

    def _let_out(self, part: dict[str, Any], texts: list[str | None]) -> dict[str, Any]:
        """The chunk as it is handed on: the text of each of its (judged) choices, `texts`
        as they came, replaced by what the Held lets out of the answer so far (all the rest
        once the choice finishes)."""
        choices = []
        for choice, text in zip(part["choices"], texts):
            shown = self._held.take(text or "")
            if isinstance(choice.get("finish_reason"), str):
                shown += self._held.flush()
            if text is not None or shown:
                choice = {**choice, "delta": {**_delta(choice), "content": shown}}
            choices.append(choice)
        return {**part, "choices": choices}

    def _hand_on_rest(self) -> None:
        """The text the Held still holds at the stream's end, in a chunk of its own."""
        rest = self._held.flush()
        if rest and self.on_chunk is not None:
            self.on_chunk({"id": self._head.get("id"), "object": "chat.completion.chunk",
                           "created": self._head.get("created"),
                           "model": self._head.get("model"),
                           "choices": [{"index": 0, "delta": {"content": rest},
                                        "finish_reason": None}]})

    def reply(self) -> UpstreamReply:
        """The completion the chunks make, in the shape of a non-streamed one: its text
        scrubbed whole, and without log-probs whose tokens, joined, spell the key."""
        if not self._chunks:
            raise UpstreamBadReply(f"the upstream {self.shown_url} streamed no chunk")
        text = self.scrub.text("".join(self._text))
        logprobs = _unspelt({"content": self._tokens}, self.scrub) if self._tokens else None
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": logprobs, "finish_reason": self._finish}
        body = {**self._head, "object": "chat.completion", "choices": [choice],
                **({"usage": self._usage} if self._usage else {})}
        return UpstreamReply(body, text, _model(body), _tokens(logprobs))


def _judged(choice: Any) -> bool:
    """Whether a chunk's choice is of the answer judged: n is 1, so another index is an
    answer nobody asked for (nor judged)."""
    return isinstance(choice, dict) and choice.get("index", 0) == 0


def _judged_part(chunk: dict[str, Any]) -> dict[str, Any]:
    """What of a chunk is handed on: the judged choice."""
    return {**chunk, "choices": [choice for choice in chunk["choices"] if _judged(choice)]}


def _delta(choice: Any) -> dict[str, Any]:
    """A chunk's choice's delta ({} where it has none that is an object)."""
    delta = choice.get("delta") if isinstance(choice, dict) else None
    return delta if isinstance(delta, dict) else {}


def unforged(completion: Any) -> Any:
    """A completion (or a chunk) without a `ragshield` field wherever the guard's own could
    be taken for it: at the top, in a choice, its message or its delta. Only the guard's
    verdicts and decision event carry one; an upstream's would be a forged decision."""
    if not isinstance(completion, dict):
        return completion
    choices = completion.get("choices")
    if isinstance(choices, list):
        completion = {**completion, "choices": [_unforged_choice(choice) for choice in choices]}
    return _without_guard_field(completion)


def _unforged_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return choice
    parts = {name: _without_guard_field(choice[name]) for name in ("message", "delta")
             if isinstance(choice.get(name), dict)}
    return _without_guard_field({**choice, **parts})


def _without_guard_field(part: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in part.items() if key != GUARD_FIELD}


def _unspelt(logprobs: Any, scrub: Scrub) -> Any:
    """The log-probs, or None where their tokens, joined, spell the key: a key a token or
    two at a time shows in no one token's text."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if isinstance(content, list) and scrub.shows_key("".join(
            entry["token"] for entry in content
            if isinstance(entry, dict) and isinstance(entry.get("token"), str))):
        return None
    return logprobs


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
    """The reply's JSON, not yet scrubbed (a stream's text is scrubbed joined), if the guard
    can store it and send it on (strict_json: no NaN, no nesting deeper than its MAX_DEPTH, no
    lone surrogate, which JSON can spell but UTF-8 cannot encode, and no NUL, which PostgreSQL
    cannot store). Only an error's message, which could show the key, is scrubbed here."""
    try:
        return strict_json.loads(raw.decode("utf-8"), storable=True)
    except JsonValueError as exc:  # it names a field: a key of the upstream's
        raise UpstreamBadReply(f"the upstream {shown_url} sent JSON the guard cannot pass on: "
                               f"{scrub.message(str(exc))}") from exc
    except ValueError as exc:
        raise UpstreamBadReply(f"the upstream {shown_url} did not reply with a chat "
                               f"completion ({type(exc).__name__})") from exc


def _reply(raw: bytes, shown_url: str, scrub: Scrub) -> UpstreamReply:
    body = unforged(scrub.value(_json(raw, shown_url, scrub)))
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
    if choice.get("logprobs") is not None:
        choice["logprobs"] = _unspelt(choice["logprobs"], scrub)
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
