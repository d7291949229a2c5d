"""The decision log: every answered guard call as one row (store/guard_decisions.py), for the
auditor who asks which decision was made when, for whom, and by which policy version; and
its export, one decision per line of JSON (`ragshield runs export --decisions`).

`DecisionLog` is a listener of the guard (services/guarding/guard.py): it writes in the worker that
answered the call, after the call was kept, so a call answered 401, 422 or 504 is never
logged and an answered one is logged once. The question is kept as its SHA-256, and as text
too only where the setting `decision_log_questions` says "text" and the call was stored
(a call with `"store": false` leaves its hash alone, and no run or sample)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.policies.policy import Policy
from ragshield.services.guarding.guard import CallContext, Guarded
from ragshield.store.database import Store
from ragshield.store.guard_decisions import LoggedDecision, add_decision, read_decisions
from ragshield.strict_json import dumps, finite
from ragshield.types import decision_word

log = logging.getLogger("ragshield.decision_log")
QUESTION_TEXT = "text"


class DecisionExportError(UserError, OSError):
    """The export file cannot be written."""


def question_sha256(question: str) -> str:
    return hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()


def decision_of(context: CallContext, guarded: Guarded,
                questions: str = "hash") -> LoggedDecision:
    """What the log keeps of one answered call (the trace export reads the same)."""
    result, record = guarded.result, guarded.result.record
    question = result.prepared.sample.question
    rule = result.prepared.rule
    policy = rule if isinstance(rule, Policy) else None
    return LoggedDecision(
        caller=context.caller, endpoint=context.endpoint,
        question_sha256=question_sha256(question),
        question=question if questions == QUESTION_TEXT and record is not None else None,
        run_id=record.run_id if record is not None else None,
        dataset=record.dataset if record is not None else None,
        sample_id=record.sample_id if record is not None else None,
        decision=decision_word(result.judged.decision), kept=result.fallback is None,
        rule=rule.rule, policy_name=policy.name if policy else None,
        policy_version=policy.version if policy else None,
        verdicts=[{"judge": verdict.judge, "keep": verdict.keep, "outcome": verdict.outcome,
                   "score": finite(verdict.score)} for verdict in result.judged.verdicts],
        # The guard's own time: waiting for the model, the upstream, judging, storing.
        latency_ms=round(guarded.seconds.get("total", sum(guarded.seconds.values())) * 1000, 3),
        phases_ms={name: round(value * 1000, 3) for name, value in guarded.seconds.items()})


class DecisionLog:
    """The guard's listener that writes each answered call to the log. A failure to write
    is logged, never raised: the caller has the answer already."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store, self.questions = store, settings.decision_log_questions

    def __call__(self, context: CallContext, guarded: Guarded) -> None:
        try:
            add_decision(self.store, decision_of(context, guarded, self.questions))
        except Exception:  # the log must not fail the call it logs
            log.exception("the decision log could not keep a %s call", context.endpoint)


def decision_line(decision: LoggedDecision) -> dict[str, Any]:
    """One line of the export: the time (UTC, ISO 8601) first, then the row's fields."""
    fields = asdict(decision)
    moment: datetime = fields.pop("created_at")
    return {"time": moment.astimezone(timezone.utc).isoformat(), **fields}


def export_decisions(store: Store, out: Path, since: date | None = None,
                     caller: str | None = None) -> int:
    """Write the logged decisions from the day `since` on (UTC) and of `caller` (a key's
    name) to `out`, oldest first, one JSON object a line that strict parsers read; how many
    were written."""
    start = datetime.combine(since, time(), timezone.utc) if since is not None else None
    count = 0
    try:
        with out.open("w", encoding="utf-8") as file:
            for decision in read_decisions(store, start, caller):
                file.write(dumps(decision_line(decision)) + "\n")
                count += 1
    except OSError as error:
        raise DecisionExportError(f"cannot write {out}: {error.strerror or error}") from None
    return count
