"""Any JSON lines file whose objects hold a question, or a JSON file holding an array of
them, through a column mapping (see column_mapping)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ragshield.datasets.column_mapping import ColumnMapping, mapped_sample, with_defaults
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_records
from ragshield.datasets.records import Record


def read(path: Path, mapping: ColumnMapping | None = None) -> Iterator[LocatedSample]:
    columns, explicit = with_defaults(mapping), frozenset(mapping or {})
    for where, value in iter_json_records(path):  # where: "line N" or "item N"
        fallback_id = where.replace(" ", "-")
        yield where, mapped_sample(Record(value, path, where), columns, fallback_id, explicit)


SPEC = LoaderSpec(
    name="jsonl",
    description="any JSONL (or JSON array of objects) with a column mapping "
                "(--map question=q,answers=a,passages=p,...)",
    read=read,
    takes_mapping=True,
)
