"""Streamed chat completions (`"stream": true`), in OpenAI's server-sent events: chunks of
`chat.completion.chunk`, then `data: [DONE]`. Two modes, chosen per request by
`ragshield.stream_mode`:

- `hold` (the default): ragshield reads the upstream's whole stream, judges the answer, and
  only then streams what the user may see, the kept answer or the abstain message, with the
  verdicts in the last chunk's `ragshield` field. Nothing unjudged ever reaches the client;
  the first byte comes when a non-streamed call would answer.
- `live`: the upstream's chunks are passed on as they come (their text less its last few
  characters, which a run of the upstream's key could straddle: those come with the finish,
  scrubbed, as llm/upstream.py's ChunkReader lets them out), and the stream ends with a
  decision event (a chunk with no choices and a `ragshield` field, its `shown` the text to
  put in the answer's place when it is withheld). For interfaces that can take back an answer
  already on screen; any other client would show an unjudged answer.

A failure before the first byte is an ordinary error answer with its status; after it (live
mode), the status is sent, so the error comes as the last event, `data: {"error": {...}}`,
which OpenAI's clients raise."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from ragshield.api.errors import response_for
from ragshield.api.limits import forget
from ragshield.api.render import completion_json, judged_json
from ragshield.services.guarding.guard import Guarded

LIVE = "live"  # the other mode, hold, is the default
DONE = b"data: [DONE]\n\n"
# Server-sent events: no proxy between the guard and its client may buffer them.
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Chunk = dict[str, Any]
# Runs the proxied call, handing each upstream chunk to the callback as it comes.
ProxyCall = Callable[[Callable[[Chunk], None]], Awaitable[Guarded]]


def event(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n\n"


def _chunk_head(body: dict[str, Any]) -> Chunk:
    return {"id": body.get("id"), "object": "chat.completion.chunk",
            "created": body.get("created"), "model": body.get("model")}


def held_events(guarded: Guarded) -> Iterator[bytes]:
    """The judged completion as a stream: the shown text in one chunk (with its log-probs,
    when kept and asked for), then the finish with the verdicts, then [DONE]."""
    body = completion_json(guarded)
    choice, head = body["choices"][0], _chunk_head(body)
    delta = {"role": "assistant", "content": choice["message"]["content"]}
    yield event({**head, "choices": [{"index": 0, "delta": delta,
                                      "logprobs": choice.get("logprobs"),
                                      "finish_reason": None}]})
    usage = {"usage": body["usage"]} if "usage" in body else {}
    yield event({**head, "choices": [{"index": 0, "delta": {},
                                      "finish_reason": choice.get("finish_reason") or "stop"}],
                 **usage, "ragshield": body["ragshield"]})
    yield DONE


def streamed(events: AsyncIterator[bytes] | Iterator[bytes]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers=HEADERS)


async def live_response(request: Request, call: ProxyCall) -> StreamingResponse:
    """Starts the call and answers once its first chunk is in (or raises its error, before
    any byte is sent); then passes the chunks on and ends with the decision."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[Chunk] = asyncio.Queue()
    def put(chunk: Chunk) -> None:
        loop.call_soon_threadsafe(chunks.put_nowait, chunk)

    task = asyncio.ensure_future(call(put))
    first = asyncio.ensure_future(chunks.get())
    await asyncio.wait({task, first}, return_when=asyncio.FIRST_COMPLETED)
    if not first.done():
        first.cancel()
        await task  # raises the call's error; or it finished without a chunk
        return streamed(held_events(task.result()))
    return streamed(_live_events(request, first.result(), chunks, task))


async def _live_events(request: Request, first: Chunk, chunks: asyncio.Queue[Chunk],
                       task: asyncio.Future[Guarded]) -> AsyncIterator[bytes]:
    """The chunks as they come, then the decision. A client that closes the stream ends
    the call too (the task is cancelled: Deadlines gives it up, and the guard ends the
    upstream's stream at its next chunk); nothing of it is stored."""
    getting: asyncio.Future[Chunk] | None = None
    try:
        yield event(first)
        while not (task.done() and chunks.empty()):
            getting = asyncio.ensure_future(chunks.get())
            either: set[asyncio.Future[Any]] = {getting, task}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if getting.done():
                yield event(getting.result())
            else:
                getting.cancel()
        try:
            guarded = task.result()
        except Exception as error:  # the status is sent: the error is the stream's last event
            yield event(json.loads(bytes(response_for(request, error).body)))
            return
        head = _chunk_head(guarded.upstream.body if guarded.upstream else first)
        yield event({**head, "choices": [], "ragshield": judged_json(guarded)})
        yield DONE
    finally:
        if getting is not None:
            getting.cancel()
        task.cancel()
        task.add_done_callback(forget)
