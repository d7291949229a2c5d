"""Runs started from the UI: `start_run` records the run (a bad configuration fails there,
before any model is opened) and a daemon thread answers and judges its samples with
`execute_run`, exactly as `python -m ragshield run` does. Progress is read back from the
store, so runs started from the CLI show the same way."""

from __future__ import annotations

import logging
import threading
from typing import Callable

from ragshield.config import Settings
from ragshield.errors import UserError
from ragshield.pipeline import RunModels, execute_run, start_run
from ragshield.run_config import RunConfig, with_default_rule
from ragshield.store.database import Store
from ragshield.store.runs import set_run_status

log = logging.getLogger(__name__)

ModelOpener = Callable[[RunConfig], RunModels]


class RunBusyError(UserError, ValueError):
    """A run started from the UI is still going (a second would compete for the model and
    the CPU)."""


class RunLauncher:
    """The runs this app started, each executed in its own daemon thread.

    `open_models` replaces the models execute_run opens from the run's configuration (tests
    pass a scripted model); by default every run opens its own, so it never shares the
    embedded model (and its lock) with the tabs."""

    def __init__(self, store: Store, settings: Settings, *,
                 open_models: ModelOpener | None = None) -> None:
        self.store, self.settings, self.open_models = store, settings, open_models
        self._threads: dict[int, threading.Thread] = {}
        self._errors: dict[int, str] = {}
        self._lock = threading.Lock()

    def start(self, config: RunConfig, *, name: str | None = None) -> int:
        """Record the run and start executing it; returns its id at once. Raises a UserError
        for a bad configuration or dataset, RunBusyError (one too) while a run started
        here is still going. Without a rule, the rule is chosen as the CLI does."""
        config, note = with_default_rule(config, self.settings.decision_rule)
        with self._lock:
            busy = self.active()
            if busy:
                raise RunBusyError(f"run {busy[0]} is still going: start the next one when "
                                   "it is done")
            run_id = start_run(self.store, config, name=name)
            thread = threading.Thread(target=self._execute, args=(run_id, config), daemon=True,
                                      name=f"ragshield-run-{run_id}")
            self._threads[run_id] = thread
        if note:
            log.info("run %s: %s", run_id, note)
        thread.start()
        return run_id

    def _execute(self, run_id: int, config: RunConfig) -> None:
        try:
            models = self.open_models(config) if self.open_models else None
            execute_run(self.store, run_id, self.settings, models=models, progress=False)
        except Exception as exc:  # the thread's end: keep the reason for the progress view
            log.exception("run %s stopped", run_id)
            self._errors[run_id] = f"{type(exc).__name__}: {exc}"
            set_run_status(self.store, run_id, "failed", finished=True)

    def started(self) -> list[int]:
        """Ids of the runs started here, oldest first."""
        return list(self._threads)

    def active(self) -> list[int]:
        return [run_id for run_id, thread in self._threads.items() if thread.is_alive()]

    def error(self, run_id: int) -> str | None:
        """Why the run's thread stopped early (e.g. its model could not be opened)."""
        return self._errors.get(run_id)

    def wait(self, run_id: int, timeout: float | None = None) -> bool:
        """Wait for the run's thread; True when it has ended."""
        thread = self._threads[run_id]
        thread.join(timeout)
        return not thread.is_alive()
