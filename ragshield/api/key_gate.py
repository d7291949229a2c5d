"""The guard API's door. A request for a keyed endpoint (every one under /v1/ but PUBLIC) is
let in only with a key, checked before anything of its body is read: a caller without one
learns nothing of what a body should hold, costs no reading (a 2 MB body is a 401, not a 413
after reading a megabyte) and is answered alike whatever it sent. The key that matched (its
name and defaults: api/keys.py) is put on the request's state as `api_key` (None on a server
without keys), for the handlers."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ragshield.api.errors import error_response
from ragshield.api.keys import KeyCheck

# Open without a key: liveness, and the OpenAPI page with its schema (a browser showing the
# page sends no key; what it shows is in docs/API.md too).
PUBLIC = frozenset({"/v1/health", "/v1/docs", "/v1/docs/oauth2-redirect", "/v1/openapi.json"})


class KeyGate:
    """ASGI middleware, outside the body limit (api/limits.py): the key is checked first."""

    def __init__(self, app: ASGIApp, keys: KeyCheck, prefix: str = "/v1/") -> None:
        self.app, self.keys, self.prefix = app, keys, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or not scope["path"].startswith(self.prefix)
                or scope["path"] in PUBLIC):
            await self.app(scope, receive, send)
            return
        key = self.keys.match(Headers(scope=scope).get("authorization"))
        if key is None and self.keys.required:
            refusal = error_response(401, "a valid API key is required: Authorization: "
                                     "Bearer <key>", "http_error",
                                     headers={"WWW-Authenticate": "Bearer"})
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})["api_key"] = key
        await self.app(scope, receive, send)
