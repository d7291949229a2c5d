"""The guard API's metrics in Prometheus text (`GET /v1/metrics`), for the platform that
scrapes each replica: requests by route and HTTP status and their latency (an ASGI
middleware), and, from the guard's listener hook (services/guarding/guard.py, `Listener`), decisions
by endpoint and kind, where each answered call's time went (queued, upstream, judging,
storing), the time the model was busy judging, and the calls in the guard now.

Each API app has its own registry (never prometheus_client's global one): a process may
build several apps (the tests build one per test), and each must count only its own calls."""

from __future__ import annotations

import time

from fastapi import APIRouter, FastAPI
from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge,
                               Histogram, generate_latest)
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragshield.services.guarding.guard import CallContext, Guard, Guarded
from ragshield.types import decision_word

PREFIX = "/v1/"
OTHER_ROUTE = "other"  # a path under /v1/ that no route serves: one label for all of them
UNDECIDED = "none"  # the rule could not decide (its judge failed or did not finish)
# From a trivial judge's milliseconds to a model call at the 120 s deadline.
BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
           120.0)


class GuardMetrics:
    """One API app's metrics; called by the guard once per answered call (a listener)."""

    def __init__(self, guard: Guard) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter("ragshield_api_requests", "HTTP requests to the API, by route "
                                "and status", ["route", "status"], registry=registry)
        self.request_seconds = Histogram(
            "ragshield_api_request_seconds", "Each request's whole time in the server, to its "
            "last byte", ["route"], buckets=BUCKETS, registry=registry)
        self.decisions = Counter(
            "ragshield_guard_decisions", "Answered guard calls by endpoint and decision "
            "(keep, abstain, defer, none: the rule could not decide)", ["endpoint", "decision"],
            registry=registry)
        self.phase_seconds = Histogram(
            "ragshield_guard_phase_seconds", "Where an answered call's time went: queued (for "
            "the model), upstream, judging, storing", ["endpoint", "phase"], buckets=BUCKETS,
            registry=registry)
        self.model_busy = Counter(
            "ragshield_model_busy_seconds", "Time the judge model spent on calls: the judging "
            "time of the calls that took a turn at a model", registry=registry)
        waiting = Gauge("ragshield_guard_waiting", "Calls in the guard now, waiting for the "
                        "model or being judged", registry=registry)
        waiting.set_function(lambda: guard.waiting)

    def __call__(self, context: CallContext, guarded: Guarded) -> None:
        result = guarded.result
        decision = decision_word(result.judged.decision) or UNDECIDED
        self.decisions.labels(context.endpoint, decision).inc()
        for phase, seconds in guarded.seconds.items():
            self.phase_seconds.labels(context.endpoint, phase).observe(seconds)
        if result.prepared.needs_model:
            self.model_busy.inc(guarded.seconds.get("judging", 0.0))

    def response(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class RequestMetrics:
    """ASGI middleware: counts each request under /v1/ by its route and status and times it
    to its last byte (a stream to its end). Outermost, so that it sees the 413s and 401s that
    are answered before a handler runs; a request that raises counts as a 500."""

    def __init__(self, app: ASGIApp, metrics: GuardMetrics,
                 routers: tuple[APIRouter, ...]) -> None:
        self.app, self.metrics, self.routers = app, metrics, routers
        self._paths: frozenset[str] | None = None

    def _route(self, path: str) -> str:
        """The path when a route of the API serves it (none has path parameters), else
        OTHER_ROUTE: a caller's random paths add no labels. Read at the first request, when
        every route is in place."""
        if self._paths is None:
            self._paths = frozenset(getattr(route, "path", "") for router in self.routers
                                    for route in router.routes)
        return path if path in self._paths else OTHER_ROUTE

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        started, status = time.monotonic(), 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = self._route(scope["path"])
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.request_seconds.labels(route).observe(time.monotonic() - started)


def add_metrics(api: FastAPI, router: APIRouter, guard: Guard) -> None:
    """`GET /v1/metrics` on `router` (it takes the API key, where the server has keys), the
    middleware that counts requests, and the guard's listener that counts decisions."""
    metrics = GuardMetrics(guard)
    guard.listeners.append(metrics)
    api.add_middleware(RequestMetrics, metrics=metrics, routers=(api.router, router))

    @router.get("/v1/metrics", tags=["about"], response_class=Response)
    async def metrics_text() -> Response:
        """The API's metrics in Prometheus text: requests, decisions, latency histograms,
        the calls waiting for the model, the model's busy time."""
        return metrics.response()
