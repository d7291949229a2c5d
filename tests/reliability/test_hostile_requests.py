"""Guard API: hostile requests (issue 31) against a real server process

`python -m ragshield serve --api-only` on 127.0.0.1: SIGKILLed in the middle of a burst of
calls that store what they judge (no live sample may be left without its answer, and no
acknowledged call lost), an unexpected failure (its traceback logged once), and API keys that
no request could carry (refused at start-up in one line). The plain request checks of the
same probe are in tests/test_api.py."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port
from tests.reliability.scenario import Scenario
from tests.cli_support import ROOT

KEY = "burst-key-" + "x" * 16
BURST = 120  # calls, 8 at a time: a few seconds of storing on 2 cores


def serve_args(port: int, *extra: str) -> list[str]:
    return ["serve", "--api-only", "--port", str(port), *extra]


def environment(db: Path) -> dict[str, str]:
    return {"RAGSHIELD_DATABASE_URL": f"sqlite:///{db}", "RAGSHIELD_LLM_CACHE": "false"}


def live_samples(db: Path) -> list[tuple[str, int]]:
    """(sample id, main answers) of every live sample, answered or not."""
    with sqlite3.connect(db, timeout=30) as connection:
        return connection.execute(
            "SELECT s.external_id, (SELECT COUNT(*) FROM answers a WHERE a.sample_id = s.id "
            "AND a.role = 'main') FROM samples s JOIN datasets d ON d.id = s.dataset_id "
            "WHERE d.name = 'live'").fetchall()


def judge(base: str, number: int) -> dict[str, Any] | None:
    """One stored call; its record when it was answered, None when the server died first."""
    try:
        response = httpx.post(f"{base}/v1/judge", timeout=60, json={
            "question": f"Which people gave their name to Normandy (call {number})?",
            "passages": [{"text": "The Normans gave their name to Normandy."}],
            "answer": "The Normans", "judges": ["trivial"], "rule": "trivial"})
    except httpx.HTTPError:
        return None
    return response.json()["record"] if response.status_code == 200 else None


@pytest.mark.parametrize("kill_after", [1, 5])
@pytest.mark.scenario("Guard API server SIGKILLed in a burst of stored calls")
def test_a_server_killed_in_a_burst_leaves_no_sample_without_its_answer(
        run_server, kill_after: int, tmp_path: Path, scenario: Scenario) -> None:
    """SIGKILLed right after the commit that added the `kill_after`-th live sample, while 8
    clients call at once (kill_after_commit.py): where a sample and its answer were two
    transactions, that sample was left without its answer every time."""
    db, port = tmp_path / "burst.db", free_port()
    base = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "tests.reliability.kill_after_commit", str(kill_after),
            *serve_args(port)]
    with run_server(args, f"{base}/v1/health", tmp_path / "server.log", env=environment(db),
                    cwd=ROOT) as server:
        with ThreadPoolExecutor(8) as pool:
            records = list(pool.map(lambda number: judge(base, number), range(BURST)))
        server.wait(timeout=60)
    answered = [record for record in records if record is not None]
    scenario.figure(f"kill after sample {kill_after}: calls answered",
                    f"{len(answered)} of {BURST}")
    scenario.check("the server was SIGKILLed mid-burst", server.returncode == -signal.SIGKILL
                   and len(answered) < BURST, (server.returncode, len(answered)))
    samples = dict(live_samples(db))
    unanswered = sorted(sample for sample, answers in samples.items() if answers == 0)
    scenario.check("no live sample is left without its answer", not unanswered, unanswered)
    scenario.check("the samples committed before the kill are there",
                   len(samples) >= kill_after, samples)
    lost = [r["sample_id"] for r in answered if samples.get(r["sample_id"]) != 1]
    scenario.check("every answered call is stored with its answer (nothing acknowledged lost)",
                   not lost, lost)


@pytest.mark.scenario("Guard API server: an unexpected failure")
def test_an_unexpected_failure_is_a_500_and_one_traceback_in_the_log(
        run_server, tmp_path: Path, scenario: Scenario) -> None:
    port, log = free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "tests.reliability.failing_guard", *serve_args(port)]
    with run_server(args, f"{base}/v1/health", log, env=environment(tmp_path / "bug.db"),
                    cwd=ROOT):
        response = httpx.post(f"{base}/v1/judge", timeout=60, json={
            "question": "Who?", "answer": "The Normans", "judges": ["trivial"]})
        time.sleep(0.5)  # the log is written after the answer is sent
    scenario.check("the caller gets a 500 naming no detail of the bug",
                   response.status_code == 500 and "planted bug" not in response.text,
                   response.text)
    text = log.read_text(errors="replace")
    scenario.check("the server's log holds the traceback once",
                   text.count("Traceback (most recent call last)") == 1
                   and "RuntimeError: planted bug" in text, text[-3000:])


@pytest.mark.scenario("Guard API server: API keys that no request can carry")
def test_a_key_no_request_can_carry_is_refused_at_start_up(
        python_processes: str, tmp_path: Path, scenario: Scenario) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# team keys\n{KEY}\nclé-secrète-{'x' * 16}\n", encoding="utf-8")
    started = subprocess.run(
        [python_processes, "-m", "ragshield", *serve_args(free_port(), "--api-keys", str(keys))],
        cwd=ROOT, env={**os.environ, **environment(tmp_path / "keys.db")},
        capture_output=True, text=True, timeout=120)
    errors = [line for line in started.stderr.splitlines() if line.startswith("error:")]
    scenario.check("the server does not start (exit status 1)", started.returncode == 1,
                   started.stderr[-2000:])
    scenario.check("one error line naming the file and line of the key",
                   len(errors) == 1 and f"{keys}:3:" in errors[0] and "ASCII" in errors[0]
                   and "Traceback" not in started.stderr, started.stderr[-2000:])
    scenario.check("the key itself is not shown", "secrète" not in started.stderr,
                   started.stderr[-2000:])
