"""Looking for a secret everywhere ragshield writes: every table's rows, the raw bytes of a
SQLite file (with its WAL, so freed pages and unflushed writes count too) and any files."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from sqlalchemy import MetaData, create_engine, select
from sqlalchemy.engine import make_url

from tests.reliability.scenario import Scenario


def tables_with(marker: str, url: str) -> list[str]:
    """Tables of the database at `url` with a row whose text holds `marker`."""
    engine = create_engine(url)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        with engine.connect() as connection:
            return [table.name for table in metadata.sorted_tables
                    if any(marker in repr(tuple(row))
                           for row in connection.execute(select(table)))]
    finally:
        engine.dispose()


def files_with(marker: str, paths: Iterable[Path]) -> list[str]:
    """The files (folders are searched whole) whose bytes hold `marker`."""
    needle = marker.encode()
    found = []
    for path in paths:
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file() and needle in file.read_bytes():
                found.append(str(file))
    return found


def check_no_secret(scenario: Scenario, markers: list[str], url: str, paths: list[Path]) -> None:
    """No marker in any table of `url`, in the SQLite file itself, or in `paths`."""
    database = make_url(url).database if url.startswith("sqlite") else None
    files = list(paths)
    if database:
        files += [p for p in Path(database).parent.glob(Path(database).name + "*")]
    for marker in markers:
        tables = tables_with(marker, url)
        scenario.check("the key is in no database table", not tables, tables)
        leaked = files_with(marker, files)
        scenario.check("the key is in no log, output, export or database file", not leaked, leaked)
    scenario.figure("files scanned", len(files))
