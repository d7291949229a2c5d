"""Guard API: two replicas on one PostgreSQL database (issue 31)

Two `python -m ragshield serve --api-only` processes, started at the same moment on a fresh
PostgreSQL database (as an orchestrator starts them), and 16 client threads calling
/v1/judge on both at once with the trivial judge (no model is loaded): most calls distinct,
some sent to both replicas at the same moment. Every call is answered; each distinct call is
stored once (one live sample, one answer, one reply saying `stored: true`); there is one
live run per setting and day; and a policy saved while the replicas run decides in both,
by the same version, from the next call on."""

from __future__ import annotations

import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from ragshield.policies.policy import Policy
from ragshield.services.learning.policies import save_policy
from ragshield.services.questions.live_runs import LIVE_DATASET, LIVE_STATUS
from ragshield.store.database import Store, open_store
from ragshield.store.runs import iter_main_answers, list_runs
from ragshield.store.samples import count_samples
from ragshield.testing.replicas import api_replicas
from tests.reliability.scenario import Scenario
from tests.api_support import API_GUARD_POLICY

KEY = "replica-key-" + "x" * 16
CLIENTS = 16
DISTINCT = 120  # calls of each phase; every 4th is sent to both replicas at once
POLICY = "replica-guard"


@pytest.fixture
def replicas(run_server, postgres_url: str, tmp_path: Path) -> Iterator[list[str]]:
    with api_replicas(2, postgres_url, tmp_path, start=run_server,
                      env={"RAGSHIELD_API_KEYS": KEY, "RAGSHIELD_LLM_CACHE": "false"}) as bases:
        yield bases


@pytest.fixture
def store(replicas: list[str], postgres_url: str) -> Iterator[Store]:
    """The replicas' database, opened once they have migrated it."""
    opened = open_store(postgres_url)
    yield opened
    opened.close()


OPEN_STORE = "import sys; from ragshield.store.database import open_store; open_store(sys.argv[1])"


@pytest.mark.scenario("Guard API: two replicas on one PostgreSQL database")
def test_processes_opening_a_fresh_database_at_once_all_open_it(
        python_processes: str, postgres_url: str, scenario: Scenario) -> None:
    """Replicas started together open a fresh database together: each migrated it at once,
    and all but one failed ("duplicate key value ... alembic_version")."""
    opening = [subprocess.Popen([python_processes, "-c", OPEN_STORE, postgres_url],
                                stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errors = [process.communicate(timeout=120)[1][-500:] for process in opening]
    scenario.check("processes opening a fresh database at once all open it (one migrates)",
                   all(process.returncode == 0 for process in opening), errors)


def body(phase: str, number: int, rule: str) -> dict[str, Any]:
    return {"question": f"Who gave their name to Normandy ({phase} call {number})?",
            "passages": [{"text": "The Normans gave their name to Normandy."}],
            "answer": "The Normans", "judges": ["trivial"], "rule": rule}


def burst(bases: list[str], phase: str, rule: str) -> dict[int, list[tuple[int, Any]]]:
    """DISTINCT calls from CLIENTS threads, each to a replica in turn and every 4th to both
    at once; the replies of each call: (replica, status and JSON)."""
    sends = [(number, replica) for number in range(DISTINCT)
             for replica in ((0, 1) if number % 4 == 0 else (number % 2,))]
    random.Random(phase).shuffle(sends)
    replies: dict[int, list[tuple[int, Any]]] = {number: [] for number in range(DISTINCT)}
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {KEY}"},
                      limits=httpx.Limits(max_connections=2 * CLIENTS)) as http:
        def send(call: tuple[int, int]) -> None:
            number, replica = call
            response = http.post(f"{bases[replica]}/v1/judge", json=body(phase, number, rule))
            answer = response.json() if response.status_code == 200 else response.text
            replies[number].append((replica, response.status_code, answer))

        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(send, sends))
    return replies


def check_stored_once(scenario: Scenario, phase: str,
                      replies: dict[int, list[tuple[int, Any]]]) -> None:
    failed = [(n, status, answer) for n, got in replies.items() for _, status, answer in got
              if status != 200]
    scenario.check(f"{phase}: every call answered 200", not failed, failed[:3])
    for number, got in replies.items():
        records = [answer["record"] for _, _, answer in got]
        scenario.check(f"{phase}: one reply of each distinct call says stored",
                       sum(record["stored"] for record in records) == 1, (number, records))
        scenario.check(f"{phase}: the replies of one call name one sample and run",
                       len({(r["run_id"], r["sample_id"]) for r in records}) == 1, records)


@pytest.mark.scenario("Guard API: two replicas on one PostgreSQL database")
def test_two_replicas_store_each_call_once_and_share_runs_and_policies(
        replicas: list[str], store: Store, scenario: Scenario) -> None:
    save_policy(store, Policy.from_dict({**API_GUARD_POLICY, "name": POLICY,
                                         "source": "trivial"}))
    plain = burst(replicas, "plain", "trivial")
    first = burst(replicas, "policy v1", f"policy:{POLICY}")
    save_policy(store, Policy.from_dict({**API_GUARD_POLICY, "name": POLICY,
                                         "source": "trivial", "answer_at": 0.95}))
    second = burst(replicas, "policy v2", f"policy:{POLICY}")
    calls = {"plain": plain, "policy v1": first, "policy v2": second}
    for phase, replies in calls.items():
        check_stored_once(scenario, phase, replies)
    scenario.figure("calls answered", sum(len(r) for p in calls.values() for r in p.values()))

    for phase, replies, version in (("policy v1", first, 1), ("policy v2", second, 2)):
        rules = {(replica, answer["rule"]) for got in replies.values()
                 for replica, _, answer in got}
        scenario.check(f"{phase}: both replicas decide by version {version}",
                       rules == {(0, f"policy:{POLICY}@{version}"),
                                 (1, f"policy:{POLICY}@{version}")}, rules)

    live = [run for run in list_runs(store) if run.status == LIVE_STATUS]
    scenario.check("one live run per setting today (plain, policy v1, policy v2)",
                   len(live) == 3 and len({run.name for run in live}) == 3,
                   [(run.id, run.name) for run in live])
    runs_of = {phase: {answer["record"]["run_id"] for got in replies.values()
                       for _, _, answer in got} for phase, replies in calls.items()}
    scenario.check("each phase's calls went into one run of its own",
                   all(len(ids) == 1 for ids in runs_of.values())
                   and len(set.union(*runs_of.values())) == 3, runs_of)
    for run in live:
        answered = [saved.sample_id for saved in iter_main_answers(store, run.id)]
        scenario.check(f"live run {run.id} holds each of its calls once",
                       len(answered) == len(set(answered)) == run.done == run.total == DISTINCT,
                       (len(answered), len(set(answered)), run.done, run.total))
    scenario.check("one live sample per distinct call",
                   count_samples(store, LIVE_DATASET) == len(calls) * DISTINCT,
                   count_samples(store, LIVE_DATASET))
