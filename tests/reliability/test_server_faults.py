"""Model server faults: runs against a real HTTP server that hangs, fails, throttles or sends
garbage, through the OpenAI-compatible backend and the run engine, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from email.utils import formatdate
from typing import Callable

import pytest

from ragshield.config import Settings
from ragshield.pipeline import RunOutcome, execute_run, start_run
from ragshield.run_config import RunConfig
from ragshield.store.database import Store, open_store
from ragshield.store.runs import failures, verdict_records
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from tests.reliability.consistency import check_complete_exactly_once
from tests.reliability.fake_openai import Fault, FakeOpenAIServer, Request
from tests.reliability.scale import sized
from tests.reliability.scenario import Scenario
from tests.cli_support import ROOT

JUDGES = ["trivial", "p_true"]
DATASET = "toy"


def question(index: int) -> str:
    return f"What is the capital of country {index}?"


def is_answer_call(request: Request, index: int) -> bool:
    """The answerer's call for sample `index` (the judge's prompt shows a proposed answer)."""
    return question(index) in request.prompt and "Proposed answer" not in request.prompt


def toy_samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", question=question(i), passages=[Passage(f"City{i} is the capital.")],
                   reference_answers=[f"City{i}"], answerable=True) for i in range(n)]


def run(store: Store, settings: Settings, server: FakeOpenAIServer, *, run_id: int | None = None,
        n: int = 0, **limits: float) -> tuple[int, RunOutcome]:
    """Start (when `run_id` is None) or resume a run of `JUDGES` against `server`; `limits`
    override the backend's timeout, retries, backoff and concurrency."""
    settings = settings.model_copy(update={
        "backend": "openai", "model": None, "openai_base_url": server.url,
        "request_timeout_s": 5.0,
        "max_retries": 2, "retry_backoff_s": 0.01, "concurrency": 2, **limits})
    if run_id is None:
        if n:
            import_samples(store, DATASET, toy_samples(n))
        run_id = start_run(store, RunConfig(dataset=DATASET, judges=JUDGES, rule="p_true",
                                            backend="openai", base_url=server.url,
                                            concurrency=settings.concurrency))
    return run_id, execute_run(store, run_id, settings, progress=False)


def resume_healthy(scenario: Scenario, store: Store, settings: Settings,
                   server: FakeOpenAIServer, run_id: int) -> None:
    """Resume once the server behaves: every sample ends up saved exactly once."""
    server.behaviour = lambda request: None
    _, outcome = run(store, settings, server, run_id=run_id)
    scenario.check("the resumed run completes", outcome.status == "done", outcome)
    check_complete_exactly_once(scenario, store, run_id, JUDGES)


@pytest.mark.scenario("Model server hangs: the client's timeout fires")
def test_a_hanging_call_fails_its_sample_and_the_run_goes_on(store, settings, scenario):
    n, timeout, victim = sized(6, 30), 0.5, 2
    hang = Fault(delay_s=4.0)
    with FakeOpenAIServer(lambda r: hang if is_answer_call(r, victim) else None) as server:
        started = time.monotonic()
        run_id, outcome = run(store, settings, server, n=n, request_timeout_s=timeout,
                              max_retries=1)
        seconds = time.monotonic() - started
        attempts = [r for r in server.chat_requests() if is_answer_call(r, victim)]
        errors = failures(store, run_id)
        scenario.figure("run seconds with one call hanging", round(seconds, 2))
        scenario.check("only the hanging sample fails; the others are saved",
                       (outcome.status, outcome.done, outcome.failed) == ("incomplete", n - 1, 1),
                       outcome)
        scenario.check("the failure names the timeout",
                       "timed out" in errors.get(f"s{victim}", ""), errors)
        scenario.check("the hanging call was tried max_retries + 1 times", len(attempts) == 2,
                       len(attempts))
        scenario.check("the run did not wait for the hanging server", seconds < hang.delay_s,
                       seconds)
        resume_healthy(scenario, store, settings, server, run_id)


