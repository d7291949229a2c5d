"""Reading an HTTP request's body in ASGI middleware, bounded, and handing it on: the login
throttle (ui/login_throttle.py) reads the login form, the guard API's size limit
(api/limits.py) every body under /v1/."""

from __future__ import annotations

from starlette.types import Message, Receive


async def read_body(receive: Receive, max_bytes: int) -> bytes | None:
    """The request's body, or None as soon as it passes `max_bytes` (the rest is not read).
    A client that disconnects leaves what it sent."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > max_bytes:
            return None
        if message["type"] != "http.request" or not message.get("more_body"):
            return body


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the already-read body, then defers to the client's."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
