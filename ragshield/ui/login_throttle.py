"""Failed logins are throttled per client address and per name (`app.py --auth`).

Gradio checks a password as fast as it is sent (100 wrong ones took 2 s). ThrottleLogins,
an ASGI middleware in front of POST /login, counts the consecutive failed logins of the
client's address and of the name tried. Once either count reaches LIMIT, a login from that
address or for that name is answered 429 at once, with a Retry-After header and without
checking the password or holding a thread: for 1 s, doubling with each further failure up
to 5 minutes. A successful login clears both counts; a count is forgotten 15 minutes after
its last failure. A login counts as failed from the moment it starts until it succeeds, so
a burst of parallel guesses cannot pass before the first failures are recorded.

Behind a reverse proxy every client has the proxy's address: the per-name count still
protects each account, and the per-address count then slows everybody down.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragshield.web.request_bodies import read_body, replay
from ragshield.ui.login_gate import route_path, send_json

LIMIT = 5  # failures before the first wait
FIRST_WAIT_S = 1.0
LONGEST_WAIT_S = 300.0
FORGET_AFTER_S = 900.0
MAX_KEYS = 10_000  # beyond this many counts, forgotten ones are dropped
MAX_FORM_BYTES = 8192  # a login form is a name and a password


@dataclass
class Failures:
    count: int
    last: float  # clock time of the latest


class LoginThrottle:
    """The failure counts, keyed by address and by name. Used from the event loop only."""

    def __init__(self, *, limit: int = LIMIT, first_wait_s: float = FIRST_WAIT_S,
                 longest_wait_s: float = LONGEST_WAIT_S, forget_after_s: float = FORGET_AFTER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.first_wait_s, self.longest_wait_s = limit, first_wait_s, longest_wait_s
        self.forget_after_s, self.clock = forget_after_s, clock
        self.failures: dict[tuple[str, str], Failures] = {}

    def wait_s(self, address: str, name: str) -> float:
        """Seconds before a login from `address` for `name` may be tried (0: now)."""
        now = self.clock()
        return max(self._wait_s(key, now) for key in keys(address, name))

    def attempt(self, address: str, name: str) -> float:
        """Start a login: 0, the login then counted as failed until `succeeded`, or the
        seconds to wait (nothing counted)."""
        wait = self.wait_s(address, name)
        if wait > 0:
            return wait
        now = self.clock()
        for key in keys(address, name):
            failures = self._live(key, now)
            if failures is None:
                self.failures[key] = Failures(1, now)
            else:
                failures.count, failures.last = failures.count + 1, now
        if len(self.failures) > MAX_KEYS:
            self.failures = {key: f for key, f in self.failures.items()
                             if now - f.last < self.forget_after_s}
        return 0.0

    def succeeded(self, address: str, name: str) -> None:
        for key in keys(address, name):
            self.failures.pop(key, None)

    def _live(self, key: tuple[str, str], now: float) -> Failures | None:
        failures = self.failures.get(key)
        return None if failures is None or now - failures.last >= self.forget_after_s \
            else failures

    def _wait_s(self, key: tuple[str, str], now: float) -> float:
        failures = self._live(key, now)
        if failures is None or failures.count < self.limit:
            return 0.0
        doublings = min(failures.count - self.limit, 32)
        wait = min(self.first_wait_s * 2 ** doublings, self.longest_wait_s)
        return max(0.0, failures.last + wait - now)


def keys(address: str, name: str) -> tuple[tuple[str, str], tuple[str, str]]:
    return ("address", address), ("name", name)


async def form_name(scope: Scope, body: bytes) -> str:
    """The name in a login form, stripped as Gradio strips it ('' if none or unreadable)."""
    async def nothing_more() -> Message:
        return {"type": "http.disconnect"}

    try:
        async with Request(scope, replay(body, nothing_more)).form(max_files=0) as form:
            name = form.get("username")
    except HTTPException:  # a malformed or oversized form
        return ""
    return name.strip() if isinstance(name, str) else ""


class ThrottleLogins:
    """The ASGI middleware: POST /login goes to Gradio only while neither the client's
    address nor the name is throttled."""

    def __init__(self, app: ASGIApp, throttle: LoginThrottle | None = None) -> None:
        self.app = app
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] != "POST"
                or route_path(scope).rstrip("/") != "/login"
                or getattr(scope["app"], "auth", None) is None):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive, MAX_FORM_BYTES)
        if body is None:
            await send_json(send, 413, {"detail": "A login form is a name and a password."})
            return
        address, name = (scope.get("client") or ("",))[0], await form_name(scope, body)
        wait = self.throttle.attempt(address, name)
        if wait > 0:
            seconds = math.ceil(wait)
            await send_json(send, 429, {"detail": f"Too many failed logins: try again in "
                                                  f"{seconds} s."},
                            {"retry-after": str(seconds)})
            return
        status = 0

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, replay(body, receive), noting_status)
        if status == 200:
            self.throttle.succeeded(address, name)
