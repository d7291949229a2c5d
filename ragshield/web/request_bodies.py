"""Reading an HTTP request's body in ASGI middleware, bounded, and handing it on: the login
throttle (ui/login_throttle.py) reads the login form, the guard API's size limit
(api/limits.py) every body under /v1/. And parsing a JSON body strictly (the guard API's
keyed routes, api/routes.py)."""

from __future__ import annotations

from typing import Any

from starlette.types import Message, Receive

from ragshield import strict_json
from ragshield.strict_json import JsonValueError  # noqa: F401 (what json_value raises)


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


def json_value(body: bytes) -> Any:
    """The JSON value of a request body. json.JSONDecodeError for bad syntax,
    UnicodeDecodeError for bytes that are not UTF-8 (a byte-order mark is dropped), and
    JsonValueError naming the field for what json.loads lets through but no handler can
    use: NaN, Infinity, 1e999, nesting deeper than strict_json.MAX_DEPTH, lone
    surrogates (no answer or store can even encode one) and NUL (PostgreSQL keeps none)."""
    return strict_json.loads(body.decode("utf-8-sig"), storable=True)
