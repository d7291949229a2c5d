"""The guard API's keyed routes, whose caller's key was checked before anything of the body
was read (api/key_gate.py: the key that matched is on `request.state.api_key`). The body is
parsed strictly (web/request_bodies.py), so that every endpoint refuses NaN, Infinity, 1e999,
lone surrogates, NUL and deep nesting anywhere in its body, fields passed on to an upstream
included, with a 422 naming the field."""

from __future__ import annotations

from typing import Any, Callable, Coroutine

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from ragshield.api.errors import field_error
from ragshield.web.request_bodies import JsonValueError, json_value

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class StrictJsonRequest(Request):
    """A request whose JSON body is parsed strictly, once."""

    async def json(self) -> Any:
        if not hasattr(self, "_strict_json"):
            self._strict_json = json_value(await self.body())
        return self._strict_json

    async def check_json(self) -> None:
        """RequestValidationError naming the field of a value the strict parser refuses; a
        body that is not JSON at all is left to the handler, which says so (400)."""
        try:
            if await self.body():
                await self.json()
        except JsonValueError as error:
            where = ("body", error.field) if error.field else ("body",)
            raise field_error(where, error.reason) from None
        except ValueError:  # not JSON, or not UTF-8
            pass


class KeyedRoute(APIRoute):
    """The route class of the endpoints that take a key: their bodies are parsed strictly."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def keyed(request: Request) -> Response:
            strict = StrictJsonRequest(request.scope, request.receive)
            await strict.check_json()
            return await handler(strict)

        return keyed
