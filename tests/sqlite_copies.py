"""SQLite databases copied instead of built again: a new store is migrated through every
Alembic revision (about 0.1 s), and many tests want one; a judged run takes longer still. A
copy made with SQLite's backup API holds exactly what the source holds."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path


def copy_sqlite(source: Path, target: Path) -> None:
    """Make `target` hold exactly what the SQLite database `source` holds."""
    with closing(sqlite3.connect(source)) as read, closing(sqlite3.connect(target)) as write:
        read.backup(write)
