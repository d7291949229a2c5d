"""The guard's use cases: judge an answer another system wrote, ask a question end to end,
and judge a live upstream's answer before its caller sees it. The HTTP API (ragshield/api)
calls these; they know nothing of HTTP.

Every call runs under a deadline and takes its turn for the model: an in-process model keeps
one KV cache and serves one call at a time (the web app, in the same server, takes the same
turns), while a server backend serves `concurrency` calls at once. A call whose caller gave up
(its deadline passed) stores nothing: the worker and the caller settle, once, which of them
came first (Outcome), so every answered call is kept exactly once and a timed-out one never.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ragshield.config import Settings
from ragshield.errors import UserError
# BudgetPassed: the API turns it into its 504 answer.
from ragshield.judge_budget import Budget, BudgetPassed  # noqa: F401
from ragshield.judges.builtin import JUDGES
from ragshield.judges.registry import unavailable_reason
# ServerFailed: the API turns it into its 502 answer (the judges' model server failed).
from ragshield.llm.base import LLM, ServerFailed  # noqa: F401
from ragshield.llm.call_cache import unsaved
from ragshield.llm.no_model import NoModel
from ragshield.llm.packaged_models import PACKAGED_MODELS
# UpstreamError: the API turns it into its 502 answer.
from ragshield.llm.upstream import (UpstreamBadReply, UpstreamChat, UpstreamError,  # noqa: F401
                                     UpstreamReply)
from ragshield.services.guarding.upstream_logprobs import UpstreamLogprobs
from ragshield.services.questions.ask_types import (LARGER_FALLBACK, AskRequest, AskResult,
                                                    Prepared, Settlement)
from ragshield.services.questions.asking import Models, PassageFinders, answer_and_judge, prepare
from ragshield.services.questions.live_runs import keep_asked
from ragshield.services.questions.redaction import WITHHOLD, OnUnsupported
from ragshield.services.questions.settlement import (MAX_ANSWER_CHARS, answered, default_judges,
                                                     settle)
from ragshield.store.database import Store
from ragshield.types import GivenAnswer, OnBudget, Passage


def judge_catalogue(settings: Settings) -> list[dict[str, Any]]:
    """Every judge with its cost class, whether it is a default, whether it can be built
    here (and why not), and what it does."""
    defaults = default_judges(settings)
    return [{"name": name, "cost": cls.cost, "default": name in defaults,
             "unavailable": unavailable_reason(name, settings), "about": _about(cls)}
            for name, cls in JUDGES.items()]


def _about(judge: type) -> str:
    """The first paragraph of the judge's docstring, else of its module's."""
    text = judge.__doc__ or sys.modules[judge.__module__].__doc__ or ""
    return " ".join(text.split("\n\n")[0].split())


class GuardBusy(UserError):
    """More calls are waiting for the model than the guard queues (503: retry later)."""


class GuardTimeout(UserError):
    """The call passed its deadline; nothing of it was stored (504)."""


class NoUpstream(UserError):
    """The proxy was called but no upstream endpoint is configured."""


class ModelUnavailable(Exception):
    """The server cannot open its model (a missing GGUF file, a model package that is not
    installed): a fault of the server, not of the call (503). Its cause, which names the
    server's paths, goes to the server's log only."""


class ServerModels:
    """The guard's models: one that cannot be opened is ModelUnavailable, whatever the
    reason; the web app and the CLI show that reason to their user, the operator."""

    def __init__(self, models: Models) -> None:
        self.models = models

    def llm(self, packaged: str | None = None) -> LLM:
        try:
            return self.models.llm(packaged)
        except UserError as error:
            raise ModelUnavailable("the server cannot open its model; the server's log says "
                                   "why") from error


class _UnsavedModels:
    """The models of a call with `"store": false`: the same, but writing nothing to the call
    cache, whose prompts would keep the question, the answer and the passages."""

    def __init__(self, models: Models) -> None:
        self.models = models

    def llm(self, packaged: str | None = None) -> LLM:
        return unsaved(self.models.llm(packaged))


class _NoModels:
    """The models of a call whose turn did not come within its budget: none (llm/no_model.py),
    so that it is decided from the judges that read no model."""

    def llm(self, packaged: str | None = None) -> LLM:
        return NoModel()


_NO_MODELS = _NoModels()


class Turn(Protocol):
    """A turn at the models: a lock, a semaphore, or always free (ModelGate.turn)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...

    def release(self) -> None: ...


