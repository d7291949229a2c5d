"""The proxy's streamed replies (`"stream": true`, api/streaming.py), against a real HTTP
upstream that streams (tests/reliability/fake_openai.py): in hold mode nothing unjudged
reaches the client; in live mode the upstream's chunks come as they come and the stream ends
with the decision. The timing tests serve the API with uvicorn (a test client would gather
the whole stream first) and read it with httpx and with the stock openai client."""

from __future__ import annotations

import json
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from ragshield.api.app import build_api
from ragshield.api.keys import KeyCheck
from ragshield.api.streaming import DONE
from ragshield.config import Settings
from ragshield.llm.upstream import MAX_REPLY_BYTES, UpstreamBadReply, UpstreamChat
from ragshield.services.guarding.guard import Guard, ModelGate
from ragshield.services.questions.asking import ABSTAIN_MESSAGE
from ragshield.store.database import Store
from ragshield.testing.servers import served_in_thread
from tests.fakes import FakeModels, ScriptedLLM
from tests.reliability.fake_openai import ANSWER, Fault, FakeOpenAIServer
from tests.api_support import (UNSURE_UPSTREAM, SlowLLM, chat_body, chunk, client_for, error_of,
                               events, live_answers, p_true_reply, proxy_settings, streamed_text)

pytestmark = pytest.mark.server  # a real upstream, and for the timings a real API server


def live_body() -> dict[str, Any]:
    """A streamed proxy call in live mode."""
    body = chat_body(stream=True)
    body["ragshield"]["stream_mode"] = "live"
    return body


def test_hold_streams_the_kept_answer_after_judging_it(settings: Settings,
                                                       sqlite_store: Store) -> None:
    with FakeOpenAIServer() as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=chat_body(
            stream=True, logprobs=True, stream_options={"include_usage": True}))
        sent = upstream.chat_requests()[0].body
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = events(response.text)
    assert chunks[-1] == "[DONE]" and all(c["object"] == "chat.completion.chunk"
                                          for c in chunks[:-1])
    assert streamed_text(chunks) == ANSWER
    last = chunks[-2]
    assert last["choices"][0]["finish_reason"] == "stop" and last["usage"]["total_tokens"] > 0
    verdicts = last["ragshield"]
    # The log-probs came in the upstream's chunks and reached token_prob.
    assert verdicts["kept"] and verdicts["answer"]["text"] == ANSWER
    assert verdicts["verdicts"][-1]["judge"] == "token_prob"
    assert sent["stream"] is True and "ragshield" not in sent
    assert live_answers(sqlite_store) == 1


def test_hold_never_streams_a_withheld_answer(settings: Settings, sqlite_store: Store) -> None:
    with FakeOpenAIServer(lambda request: UNSURE_UPSTREAM) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=chat_body(stream=True))
    chunks = events(response.text)
    assert streamed_text(chunks) == ABSTAIN_MESSAGE
    assert not chunks[-2]["ragshield"]["kept"]
    # The withheld answer is only in ragshield.answer, for the application's logs.
    assert chunks[-2]["ragshield"]["answer"]["text"] == ANSWER
    assert not any("Paris" in json.dumps({k: v for k, v in chunk.items() if k != "ragshield"})
                   for chunk in chunks[:-1])


def test_live_passes_chunks_on_then_ends_with_the_decision(settings: Settings,
                                                           sqlite_store: Store) -> None:
    with FakeOpenAIServer(lambda request: UNSURE_UPSTREAM) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=live_body())
    chunks = events(response.text)
    assert streamed_text(chunks) == ANSWER  # as the upstream sent it, unjudged
    decision = chunks[-2]
    assert decision["choices"] == [] and chunks[-1] == "[DONE]"
    assert not decision["ragshield"]["kept"]
    assert decision["ragshield"]["shown"] == ABSTAIN_MESSAGE  # what to put in its place
    assert live_answers(sqlite_store) == 1


@pytest.mark.parametrize("mode", ["hold", "live"])
def test_failures_before_the_first_byte_are_errors_with_their_status(
        settings: Settings, sqlite_store: Store, mode: str) -> None:
    fault = Fault(status=500, body=b'{"error": {"message": "boom"}}')
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        body = chat_body(stream=True)
        body["ragshield"]["stream_mode"] = mode
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 502 and "boom" in error_of(response)["message"]
    assert live_answers(sqlite_store) == 0


