"""Guard API: a budget as the client sees it (issue 55, item 14)

16 callers at once, each with `budget_ms` 300, against a real server process whose judge
backend takes seconds per call: the budget counts from when a call reaches the server (not
from when the guard takes it), so a client waits about its budget, not its budget plus the
time its call queued behind the others."""

from __future__ import annotations

import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port
from tests.reliability.fake_openai import Fault, FakeOpenAIServer
from tests.reliability.scenario import Scenario
from tests.reliability.test_hostile_requests import environment, serve_args
from tests.cli_support import ROOT

CALLERS, BUDGET_MS = 16, 300
# What a client may wait past its budget here: the HTTP exchange and the event loop's work
# on 16 bodies at once, on 2 cores shared with the rest of the suite. Alone it is 0-250 ms;
# beside another test worker's busy process, half the calls were seen to stall 450 ms more.
# The failure this test is for is a call queued behind the others' judges, each of which
# holds the backend 3 s: a wait of seconds, well past this slack.
SLACK_MS = 1000


def slow_judges(request):  # type: ignore[no-untyped-def]
    return Fault(delay_s=3.0) if request.is_chat and request.prompt != "Say yes." else None


@pytest.mark.scenario("Guard API: a budget as the client sees it (16 callers at once)")
def test_sixteen_callers_wait_about_their_budget(run_server, tmp_path: Path,
                                                  scenario: Scenario) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with FakeOpenAIServer(slow_judges) as backend:
        env = {**environment(tmp_path / "budget.db"), "RAGSHIELD_BACKEND": "openai",
               "RAGSHIELD_OPENAI_BASE_URL": backend.url, "RAGSHIELD_MODEL": "fake-model"}
        with run_server([sys.executable, "-m", "ragshield", *serve_args(port)],
                        f"{base}/v1/health", tmp_path / "server.log", env=env, cwd=ROOT):
            with httpx.Client(timeout=60) as client:
                def call(number: int) -> tuple[float, httpx.Response]:
                    started = time.monotonic()
                    response = client.post(f"{base}/v1/judge", json={
                        "question": f"Which people gave their name to Normandy ({number})?",
                        "passages": [{"text": "The Normans gave their name to Normandy."}],
                        "answer": "The Normans", "judges": ["trivial", "p_true"],
                        "rule": "majority", "budget_ms": BUDGET_MS})
                    return time.monotonic() - started, response

                call(-1)  # the backend opens (its probe) once in the server's life
                with ThreadPoolExecutor(CALLERS) as pool:
                    answers = list(pool.map(call, range(CALLERS)))
    waits = sorted(seconds * 1000 for seconds, _ in answers)
    scenario.check("every call is answered 200",
                   all(response.status_code == 200 for _, response in answers),
                   [response.text[:200] for _, response in answers])
    kept = sum(response.json()["kept"] for _, response in answers)
    scenario.check(f"no client waited more than {SLACK_MS} ms past its budget",
                   waits[-1] <= BUDGET_MS + SLACK_MS, waits)
    scenario.figure("client wait median / max (ms), budget 300",
                    f"{statistics.median(waits):.0f} / {waits[-1]:.0f}")
    scenario.check("every call was decided by the free judge, in time or not (trivial keeps)",
                   kept == CALLERS, [r.json()["reason"] for _, r in answers])
