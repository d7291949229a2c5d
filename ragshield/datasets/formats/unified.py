"""ragshield's unified JSONL, one sample per line:

{id, source, license, question, passages: [{title, text, id?}], reference_answers,
answerable: true|false|null, label, extra: {...}}

`source`, `license`, `label` and the keys of `extra` go into Sample.meta; to_record() writes a
Sample back in this layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, passage_from_record
from ragshield.types import Sample

TOP_LEVEL_META = ("source", "license", "label")


def sniff(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and {"id", "question", "passages"} <= first.keys()
        and ("reference_answers" in first or "answerable" in first)
    )


def sample_from_record(record: Record) -> Sample:
    meta = record.mapping("extra")
    meta.update({key: record.text(key) for key in TOP_LEVEL_META if record.has(key)})
    return Sample(
        id=record.identifier("id"),
        question=record.text("question"),
        passages=[passage_from_record(item) for item in record.records("passages")],
        reference_answers=record.texts("reference_answers"),
        answerable=record.flag("answerable"),
        meta=meta,
    )


def read(path: Path) -> Iterator[LocatedSample]:
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        yield where, sample_from_record(Record(value, path, where))


def to_record(sample: Sample) -> dict[str, Any]:
    """The unified JSON object of a sample (the inverse of sample_from_record)."""
    extra = dict(sample.meta)
    top = {key: extra.pop(key) for key in TOP_LEVEL_META if key in extra}
    passages = [
        {**({"id": p.doc_id} if p.doc_id is not None else {}), "title": p.title, "text": p.text}
        for p in sample.passages
    ]
    return {
        "id": sample.id,
        "source": top.get("source"),
        "license": top.get("license"),
        "question": sample.question,
        "passages": passages,
        "reference_answers": sample.reference_answers,
        "answerable": sample.answerable,
        "label": top.get("label"),
        "extra": extra,
    }


SPEC = LoaderSpec(
    name="unified",
    description="ragshield's unified JSONL (id, question, passages, reference_answers, answerable)",
    read=read,
    sniff=sniff,
)
