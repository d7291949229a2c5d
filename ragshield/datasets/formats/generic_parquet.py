"""Any Parquet file, through a column mapping (see column_mapping), read in batches of rows.

List columns are read as lists and struct columns as objects, so passages can be a list of
{title, text, score} structs and the given answer's log-probs a list of {token, logprob}
structs; text cells are read as in a CSV file (see table_cells), so JSON text works too.
Dates and times become ISO text, decimals numbers; a missing float (NaN) is none. Places are
"row N", counted from 1.
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path
from typing import Any, Generator, Iterator

from ragshield.datasets.column_mapping import ColumnMapping, mapped_sample, with_defaults
from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import open_binary
from ragshield.datasets.records import Record
from ragshield.datasets.table_cells import cell_kinds, text_cell

BATCH_ROWS = 1000


def _plain(path: Path, where: str, column: str, value: Any) -> Any:
    """A Parquet value as a JSON value (what a dataset row may hold)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise DatasetFormatError(path, f"{value} is not a finite number", where=where,
                                 field=column)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise DatasetFormatError(path, "binary data that is not UTF-8 text", where=where,
                                     field=column) from None
    if isinstance(value, dict):
        return {str(key): _plain(path, where, f"{column}.{key}", item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):  # a map column's entries come as (key, value) tuples
        return [_plain(path, where, f"{column}[{index}]", item)
                for index, item in enumerate(value)]
    if hasattr(value, "isoformat"):  # date, time, datetime
        return value.isoformat()
    return str(value)  # durations and the like


def rows(path: Path) -> Generator[dict[str, Any], None, None]:
    """The file's rows as they come from pyarrow, a batch at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_binary(path) as handle:
        try:
            for batch in pq.ParquetFile(handle).iter_batches(batch_size=BATCH_ROWS):
                yield from batch.to_pylist()
        except (pa.ArrowException, ValueError) as exc:  # ValueError: text that is not UTF-8
            raise DatasetFormatError(path, f"not a readable Parquet file ({exc})") from None


def read(path: Path, mapping: ColumnMapping | None = None) -> Iterator[LocatedSample]:
    columns, explicit = with_defaults(mapping), frozenset(mapping or {})
    kinds = cell_kinds(columns)
    for number, row in enumerate(rows(path), start=1):
        where = f"row {number}"
        values = {key: text_cell(path, where, key, value, kinds.get(key))
                  if isinstance(value, str) else _plain(path, where, key, value)
                  for key, value in row.items()}
        yield where, mapped_sample(Record(values, path, where), columns, f"row-{number}", explicit)


SPEC = LoaderSpec(
    name="parquet",
    description="any Parquet file with a column mapping (--map question=q,answers=a,...)",
    read=read,
    takes_mapping=True,
)
