"""The first rows of a file in a generic format (CSV, JSON lines, Parquet) as they are, before
any column mapping: what a person looks at to choose the mapping."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Generator

from ragshield.datasets.errors import DatasetError, DatasetFormatError
from ragshield.datasets.formats import generic_csv, generic_jsonl, generic_parquet
from ragshield.datasets.reading import check_readable, iter_csv_rows, iter_json_records


# A reader of a file's rows: a generator, so that a preview can close it half-read.
Rows = Generator[dict[str, Any], None, None]


def _csv_rows(path: Path) -> Rows:
    return (row for _, row in iter_csv_rows(path))


def _json_objects(path: Path) -> Rows:
    for where, value in iter_json_records(path):
        if not isinstance(value, dict):
            raise DatasetFormatError(path, "expected a JSON object", where=where)
        yield value


RAW_ROWS: dict[str, Callable[[Path], Rows]] = {
    generic_csv.SPEC.name: _csv_rows,
    generic_jsonl.SPEC.name: _json_objects,
    generic_parquet.SPEC.name: generic_parquet.rows,
}


@dataclass(frozen=True)
class TablePreview:
    columns: list[str]  # the columns of the rows read, in the order first met
    rows: list[dict[str, Any]]


def table_preview(path: Path, format: str, rows: int = 5) -> TablePreview:
    """The first `rows` rows of `path`, read as the generic `format` reads them."""
    reader = RAW_ROWS.get(format)
    if reader is None:
        raise DatasetError(f"format {format!r} takes no column mapping; "
                           f"only {', '.join(RAW_ROWS)} do")
    check_readable(path)
    with closing(reader(path)) as found:  # closes the file of a generator left half-read
        first = list(islice(found, rows))
    return TablePreview(columns=list(dict.fromkeys(key for row in first for key in row)),
                        rows=first)
