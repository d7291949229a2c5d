"""The store as the faces see it: open one from a URL, and the errors a database can raise
(the faces show DatabaseError as one line; the store's queries stay behind the services)."""

from __future__ import annotations

from ragshield.store.database import DatabaseError, Store, StoreError, open_store

__all__ = ["DatabaseError", "Store", "StoreError", "open_store"]
