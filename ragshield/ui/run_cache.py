"""Run tables kept in memory between dashboard refreshes and Browse filters.

Building a run's tables reads every answer and verdict (seconds for 10k samples x 10
judges). A cheap version query (answer and verdict counts, newest label) tells whether
anything changed since the last build; only then are the tables built again, so refreshes
while nothing moves cost one small query, and a run in progress or new labels show up at
the next refresh.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy import func, select

from ragshield.evaluation import RunTables, run_tables
from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, Label, VerdictRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import get_run

RunVersion = tuple[Any, ...]


def run_version(store: Store, run_id: int) -> RunVersion:
    """Changes whenever an answer, a verdict or a label of the run's dataset is added."""
    run = get_run(store, run_id)
    with store.session() as session:
        answers = session.execute(
            select(func.count(AnswerRow.id), func.max(AnswerRow.id))
            .where(AnswerRow.run_id == run_id)).one()
        verdicts = session.scalar(
            select(func.max(VerdictRow.id)).join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
            .where(AnswerRow.run_id == run_id))
        label = session.scalar(
            select(func.max(Label.id)).join(SampleRow, SampleRow.id == Label.sample_id)
            .where(SampleRow.dataset_id == run.dataset_id)) if run.dataset_id else None
    return (*answers, verdicts, label)


class RunTablesCache:
    """The tables of the few most recently viewed (run, truth) pairs."""

    def __init__(self, store: Store, size: int = 4) -> None:
        self.store, self.size = store, size
        self._entries: OrderedDict[tuple[int, str], tuple[RunVersion, RunTables]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: int, truth: str = "auto") -> RunTables:
        """The run's tables under `truth`, rebuilt only when the run or its labels changed."""
        key = (run_id, truth)
        version = run_version(self.store, run_id)
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None and cached[0] == version:
                self._entries.move_to_end(key)
                return cached[1]
        tables = run_tables(self.store, run_id, truth)
        with self._lock:
            self._entries[key] = (version, tables)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return tables
