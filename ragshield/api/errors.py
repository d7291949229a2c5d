"""Every failure of the guard API as one JSON shape, the one OpenAI-compatible clients read:
{"error": {"message", "type", "param", "code"}}. A 4xx names the field at fault; a 5xx says
what failed in words and never carries a traceback, a database URL, a model server's key or
its URL's password (the traceback goes to the server's log). A model server that fails the
judges is a bad gateway (502), not a bad request."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from ragshield.errors import UserError
from ragshield.services.guarding.guard import (BudgetPassed, GuardBusy, GuardTimeout,
                                               ModelUnavailable, NoUpstream, ServerFailed,
                                               UpstreamError)

log = logging.getLogger("ragshield.api")


class ClientGone(Exception):
    """The client closed its connection before the answer was ready (api/limits.py)."""


def error_response(status: int, message: str, kind: str, param: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": status}}, status_code=status, headers=headers)


def field_error(location: tuple[Any, ...], message: str) -> RequestValidationError:
    """The 422 of one field at fault (`location` as FastAPI writes it: ("body", "a", 0)),
    for a check of ours that FastAPI's own validation does not make."""
    return RequestValidationError([{"type": "value_error", "loc": location, "msg": message}])


def _field(location: tuple[Any, ...], body: Any = None) -> str:
    """("body", "passages", 0, "text") -> "passages[0].text". With the `body` it is about,
    a step that is not in it is left out: pydantic puts the tag of a union's member in the
    location ("content", "parts", 0), which is no field of the body (a missing field, the
    last step, stays)."""
    steps = location[1:] if location and location[0] == "body" else location
    name, value = "", body
    for index, part in enumerate(steps):
        if body is not None:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
                value = value[part]
            elif not isinstance(value, (dict, list)) or index < len(steps) - 1:
                continue  # a union's tag
        name += f"[{part}]" if isinstance(part, int) else f".{part}" if name else str(part)
    return name or "body"


def _invalid(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems = error.errors()
    first: dict[str, Any] = (problems[0] if problems else
                             {"loc": ("body",), "msg": "invalid", "type": ""})
    if first.get("type") == "json_invalid":
        return error_response(400, "the body is not valid JSON: "
                              f"{first.get('ctx', {}).get('error', 'cannot parse')}",
                              "invalid_json", "body")
    field = _field(tuple(first.get("loc", ())), error.body)
    message = f"{field}: {first.get('msg', 'invalid')}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return error_response(422, message, "invalid_request_error", field)


def _user(_request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, NoUpstream):
        return error_response(503, str(error), "no_upstream")
    return error_response(400, " ".join(str(error).split()), "invalid_request_error")


def _upstream(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, UpstreamError)
    kind = "upstream_timeout" if error.status == 504 else "upstream_error"
    return error_response(error.status, str(error), kind, headers=error.headers)


def _judge_backend(_request: Request, error: Exception) -> JSONResponse:
    """The judges' model server failed (down, refusing, unreadable): a bad gateway, not a
    bad request. Its message names the server's masked URL, its key scrubbed out."""
    return error_response(502, " ".join(str(error).split()), "judge_backend_error")


def _busy(_request: Request, error: Exception) -> JSONResponse:
    return error_response(503, str(error), "busy", headers={"Retry-After": "2"})


def _timeout(_request: Request, error: Exception) -> JSONResponse:
    return error_response(504, f"{error}; nothing of this call was stored", "timeout")


def _budget(_request: Request, error: Exception) -> JSONResponse:
    return error_response(504, f"{error}; nothing of this call was stored", "budget_passed")


def _no_model(request: Request, error: Exception) -> JSONResponse:
    log.error("%s %s: %s (%s)", request.method, request.url.path, error, error.__cause__)
    return error_response(503, str(error), "model_unavailable")


def _http(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    return error_response(error.status_code, str(error.detail), "http_error",
                          headers=getattr(error, "headers", None))


def _bug(request: Request, error: Exception) -> JSONResponse:
    """The 500 answer. Starlette raises the error again once this is sent, for the server to
    log its traceback (uvicorn does): logged here too, it would show twice."""
    log.error("%s %s failed (%s)", request.method, request.url.path, type(error).__name__)
    return error_response(500, f"internal error ({type(error).__name__}); the server's log "
                          "has the details", "internal_error")


def _gone(request: Request, error: Exception) -> JSONResponse:
    """Nobody reads it: the status (nginx's 499) is for the metrics and the access log."""
    return error_response(499, str(error), "client_closed_request")


# Most particular first: the first whose class matches answers.
HANDLERS = ((RequestValidationError, _invalid), (NoUpstream, _user), (UpstreamError, _upstream),
            (ServerFailed, _judge_backend), (GuardBusy, _busy), (GuardTimeout, _timeout),
            (BudgetPassed, _budget),
            (UserError, _user), (ClientGone, _gone),
            (ModelUnavailable, _no_model), (HTTPException, _http), (Exception, _bug))


def install(api: FastAPI) -> None:
    for kind, handler in HANDLERS:
        api.add_exception_handler(kind, handler)


def response_for(request: Request, error: Exception) -> JSONResponse:
    """The answer the handlers give `error`: for a streamed reply that has begun, whose
    status is already sent, the error is sent as its last event instead."""
    return next(handler for kind, handler in HANDLERS if isinstance(error, kind))(request, error)
