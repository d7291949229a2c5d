"""A guard call's latency budget (`budget_ms`, `on_budget`; ragshield/judge_budget.py): the
call answers when its budget passes, decided from the judges that finished. Against a slow
judge backend for real (the openai backend on a fake server that takes seconds per call,
its judges run side by side) and an in-process model that is slow (its judges one at a
time, and never two calls on it at once, even when the budget left a judge running)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from starlette.testclient import TestClient

from ragshield.api.app import build_api
from ragshield.api.keys import KeyCheck
from ragshield.config import Settings
from ragshield.services.guarding.guard import CallContext, Guard, ModelGate, Outcome
from ragshield.services.questions.ask_types import AskRequest
from ragshield.services.questions.asking import ABSTAIN_MESSAGE, OpenedModels
from ragshield.store.database import Store
from ragshield.types import GivenAnswer, Passage
from tests.reliability.fake_openai import Fault, FakeOpenAIServer
from tests.api_support import SLACK_S, SURE, SlowLLM, client_for, error_of, judge_body, live_answers

SLOW_S = 3.0  # each call to the slow backend
BUDGET_MS = 800
# tests (the target, 100 ms, is measured by scripts/bench_guard.py on a quiet machine; 1.0 was
# passed by 54 ms once, under make test's two workers): the judges cut off (2 s and more) take
# longer than budget and slack together, so a call that waited for them still fails
LOGPROBS = [{"token": "The", "logprob": SURE}, {"token": " Normans", "logprob": SURE}]


def slow(seconds: float) -> Any:
    """Each judge's call takes `seconds` (the model list and the capability probe, made once
    when the backend opens, do not)."""
    return lambda request: (Fault(delay_s=seconds)
                            if request.is_chat and request.prompt != "Say yes." else None)


def server_client(settings: Settings, store: Store, upstream: FakeOpenAIServer) -> TestClient:
    settings.backend, settings.openai_base_url = "openai", upstream.url
    settings.model, settings.concurrency = "fake-model", 4
    guard = Guard(settings, store, OpenedModels(settings, store), ModelGate(settings))
    client = TestClient(build_api(settings, guard, KeyCheck([])), raise_server_exceptions=False)
    # The backend opens (its client, the capability probe) on the first call, as once in a
    # server's life: not within the measured calls' budgets.
    client.post("/v1/judge", json=judge_body(question="Warm-up?", judges=["p_true"],
                                             budget_ms=300, store=False))
    return client


def timed_post(client: TestClient, body: dict[str, Any]) -> tuple[float, Any]:
    started = time.monotonic()
    response = client.post("/v1/judge", json=body)
    return time.monotonic() - started, response


@pytest.mark.server
@pytest.mark.parametrize("rule, on_budget, kept", [
    ("majority", "abstain", True),  # trivial finished, and keeps
    ("p_true", "abstain", False),  # the rule's judge did not finish: fail closed
    ("p_true", "keep", True),  # fail open
])
def test_a_slow_backend_is_cut_off_at_the_budget(settings: Settings, sqlite_store: Store,
                                                 rule: str, on_budget: str,
                                                 kept: bool) -> None:
    with FakeOpenAIServer(slow(SLOW_S)) as upstream:
        client = server_client(settings, sqlite_store, upstream)
        took, response = timed_post(client, judge_body(
            answer_logprobs=LOGPROBS, rule=rule, budget_ms=BUDGET_MS, on_budget=on_budget,
            judges=["trivial", "token_prob", "p_true", "pre_answer"]))
    assert response.status_code == 200, response.text
    assert took < BUDGET_MS / 1000 + SLACK_S
    result = response.json()
    assert sorted(result["unfinished"]) == ["p_true", "pre_answer"]
    by_judge = {verdict["judge"]: verdict for verdict in result["verdicts"]}
    assert by_judge["trivial"]["keep"] is True
    assert by_judge["token_prob"]["available"]  # read from the given log-probs, in time
    assert "did not finish within the 800 ms budget" in by_judge["p_true"]["reason"]
    assert result["kept"] is kept
    assert result["shown"] == ("The Normans" if kept else ABSTAIN_MESSAGE)
    if rule == "p_true":
        assert f"as on_budget {on_budget} says" in result["reason"]
    assert live_answers(sqlite_store) == 1


@pytest.mark.server
def test_judges_run_side_by_side_on_a_server_and_error_stores_nothing(
        settings: Settings, sqlite_store: Store) -> None:
    with FakeOpenAIServer(slow(1.5)) as upstream:
        client = server_client(settings, sqlite_store, upstream)
        took, response = timed_post(client, judge_body(
            rule="p_true", budget_ms=5000, judges=["p_true", "pre_answer"]))
        assert response.status_code == 200 and "unfinished" not in response.json()
        assert took < 2.7  # two 1.5 s judges at once (3 s one after the other)
        _, failed = timed_post(client, judge_body(
            question="Another question?", rule="p_true", budget_ms=300, on_budget="error",
            judges=["p_true"]))
    assert failed.status_code == 504 and error_of(failed)["type"] == "budget_passed"
    assert "p_true did not finish" in error_of(failed)["message"]
    assert live_answers(sqlite_store) == 1


@pytest.mark.server
def test_judges_cut_off_by_their_budget_keep_their_place_at_the_backend(
        settings: Settings, sqlite_store: Store) -> None:
    """Issue 45, item 6: a call cut off by its budget gave its place up while its judge was
    still at the backend: 16 calls put 15 judges at once on a backend of concurrency 4."""
    with FakeOpenAIServer(slow(2.0)) as upstream:
        client = server_client(settings, sqlite_store, upstream)
        time.sleep(2.1)  # the warm-up's judge is done
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda number: client.post("/v1/judge", json=judge_body(
                question=f"Question {number}?", judges=["p_true"], rule="p_true",
                budget_ms=300, store=False)), range(12)))
        time.sleep(2.5)  # the judges cut off finish
        calls = [(r.at, r.answered_at or r.at) for r in upstream.chat_requests()
                 if r.prompt != "Say yes."]
    assert all(answer.status_code == 200 for answer in answers)
    at_once = max(sum(1 for start, end in calls if start <= moment < end) for moment, _ in calls)
    assert at_once <= settings.concurrency, (at_once, len(calls))


class CountingSlowLLM(SlowLLM):
    """A slow in-process model that counts how many calls are on it at once."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.lock = threading.Lock()
        self.now = self.most = 0

    def chat(self, messages, **params):  # type: ignore[no-untyped-def, override]
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            return super().chat(messages, **params)
        finally:
            with self.lock:
                self.now -= 1


