"""Verdicts written back onto the caller's trace (services/guarding/trace_export.py): a guard call
that carries `trace_id` and `span_id` gets a `ragshield.guard` span under the caller's span, sent to
an OTLP/HTTP receiver on 127.0.0.1 (a tiny one here, decoding what Phoenix would), with the
decision, rule, policy version, verdicts and caller as attributes. The ids are checked
(422 naming the field), and an endpoint that is down costs a call nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragshield.api.keys import ApiKey, KeyEntry
from ragshield.config import Settings
from ragshield.policies.policy import Policy
from ragshield.services.guarding.decision_log import DecisionLog
from ragshield.services.guarding.guard_listeners import guard_listeners
from ragshield.services.guarding.trace_export import EXPORT_TIMEOUT_S, TraceExport
from ragshield.services.learning.policies import save_policy
from ragshield.store.database import Store
from tests.conftest import lane
from tests.api_support import API_GUARD_POLICY, SURE, bearer, error_of, guarded_client, judge_body

TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
KEY = "s" * 24


class OtlpReceiver:
    """POST /v1/traces on 127.0.0.1: each body decoded as an ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/traces":
                    self.send_response(404)
                else:
                    request = ExportTraceServiceRequest.FromString(body)
                    received.extend(span for resource in request.resource_spans
                                    for scope in resource.scope_spans for span in scope.spans)
                    self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
@lane("server")
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()


def value(any_value: AnyValue) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def test_a_call_with_trace_ids_gets_a_child_span_with_the_verdicts(
        settings: Settings, sqlite_store: Store, otlp_receiver: OtlpReceiver) -> None:
    save_policy(sqlite_store, Policy.from_dict(API_GUARD_POLICY))
    settings.otlp_endpoint = otlp_receiver.url
    listeners = guard_listeners(settings, sqlite_store)
    assert [type(listener) for listener in listeners] == [DecisionLog, TraceExport]
    client = guarded_client(settings, sqlite_store, [KeyEntry(KEY, ApiKey("support"))],
                            listeners=listeners)
    body = judge_body(answer_logprobs=[{"token": "The", "logprob": SURE}],
                      rule="policy:api-guard", trace_id=TRACE_ID.upper(), span_id=SPAN_ID)
    with client:  # leaving it shuts the app down, which flushes the spans
        started = time.monotonic()
        response = client.post("/v1/judge", json=body, headers=bearer(KEY))
        assert response.status_code == 200, response.text
        untraced = {key: v for key, v in body.items() if key not in ("trace_id", "span_id")}
        assert client.post("/v1/judge", json=untraced, headers=bearer(KEY)).status_code == 200
        assert time.monotonic() - started < 5
    [span] = otlp_receiver.spans  # the call without ids has none
    assert span.trace_id == bytes.fromhex(TRACE_ID)
    assert span.parent_span_id == bytes.fromhex(SPAN_ID) and span.span_id != span.parent_span_id
    assert span.name == "ragshield.guard" and span.end_time_unix_nano > span.start_time_unix_nano
    attributes = {attribute.key: value(attribute.value) for attribute in span.attributes}
    assert attributes["openinference.span.kind"] == "GUARDRAIL"
    assert attributes["ragshield.decision"] == "keep" and attributes["ragshield.kept"] is True
    assert attributes["ragshield.rule"] == "policy:api-guard@1"
    assert attributes["ragshield.policy.name"] == "api-guard"
    assert attributes["ragshield.policy.version"] == 1
    assert attributes["ragshield.caller"] == "support"
    assert attributes["ragshield.verdict.token_prob.keep"] is True
    assert attributes["ragshield.verdict.token_prob.score"] == pytest.approx(0.99, abs=0.01)
    assert attributes["ragshield.verdict.p_true.outcome"] == "keep"
    assert "ragshield.verdict.trivial.score" not in attributes  # no score: no attribute


def test_an_endpoint_that_is_down_costs_a_call_nothing(settings: Settings,
                                                       sqlite_store: Store) -> None:
    settings.otlp_endpoint = "http://127.0.0.1:9/v1/traces"  # nothing listens there
    client = guarded_client(settings, sqlite_store,
                            listeners=guard_listeners(settings, sqlite_store))
    with client:
        started = time.monotonic()
        for _ in range(3):
            response = client.post("/v1/judge", json=judge_body(
                judges=["trivial"], trace_id=TRACE_ID, span_id=SPAN_ID))
            assert response.status_code == 200, response.text
        assert time.monotonic() - started < 2
        stopping = time.monotonic()
    assert time.monotonic() - stopping < EXPORT_TIMEOUT_S + 1  # the shutdown's flush gives up


@pytest.mark.parametrize("ids, param", [
    ({"trace_id": "xyz"}, "trace_id"),
    ({"trace_id": TRACE_ID[:-1], "span_id": SPAN_ID}, "trace_id"),
    ({"trace_id": "0" * 32, "span_id": SPAN_ID}, "trace_id"),
    ({"trace_id": TRACE_ID, "span_id": SPAN_ID + "0"}, "span_id"),
    ({"trace_id": TRACE_ID, "span_id": 7}, "span_id"),
    ({"trace_id": TRACE_ID}, "span_id"),
    ({"span_id": SPAN_ID}, "span_id"),
])
def test_trace_ids_are_checked(settings: Settings, sqlite_store: Store, ids: dict,
                               param: str) -> None:
    client = guarded_client(settings, sqlite_store)
    response = client.post("/v1/judge", json=judge_body(judges=["trivial"], **ids))
    assert response.status_code == 422 and error_of(response)["param"] == param
    proxied = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "q"}], "ragshield": ids})
    assert proxied.status_code == 422 and error_of(proxied)["param"] == f"ragshield.{param}"
