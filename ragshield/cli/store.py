"""The configured store, opened for one command and closed afterwards."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ragshield.config import Settings
from ragshield.services.database import Store, open_store


@contextmanager
def opened_store(settings: Settings | None = None) -> Iterator[Store]:
    store = open_store((settings or Settings()).database_url)
    try:
        yield store
    finally:
        store.close()
