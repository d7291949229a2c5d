"""The guard API, version 1: a third face on the services, beside the CLI and the web app.

    POST /v1/judge             an answer another system wrote -> decision and verdicts
    POST /v1/ask               a question -> ragshield's answer, verdicts, decision, fallback
    POST /v1/chat/completions  an OpenAI-compatible proxy that judges the upstream's answer
    GET  /v1/judges, /v1/health, /v1/docs (the OpenAPI page)
    GET  /v1/metrics           Prometheus text: calls, decisions, latency, queue, model time

Handlers turn a request body into a service call and its result into JSON; nothing else.
Every call runs in a worker thread under a deadline (api/limits.py) and, unless the body
says `"store": false`, is kept in today's live run, so it can be browsed, labelled and
counted like any run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, Union, cast

from fastapi import APIRouter, FastAPI, Request, Response, Security
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPBearer

from ragshield import __version__
from ragshield.api import errors
from ragshield.api.key_gate import KeyGate
from ragshield.api.keys import ApiKey, KeyCheck
from ragshield.api.limits import Arrival, BodyLimit, Deadlines
from ragshield.api.metrics import add_metrics
from ragshield.api.render import completion_json, judged_json
from ragshield.api.routes import KeyedRoute
from ragshield.api.schemas import (AskBody, ChatBody, ChatMessage, JudgeBody, Judging,
                                   PassageIn, ProxyField, Traced)
from ragshield.api.streaming import LIVE, held_events, live_response, streamed
from ragshield.config import Settings
from ragshield.services.guarding.guard import CallContext, Guard, ProxyRequest, judge_catalogue
from ragshield.services.guarding.key_defaults import key_judges, rule_fits
from ragshield.services.questions.ask_types import ASK_DEFAULTS, FALLBACKS, AskRequest
from ragshield.services.questions.conversation import Turn, judged_question
from ragshield.services.questions.redaction import OnUnsupported
from ragshield.services.questions.settlement import MAX_QUESTION_CHARS, RETRIEVAL_MODES, one_of
from ragshield.types import GivenAnswer, Passage, TokenLogprob

DESCRIPTION = """Risk control for retrieval-augmented answers: each answer is judged, then
kept or withheld. Send `Authorization: Bearer <key>` when the server has keys. Errors come
as `{"error": {"message", "type", "param", "code"}}`."""


def _passages(passages: list[PassageIn]) -> tuple[Passage, ...]:
    return tuple(Passage(text=p.text, title=p.title, doc_id=p.id, score=p.score)
                 for p in passages)


def _judges(names: list[str] | None) -> tuple[str, ...] | None:
    """The judges asked for; None leaves them to the service's default set (the judges
    of the pinned policy included)."""
    return tuple(names) if names else None


Part = TypeVar("Part", bound=Union[Judging, ProxyField])


def _keyed(request: Request, endpoint: str, part: Part) -> tuple[Part, CallContext]:
    """A body (or the proxy's `ragshield` field) with the judges and rule of the caller's key
    where it names none, and the call's context: the endpoint, the key's name (None on a
    server without keys) and the caller's trace and span."""
    key: ApiKey | None = request.state.api_key
    given = ((("judges", key.judges), ("rule", key.rule),
              ("on_unsupported", key.on_unsupported)) if key else ())
    if key is not None and key.fixed:
        _check_fixed(part, given, ("body", "ragshield") if endpoint == "chat" else ("body",))
    defaults = {name: value for name, value in given
                if value is not None and getattr(part, name) is None}
    if "rule" in defaults and part.judges is not None and not rule_fits(str(defaults["rule"]),
                                                                        part.judges):
        del defaults["rule"]  # the body's own judges win: the default rule follows them
    context = CallContext(endpoint, key.name if key else None, part.trace_id, part.span_id,
                          getattr(request.state, "arrived", None))
    return cast(Part, part.model_copy(update=defaults)), context  # model_copy keeps the type


def _check_fixed(part: Traced, given: tuple[tuple[str, Any], ...],
                 where: tuple[str, ...]) -> None:
    """A 422 for a body that names judges, a rule or an on_unsupported other than its key's
    fixed ones (one the key leaves out is fixed to the server's default)."""
    for name, fixed in given:
        asked = getattr(part, name)
        if asked is None:
            continue
        if name == "judges" and fixed is not None:  # the same judges in any order
            asked, fixed = set(key_judges(",".join(asked))), set(fixed)
        if asked != fixed:
            shown = ",".join(sorted(fixed)) if isinstance(fixed, set) else fixed
            raise errors.field_error((*where, name), f"this API key fixes the {name} "
                                     f"({shown or 'the server defaults'}); leave the field out")


def _question(question: str, earlier: list[Turn]) -> str:
    """What the judges read: the question, and the earlier turns a follow-up leans on."""
    return judged_question(question, earlier, MAX_QUESTION_CHARS)


def _on_unsupported(part: JudgeBody | AskBody | ProxyField) -> OnUnsupported:
    """The request's (or its key's) on_unsupported; none given: the service's default."""
    return part.on_unsupported or ASK_DEFAULTS.on_unsupported


TOOL_FIELDS = ("tools", "functions")  # `functions`: the older name of `tools`


def _refuse_tools(body: ChatBody) -> None:
    """A 422 naming the field for a request that offers the model tools: a tool call is not
    an answer the guard can judge against passages, and passing it on unjudged would let any
    text beside it through unjudged too."""
    for name in TOOL_FIELDS:
        if (body.model_extra or {}).get(name) is not None:
            raise errors.field_error(("body", name), "the guard judges text answers, not "
                                     "tool calls; send requests with tools to the upstream "
                                     "directly")


def _text(message: ChatMessage) -> str:
    """A message's text: its content as a string, or its text parts joined."""
    content = message.content
    if isinstance(content, list):
        content = " ".join(part.text or "" for part in content if part.type == "text")
    return content or ""


def _conversation(messages: list[ChatMessage]) -> tuple[str, list[Turn]]:
    """The text of the last user message, when it can be the question (refused before the
    upstream is asked otherwise), and the turns before it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            content = _text(messages[index])
            if len(content) > MAX_QUESTION_CHARS:
                raise _no_question(f"the last user message ({len(content):,} characters) is "
                                   f"longer than a question may be ({MAX_QUESTION_CHARS:,}): "
                                   "send the question alone in ragshield.question")
            if content.strip():
                return content, [Turn(m.role, _text(m)) for m in messages[:index]]
    raise _no_question("no user message has text to take it from")


def _no_question(why: str) -> RequestValidationError:
    return errors.field_error(("body", "ragshield", "question"), f"not given, and {why}")


def build_api(settings: Settings, guard: Guard, keys: KeyCheck) -> FastAPI:
    """The API app; the web app can be mounted into it (app.py)."""
    api = FastAPI(title="ragshield guard API", version=__version__, description=DESCRIPTION,
                  docs_url="/v1/docs", openapi_url="/v1/openapi.json", redoc_url=None)
    api.add_middleware(BodyLimit, max_bytes=settings.api_max_body_bytes)
    api.add_middleware(KeyGate, keys=keys)  # outside the limit, so checked first
    api.add_middleware(Arrival)  # outermost: the time a call arrived, before any other work
    errors.install(api)
    deadlines = Deadlines(settings.api_timeout_s, workers=settings.api_max_waiting + 8)
    # Listeners that hold resources (the trace export's exporter thread) close with the app.
    api.router.on_shutdown.extend([deadlines.close, guard.close, *(
        listener.close for listener in guard.listeners if hasattr(listener, "close"))])

    # The key is checked by KeyGate, before the body is read; the dependency only shows it
    # in the OpenAPI page (its Authorize button).
    guarded = APIRouter(route_class=KeyedRoute, dependencies=[Security(HTTPBearer(
        auto_error=False, description="an API key, when the server has keys"))])

    @guarded.post("/v1/judge", tags=["guard"])
    async def judge(body: JudgeBody, http: Request) -> dict[str, Any]:
        """Judge an answer that another system wrote, from the passages it was given."""
        body, context = _keyed(http, "judge", body)
        tokens = ([TokenLogprob(t.token, t.logprob) for t in body.answer_logprobs]
                  if body.answer_logprobs else None)
        request = AskRequest(
            question=_question(body.question, [Turn(t.role, t.content) for t in body.history]),
            passages=_passages(body.passages),
            given_answer=GivenAnswer(body.answer, body.answer_model, tokens,
                                     body.cited_passages),
            judges=_judges(body.judges), rule=body.rule, keep_record=body.store,
            judge_model=body.judge_model, budget_ms=body.budget_ms, on_budget=body.on_budget,
            on_unsupported=_on_unsupported(body))
        result = await deadlines.run(lambda outcome, deadline: guard.ask(
            request, outcome, deadline, context), http, context.arrived)
        return judged_json(result, trace=body.trace)

    @guarded.post("/v1/ask", tags=["guard"])
    async def ask(body: AskBody, http: Request) -> dict[str, Any]:
        """Answer a question from a corpus (or from the passages given), judge the answer,
        and say what the user should see."""
        body, context = _keyed(http, "ask", body)
        request = AskRequest(
            question=body.question,
            passages=_passages(body.passages) if body.passages is not None else None,
            corpus=body.corpus or ASK_DEFAULTS.corpus,
            mode=one_of(RETRIEVAL_MODES, body.mode, "mode"), k=body.k,
            noise=body.noise, answerer=body.answerer, judges=_judges(body.judges),
            rule=body.rule, fallback=one_of(FALLBACKS, body.fallback, "fallback"),
            model=body.model,
            judge_model=body.judge_model, keep_record=body.store, budget_ms=body.budget_ms,
            on_budget=body.on_budget, on_unsupported=_on_unsupported(body))
        result = await deadlines.run(lambda outcome, deadline: guard.ask(
            request, outcome, deadline, context), http, context.arrived)
        return judged_json(result, trace=body.trace, passages=True)

    @guarded.post("/v1/chat/completions", tags=["proxy"], response_model=None)
    async def chat_completions(body: ChatBody, request: Request) -> dict[str, Any] | Response:
        """OpenAI-compatible: forwards the request to the upstream, judges its answer
        against `ragshield.passages`, and returns the completion with the answer, or the
        abstain message when it is withheld. The verdicts are in the extra field
        `ragshield`. With `stream: true` the reply is a stream of chunks (api/streaming.py:
        `ragshield.stream_mode` hold, the default, or live)."""
        _refuse_tools(body)
        extra, context = _keyed(request, "chat", body.ragshield)
        forwarded = body.model_dump(exclude={"ragshield"}, exclude_unset=True)
        proxied = ProxyRequest(
            body=forwarded, question=extra.question or _question(*_conversation(body.messages)),
            passages=_passages(extra.passages), judges=_judges(extra.judges),
            rule=extra.rule, keep_record=extra.store, budget_ms=extra.budget_ms,
            on_budget=extra.on_budget, on_unsupported=_on_unsupported(extra))

        def call(on_chunk: Callable[[dict[str, Any]], None] | None = None,
                 watched: Request | None = None) -> Any:
            return deadlines.run(lambda outcome, deadline: guard.proxy(
                proxied, outcome, deadline, context, on_chunk), watched, context.arrived)

        if not body.stream:
            return completion_json(await call(watched=request))
        if extra.stream_mode == LIVE:  # the stream's end tells when its client leaves
            return await live_response(request, call)
        return streamed(held_events(await call(watched=request)))

    add_metrics(api, guarded, guard)  # GET /v1/metrics, keyed like the calls it counts

    @guarded.get("/v1/judges", tags=["about"])
    async def judges() -> list[dict[str, Any]]:
        """Every judge: its name, what it costs, and whether it is in the default set."""
        return judge_catalogue(settings)

    @api.get("/v1/health", tags=["about"])
    async def health() -> dict[str, Any]:
        """Liveness: the version, the judge backend, the upstream (masked), whether keys are
        required."""
        return {"status": "ok", "version": __version__, "backend": settings.backend,
                "upstream": guard.upstream.shown_url if guard.upstream else None,
                "keys_required": keys.required}

    api.include_router(guarded)
    return api
