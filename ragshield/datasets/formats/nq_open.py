"""NQ-open JSONL: {question, answer: [...]}; no passages (retrieval supplies them later), so
answerability is unknown. Lines without an `id` get their record index as id."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record
from ragshield.types import Sample


def sniff(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and {"question", "answer"} <= first.keys()
        and isinstance(first["answer"], list)
        and "passages" not in first
    )


def read(path: Path) -> Iterator[LocatedSample]:
    for index, (number, value) in enumerate(iter_json_lines(path)):
        where = f"line {number}"
        record = Record(value, path, where)
        yield where, Sample(
            id=record.identifier("id") if record.has("id") else str(index),
            question=record.text("question"),
            reference_answers=record.texts("answer"),
        )


SPEC = LoaderSpec(
    name="nq_open",
    description="NQ-open JSONL (question, answer list; no passages)",
    read=read,
    sniff=sniff,
    license="CC BY-SA 3.0",
)
