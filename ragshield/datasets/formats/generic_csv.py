"""Any CSV file with a header line, through a column mapping (see column_mapping).

Cells of the answers and passages columns that hold a JSON array are read as lists
(`["a", "b"]`, `[{"title": ..., "text": ...}]`); other cells are single values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.column_mapping import ColumnMapping, mapped_sample, with_defaults
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_csv_rows, parse_json
from ragshield.datasets.records import Record

LIST_FIELDS = ("answers", "passages")


def _cell(path: Path, where: str, column: str, text: str) -> Any:
    stripped = text.strip()
    return parse_json(path, stripped, where, column) if stripped.startswith("[") else text


def read(path: Path, mapping: ColumnMapping | None = None) -> Iterator[LocatedSample]:
    columns, explicit = with_defaults(mapping), frozenset(mapping or {})
    list_columns = {columns[field] for field in LIST_FIELDS}
    for number, row in iter_csv_rows(path):
        where = f"line {number}"
        values = {key: _cell(path, where, key, value) if key in list_columns else value
                  for key, value in row.items()}
        yield where, mapped_sample(Record(values, path, where), columns, f"line-{number}", explicit)


SPEC = LoaderSpec(
    name="csv",
    description="any CSV with a header and a column mapping (--map question=q,answers=a,...)",
    read=read,
    takes_mapping=True,
)
