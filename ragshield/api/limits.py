"""Size and time bounds of the guard API: bodies over the limit are refused before they are
parsed (413), and each call runs in a worker thread under a deadline (504 past it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ragshield.api.errors import ClientGone, error_response
from ragshield.services.guarding.guard import GuardTimeout, Outcome
from ragshield.web.request_bodies import read_body, replay


class Arrival:
    """ASGI middleware: puts the moment a request reached the app (time.monotonic()) on its
    state as `arrived`. A call's deadline and budget count from it: under a burst, the
    time a call waits for a worker or for the event loop is the caller's time too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["arrived"] = time.monotonic()
        await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request under `prefix` whose body passes `max_bytes` gets 413,
    whether it says its length or streams it."""

    def __init__(self, app: ASGIApp, max_bytes: int, prefix: str = "/v1/") -> None:
        self.app, self.max_bytes, self.prefix = app, max_bytes, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        too_long = declared.isdigit() and int(declared) > self.max_bytes
        body = None if too_long else await read_body(receive, self.max_bytes)
        if body is None:
            await error_response(413, f"the body is over {self.max_bytes} bytes",
                                 "body_too_large", "body")(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)


class Deadlines:
    """Runs blocking guard calls in threads, each given `timeout_s`. Past it the caller gets
    GuardTimeout, unless the worker had already begun to store its result (then the caller
    waits the milliseconds that takes): what a caller is told failed was never stored."""

    def __init__(self, timeout_s: float, workers: int) -> None:
        self.timeout_s = timeout_s
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="guard")

    async def run(self, call: Callable[[Outcome, float], Any],
                  request: Request | None = None, arrived: float | None = None) -> Any:
        """`call`'s result, due `timeout_s` after the call `arrived` (time.monotonic(); now
        when not given). With `request`, a client that closes its connection gives the
        call up as a passed deadline does: a call still waiting for the model never runs
        it, and nothing of it is stored (a client that timed out and retries would
        otherwise queue its question twice)."""
        outcome = Outcome()
        deadline = (time.monotonic() if arrived is None else arrived) + self.timeout_s
        future = asyncio.get_running_loop().run_in_executor(self.pool, call, outcome, deadline)
        try:
            return await _unless_gone(asyncio.wait_for(asyncio.shield(future),
                                                       _left(deadline)), request)
        except TimeoutError:
            if outcome.give_up():
                future.add_done_callback(forget)
                raise GuardTimeout(f"the call took over {self.timeout_s:g} s") from None
            return await future
        except (asyncio.CancelledError, ClientGone):  # the caller is gone
            outcome.give_up()  # unless it was being stored, it is not
            future.add_done_callback(forget)
            raise

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


async def _unless_gone(waiting: Awaitable[Any], request: Request | None) -> Any:
    """`waiting`'s result, or ClientGone when `request`'s client disconnects first (its
    body is read by then: what the server receives next is the disconnection)."""
    if request is None:
        return await waiting
    result = asyncio.ensure_future(waiting)
    gone = asyncio.ensure_future(_disconnection(request))
    try:
        await asyncio.wait({result, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not result.done():
        result.cancel()
        raise ClientGone("the client closed the connection before the answer was ready")
    return result.result()


async def _disconnection(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def forget(future: "Future[Any] | asyncio.Future[Any]") -> None:
    """Collect an abandoned call's error, so that it is not reported as never retrieved."""
    if not future.cancelled():
        future.exception()
