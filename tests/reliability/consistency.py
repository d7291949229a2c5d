"""What a finished (or resumed) run must look like in the database, checked on any store,
and the SQLite file checks; each property is recorded as one of the scenario's checks."""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, LLMCallRow, Run, RunFailure, VerdictRow
from tests.reliability.scenario import Scenario


@dataclass(frozen=True)
class RunState:
    status: str
    samples_total: int
    answers: Counter[tuple[int, str]]  # (sample row id, role) -> rows
    judges: dict[int, Counter[str]]  # sample row id -> judges with a verdict on its main answer
    failures: dict[int, str]  # sample row id -> error
    duplicate_calls: int  # call cache keys stored more than once


def run_state(store: Store, run_id: int) -> RunState:
    with store.session() as session:
        run = session.get(Run, run_id)
        assert run is not None, f"run {run_id} is missing"
        answers = Counter(session.execute(
            select(AnswerRow.sample_id, AnswerRow.role).where(AnswerRow.run_id == run_id)
        ).tuples().all())
        judges: dict[int, Counter[str]] = {}
        for sample_id, judge in session.execute(
            select(AnswerRow.sample_id, VerdictRow.judge)
            .join(VerdictRow, VerdictRow.answer_id == AnswerRow.id)
            .where(AnswerRow.run_id == run_id, AnswerRow.role == "main")
        ):
            judges.setdefault(sample_id, Counter())[judge] += 1
        failures = dict(session.execute(
            select(RunFailure.sample_id, RunFailure.error).where(RunFailure.run_id == run_id)
        ).tuples().all())
        duplicate_calls = session.scalar(select(func.count()).select_from(
            select(LLMCallRow.key).group_by(LLMCallRow.key)
            .having(func.count() > 1).subquery())) or 0
        return RunState(run.status, run.samples_total, answers, judges, failures,
                        duplicate_calls)


def check_complete_exactly_once(scenario: Scenario, store: Store, run_id: int,
                                judges: list[str], roles: tuple[str, ...] = ("main",)) -> RunState:
    """Nothing lost, nothing twice, no half-written sample, no failure left, run done."""
    state = run_state(store, run_id)
    mains = [sample for sample, role in state.answers if role == "main"]
    scenario.check("every sample of the run has its main answer (nothing lost)",
                   len(mains) == state.samples_total, f"{len(mains)} of {state.samples_total}")
    scenario.check("one answer per sample and role (no duplicates)",
                   set(state.answers.values()) == {1} and
                   set(state.answers) == {(s, r) for s in mains for r in roles},
                   dict(state.answers))
    expected = Counter(judges)
    half = {s: dict(state.judges.get(s, {})) for s in mains if state.judges.get(s) != expected}
    scenario.check("every main answer has exactly one verdict per judge (no half-written "
                   "sample)", not half, half)
    scenario.check("no failure left recorded", not state.failures, state.failures)
    scenario.check("the run is marked done", state.status == "done", state.status)
    scenario.check("each LLM call is cached once", state.duplicate_calls == 0,
                   state.duplicate_calls)
    return state


def check_sqlite_file(scenario: Scenario, path: Path) -> None:
    """SQLite's own checks of the file: page structure, indexes and foreign keys."""
    with sqlite3.connect(path) as connection:
        integrity = connection.execute("PRAGMA integrity_check").fetchall()
        dangling = connection.execute("PRAGMA foreign_key_check").fetchall()
    scenario.check("PRAGMA integrity_check is ok", integrity == [("ok",)], integrity)
    scenario.check("PRAGMA foreign_key_check finds nothing", not dangling, dangling)
