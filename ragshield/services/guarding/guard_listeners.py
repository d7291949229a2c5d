"""What a server's guard tells of each answered call (services/guarding/guard.py, `Listener`): the
decision log always, and the trace export where the settings name an OTLP endpoint."""

from __future__ import annotations

from ragshield.config import Settings
from ragshield.services.guarding.decision_log import DecisionLog
from ragshield.services.guarding.guard import Listener
from ragshield.store.database import Store


def guard_listeners(settings: Settings, store: Store) -> tuple[Listener, ...]:
    listeners: list[Listener] = [DecisionLog(store, settings)]
    if settings.otlp_endpoint:
        from ragshield.services.guarding.trace_export import TraceExport  # loads the OTLP exporter

        listeners.append(TraceExport(settings.otlp_endpoint))
    return tuple(listeners)
