"""NoMIRACL-style JSONL: {query_id, query, positive_passages: [{docid, title, text}],
negative_passages: [...]}.

Passages carry meta["relevant"]; a question is answerable when some passage is relevant. The
passages are shuffled with the query id as seed, so the relevant ones are not always first
(the order is the same on every load).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, passage_from_record
from ragshield.types import Sample


def sniff(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and {"query_id", "query"} <= first.keys()
        and ("positive_passages" in first or "negative_passages" in first)
    )


def read(path: Path) -> Iterator[LocatedSample]:
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        record = Record(value, path, where)
        sample_id = record.identifier("query_id")
        passages = []
        for field, relevant in (("positive_passages", True), ("negative_passages", False)):
            for item in record.records(field):
                passage = passage_from_record(item, id_field="docid")
                passage.meta["relevant"] = relevant
                passages.append(passage)
        # Seeded with the id's bytes: the same seed as the id itself for any valid text, and
        # no crash on a lone surrogate (the sample check then reports it with its line).
        random.Random(sample_id.encode("utf-8", "surrogatepass")).shuffle(passages)
        yield where, Sample(
            id=sample_id,
            question=record.text("query"),
            passages=passages,
            answerable=any(p.meta["relevant"] for p in passages),
        )


SPEC = LoaderSpec(
    name="nomiracl",
    description="NoMIRACL-style JSONL (query, positive and negative passages)",
    read=read,
    sniff=sniff,
    license="Apache-2.0",
)
