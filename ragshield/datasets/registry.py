"""Dataset formats by name, format detection, and load_dataset(): the one entry point.

Adding a format: write formats/<name>.py with a SPEC and list it in FORMATS.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Iterator

from ragshield.datasets.column_mapping import ColumnMapping
from ragshield.datasets.errors import DatasetError, UnknownFormatError
from ragshield.datasets.formats import (
    clapnq, crag, generic_csv, generic_jsonl, generic_parquet, halueval, hotpotqa, nomiracl,
    nq_open, openinference, squad2, unified,
)
from ragshield.datasets.loader_spec import LoaderSpec
from ragshield.datasets.reading import check_readable, content_suffix, peek_json
from ragshield.datasets.validation import checked_samples
from ragshield.types import Sample

FORMATS: dict[str, LoaderSpec] = {
    spec.name: spec
    for spec in (
        unified.SPEC, squad2.SPEC, clapnq.SPEC, nq_open.SPEC, halueval.SPEC, hotpotqa.SPEC,
        crag.SPEC, nomiracl.SPEC, openinference.SPEC, generic_csv.SPEC, generic_jsonl.SPEC,
        generic_parquet.SPEC,
    )
}
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def get_format(name: str) -> LoaderSpec:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormatError(
            f"unknown dataset format {name!r}; the formats are {', '.join(FORMATS)}"
        ) from None


def detect_format(path: Path, *, mapped: bool = False) -> str:
    """The format of `path` from its suffix and, for JSON, the shape of its first record.

    `mapped`: a column mapping was given, so a JSONL file is read as the generic format (CSV
    and Parquet files always are).
    """
    check_readable(path)
    suffix = content_suffix(path)
    if suffix == ".csv":
        return generic_csv.SPEC.name
    if suffix == ".parquet":
        return generic_parquet.SPEC.name
    if suffix not in JSON_SUFFIXES:
        raise UnknownFormatError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; "
            f"pass a format, one of {', '.join(FORMATS)}"
        )
    if mapped:
        return generic_jsonl.SPEC.name
    first = peek_json(path)
    matches = [spec.name for spec in FORMATS.values() if spec.sniff and spec.sniff(first)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownFormatError(
            f"{path}: ambiguous format, the first record fits {' and '.join(matches)}; "
            "pass the format"
        )
    shape = f"keys {sorted(first)[:12]}" if isinstance(first, dict) else type(first).__name__
    raise UnknownFormatError(
        f"{path}: no known format has this first record ({shape}); pass a format "
        f"(one of {', '.join(FORMATS)}), or jsonl with a column mapping"
    )


def load_dataset(path: Path | str, format: str | None = None, *, limit: int | None = None,
                 mapping: ColumnMapping | None = None) -> Iterator[Sample]:
    """The samples of a dataset file, streamed and checked (ids, questions); DatasetError on
    any problem. The file is checked and the format chosen before this returns."""
    path = Path(path)
    check_readable(path)
    spec = get_format(format or detect_format(path, mapped=mapping is not None))
    if mapping and not spec.takes_mapping:
        raise DatasetError(f"format {spec.name!r} takes no column mapping; "
                           f"only {', '.join(n for n, s in FORMATS.items() if s.takes_mapping)} do")
    located = spec.read(path, mapping=mapping) if spec.takes_mapping else spec.read(path)
    samples = checked_samples(path, located)
    return islice(samples, limit) if limit is not None else samples
