"""HaluEval QA (one JSON object a line despite the .json name):
{knowledge, question, right_answer, hallucinated_answer}. The knowledge holds the right answer,
so every sample is answerable; the hallucinated answer is kept in meta. Ids are record indexes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record
from ragshield.types import Passage, Sample


def sniff(first: Any) -> bool:
    return isinstance(first, dict) and {"knowledge", "question", "right_answer"} <= first.keys()


def read(path: Path) -> Iterator[LocatedSample]:
    for index, (number, value) in enumerate(iter_json_lines(path)):
        where = f"line {number}"
        record = Record(value, path, where)
        hallucinated = record.optional_text("hallucinated_answer")
        yield where, Sample(
            id=str(index),
            question=record.text("question"),
            passages=[Passage(text=record.text("knowledge"))],
            reference_answers=[record.text("right_answer")],
            answerable=True,
            meta={"hallucinated_answer": hallucinated} if hallucinated is not None else {},
        )


SPEC = LoaderSpec(
    name="halueval",
    description="HaluEval QA (knowledge, question, right_answer, hallucinated_answer)",
    read=read,
    sniff=sniff,
    license="MIT; knowledge from HotpotQA, CC BY-SA 4.0",
)