class _NoTurn:
    """The turn of an ask that calls no model: always free."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        pass

    def __enter__(self) -> _NoTurn:
        return self

    def __exit__(self, *_: object) -> None:
        pass


class Outcome:
    """Whether a call's result is kept, decided once: by the worker when it is about to
    store (keep), or by the caller when its deadline passes first (give_up)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: str | None = None
        self._stops: list[Callable[[], object]] = []

    def _settle(self, state: str) -> bool:
        with self._lock:
            self._state = self._state or state
            return self._state == state

    def keep(self) -> bool:
        """True: the caller is still waiting, and now will get the result."""
        return self._settle("keep")

    def give_up(self) -> bool:
        """True: the worker had not started storing, and now never will (what it waits for,
        when_given_up, is stopped)."""
        if not self._settle("give up"):
            return False
        with self._lock:
            stops, self._stops = self._stops, []
        for stop in stops:
            stop()
        return True

    def when_given_up(self, stop: Callable[[], object]) -> None:
        """Calls `stop` when the caller gives up (at once if it has): an upstream's exchange,
        so that a caller gone does not keep its place in the queue until the upstream ends."""
        with self._lock:
            if self._state != "give up":
                self._stops.append(stop)
                return
        stop()

    @property
    def given_up(self) -> bool:
        return self._state == "give up"


class ModelGate:
    """Turns at the models. `local` is the lock of the in-process models, shared with the
    web app when both run in one server; a server backend admits `concurrency` at once."""

    def __init__(self, settings: Settings, local: threading.Lock | None = None) -> None:
        self.local = local or threading.Lock()
        self.remote = threading.BoundedSemaphore(max(1, settings.concurrency))
        self.backend, self.judge_model = settings.backend, settings.judge_model

    def for_request(self, request: AskRequest) -> Turn:
        """A packaged model (chosen to answer or to judge, here or in the settings, or the
        larger-model fallback) runs in process whatever the backend."""
        in_process = (self.backend != "openai" or request.model is not None
                      or (request.judge_model or self.judge_model) in PACKAGED_MODELS
                      or request.fallback == LARGER_FALLBACK)
        return self.local if in_process else self.remote

    def turn(self, prepared: Prepared) -> Turn:
        """What the ask waits for: its model's lock or semaphore (for_request; the lock too
        when a judge reads from a packaged model, as a policy fitted on its reads does), or
        nothing when it calls no model (a given answer judged by the trivial judge alone)."""
        if not prepared.needs_model:
            return _NoTurn()
        readers = prepared.readers.models(judge.name for judge in prepared.judges)
        return (self.local if readers & set(PACKAGED_MODELS)
                else self.for_request(prepared.request))


@dataclass
class Guarded:
    """A judged call: the ask's result, where its time went, and the upstream's reply
    when the answer came from the proxied system."""

    result: AskResult
    # queued, judging, storing, upstream; total: all of the guard's call (preparing included)
    seconds: dict[str, float] = field(default_factory=dict)
    upstream: UpstreamReply | None = None


@dataclass(frozen=True)
class CallContext:
    """Who made a guard call and where it belongs, beside what it asks: the endpoint, the
    name of the caller's API key, and the caller's trace and span (OpenInference ids), if it
    sent them."""

    endpoint: str  # judge | ask | chat
    caller: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    # When the request reached the server (time.monotonic()): its budget and its total count
    # from here, so that time queued before the guard took the call counts too.
    arrived: float | None = None

    def started(self) -> float:
        return self.arrived if self.arrived is not None else time.monotonic()


# Told of every answered call once its result is kept (or not kept: `"store": false`): the
# metrics, the decision log and the trace export listen. A listener must not raise.
Listener = Callable[[CallContext, "Guarded"], None]


@dataclass(frozen=True)
class ProxyRequest:
    """An OpenAI chat completion request for the upstream (ragshield's own field taken out)
    and what to judge its answer against."""

    body: dict[str, Any]
    question: str
    passages: tuple[Passage, ...]
    judges: tuple[str, ...] | None = None  # None: default_judges (the pinned policy's too)
    rule: str | None = None
    keep_record: bool = True
    budget_ms: int | None = None  # for the judges, from when the upstream has answered
    on_budget: OnBudget | None = None
    on_unsupported: OnUnsupported = WITHHOLD

    def asking(self, answer: GivenAnswer) -> AskRequest:
        """The ask that judges `answer` against the passages."""
        return AskRequest(question=self.question, passages=self.passages, given_answer=answer,
                          judges=self.judges, rule=self.rule, keep_record=self.keep_record,
                          budget_ms=self.budget_ms, on_budget=self.on_budget,
                          on_unsupported=self.on_unsupported)


