"""`GET /v1/metrics` in process: the Prometheus text parses, and its counts are the calls
made (answered, withheld, refused 422 and 401), its histograms count them, the queue gauge
follows a call in flight and is 0 at rest, and each app counts only its own calls."""

from __future__ import annotations

import threading
import time
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from ragshield.config import Settings
from ragshield.store.database import Store
from tests.api_support import KEY, SURE, UNSURE, SlowLLM, client_for, judge_body

AUTH = {"Authorization": f"Bearer {KEY}"}
Labels = frozenset[tuple[str, str]]


def scraped(client: TestClient) -> dict[tuple[str, Labels], float]:
    """Every sample of the metrics page: (sample name, labels) -> value."""
    response = client.get("/v1/metrics", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples}


def value(samples: dict[tuple[str, Labels], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def judged(logprob: float, **extra: Any) -> dict[str, Any]:
    return judge_body(answer_logprobs=[{"token": "The", "logprob": logprob}],
                      rule="token_prob", **extra)


def test_the_metrics_count_the_calls_made(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store, SlowLLM(0.05), keys=[KEY])
    kept = [client.post("/v1/judge", json=judged(SURE, question=f"q{n}"), headers=AUTH)
            for n in range(3)]
    withheld = client.post("/v1/judge", json=judged(UNSURE), headers=AUTH)
    refused = client.post("/v1/judge", json={"question": "q"}, headers=AUTH)
    unkeyed = client.post("/v1/judge", json=judged(SURE))
    too_big = client.post("/v1/judge", content=b"x" * (settings.api_max_body_bytes + 1),
                          headers=AUTH)
    assert [r.json()["decision"] for r in kept] == ["keep"] * 3
    assert withheld.json()["decision"] == "abstain"
    assert (refused.status_code, unkeyed.status_code, too_big.status_code) == (422, 401, 413)

    samples = scraped(client)
    requests = "ragshield_api_requests_total"
    assert value(samples, requests, route="/v1/judge", status="200") == 4
    assert value(samples, requests, route="/v1/judge", status="422") == 1
    assert value(samples, requests, route="/v1/judge", status="401") == 1
    assert value(samples, requests, route="/v1/judge", status="413") == 1  # before any route
    decisions = "ragshield_guard_decisions_total"
    assert value(samples, decisions, endpoint="judge", decision="keep") == 3
    assert value(samples, decisions, endpoint="judge", decision="abstain") == 1
    assert sum(v for (name, _), v in samples.items() if name == decisions) == 4
    # Every request is timed, answered or not; each answered call's phases are too.
    assert value(samples, "ragshield_api_request_seconds_count", route="/v1/judge") == 7
    for phase in ("queued", "judging", "storing"):
        assert value(samples, "ragshield_guard_phase_seconds_count", endpoint="judge",
                     phase=phase) == 4, phase
    # p_true asked the slow model (0.05 s) in each answered call.
    assert value(samples, "ragshield_model_busy_seconds_total") >= 4 * 0.05
    assert value(samples, "ragshield_guard_waiting") == 0
    # The scrape before this one was counted, under its own route; a key is required.
    assert value(scraped(client), requests, route="/v1/metrics", status="200") == 1
    assert client.get("/v1/metrics").status_code == 401


def test_a_random_path_adds_no_label(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    for n in range(3):
        assert client.get(f"/v1/nosuch-{n}").status_code == 404
    samples = scraped(client)
    assert value(samples, "ragshield_api_requests_total", route="other", status="404") == 3
    assert not any("nosuch" in str(labels) for _, labels in samples)


def test_the_queue_gauge_follows_a_call_in_flight(settings: Settings,
                                                  sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store, SlowLLM(1.0))
    answered: list[int] = []
    call = threading.Thread(target=lambda: answered.append(
        client.post("/v1/judge", json=judged(SURE)).status_code))
    call.start()
    deadline = time.monotonic() + 10
    while value(scraped(client), "ragshield_guard_waiting") != 1:
        assert time.monotonic() < deadline, "the call in flight never showed in the gauge"
        time.sleep(0.02)
    call.join()
    assert answered == [200] and value(scraped(client), "ragshield_guard_waiting") == 0


def test_each_app_counts_its_own_calls(settings: Settings, sqlite_store: Store) -> None:
    first, second = client_for(settings, sqlite_store), client_for(settings, sqlite_store)
    for _ in range(2):
        assert first.post("/v1/judge", json=judged(SURE, store=False)).status_code == 200
    assert value(scraped(first), "ragshield_guard_decisions_total", endpoint="judge",
                 decision="keep") == 2
    assert value(scraped(second), "ragshield_guard_decisions_total", endpoint="judge",
                 decision="keep") == 0
