"""Before login a client gets the login page and nothing else (`app.py --auth`).

Gradio refuses /config and /gradio_api/info without a login, but the page it serves at /
embeds the API description whoever asks: every endpoint, with the choices of every
dropdown (dataset, corpus and sample names); /gradio_api/runs serves the same page.
LoginGate, an ASGI middleware on the app Gradio builds, closes that door once for every
route: while the app has logins and a request carries no live session, it lets through
only the login page, the files that page loads, POST /login and Gradio's own startup call,
and answers 401 to anything else. In the login page the API description is replaced by an
empty one; if Gradio's page ever changes so that it cannot be found, the page is refused
rather than served whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# What the login page loads, and Gradio's startup call (launch() makes it without a login).
PUBLIC_PATHS = frozenset({"/login", "/login/", "/favicon.ico", "/manifest.json", "/robots.txt",
                          "/theme.css", "/gradio_api/theme.css", "/gradio_api/startup-events"})
PUBLIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon/")
API_INFO = re.compile(rb"<script>window\.gradio_api_info = .*?;</script>", re.DOTALL)
EMPTY_API_INFO = (b'<script>window.gradio_api_info = '
                  b'{"named_endpoints":{},"unnamed_endpoints":{}};</script>')


def route_path(scope: Scope) -> str:
    """The request's path below the app's mount point."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root):] or "/"
    return path


def _session_token(scope: Scope) -> str | None:
    """The session cookie of a login that the request carries (the cookies Gradio's /login
    sets), if any."""
    app, cookies = scope["app"], HTTPConnection(scope).cookies
    return (cookies.get(f"access-token-{app.cookie_id}")
            or cookies.get(f"access-token-unsecure-{app.cookie_id}"))


def logged_in(scope: Scope) -> bool:
    """Whether the request may see the app: it has no logins, or the request carries the
    session cookie of a login."""
    app = scope["app"]
    if getattr(app, "auth", None) is None:
        return True
    token = _session_token(scope)
    return token is not None and token in app.tokens


def login_name(scope: Scope) -> str | None:
    """The name the request is logged in as; None without logins or a live session."""
    tokens = getattr(scope["app"], "tokens", None)
    if getattr(scope["app"], "auth", None) is None or not isinstance(tokens, dict):
        return None
    token = _session_token(scope)
    return None if token is None else tokens.get(token)


def end_sessions(request: Any, name: str) -> int:
    """Log `name` out of every browser: the session tokens Gradio keeps for it (its app's
    `tokens`, which `logged_in` reads on every request) are dropped. How many were open."""
    app = getattr(getattr(request, "request", None), "app", None)
    tokens = getattr(app, "tokens", None)
    if not isinstance(tokens, dict):
        return 0
    ended = [token for token, user in list(tokens.items()) if user == name]
    for token in ended:
        tokens.pop(token, None)
    return len(ended)


async def send_json(send: Send, status: int, content: Any,
                    headers: dict[str, str] | None = None) -> None:
    body = json.dumps(content).encode()
    raw = {"content-type": "application/json", "content-length": str(len(body)),
           **(headers or {})}
    await send({"type": "http.response.start", "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in raw.items()]})
    await send({"type": "http.response.body", "body": body})


async def login_page(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Gradio's page at / for a client without a session (its login form), without the
    API description. HEAD gets the same headers and no body."""
    start: Message = {}
    chunks: list[bytes] = []

    async def keep(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app({**scope, "method": "GET"}, receive, keep)
    body, found = API_INFO.subn(EMPTY_API_INFO, b"".join(chunks))
    if start.get("status") == 200 and found != 1:
        await send_json(send, 500, {"detail": "The login page could not be made safe."})
        return
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


class LoginGate:
    """The ASGI middleware: the login page and its files for a client without a session,
    401 for the rest; everything for a logged-in client or an app without logins."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or logged_in(scope):
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        elif path == "/" and scope["method"] in ("GET", "HEAD"):
            await login_page(self.app, scope, receive, send)
        elif path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
        else:
            await send_json(send, 401, {"detail": "Not authenticated: log in first."})