class Guard:
    """The guard's state for one server: the store, the models, the turns at them, the
    retrievers and the upstream."""

    def __init__(self, settings: Settings, store: Store, models: Models,
                 gate: ModelGate | None = None, finders: PassageFinders | None = None,
                 listeners: tuple[Listener, ...] = ()) -> None:
        self.settings, self.store, self.models = settings, store, ServerModels(models)
        self.gate = gate or ModelGate(settings)
        self.finders = finders or PassageFinders(settings)
        self.upstream = (UpstreamChat(settings.upstream_base_url,
                                      _secret(settings.upstream_api_key))
                         if settings.upstream_base_url else None)
        self.logprobs = UpstreamLogprobs()
        self.listeners = list(listeners)
        self._waiting = threading.BoundedSemaphore(settings.api_max_waiting)
        self._count_lock = threading.Lock()
        self.waiting = 0  # calls in the guard now (waiting for the model or being judged)

    def ask(self, request: AskRequest, outcome: Outcome, deadline: float,
            context: CallContext | None = None) -> Guarded:
        """One question (or one given answer) judged and, unless the caller gave up, kept
        in the live run. GuardBusy when too many calls wait; GuardTimeout past `deadline`."""
        context = context or CallContext("ask")
        started = context.started()
        with self._turn():
            guarded = self._judged(self._settle(request), request.keep_record, outcome,
                                   deadline, {}, started)
        guarded.seconds["total"] = time.monotonic() - started
        self._tell(context, guarded)
        return guarded

    def proxy(self, proxied: ProxyRequest, outcome: Outcome, deadline: float,
              context: CallContext | None = None,
              on_chunk: Callable[[dict[str, Any]], None] | None = None) -> Guarded:
        """The upstream's answer to `proxied.body`, judged like a given answer. What can be
        checked without the answer (the question, judges, rule) is checked before the
        upstream is called. Its waiting slot is held until the upstream answers, the
        deadline passes or its caller leaves (the upstream's exchange is stopped then), never
        longer. A streamed request (`"stream": true`) is read from the upstream's stream, each
        chunk handed to `on_chunk` as it comes, until the caller gives up."""
        if self.upstream is None:
            raise NoUpstream("no upstream endpoint is configured: start the server with "
                             "--upstream URL (or set RAGSHIELD_UPSTREAM_BASE_URL)")
        model = proxied.body.get("model")
        settled = self._settle(proxied.asking(
            GivenAnswer("the upstream's answer", model if isinstance(model, str) else None)))

        def relay(chunk: dict[str, Any]) -> None:
            """Each chunk handed on while someone waits for it; a caller gone (a closed
            live stream, a passed deadline) ends the upstream's stream too."""
            if outcome.given_up:
                raise GuardTimeout("the caller gave up while the upstream streamed its answer")
            if on_chunk is not None:
                on_chunk(chunk)

        context = context or CallContext("chat")
        arrived = context.started()
        with self._turn():
            started = time.monotonic()
            reply = self.logprobs.complete(self.upstream, proxied.body, settled.judges,
                                           lambda: _left(deadline), relay,
                                           outcome.when_given_up)
            _check_judgeable(reply, self.upstream.shown_url)
            settled = answered(settled, GivenAnswer(reply.text, reply.model, reply.tokens))
            came = time.monotonic()
            seconds = {"upstream": came - started}
            # the budget is the guard's own: the upstream's time is not counted in it
            guarded = self._judged(settled, proxied.keep_record, outcome, deadline, seconds,
                                   arrived + seconds["upstream"])
        guarded.upstream = reply
        guarded.seconds["total"] = time.monotonic() - arrived
        self._tell(context, guarded)
        return guarded

    def _tell(self, context: CallContext, guarded: Guarded) -> None:
        for listener in self.listeners:
            listener(context, guarded)

    @contextmanager
    def _turn(self) -> Iterator[None]:
        if not self._waiting.acquire(blocking=False):
            raise GuardBusy(f"{self.settings.api_max_waiting} calls are already waiting for "
                            "the model; retry later")
        self._count(+1)
        try:
            yield
        finally:
            self._count(-1)
            self._waiting.release()

    def _count(self, change: int) -> None:
        with self._count_lock:
            self.waiting += change

    def _settle(self, request: AskRequest) -> Settlement:
        """The call settled once (settlement.settle), what the proxy can check before its
        upstream answers included; its record is kept by the guard, not by the ask
        (`_judged`: only while the caller still waits)."""
        return settle(self.store, self.settings, replace(request, keep_record=False))

    def _judged(self, settled: Settlement, keep: bool, outcome: Outcome, deadline: float,
                seconds: dict[str, float], begun: float) -> Guarded:
        """The call judged and, with `keep`, kept; a budget counts from `begun` (the call's
        arrival, for the proxy moved on by the upstream's time)."""
        running: list[Future[Any]] = []  # judges still at work when the budget passed
        budget = call_budget(settled, self.gate, self.settings, running, begun)
        prepared = prepare(self.store, self.settings, settled, self.finders)
        waited = time.monotonic()
        with model_turn(self.gate.turn(prepared),
                        self.models if keep else _UnsavedModels(self.models), settled, budget,
                        running, deadline) as models:
            seconds["queued"] = time.monotonic() - waited
            if outcome.given_up or time.monotonic() > deadline:
                raise GuardTimeout("the caller gave up while the call waited for the model")
            started = time.monotonic()
            result = answer_and_judge(self.store, self.settings, models, prepared,
                                      budget=budget)
            seconds["judging"] = time.monotonic() - started
        if not outcome.keep():
            raise GuardTimeout("the caller gave up before the verdicts were in")
        if keep:
            started = time.monotonic()
            result.record = keep_asked(self.store, self.settings, result)
            seconds["storing"] = time.monotonic() - started
        return Guarded(result, seconds)

    def close(self) -> None:
        if self.upstream is not None:
            self.upstream.close()


