"""Every test under tests/reliability is marked `reliability` and recorded (scenario.py).
These hostile probes (fuzzing, faults, floods) run in `make test`; they are also marked `slow`
so that the fast lane for daily work stays short."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.reliability.scale import LONG
from tests.reliability.scenario import Scenario

SCENARIO_KEY = pytest.StashKey[Scenario]()
PHASES_KEY = pytest.StashKey[list[pytest.TestReport]]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reliability/" in item.nodeid:
            item.add_marker(pytest.mark.reliability)
            item.add_marker(pytest.mark.slow)


def _scenario_name(item: pytest.Item) -> str:
    marker = item.get_closest_marker("scenario")
    if marker is not None:
        return str(marker.args[0])
    doc = (getattr(item.module, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else item.name


@pytest.fixture(autouse=True)
def scenario(request: pytest.FixtureRequest) -> Iterator[Scenario]:
    """The running test's record; tests add checks and figures to it."""
    record = Scenario(name=_scenario_name(request.node), test=request.node.nodeid)
    request.node.stash[SCENARIO_KEY] = record
    yield record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator:
    report = yield
    phases = item.stash.setdefault(PHASES_KEY, [])
    phases.append(report)
    record = item.stash.get(SCENARIO_KEY, None)
    if report.when == "teardown" and record is not None:
        outcome = ("failed" if any(p.failed for p in phases)
                   else "skipped" if any(p.skipped for p in phases) else "passed")
        record.write(outcome, sum(p.duration for p in phases), LONG)
    return report
