"""Who may upload files to the app, and how many (issue 55).

Gradio's upload route (POST /gradio_api/upload) keeps whatever a logged-in client sends,
bounded only per file (launch's max_file_size: Settings.upload_max_bytes); an annotator put
twenty 1.9 MB files there. UploadGate, an ASGI middleware in front of that route:

- With logins, lets only admins upload. Every file the app takes (a dataset, a policy, a
  run bundle) is imported by an admin, so an annotator has nothing to upload; so it is in
  Label Studio and Argilla too, where importing data is a manager's or an admin's action
  and annotators label what is there. Refused: 403.
- Bounds every uploader (a login; without logins, the client's address) and everyone
  together within a rolling window (Settings.upload_window_s): the files Gradio keeps and
  their bytes (the request's Content-Length, which an upload must send; uvicorn holds a
  body to it). Over a bound: 429 with Retry-After (413 for one upload larger than a bound
  on its own), and nothing is read. An upload counts from the moment the gate lets it
  through, so a burst in parallel cannot pass a bound; one the gate refuses counts for
  nothing.

The counts live in the server's memory: a restart forgets them.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragshield.config import Settings
from ragshield.ui.login_gate import login_name, route_path, send_json

UPLOAD_ROUTE = "/gradio_api/upload"
EVERYONE = ("everyone", "")
ADMINS_ONLY = "Only an admin may upload files."
NO_LENGTH = "An upload must give its size (a Content-Length header)."
MAX_COUNTED_BODY = 1_000_000  # of the upload route's answer, the paths of the files kept


@dataclass(frozen=True)
class Bound:
    files: int
    size: int  # bytes


@dataclass(frozen=True)
class UploadBounds:
    window_s: float
    person: Bound
    everyone: Bound

    @classmethod
    def of(cls, settings: Settings) -> UploadBounds:
        return cls(settings.upload_window_s,
                   Bound(settings.upload_files_per_person, settings.upload_bytes_per_person),
                   Bound(settings.upload_files_in_all, settings.upload_bytes_in_all))


@dataclass
class Spent:
    at: float  # clock time
    files: int
    size: int


Key = tuple[str, str]


class UploadQuota:
    """What each uploader and everyone together uploaded within the window, oldest first.
    Used from the event loop only."""

    def __init__(self, bounds: UploadBounds, clock: Callable[[], float] = time.monotonic) -> None:
        self.bounds, self.clock = bounds, clock
        self.spent: dict[Key, deque[Spent]] = {}

    def wait_s(self, who: str, size: int) -> float:
        """0 when one more upload of `size` bytes by `who` fits both bounds now, else the
        seconds until it does (math.inf: it never fits)."""
        now = self.clock()
        return max(self._wait_s(("person", who), self.bounds.person, size, now),
                   self._wait_s(EVERYONE, self.bounds.everyone, size, now))

    def record(self, who: str, files: int, size: int) -> None:
        now = self.clock()
        for key in (("person", who), EVERYONE):
            self.spent.setdefault(key, deque()).append(Spent(now, files, size))

    def _live(self, key: Key, now: float) -> deque[Spent]:
        """The key's uploads within the window (older ones, and empty keys, dropped)."""
        spent = self.spent.get(key, deque())
        while spent and now - spent[0].at >= self.bounds.window_s:
            spent.popleft()
        if not spent:
            self.spent.pop(key, None)
        return spent

    def _wait_s(self, key: Key, bound: Bound, size: int, now: float) -> float:
        if size > bound.size:
            return math.inf
        spent = self._live(key, now)
        files, used = sum(s.files for s in spent), sum(s.size for s in spent)
        wait = 0.0
        for oldest in spent:  # each upload that leaves the window frees its share
            if files < bound.files and used + size <= bound.size:
                break
            files, used = files - oldest.files, used - oldest.size
            wait = oldest.at + self.bounds.window_s - now
        return wait


def content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _size(size: float) -> str:
    return f"{size / 1e6:.0f} MB" if size >= 1_000_000 else f"{size:,.0f} bytes"


def over_bounds(bounds: UploadBounds, wait_s: float) -> str:
    """What a refused upload is told: the bounds, and when to try again."""
    person, everyone = bounds.person, bounds.everyone
    text = (f"Too many uploads: the app takes {person.files} files or {_size(person.size)} "
            f"per person, {everyone.files} files or {_size(everyone.size)} from everyone, "
            f"in {bounds.window_s / 60:g} minutes")
    if math.isinf(wait_s):
        return text + ": this upload alone is larger."
    return text + f"; try again in {math.ceil(wait_s)} s."


def kept_files(body: bytes) -> int:
    """How many files the upload route's answer says it kept (its JSON list of paths)."""
    try:
        paths = json.loads(body)
    except ValueError:
        return 0
    return len(paths) if isinstance(paths, list) else 0


class UploadGate:
    """The ASGI middleware: POST /gradio_api/upload goes to Gradio only from someone who
    may upload (`may_upload(login name)`, asked only with logins) and within the bounds."""

    def __init__(self, app: ASGIApp, may_upload: Callable[[str | None], bool],
                 bounds: UploadBounds, clock: Callable[[], float] = time.monotonic) -> None:
        self.app, self.may_upload = app, may_upload
        self.quota = UploadQuota(bounds, clock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] != "POST"
                or route_path(scope).rstrip("/") != UPLOAD_ROUTE):
            await self.app(scope, receive, send)
            return
        logins = getattr(scope["app"], "auth", None) is not None
        name = login_name(scope)
        if logins and not await anyio.to_thread.run_sync(self.may_upload, name):
            await send_json(send, 403, {"detail": ADMINS_ONLY})
            return
        size = content_length(scope)
        if size is None:
            await send_json(send, 411, {"detail": NO_LENGTH})
            return
        who = f"login {name}" if logins else f"address {(scope.get('client') or ('',))[0]}"
        wait = self.quota.wait_s(who, size)
        if math.isinf(wait):
            await send_json(send, 413, {"detail": over_bounds(self.quota.bounds, wait)})
            return
        if wait > 0:
            await send_json(send, 429, {"detail": over_bounds(self.quota.bounds, wait)},
                            {"retry-after": str(math.ceil(wait))})
            return
        self.quota.record(who, 1, size)  # before the body is read: parallel uploads count
        await self.app(scope, receive, self._counting(who, send))

    def _counting(self, who: str, send: Send) -> Send:
        """`send`, noting the files of a successful upload beyond the one counted."""
        status, body = 0, b""

        async def counted(message: Message) -> None:
            nonlocal status, body
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and status == 200:
                body = (body + message.get("body", b""))[:MAX_COUNTED_BODY]
                if not message.get("more_body") and kept_files(body) > 1:
                    self.quota.record(who, kept_files(body) - 1, 0)
            await send(message)

        return counted