def _check_judgeable(reply: UpstreamReply, shown_url: str) -> None:
    """UpstreamBadReply (502, the upstream's fault, not the caller's) for an answer the guard
    cannot judge: none at all, or one longer than MAX_ANSWER_CHARS (neither judged, stored
    nor sent on)."""
    if not reply.text.strip():
        finish = reply.body["choices"][0].get("finish_reason")
        raise UpstreamBadReply(f"the upstream {shown_url} answered no text (finish_reason "
                               f"{json.dumps(finish)}): there is nothing to judge")
    if len(reply.text) > MAX_ANSWER_CHARS:
        raise UpstreamBadReply(f"the upstream {shown_url} answered {len(reply.text):,} "
                               f"characters; answers of up to {MAX_ANSWER_CHARS:,} are judged")


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def call_budget(settled: Settlement, gate: ModelGate, settings: Settings,
                running: list[Future[Any]], begun: float) -> Budget | None:
    """A call's latency budget from `begun`, if it has one (settled: its own, else the
    settings'); with a server backend the call's judges run `concurrency` at once, and those
    the budget leaves running are added to `running`."""
    if settled.budget_ms is None:
        return None
    remote = gate.for_request(settled.request) is gate.remote
    return Budget.starting_at(begun, settled.budget_ms, settled.on_budget,
                              settings.concurrency if remote else 1, running.extend)


@contextmanager
def model_turn(turn: Any, models: Models, settled: Settlement, budget: Budget | None,
               running: list[Future[Any]], deadline: float = math.inf) -> Iterator[Models]:
    """The call's models once its `turn` at them (ModelGate.turn) comes. GuardTimeout when
    `deadline` passes first. When the budget passes first, a given answer is decided from
    the judges that read no model (the others unfinished), and a question with no answer yet
    fails (BudgetPassed). The turn is given back once the judges that the budget left
    `running` are done with the model: the in-process one holds one cache, and a server
    backend is sent no more than `concurrency` calls, cut off or not."""
    until = min(deadline, budget.deadline if budget else math.inf)
    if not turn.acquire(timeout=-1 if until == math.inf else _left(until)):
        if budget is None or time.monotonic() > deadline:
            raise GuardTimeout("the model stayed busy with other calls until the deadline")
        if settled.request.given_answer is None:
            raise BudgetPassed(f"the model stayed busy past the {budget.milliseconds:,} ms "
                               "budget: there is no answer to judge")
        turn, models = _NoTurn(), _NO_MODELS  # decide from what needs no model
    try:
        yield models
    finally:
        if running:
            threading.Thread(target=lambda: (wait(running), turn.release()),
                             name="guard-release", daemon=True).start()
        else:
            turn.release()


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None
