"""SQuAD v2 JSON: data -> paragraphs -> qas, with `is_impossible` for unanswerable questions
(SQuAD v1.1 files load too: a question is answerable when it has answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import read_json_document
from ragshield.datasets.records import Record, unique
from ragshield.types import Passage, Sample


def sniff(first: Any) -> bool:
    data = first.get("data") if isinstance(first, dict) else None
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) \
        and "paragraphs" in data[0]


def _answer_texts(qa: Record, field: str) -> list[str]:
    return unique([answer.text("text") for answer in qa.records(field)])


def read(path: Path) -> Iterator[LocatedSample]:
    document = Record(read_json_document(path), path, None)
    for a, article in enumerate(document.records("data")):
        title = article.optional_text("title")
        for p, paragraph in enumerate(article.records("paragraphs")):
            context = paragraph.text("context")
            for q, qa in enumerate(paragraph.records("qas")):
                answers = _answer_texts(qa, "answers")
                impossible = qa.flag("is_impossible")
                plausible = _answer_texts(qa, "plausible_answers")
                sample = Sample(
                    id=qa.identifier("id"),
                    question=qa.text("question"),
                    passages=[Passage(text=context, title=title, doc_id=f"{title or a}#{p}")],
                    reference_answers=answers,
                    answerable=bool(answers) if impossible is None else not impossible,
                    meta={"plausible_answers": plausible} if plausible else {},
                )
                yield f"data[{a}].paragraphs[{p}].qas[{q}]", sample


SPEC = LoaderSpec(
    name="squad2",
    description="SQuAD 2.0 JSON (data -> paragraphs -> qas, is_impossible)",
    read=read,
    sniff=sniff,
    license="CC BY-SA 4.0",
)