def test_a_stream_that_breaks_off_ends_with_an_error_event(settings: Settings,
                                                           sqlite_store: Store) -> None:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    broken = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in [
        {**head, "choices": [{"index": 0, "delta": {"content": "Paris is the capital"}}]},
        {"error": {"message": "the model crashed"}}])
    fault = Fault(body=broken, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        body = chat_body(stream=True)
        body["ragshield"]["stream_mode"] = "live"
        live = events(client.post("/v1/chat/completions", json=body).text)
        held = client.post("/v1/chat/completions", json=chat_body(stream=True))
    # The last 8 characters (a run of the upstream's key could straddle them) wait for the
    # answer's finish, which never came.
    assert streamed_text(live) == "Paris is the"
    assert "the model crashed" in live[-1]["error"]["message"] and live[-1]["error"]["code"] == 502
    assert held.status_code == 502 and "the model crashed" in error_of(held)["message"]
    assert live_answers(sqlite_store) == 0


def test_the_completion_s_id_and_model_come_from_the_first_chunk_that_gives_them(
        settings: Settings, sqlite_store: Store) -> None:
    """Azure's first chunk carries only content-filter results, with an empty id and model."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
            "model": "their-model"}
    chunks = [{"id": "", "object": "", "created": 0, "model": "", "choices": [],
               "prompt_filter_results": []},
              {**head, "choices": [{"index": 0, "delta": {"content": ANSWER}}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    fault = Fault(body=stream + DONE, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        held = events(client.post("/v1/chat/completions", json=chat_body(stream=True)).text)
    assert {(c["id"], c["model"], c["created"]) for c in held[:-1]} == {
        ("chatcmpl-1", "their-model", 1700000000)}
    assert held[-2]["ragshield"]["answer"]["model"] == "their-model"


def sse(*events: Any) -> bytes:
    """Server-sent events: each a JSON value's data (raw bytes go as they are)."""
    return b"".join(event if isinstance(event, bytes) else
                    b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def test_live_mode_passes_no_forged_decision_and_no_unjudged_choice(
        settings: Settings, sqlite_store: Store) -> None:
    """Issue 45, item 7: an upstream chunk with a `ragshield` field reached the client before
    the real decision, and a chunk of choice 1 passed unjudged."""
    stream = sse(chunk(delta={"content": "Par"}),
                 {"choices": [], "ragshield": {"kept": True, "shown": "FORGED"}},
                 {**chunk(), "choices": [{"index": 1, "delta": {"content": "UNJUDGED"}}]},
                 chunk(delta={"content": "is"}, finish_reason="stop"), b"data: [DONE]\n\n")
    fault = Fault(body=stream, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        response = client.post("/v1/chat/completions", json=live_body())
    chunks = events(response.text)
    assert "FORGED" not in response.text and "UNJUDGED" not in response.text, response.text
    decisions = [c for c in chunks if isinstance(c, dict) and "ragshield" in c]
    assert decisions == [chunks[-2]] and streamed_text(chunks) == "Paris"


def test_pings_and_empty_events_are_skipped_and_created_0_is_kept(
        settings: Settings, sqlite_store: Store) -> None:
    """Issue 45, item 14: an `event: ping` or a `data: {}` was a 502, and `created: 0` came
    back as null."""
    stream = (b"event: ping\ndata: {\"type\": \"ping\"}\n\n" + sse(
        {}, chunk(created=0, delta={"content": "Paris"}),
        chunk(created=0, delta={}, finish_reason="stop")) + b"data: [DONE]\n\n")
    fault = Fault(body=stream, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        client = client_for(proxy_settings(settings, upstream), sqlite_store)
        body = chat_body(stream=True)
        body["ragshield"].update(judges=["trivial"], rule="trivial")
        held = client.post("/v1/chat/completions", json=body)
    assert held.status_code == 200, held.text
    chunks = events(held.text)
    assert streamed_text(chunks) == "Paris" and all(c["created"] == 0 for c in chunks[:-1])


def test_data_over_several_lines_and_events_without_blank_lines_are_read() -> None:
    """Server-sent events may spread one event's data over several `data:` lines (joined at
    the blank line that ends it); some servers leave out the blank lines between events."""
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    first = json.dumps({**head, "choices": [{"index": 0, "delta": {"content": "Par"}}]},
                       indent=1).encode()
    second = json.dumps({**head, "choices": [{"index": 0, "delta": {"content": "is"}}]})
    last = json.dumps({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    stream = (b"".join(b"data: " + line + b"\r\n" for line in first.split(b"\n")) + b"\r\n"
              + b": a comment\n" + b"data: " + second.encode() + b"\n"
              + b"data:" + last.encode() + b"\n" + b"data: [DONE]")
    fault = Fault(body=stream, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        chat = UpstreamChat(upstream.url)
        try:
            reply = chat.complete({"messages": [], "stream": True}, timeout_s=30)
            broken = Fault(body=b"data: {\"choices\":\ndata: [\n\n",
                           headers={"content-type": "text/event-stream"})
            upstream.behaviour = lambda request: broken
            with pytest.raises(UpstreamBadReply, match="did not reply with a chat completion"):
                chat.complete({"messages": [], "stream": True}, timeout_s=30)
        finally:
            chat.close()
    assert reply.text == "Paris" and reply.body["choices"][0]["finish_reason"] == "stop"


def test_one_endless_line_is_cut_off_at_the_size_limit(settings: Settings) -> None:
    """The size is counted as the bytes come: reading a line whole first took 120 MB for
    this 40 MB line."""
    endless = b"data: " + b"x" * 40_000_000
    fault = Fault(body=endless, headers={"content-type": "text/event-stream"})
    with FakeOpenAIServer(lambda request: fault) as upstream:
        chat = UpstreamChat(upstream.url)
        tracemalloc.start()
        try:
            with pytest.raises(UpstreamBadReply, match="streamed over"):
                chat.complete({"messages": [], "stream": True}, timeout_s=30)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            chat.close()
    assert peak < 3 * MAX_REPLY_BYTES, peak


def _served(settings: Settings, store: Store, guard: Guard | None = None) -> Any:
    guard = guard or Guard(settings, store, FakeModels(ScriptedLLM(respond=p_true_reply)),
                           ModelGate(settings))
    return served_in_thread(build_api(settings, guard, KeyCheck([])))


def test_a_live_stream_the_client_closes_ends_the_call(settings: Settings,
                                                       sqlite_store: Store) -> None:
    """The client goes after the first chunk: the guard stops reading the upstream at its
    next chunk, frees the call's place in the queue and stores nothing (it used to read the
    whole answer, judge it and keep it for nobody)."""
    gap = 0.4  # between the upstream's chunks: its answer takes about 3 s in all
    with FakeOpenAIServer(lambda request: Fault(gap_s=gap)) as upstream:
        settings = proxy_settings(settings, upstream)
        guard = Guard(settings, sqlite_store, FakeModels(ScriptedLLM(respond=p_true_reply)),
                      ModelGate(settings))
        with _served(settings, sqlite_store, guard) as url:
            body = chat_body(stream=True)
            body["ragshield"]["stream_mode"] = "live"
            with httpx.stream("POST", url + "/v1/chat/completions", json=body,
                              timeout=30) as response:
                next(line for line in response.iter_lines() if line.startswith("data: "))
            closed = time.monotonic()
            while guard.waiting and time.monotonic() < closed + 10:
                time.sleep(0.05)
            freed = time.monotonic() - closed
            time.sleep(8 * gap)  # past the end of the upstream's answer
    assert guard.waiting == 0 and freed < 5 * gap, freed  # the upstream needs 6 gaps more
    assert live_answers(sqlite_store) == 0


@pytest.mark.parametrize("path", ["/v1/judge", "/v1/chat/completions"])
def test_a_call_whose_client_left_never_runs_the_model(settings: Settings, sqlite_store: Store,
                                                       path: str) -> None:
    """A client that gives up while its call waits for the model (a timeout, then often a
    retry) no longer has its question judged and stored for nobody."""
    llm = SlowLLM(1.5)  # p_true's one model call
    body = ({"question": "Who?", "answer": "The Normans", "judges": ["p_true"],
             "passages": [{"text": "The Normans gave their name to Normandy."}]}
            if path == "/v1/judge" else chat_body(ragshield={
                "passages": [{"text": "Paris is the capital of France."}],
                "judges": ["p_true"], "rule": "p_true"}))
    with FakeOpenAIServer() as upstream:
        settings = proxy_settings(settings, upstream)
        guard = Guard(settings, sqlite_store, FakeModels(llm), ModelGate(settings))
        with _served(settings, sqlite_store, guard) as url, ThreadPoolExecutor(1) as pool:
            first = pool.submit(httpx.post, url + path, json=body, timeout=30)
            assert llm.busy.wait(10)  # the first call holds the model
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(url + path, json=body, timeout=0.5)
            assert first.result().status_code == 200
            left = time.monotonic()
            while guard.waiting and time.monotonic() < left + 5:
                time.sleep(0.05)
            time.sleep(0.5)
    assert guard.waiting == 0 and len(llm.seen) == 1
    assert live_answers(sqlite_store) == 1


def test_a_proxy_call_whose_client_left_gives_its_slot_up(settings: Settings,
                                                          sqlite_store: Store) -> None:
    """Issue 45, item 5: a non-streamed call whose client left kept its place in the queue
    until the upstream answered (60 s there), and every other call got 503 meanwhile."""
    settings.api_max_waiting = 2
    with FakeOpenAIServer(lambda request: Fault(delay_s=20)) as upstream:
        settings = proxy_settings(settings, upstream)
        guard = Guard(settings, sqlite_store, FakeModels(ScriptedLLM(respond=p_true_reply)),
                      ModelGate(settings))
        with _served(settings, sqlite_store, guard) as url, ThreadPoolExecutor(2) as pool:
            left = list(pool.map(lambda _: _times_out(url + "/v1/chat/completions",
                                                      chat_body()), range(2)))
            gone = time.monotonic()
            while guard.waiting and time.monotonic() < gone + 10:
                time.sleep(0.05)
            freed = time.monotonic() - gone
            judged = httpx.post(url + "/v1/judge", timeout=30, json={
                "question": "Who?", "answer": "The Normans", "judges": ["trivial"]})
    assert left == [True, True]
    assert freed < 3 and judged.status_code == 200, (freed, judged.text)
    assert live_answers(sqlite_store) == 1


def _times_out(url: str, body: dict[str, Any]) -> bool:
    """Whether the client gave up (after 1 s) before an answer came."""
    try:
        httpx.post(url, json=body, timeout=1)
    except httpx.ReadTimeout:
        return True
    return False


def test_live_chunks_arrive_before_the_upstream_has_finished(settings: Settings,
                                                             sqlite_store: Store) -> None:
    gap = 0.3  # between the upstream's chunks: its answer takes about 2 s in all
    with (FakeOpenAIServer(lambda request: Fault(gap_s=gap)) as upstream,
          _served(proxy_settings(settings, upstream), sqlite_store) as url):
        body = chat_body(stream=True)
        body["ragshield"]["stream_mode"] = "live"
        started = time.monotonic()
        arrivals = []
        with httpx.stream("POST", url + "/v1/chat/completions", json=body,
                          timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    arrivals.append((time.monotonic() - started, line))
    assert len(arrivals) >= 6
    first_text = next(t for t, line in arrivals if "Answer" in line)
    assert first_text < arrivals[-1][0] - 3 * gap  # it came long before the end
    assert '"ragshield"' in arrivals[-2][1]


def test_the_openai_client_reads_both_modes(settings: Settings, sqlite_store: Store) -> None:
    from openai import OpenAI

    with (FakeOpenAIServer() as upstream,
          _served(proxy_settings(settings, upstream), sqlite_store) as url):
        client = OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        for mode in ("hold", "live"):
            extra = {**chat_body()["ragshield"], "stream_mode": mode}
            stream = client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "Capital?"}],
                stream=True, logprobs=True, extra_body={"ragshield": extra})
            chunks = list(stream)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert text == ANSWER
            assert chunks[-1].model_extra["ragshield"]["kept"]
