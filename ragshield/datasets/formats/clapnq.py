"""ClapNQ JSONL: {id, input, passages: [{title, text, sentences}], output: [{answer, ...}]}.

The answerable and unanswerable files share this layout; unanswerable questions have outputs
whose answers are all empty, so a question is answerable when some annotator wrote an answer.
Annotators who gave none left "", "NA" or a lone "."; those are not reference answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, passage_from_record, unique
from ragshield.types import Sample

NO_ANSWER = "NA"


def is_answer(text: str) -> bool:
    return text.strip() != NO_ANSWER and any(char.isalnum() for char in text)


def sniff(first: Any) -> bool:
    return isinstance(first, dict) and {"input", "passages", "output"} <= first.keys()


def read(path: Path) -> Iterator[LocatedSample]:
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        record = Record(value, path, where)
        written = [output.optional_text("answer") or "" for output in record.records("output")]
        answers = unique([answer for answer in written if is_answer(answer)])
        yield where, Sample(
            id=record.identifier("id"),
            question=record.text("input"),
            passages=[passage_from_record(item) for item in record.records("passages")],
            reference_answers=answers,
            answerable=bool(answers),
        )


SPEC = LoaderSpec(
    name="clapnq",
    description="ClapNQ JSONL (input, passages, output); answerable when an answer was written",
    read=read,
    sniff=sniff,
    license="Apache-2.0; passages from Wikipedia, CC BY-SA 3.0",
)
