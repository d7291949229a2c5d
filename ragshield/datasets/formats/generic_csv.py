"""Any CSV file with a header line, through a column mapping (see column_mapping).

Cells of the answers and passages columns that hold a JSON array are read as lists
(`["a", "b"]`, `[{"title": ..., "text": ...}]`); other cells are single values. Cells of the
mapped answer_logprobs, cited_passages and passage_scores columns hold JSON
(`[["Par", -0.1], ["is", -0.2]]`, `[0, 2]`, `[0.8, null]`). An empty cell of a mapped
optional column (the given answer's fields, passage_scores) means none (see table_cells).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ragshield.datasets.column_mapping import ColumnMapping, mapped_sample, with_defaults
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_csv_rows
from ragshield.datasets.records import Record
from ragshield.datasets.table_cells import cell_kinds, text_cell


def read(path: Path, mapping: ColumnMapping | None = None) -> Iterator[LocatedSample]:
    columns, explicit = with_defaults(mapping), frozenset(mapping or {})
    kinds = cell_kinds(columns)
    for number, row in iter_csv_rows(path):
        where = f"line {number}"
        values = {key: text_cell(path, where, key, value, kinds.get(key))
                  for key, value in row.items()}
        yield where, mapped_sample(Record(values, path, where), columns, f"line-{number}", explicit)


SPEC = LoaderSpec(
    name="csv",
    description="any CSV with a header and a column mapping (--map question=q,answers=a,...)",
    read=read,
    takes_mapping=True,
)