def first_of_each_kind(faults: list[Fault]) -> Callable[[Request], Fault | None]:
    """The first len(faults) requests of each kind (model list, log-prob probe, answer, judge
    question) get `faults` in turn; later ones are healthy."""
    seen: dict[str, int] = {}

    def behaviour(request: Request) -> Fault | None:
        kind = ("models" if not request.is_chat else "probe" if request.body.get("max_tokens") == 1
                else "judge" if "Proposed answer" in request.prompt else "answer")
        seen[kind] = seen.get(kind, 0) + 1
        return faults[seen[kind] - 1] if seen[kind] <= len(faults) else None
    return behaviour


@pytest.mark.scenario("Model server returns 5xx or drops connections, then recovers")
def test_server_errors_are_retried_until_it_recovers(store, settings, scenario):
    n = sized(6, 30)
    faults = [Fault(status=500, body=b'{"error": {"message": "boom"}}'), Fault(drop=True),
              Fault(status=503, body=b"<html>Service Unavailable</html>")]
    with FakeOpenAIServer(first_of_each_kind(faults)) as server:
        run_id, outcome = run(store, settings, server, n=n, max_retries=len(faults),
                              concurrency=1)
        requests = len(server.requests)
    scenario.figure("requests (failed ones included)", requests)
    scenario.check("every sample is saved despite the errors",
                   (outcome.status, outcome.done) == ("done", n), outcome)
    scenario.check("each kind of call was failed 3 times and retried",
                   requests == 1 + 1 + 2 * n + 4 * len(faults), requests)
    p_true = [v for v in verdict_records(store, run_id) if v["judge"] == "p_true"]
    scenario.check("log-probs are still detected after the probe met errors (p_true available)",
                   all(v["available"] and v["score"] == pytest.approx(0.8, abs=0.01)
                       for v in p_true), p_true)
    check_complete_exactly_once(scenario, store, run_id, JUDGES)


# sample index -> (what Retry-After says, its value, least and most wait in seconds);
# unreadable values fall back to the backoff (0.01 s).
RETRY_AFTER = {
    0: ("0.6 seconds", lambda: "0.6", 0.6, 1.5),
    1: ("an HTTP date 2 s ahead", lambda: formatdate(time.time() + 2, usegmt=True), 0.9, 2.6),
    2: ("-1 (unreadable)", lambda: "-1", 0.0, 0.5),
    3: ("nan (unreadable)", lambda: "nan", 0.0, 0.5),
    4: ("soon (unreadable)", lambda: "soon", 0.0, 0.5),
}


@pytest.mark.scenario("Model server throttles with 429 and Retry-After")
def test_429_waits_as_long_as_the_server_asks(store, settings, scenario):
    n = sized(6, 30)
    throttled: set[int] = set()

    def behaviour(request: Request) -> Fault | None:
        for index, (_, value, _, _) in RETRY_AFTER.items():
            if is_answer_call(request, index) and index not in throttled:
                throttled.add(index)
                return Fault(status=429, body=b'{"error": {"message": "slow down"}}',
                             headers={"retry-after": value()})
        return None

    with FakeOpenAIServer(behaviour) as server:
        run_id, outcome = run(store, settings, server, n=n, concurrency=1)
        calls = server.chat_requests()
    for index, (says, _, least, most) in RETRY_AFTER.items():
        first, retry = [r for r in calls if is_answer_call(r, index)]
        waited = retry.at - (first.answered_at or first.at)
        scenario.figure(f"wait after Retry-After: {says} (s)", round(waited, 3))
        scenario.check(f"Retry-After: {says}: the retry came {least} to {most} s later",
                       least <= waited <= most, waited)
    scenario.check("every throttled sample is saved", (outcome.status, outcome.done) ==
                   ("done", n), outcome)
    check_complete_exactly_once(scenario, store, run_id, JUDGES)


