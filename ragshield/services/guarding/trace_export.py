"""Verdicts written back onto the caller's trace: a guard call that carries the caller's
`trace_id` and `span_id` (OpenInference, W3C ids) gets a span of its own under theirs, sent to
the OTLP/HTTP endpoint of the settings (`otlp_endpoint`; Phoenix and Langfuse accept OTLP).

The span is named `ragshield.guard`, of OpenInference kind GUARDRAIL, and carries the
decision, the rule (and policy version), each verdict's keep and score, and the caller's key
name. It is made on a tracer provider of ragshield's own (the process's global one belongs to
the application), and sent in batches by a background thread from a bounded queue, with a
timeout on each export: an endpoint that is slow, down or refusing costs a call nothing, and
spans past the queue's bound are dropped. The app's shutdown flushes the queue (close)."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import (NonRecordingSpan, SpanContext, SpanKind, TraceFlags,
                                 set_span_in_context)

from ragshield.services.guarding.decision_log import decision_of
from ragshield.services.guarding.guard import CallContext, Guarded
from ragshield.store.guard_decisions import LoggedDecision
from ragshield.version import __version__

log = logging.getLogger("ragshield.trace_export")
SPAN_NAME = "ragshield.guard"
MAX_QUEUED_SPANS = 2_048
EXPORT_TIMEOUT_S = 3.0  # one batch, its retries included
FLUSH_TIMEOUT_MS = 3_000


def span_attributes(decision: LoggedDecision) -> dict[str, Any]:
    """The span's attributes; a value that is unknown (None) is left out, as OTLP has no
    null."""
    attributes: dict[str, Any] = {
        "openinference.span.kind": "GUARDRAIL", "ragshield.endpoint": decision.endpoint,
        "ragshield.rule": decision.rule, "ragshield.kept": decision.kept,
        "ragshield.decision": decision.decision, "ragshield.caller": decision.caller,
        "ragshield.policy.name": decision.policy_name,
        "ragshield.policy.version": decision.policy_version}
    for verdict in decision.verdicts:
        prefix = f"ragshield.verdict.{verdict['judge']}"
        attributes[f"{prefix}.keep"] = verdict["keep"]
        attributes[f"{prefix}.score"] = verdict["score"]
        attributes[f"{prefix}.outcome"] = verdict["outcome"]
    return {name: value for name, value in attributes.items() if value is not None}


class TraceExport:
    """The guard's listener that sends a span for each call that carries trace ids."""

    def __init__(self, endpoint: str, schedule_delay_ms: int = 1_000) -> None:
        self.processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S),
            max_queue_size=MAX_QUEUED_SPANS, schedule_delay_millis=schedule_delay_ms)
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "ragshield",
                                      "service.version": __version__}),
            sampler=ALWAYS_ON, shutdown_on_exit=False)  # the caller's trace chose to sample
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("ragshield", __version__)

    def __call__(self, context: CallContext, guarded: Guarded) -> None:
        if context.trace_id is None or context.span_id is None:
            return
        try:
            self._send(context, guarded)
        except Exception:  # the export must not fail the call it describes
            log.exception("no span for a %s call", context.endpoint)

    def _send(self, context: CallContext, guarded: Guarded) -> None:
        assert context.trace_id is not None and context.span_id is not None
        parent = SpanContext(trace_id=int(context.trace_id, 16),
                             span_id=int(context.span_id, 16), is_remote=True,
                             trace_flags=TraceFlags(TraceFlags.SAMPLED))
        decision = decision_of(context, guarded)
        ended = time.time_ns()
        span = self.tracer.start_span(
            SPAN_NAME, context=set_span_in_context(NonRecordingSpan(parent)),
            kind=SpanKind.INTERNAL, attributes=span_attributes(decision),
            start_time=ended - math.ceil(decision.latency_ms * 1e6))
        span.end(end_time=ended)

    def close(self) -> None:
        """Send what is queued (for at most FLUSH_TIMEOUT_MS), then stop the thread."""
        self.processor.force_flush(FLUSH_TIMEOUT_MS)
        self.provider.shutdown()
