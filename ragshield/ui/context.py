"""What every tab's handlers share: the settings, the store, and the models, opened lazily
and once per app (loading the embedded model takes a second and 1 GB of memory)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ragshield.config import Settings
from ragshield.services.annotation.people import Access
from ragshield.services.database import Store
from ragshield.services.guarding.guard import ModelGate
from ragshield.services.jobs import Jobs
from ragshield.services.questions.asking import LLM, OpenedModels
from ragshield.services.runs.run_tables import RunTablesCache


@dataclass
class UiContext:
    settings: Settings
    store: Store
    # The embedded model keeps one KV cache and serves one call at a time: every handler
    # that calls a model holds this lock for the whole sample it works on, or takes its turn
    # through `gate` (the guard's ModelGate: this lock in process, a server's own share).
    model_lock: threading.Lock = field(default_factory=threading.Lock)
    jobs: Jobs = field(default_factory=Jobs)  # the app's background work (services/jobs.py)
    # Whether the app has logins (--auth) and the auth file's roles: who may manage people
    # and data (services/annotation/people.py). The default: no logins, one local user.
    access: Access = field(default_factory=Access)
    tables: RunTablesCache = field(init=False)  # run tables shared by Browse and Dashboard
    models: OpenedModels = field(init=False)
    gate: ModelGate = field(init=False)

    def __post_init__(self) -> None:
        self.tables = RunTablesCache(self.store)
        self.models = OpenedModels(self.settings, self.store)
        self.gate = ModelGate(self.settings, self.model_lock)

    def llm(self, packaged: str | None = None) -> LLM:
        """The configured model (or a packaged one by name), opened on first use."""
        return self.models.llm(packaged)
