"""The guard API's decision log (services/guarding/decision_log.py): one row per answered call,
added as it is answered and read back in the order they were, a page at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from ragshield.store.database import Store
from ragshield.store.models import GuardDecision, as_utc, utcnow

PAGE_ROWS = 1_000


@dataclass(frozen=True)
class LoggedDecision:
    """One answered call, as the log keeps it (models.GuardDecision has the fields' meaning)."""

    caller: str | None
    endpoint: str
    question_sha256: str
    question: str | None
    run_id: int | None
    dataset: str | None
    sample_id: str | None
    decision: str | None
    kept: bool
    rule: str
    policy_name: str | None
    policy_version: int | None
    verdicts: list[dict[str, Any]]
    latency_ms: float
    phases_ms: dict[str, float]
    created_at: datetime = field(default_factory=utcnow)


def add_decision(store: Store, decision: LoggedDecision) -> None:
    with store.session() as session:
        session.add(GuardDecision(**asdict(decision)))


def read_decisions(store: Store, since: datetime | None = None,
                   caller: str | None = None) -> Iterator[LoggedDecision]:
    """The logged decisions from `since` on (UTC) and of `caller` (a key's name), oldest
    first; read a page at a time, so that a long log is never held whole."""
    query = select(GuardDecision).order_by(GuardDecision.id).limit(PAGE_ROWS)
    if since is not None:
        query = query.where(GuardDecision.created_at >= since)
    if caller is not None:
        query = query.where(GuardDecision.caller == caller)
    last = 0
    while True:
        with store.session() as session:
            rows = session.scalars(query.where(GuardDecision.id > last)).all()
            page = [_logged(row) for row in rows]
            last = rows[-1].id if rows else last
        yield from page
        if len(page) < PAGE_ROWS:
            return


def _logged(row: GuardDecision) -> LoggedDecision:
    values = {name: getattr(row, name) for name in LoggedDecision.__dataclass_fields__}
    values["created_at"] = as_utc(row.created_at)
    return LoggedDecision(**values)
