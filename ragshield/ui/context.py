"""What every tab's handlers share: the settings, the store, and the models, opened lazily
and once per app (loading the embedded model takes a second and 1 GB of memory)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ragshield.config import Settings
from ragshield.llm.base import LLM
from ragshield.store.database import Store
from ragshield.ui.run_cache import RunTablesCache


@dataclass
class UiContext:
    settings: Settings
    store: Store
    # The embedded model keeps one KV cache and serves one call at a time: every handler
    # that calls a model holds this lock for the whole sample it works on.
    model_lock: threading.Lock = field(default_factory=threading.Lock)
    tables: RunTablesCache = field(init=False)  # run tables shared by Browse and Dashboard
    _models: dict[bool, LLM] = field(default_factory=dict)
    _opening: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.tables = RunTablesCache(self.store)

    def llm(self, *, small: bool = False) -> LLM:
        """The configured model (or the packaged small one), opened on first use and
        wrapped in the store's call cache."""
        with self._opening:
            if small not in self._models:
                from ragshield.llm.factory import make_llm

                self._models[small] = make_llm(self.settings, store=self.store, small=small)
            return self._models[small]
