"""Guard API proxy: a hostile upstream (issue 31) answers clearly and stores nothing

The `/v1/chat/completions` proxy in process (FastAPI's test client) in front of a real HTTP
upstream on 127.0.0.1 (fake_openai.py) that drips its reply, nests JSON 100,000 deep, sends
lone surrogates and -Infinity, echoes its key after 290 filler characters, calls tools,
throttles, sends two choices or a 3.5 MB answer."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from ragshield.config import Settings
from ragshield.services.questions.live_runs import LIVE_DATASET
from ragshield.store.database import Store, open_store
from ragshield.store.samples import count_samples, has_dataset
from tests.reliability.fake_openai import Fault, FakeOpenAIServer
from tests.reliability.scenario import Scenario
from tests.api_support import client_for, error_of, judge_body

KEY = "sk-UPSTREAM-0123456789abcdef"
MAX_ANSWER_CHARS = 20_000  # as /v1/judge caps its answers


@pytest.fixture
def live_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'proxy.db'}")
    yield store
    store.close()


def proxy(settings: Settings, store: Store, upstream: FakeOpenAIServer) -> TestClient:
    settings.upstream_base_url = upstream.url
    settings.upstream_api_key = SecretStr(KEY)
    return client_for(settings, store)


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": "Capital?"}],
            "ragshield": {"passages": [{"text": "Paris is the capital of France."}],
                          "judges": ["trivial"], "rule": "trivial", "store": True}, **extra}


def completion(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-x", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": i, "finish_reason": "stop",
                         "message": {"role": "assistant", **choice}}
                        for i, choice in enumerate(choices)], **extra}


def stored(store: Store) -> int:
    """Live samples kept (answered or not)."""
    return count_samples(store, LIVE_DATASET) if has_dataset(store, LIVE_DATASET) else 0


def logprob(value: float) -> dict[str, Any]:
    """A completion of "Paris" whose one token has log-prob `value`."""
    body = completion({"content": "Paris"})
    body["choices"][0]["logprobs"] = {"content": [{"token": "Paris", "logprob": value}]}
    return body


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.scenario("Guard API proxy: an upstream that drips its reply frees its slots at "
                      "the deadline")
def test_a_dripping_upstream_frees_its_slots_at_the_deadline(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    settings.api_timeout_s, settings.api_max_waiting = 1.0, 2
    drip = Fault(body=b"x" * 10, drip_s=0.5)  # ten bytes, one every 0.5 s: 5 s in all
    with FakeOpenAIServer(lambda request: drip) as upstream:
        client = proxy(settings, live_store, upstream)
        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:  # as many calls as there are waiting slots
            calls = list(pool.map(lambda _: client.post("/v1/chat/completions", json=chat()),
                                  range(2)))
        proxied_s = time.monotonic() - started
        while (judged := client.post("/v1/judge", json=judge_body(judges=["trivial"]))
               ).status_code == 503 and time.monotonic() - started < proxied_s + 1.0:
            time.sleep(0.05)  # the workers may take some milliseconds to give their slots up
        judged_at = time.monotonic() - started
    scenario.figure("seconds to the proxy's 504 (deadline 1 s)", round(proxied_s, 2))
    scenario.figure("seconds from the 504s to /v1/judge's answer",
                    round(judged_at - proxied_s, 2))
    scenario.check("both proxy calls get 504 at their deadline",
                   [r.status_code for r in calls] == [504, 504] and proxied_s < 2.0,
                   [(r.status_code, r.text) for r in calls])
    scenario.check("/v1/judge answers within 0.5 s of them, while the upstream still drips",
                   judged.status_code == 200 and judged_at - proxied_s < 0.5 and judged_at < 4,
                   (judged.text, judged_at))
    scenario.check("of the proxy calls nothing was stored", stored(live_store) == 1)


REPLIES = {
    "JSON nested 100,000 deep": ('{"choices": ' + nested(100_000) + "}",
                                 "nested deeper than"),
    "an extra field nested 600 deep": (json.dumps(completion({"content": "Paris"}))[:-1]
                                       + ', "extra": ' + nested(600) + "}",
                                       "nested deeper than"),
    "content with a lone surrogate": (json.dumps(completion({"content": "Paris \ud800"})),
                                      "lone surrogate"),
    "a lone surrogate in the reply's id": (json.dumps(completion({"content": "Paris"}))
                                           .replace("chatcmpl-x", "\\udfff"),
                                           "lone surrogate"),
    "a log-prob of -Infinity": (json.dumps(logprob(float("-inf"))), "not a finite number"),
}


@pytest.mark.parametrize("what", list(REPLIES))
def test_an_unreadable_reply_is_a_clear_502_and_nothing_is_stored(
        settings: Settings, live_store: Store, scenario: Scenario, what: str) -> None:
    body, says = REPLIES[what]
    with FakeOpenAIServer(lambda request: Fault(body=body.encode())) as upstream:
        response = proxy(settings, live_store, upstream).post("/v1/chat/completions",
                                                              json=chat())
    scenario.check(f"{what}: 502 saying why", response.status_code == 502
                   and says in error_of(response)["message"], response.text[:500])
    scenario.check(f"{what}: nothing stored (store: true)", stored(live_store) == 0)


def test_the_upstream_key_is_scrubbed_before_the_message_is_cut(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    echo = json.dumps({"error": {"message": "z" * 290 + " " + KEY}}).encode()
    for status, answered in ((400, 400), (500, 502)):
        with FakeOpenAIServer(lambda request: Fault(status=status, body=echo)) as upstream:
            response = proxy(settings, live_store, upstream).post("/v1/chat/completions",
                                                                  json=chat())
        scenario.check(f"an upstream {status} echoing its key after 290 characters: "
                       f"{answered}, no part of the key in it",
                       response.status_code == answered and KEY[:6] not in response.text,
                       response.text)


def leaks_key(text: str) -> bool:
    """Whether `text` shows 8 characters of the key in a row (the key cut short, or less its
    first character, is still a leak)."""
    return any(KEY[start:start + 8] in text for start in range(len(KEY) - 7))


def sse(*events: Any) -> bytes:
    """A stream of server-sent events, each `data:` a JSON value (or raw bytes as they are)."""
    return b"".join(b"data: " + (event if isinstance(event, bytes) else json.dumps(event)
                                 .encode()) + b"\n\n" for event in events)


def first_chunk(text: str = "Par") -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}}]}


def live(body: dict[str, Any]) -> dict[str, Any]:
    body["ragshield"]["stream_mode"] = "live"
    return body


def test_the_upstream_key_never_leaks_through_a_streamed_error(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    """Issue 45, item 1: the key after 290 characters in an error event, once the stream
    had begun, reached the client whole (hold's 502 and live's error event)."""
    stream = sse(first_chunk(), {"error": {"message": "z" * 290 + " key " + KEY}})
    fault = Fault(body=stream, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = proxy(settings, live_store, upstream)
        held = client.post("/v1/chat/completions", json=chat(stream=True))
        streamed = client.post("/v1/chat/completions", json=live(chat(stream=True)))
    scenario.check("a streamed error echoing the key: hold answers 502 without any of the key",
                   held.status_code == 502 and not leaks_key(held.text), held.text)
    scenario.check("live ends with an error event without any of the key",
                   '"error"' in streamed.text and not leaks_key(streamed.text), streamed.text)
    scenario.check("nothing stored", stored(live_store) == 0)


ESCAPED_KEY = b"\\u0073" + KEY[1:].encode()  # the key, its first letter a JSON escape


@pytest.mark.parametrize("status", [400, 500])
def test_the_key_never_leaks_through_an_error_message_that_is_no_string(
        settings: Settings, live_store: Store, scenario: Scenario, status: int) -> None:
    """Issue 45, item 2: a message that is an object was echoed as the raw body, which spelt
    the key with an escape, so that the scrub missed it."""
    echo = b'{"error": {"message": {"detail": "bad key ' + ESCAPED_KEY + b'"}}}'
    stream = sse(first_chunk(), b'{"error": {"message": ["' + ESCAPED_KEY + b'"]}}')
    with FakeOpenAIServer(lambda request: Fault(status=status, body=echo)) as upstream:
        client = proxy(settings, live_store, upstream)
        refused = client.post("/v1/chat/completions", json=chat())
        upstream.behaviour = lambda request: Fault(
            body=stream, headers={"content-type": "text/event-stream"})
        held = client.post("/v1/chat/completions", json=chat(stream=True))
    scenario.check(f"an upstream {status} whose message is an object holding the key: no "
                   "part of the key in the answer, the rest of the message kept",
                   refused.status_code in (400, 502) and not leaks_key(refused.text)
                   and "bad key" in refused.text, refused.text)
    scenario.check("the same in a streamed error: no part of the key",
                   held.status_code == 502 and not leaks_key(held.text), held.text)


def test_tool_requests_are_refused_and_tool_replies_are_not_passed_on(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    tool = {"type": "function", "function": {"name": "weather", "parameters": {}}}
    call = {"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "weather", "arguments": "{}"}}]}
    with FakeOpenAIServer(lambda request: Fault(body=json.dumps(completion(call)).encode())
                          ) as upstream:
        client = proxy(settings, live_store, upstream)
        refused = {field: client.post("/v1/chat/completions", json=chat(**{field: value}))
                   for field, value in (("tools", [tool]), ("functions", [tool["function"]]))}
        forwarded = len(upstream.chat_requests())
        unasked = client.post("/v1/chat/completions", json=chat())
    for field, response in refused.items():
        scenario.check(f"a request with `{field}`: 422 naming the field",
                       response.status_code == 422 and error_of(response)["param"] == field,
                       response.text)
    scenario.check("the refused requests never reached the upstream", forwarded == 0)
    scenario.check("an unasked tool call (content null) is a 502 that says so",
                   unasked.status_code == 502 and "tool call" in error_of(unasked)["message"],
                   unasked.text)
    scenario.check("nothing stored", stored(live_store) == 0)


def test_an_upstream_429_passes_its_retry_after_on(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    throttle = Fault(status=429, body=b'{"error": {"message": "slow down"}}',
                     headers={"retry-after": "7", "retry-after-ms": "7000"})
    with FakeOpenAIServer(lambda request: throttle) as upstream:
        response = proxy(settings, live_store, upstream).post("/v1/chat/completions",
                                                              json=chat())
    scenario.check("an upstream 429 is answered 429 with its Retry-After (and -ms)",
                   response.status_code == 429 and response.headers.get("retry-after") == "7"
                   and response.headers.get("retry-after-ms") == "7000",
                   (response.status_code, dict(response.headers)))


def test_only_the_judged_choice_reaches_the_client(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    two = completion({"content": "Paris"}, {"content": "UNJUDGED second choice"})
    with FakeOpenAIServer(lambda request: Fault(body=json.dumps(two).encode())) as upstream:
        response = proxy(settings, live_store, upstream).post("/v1/chat/completions",
                                                              json=chat())
    choices = response.json().get("choices", [])
    scenario.check("an upstream reply with two choices: the client gets the judged first only",
                   response.status_code == 200 and len(choices) == 1
                   and choices[0]["message"]["content"] == "Paris"
                   and "UNJUDGED" not in response.text, response.text)


def test_an_answer_is_capped_as_judge_caps_it_and_sent_back_at_most_twice(
        settings: Settings, live_store: Store, scenario: Scenario) -> None:
    huge = completion({"content": "x" * 3_500_000})
    long = "y" * (MAX_ANSWER_CHARS - 5_000)
    with FakeOpenAIServer(lambda request: Fault(body=json.dumps(huge).encode())) as upstream:
        refused = proxy(settings, live_store, upstream).post("/v1/chat/completions",
                                                             json=chat())
    scenario.figure("bytes answered to a 3.5 MB upstream answer", len(refused.content))
    scenario.check("a 3.5 MB answer: 502 naming the limit, a short body, nothing stored",
                   refused.status_code == 502
                   and f"{MAX_ANSWER_CHARS:,}" in error_of(refused)["message"]
                   and len(refused.content) < 2_000 and stored(live_store) == 0,
                   refused.text[:500])
    reply = Fault(body=json.dumps(completion({"content": long})).encode())
    with FakeOpenAIServer(lambda request: reply) as upstream:
        kept = proxy(settings, live_store, upstream).post("/v1/chat/completions", json=chat())
    scenario.figure("bytes answered to a kept 15,000-character answer", len(kept.content))
    scenario.check("a kept 15,000-character answer comes back whole, at most twice",
                   kept.status_code == 200
                   and kept.json()["choices"][0]["message"]["content"] == long
                   and kept.text.count(long) <= 2, kept.text.count(long))