def test_an_in_process_model_is_never_shared_when_a_budget_cuts_a_judge_off(
        settings: Settings, sqlite_store: Store) -> None:
    llm = CountingSlowLLM(2.5)
    client = client_for(settings, sqlite_store, llm=llm)
    body = judge_body(answer_logprobs=LOGPROBS, rule="majority", budget_ms=300,
                      judges=["trivial", "token_prob", "p_true"])
    took, first = timed_post(client, body)
    assert first.json()["unfinished"] == ["p_true"] and took < 0.3 + SLACK_S
    # The next call's turn at the model comes only when the cut-off judge is done with it,
    # after this call's budget: only the free judges give verdicts (they read no model), and
    # they decide; the judge that needs the model is unfinished.
    took, second = timed_post(client, {**body, "question": "Who else?"})
    assert second.status_code == 200 and took < 0.3 + SLACK_S
    assert second.json()["unfinished"] == ["p_true"]
    assert second.json()["kept"] and second.json()["reason"] == "2 of 2 deciding judges keep"
    # with only the judge that needs the model, on_budget (abstain) decides
    took, third = timed_post(client, {**body, "question": "Who then?", "rule": "p_true"})
    assert third.json()["unfinished"] == ["p_true"] and not third.json()["kept"]
    assert "as on_budget abstain says" in third.json()["reason"]
    time.sleep(2.6)
    assert llm.most == 1


def test_the_settings_give_the_default_budget(settings: Settings, sqlite_store: Store) -> None:
    settings.guard_budget_ms, settings.guard_on_budget = 200, "keep"
    client = client_for(settings, sqlite_store, llm=CountingSlowLLM(2.0))
    # The first call imports and opens what a server opens once (1.3 s on busy cores; CI once
    # took 1.83 s when the warm-up asked only the trivial judge and stored nothing): a call of
    # the measured kind, on another question, then the slow model is left to finish it.
    client.post("/v1/judge", json=judge_body(question="Warm-up?", rule="p_true",
                                             judges=["p_true"]))
    time.sleep(2.1)
    took, response = timed_post(client, judge_body(rule="p_true", judges=["p_true"]))
    assert took < 0.2 + SLACK_S
    assert response.json()["kept"] and "on_budget keep" in response.json()["reason"]
    bad = client.post("/v1/judge", json=judge_body(budget_ms=0, on_budget="maybe"))
    assert bad.status_code == 422 and error_of(bad)["param"] in ("budget_ms", "on_budget")
    time.sleep(2.1)


@pytest.mark.server
def test_the_budget_counts_from_when_the_call_arrived(settings: Settings,
                                                      sqlite_store: Store) -> None:
    """Issue 55, item 14: under a burst a call waited before the guard took it, and its
    budget started only then (16 calls at 300 ms: the clients waited 650 to 1,180 ms). A
    call that arrived 150 ms before the guard takes it has 150 ms of its 300 left."""
    with FakeOpenAIServer(slow(SLOW_S)) as upstream:
        settings.backend, settings.openai_base_url = "openai", upstream.url
        settings.model, settings.concurrency = "fake-model", 4
        guard = Guard(settings, sqlite_store, OpenedModels(settings, sqlite_store),
                      ModelGate(settings))
        request = AskRequest(question="Who gave their name to Normandy?", passages=(
            Passage(text="The Normans gave their name to Normandy."),),
            given_answer=GivenAnswer("The Normans"), judges=("trivial", "p_true"),
            rule="majority", budget_ms=300, keep_record=False)
        guard.ask(request, Outcome(), time.monotonic() + 30)  # the backend opens
        arrived = time.monotonic() - 0.15
        taken = time.monotonic()
        guarded = guard.ask(request, Outcome(), arrived + 30,
                            CallContext("judge", arrived=arrived))
        took = time.monotonic() - taken
    assert guarded.result.fallback is None  # trivial finished and keeps
    assert guarded.seconds["total"] >= 0.25  # counted from the arrival
    assert took < 0.25, took  # what was left of the budget, not 300 ms again
