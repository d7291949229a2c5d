"""Run tables kept in memory between dashboard refreshes and Browse filters.

A run's tables are built in two steps (ragshield.evaluation): its records (every answer
and verdict read and graded: seconds for 10k samples x 10 judges) and the labels applied
to them (milliseconds). Cheap version queries tell which step is out of date: the run's
answer and verdict counts and newest ids for the records, the newest label of its dataset
for the labels. So a refresh while nothing moves costs the version queries, a new label
costs reading the labels again, and only a new answer or verdict reads the whole run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ragshield.evaluation import TRUTHS as TRUTHS  # re-exported: the truths a face offers
from ragshield.evaluation import (Labels, RunRecords, RunTables, check_truth, dataset_labels,
                                  label_tables, run_records)
from ragshield.store.database import Store
from ragshield.store.versions import RunVersion, run_version


def remember(entries: OrderedDict, key: Any, value: Any, size: int) -> None:
    """Put `value` in the LRU `entries` as the newest, keeping at most `size` entries."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > size:
        entries.popitem(last=False)


@dataclass
class _RunEntry:
    """A run's records and its dataset's labels, each with the version it was read at."""

    records_version: tuple[Any, ...]
    records: RunRecords
    labels_version: tuple[int | None, int | None] | None = None
    labels: Labels | None = None


class RunTablesCache:
    """The tables of the few most recently viewed (run, truth) pairs, and the records and
    labels they were made from."""

    def __init__(self, store: Store, size: int = 4) -> None:
        self.store, self.size = store, size
        self._tables: OrderedDict[tuple[int, str], tuple[RunVersion, RunTables]] = OrderedDict()
        self._runs: OrderedDict[int, _RunEntry] = OrderedDict()
        self._lock = threading.Lock()  # guards the two dicts
        # One build at a time: a second viewer of a changed run waits for the first one's
        # build instead of reading the run again.
        self._building = threading.Lock()

    def get(self, run_id: int, truth: str = "auto") -> RunTables:
        """The run's tables under `truth`; the records are read again only when an answer
        or verdict was added, the labels only when a label was."""
        check_truth(truth)
        key = (run_id, truth)
        version = run_version(self.store, run_id)
        tables = self._cached(key, version)
        if tables is not None:
            return tables
        with self._building:
            tables = self._cached(key, version)  # built by the build this one waited for
            if tables is None:
                entry = self._entry(run_id, version)
                tables = label_tables(entry.records, entry.labels or {}, truth)
                with self._lock:
                    remember(self._tables, key, (version, tables), self.size)
        return tables

    def _cached(self, key: tuple[int, str], version: RunVersion) -> RunTables | None:
        with self._lock:
            cached = self._tables.get(key)
            if cached is None or cached[0] != version:
                return None
            self._tables.move_to_end(key)
            return cached[1]

    def _entry(self, run_id: int, version: RunVersion) -> _RunEntry:
        """The run's records and labels at `version` (called while building)."""
        with self._lock:
            entry = self._runs.get(run_id)
        if entry is None or entry.records_version != version.records:
            entry = _RunEntry(version.records, run_records(self.store, run_id))
        if entry.labels is None or entry.labels_version != version.labels:
            entry.labels = dataset_labels(self.store, entry.records)
            entry.labels_version = version.labels
        with self._lock:
            remember(self._runs, run_id, entry, self.size)
        return entry
