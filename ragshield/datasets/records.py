"""Typed access to the JSON objects of a dataset file.

A getter either returns a value of the promised type or raises DatasetFormatError naming the
file, the place in it and the field (with its path inside nested objects: `passages[2].text`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ragshield.datasets.errors import DatasetFormatError
from ragshield.types import Passage


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class Record:
    """One JSON object of a file; `where` is its place ("line 12"), `prefix` its field path."""

    def __init__(self, value: Any, path: Path, where: str | None, prefix: str = "") -> None:
        self.path, self.where, self.prefix = path, where, prefix
        if not isinstance(value, dict):
            raise DatasetFormatError(path, f"expected an object, found {json_type(value)}",
                                     where=where, field=prefix.rstrip(".") or None)
        self.data: dict[str, Any] = value

    def error(self, field: str, reason: str) -> DatasetFormatError:
        return DatasetFormatError(self.path, reason, where=self.where, field=self.prefix + field)

    def has(self, field: str) -> bool:
        return self.data.get(field) is not None

    def value(self, field: str) -> Any:
        """A field that must be present and not null, of any type."""
        if not self.has(field):
            raise self.error(field, "missing" if field not in self.data else "is null")
        return self.data[field]

    def text(self, field: str) -> str:
        value = self.value(field)
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, found {json_type(value)}")
        return value

    def optional_text(self, field: str) -> str | None:
        return self.text(field) if self.has(field) else None

    def number(self, field: str) -> float:
        """An integer or a decimal number (never a boolean), as a float."""
        value = self.value(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(field, f"expected a number, found {json_type(value)}")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = math.inf
        if not math.isfinite(number):
            raise self.error(field, f"expected a finite number, found {value!r:.40}")
        return number

    def optional_number(self, field: str) -> float | None:
        return self.number(field) if self.has(field) else None

    def identifier(self, field: str) -> str:
        """A string or an integer id, as a string."""
        value = self.value(field)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(field, f"expected a string or integer id, found {json_type(value)}")
        return str(value)

    def texts(self, field: str) -> list[str]:
        """A list of strings; a single string counts as a list of one; absent or null as none."""
        value = self.data.get(field)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of strings, found {json_type(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{field}[{index}]", f"expected a string, found {json_type(item)}")
        return list(value)

    def flag(self, field: str) -> bool | None:
        value = self.data.get(field)
        if value is not None and not isinstance(value, bool):
            raise self.error(field, f"expected true, false or null, found {json_type(value)}")
        return value

    def mapping(self, field: str) -> dict[str, Any]:
        value = self.data.get(field)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(field, f"expected an object, found {json_type(value)}")
        return dict(value)

    def items(self, field: str) -> list[Any]:
        """A list of anything; absent or null counts as empty."""
        value = self.data.get(field)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(field, f"expected a list, found {json_type(value)}")
        return value

    def records(self, field: str) -> list[Record]:
        """A list of objects, each a Record whose errors name `field[index].`"""
        return [
            Record(item, self.path, self.where, f"{self.prefix}{field}[{index}].")
            for index, item in enumerate(self.items(field))
        ]


def unique(texts: list[str]) -> list[str]:
    """The texts without repeats, first occurrence first (datasets repeat answers per annotator)."""
    return list(dict.fromkeys(texts))


def passage_from_record(record: Record, id_field: str = "id",
                        score_field: str | None = None) -> Passage:
    """{title?, text, <id_field>?, <score_field>?} as a Passage; the score is the one the
    retriever of an outside system gave, read only where the format has one."""
    doc_id = record.identifier(id_field) if record.has(id_field) else None
    score = record.optional_number(score_field) if score_field else None
    return Passage(text=record.text("text"), title=record.optional_text("title"), doc_id=doc_id,
                   score=score)
