"""Any JSONL file whose objects hold a question, through a column mapping (see column_mapping)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ragshield.datasets.column_mapping import ColumnMapping, mapped_sample, with_defaults
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record


def read(path: Path, mapping: ColumnMapping | None = None) -> Iterator[LocatedSample]:
    columns, explicit = with_defaults(mapping), frozenset(mapping or {})
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        yield where, mapped_sample(Record(value, path, where), columns, f"line-{number}", explicit)


SPEC = LoaderSpec(
    name="jsonl",
    description="any JSONL with a column mapping (--map question=q,answers=a,passages=p,...)",
    read=read,
    takes_mapping=True,
)