def _choice(**changes: object) -> bytes:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"},
                         "finish_reason": "stop", **changes}]}
    return json.dumps(body).encode()


GARBAGE = {
    "not JSON": b"{not json",
    "truncated JSON": b'{"id": "x", "choices": [{"index": 0, "message": {"content": "Par',
    "an HTML page": b"<html><body>502 Bad Gateway</body></html>",
    "an empty body": b"",
    "a JSON array": b"[]",
    "JSON null": b"null",
    "no choices": b'{"object": "chat.completion"}',
    "a null message": _choice(message=None),
    "a number as text": _choice(message={"role": "assistant", "content": 42}),
    "choices as an object": b'{"choices": {"0": {}}}',
}
BAD_LOGPROBS = _choice(logprobs={"content": [{"token": "Yes", "logprob": "high",
                                              "top_logprobs": []}]})


@pytest.mark.scenario("Model server returns garbage or truncated JSON")
def test_garbage_replies_flag_their_sample_and_the_run_goes_on(store, settings, scenario):
    kinds = list(GARBAGE)
    judge_victim = len(kinds)  # its p_true call gets unreadable log-probs
    n = max(sized(6, 30), len(kinds) + 3)

    def behaviour(request: Request) -> Fault | None:
        for index, kind in enumerate(kinds):
            if is_answer_call(request, index):
                return Fault(body=GARBAGE[kind])
        if question(judge_victim) in request.prompt and "Proposed answer" in request.prompt:
            return Fault(body=BAD_LOGPROBS)
        return None

    with FakeOpenAIServer(behaviour) as server:
        run_id, outcome = run(store, settings, server, n=n)
        errors = failures(store, run_id)
        scenario.check("each sample given garbage fails; every other sample is saved",
                       (outcome.done, outcome.failed) == (n - len(kinds) - 1, len(kinds) + 1),
                       outcome)
        readable = all("unreadable response" in errors.get(f"s{i}", "")
                       for i in range(len(kinds)))
        scenario.check(f"each failure says the reply was unreadable ({', '.join(kinds)})",
                       readable, errors)
        scenario.check("garbage log-probs fail the judge's sample with a readable error",
                       "malformed log-probs" in errors.get(f"s{judge_victim}", ""), errors)
        crashes = [e for e in errors.values()
                   if any(name in e for name in ("AttributeError", "TypeError", "KeyError"))]
        scenario.check("no failure is a crash of ours (AttributeError, TypeError, KeyError)",
                       not crashes, crashes)
        resume_healthy(scenario, store, settings, server, run_id)


@pytest.mark.scenario("Model server returns garbage or truncated JSON")
def test_the_cli_lists_garbage_failures_and_exits_1(python_processes, tmp_path, scenario):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    store = open_store(url)
    import_samples(store, DATASET, toy_samples(4))
    store.close()
    env = {"RAGSHIELD_DATABASE_URL": url, "RAGSHIELD_MAX_RETRIES": "1",
           "RAGSHIELD_RETRY_BACKOFF_S": "0.01"}
    with FakeOpenAIServer(lambda r: Fault(body=b"<html>") if is_answer_call(r, 1) else None
                          ) as server:
        result = subprocess.run(
            [sys.executable, "-m", "ragshield", "run", "--dataset", DATASET, "--judges",
             ",".join(JUDGES), "--rule", "p_true", "--backend", "openai", "--base-url",
             server.url, "--no-progress"],
            cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    scenario.check("the CLI exits with status 1", result.returncode == 1, result.stderr)
    scenario.check("the output names the failed sample and the unreadable reply",
                   "failed s1:" in result.stdout and "unreadable response" in result.stdout,
                   result.stdout)
    scenario.check("no traceback is printed", "Traceback" not in result.stdout + result.stderr,
                   result.stderr)
    scenario.check("the other samples are reported done", "done=3" in result.stdout,
                   result.stdout)

