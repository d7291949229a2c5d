"""HotpotQA, distractor setting: a JSON array of {_id, question, answer, supporting_facts:
[[title, sentence index]], context: [[title, [sentences]]], type, level}.

Each context paragraph becomes a passage (sentences joined; they carry their own spaces) with
meta["supporting"]. A question is answerable when every supporting paragraph is among its
passages; test-set records without answers or supporting facts stay unlabelled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import read_json_document
from ragshield.datasets.records import Record
from ragshield.types import Passage, Sample


def sniff(first: Any) -> bool:
    return (
        isinstance(first, list) and bool(first) and isinstance(first[0], dict)
        and {"question", "context"} <= first[0].keys()
    )


def _paragraphs(record: Record) -> list[tuple[str, str]]:
    paragraphs = []
    for index, item in enumerate(record.items("context")):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], list) and all(isinstance(s, str) for s in item[1])):
            raise record.error(f"context[{index}]", "expected [title, [sentence, ...]]")
        paragraphs.append((item[0], "".join(item[1])))
    return paragraphs


def _supporting_facts(record: Record) -> list[list[Any]]:
    facts = record.items("supporting_facts")
    for index, fact in enumerate(facts):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)
                and isinstance(fact[1], int) and not isinstance(fact[1], bool)):
            raise record.error(f"supporting_facts[{index}]", "expected [title, sentence index]")
    return facts


def read(path: Path) -> Iterator[LocatedSample]:
    document = read_json_document(path)
    if not isinstance(document, list):
        raise DatasetFormatError(path, "expected a JSON array of HotpotQA records")
    for index, value in enumerate(document):
        where = f"record index {index}"
        record = Record(value, path, where)
        facts = _supporting_facts(record)
        supporting = {title for title, _ in facts}
        paragraphs = _paragraphs(record)
        titles = {title for title, _ in paragraphs}
        meta = {key: record.text(key) for key in ("type", "level") if record.has(key)}
        yield where, Sample(
            id=record.identifier("_id"),
            question=record.text("question"),
            passages=[
                Passage(text=text, title=title, doc_id=title,
                        meta={"supporting": title in supporting})
                for title, text in paragraphs
            ],
            reference_answers=record.texts("answer"),
            answerable=supporting <= titles if facts else None,
            meta={**meta, "supporting_facts": facts},
        )


SPEC = LoaderSpec(
    name="hotpotqa",
    description="HotpotQA distractor JSON (10 paragraphs a question, supporting facts)",
    read=read,
    sniff=sniff,
    license="CC BY-SA 4.0",
)
