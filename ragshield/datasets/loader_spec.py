"""What a dataset format module provides: one LoaderSpec, listed in the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ragshield.types import Sample

# A sample and its place in the file ("line 12", "record index 3"), for error messages.
LocatedSample = tuple[str, Sample]


@dataclass(frozen=True)
class LoaderSpec:
    """A dataset format.

    `read(path)` yields the file's samples one at a time; formats with `takes_mapping` accept
    `read(path, mapping=...)` (sample field -> column name). `sniff(first)` says whether the first
    JSON value of a file (its first line, or the whole document) looks like this format.
    """

    name: str
    description: str
    read: Callable[..., Iterator[LocatedSample]]
    sniff: Callable[[Any], bool] | None = None
    license: str | None = None  # of the public dataset this format is named after
    takes_mapping: bool = False
