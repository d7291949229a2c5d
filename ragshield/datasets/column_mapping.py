"""Samples from any table-like file (CSV and Parquet rows, JSON-lines objects) through a
column mapping.

A mapping names, for some sample fields, the column that holds them: `question=q,answers=ans`.
The sample fields (FIELDS) left out are read from the column of the same name when there is
one. The answer an outside system gave (ANSWER_FIELDS: `answer`, `answer_model`,
`answer_logprobs`, `cited_passages`; see given_answers) and `passage_scores` (one retrieval
score per passage, a list of numbers or nulls) are read only where the mapping names them:
`answer=response,answer_logprobs=lp`; so is `history`, the conversation before the question
(a list of {role, content}, JSON text in a CSV cell: datasets/history.py). Passages given as
objects may carry their own `score`. Columns that are not mapped go into Sample.meta.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ragshield.conversation import HISTORY
from ragshield.datasets.errors import DatasetError
from ragshield.datasets.given_answers import ANSWER_FIELDS, given_answer
from ragshield.datasets.history import history_field
from ragshield.datasets.records import Record, passage_from_record
from ragshield.types import Passage, Sample

FIELDS = ("id", "question", "answers", "passages", "answerable")
OPTIONAL_FIELDS = (*ANSWER_FIELDS, "passage_scores", HISTORY)  # read only when mapped
TRUE_WORDS = {"true", "yes", "1", "answerable"}
FALSE_WORDS = {"false", "no", "0", "unanswerable"}

ColumnMapping = dict[str, str]  # sample field -> column name


def parse_mapping(text: str) -> ColumnMapping:
    """`question=q,answers=ans` as {"question": "q", "answers": "ans"}."""
    mapping: ColumnMapping = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        field, sep, column = (s.strip() for s in part.partition("="))
        if not sep or not field or not column:
            raise DatasetError(f"bad column mapping {part!r}: write FIELD=COLUMN, e.g. question=q")
        if field in mapping:
            raise DatasetError(f"field {field!r} is mapped twice in the column mapping")
        mapping[field] = column
    if not mapping:
        raise DatasetError("the column mapping is empty; write FIELD=COLUMN,... e.g. question=q")
    return check_mapping(mapping)


def check_mapping(mapping: ColumnMapping) -> ColumnMapping:
    """`mapping` when its fields are known and the given answer's fields come with `answer`
    (the checks of `parse_mapping`, for a mapping made by a form)."""
    unknown = [field for field in mapping if field not in FIELDS + OPTIONAL_FIELDS]
    if unknown:
        raise DatasetError(f"unknown field {unknown[0]!r} in the column mapping; "
                           f"the fields are {', '.join(FIELDS + OPTIONAL_FIELDS)}")
    strays = [field for field in ANSWER_FIELDS[1:] if field in mapping]
    if strays and "answer" not in mapping:
        raise DatasetError(f"the column mapping names {', '.join(strays)} but no answer "
                           "column; add answer=COLUMN")
    return mapping


def with_defaults(mapping: ColumnMapping | None) -> ColumnMapping:
    """The sample fields' columns (same-named by default) and the optional fields mapped."""
    return {**{field: field for field in FIELDS}, **(mapping or {})}


def _answerable(record: Record, column: str) -> bool | None:
    value = record.data.get(column)
    if value is None or isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if word == "":
        return None
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise record.error(column, f"expected true/false, yes/no, 1/0 or empty, found {value!r:.60}")


def _passages(record: Record, column: str) -> list[Passage]:
    """A text, a list of texts, or a list of {title?, text, id?} objects."""
    value = record.data.get(column)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [Passage(text=value)]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [Passage(text=item) for item in value]
    return [passage_from_record(item, score_field="score") for item in record.records(column)]


def _with_scores(record: Record, column: str | None, passages: list[Passage]) -> list[Passage]:
    """The passages with the retrieval scores of `column` (one per passage), when mapped
    and filled."""
    if column is None or not record.has(column):
        return passages
    values = record.items(column)
    if len(values) != len(passages):
        raise record.error(column, f"expected one score per passage ({len(passages)}), "
                                   f"found {len(values)}")
    scores = Record({f"[{i}]": value for i, value in enumerate(values)}, record.path,
                    record.where, column)
    return [replace(passage, score=scores.optional_number(f"[{i}]"))
            for i, passage in enumerate(passages)]


def mapped_sample(record: Record, mapping: ColumnMapping, fallback_id: str,
                  explicit: frozenset[str]) -> Sample:
    """The sample in `record`; the fields in `explicit` (mapped by the user) need their column."""
    for field in explicit:
        if mapping[field] not in record.data:
            raise record.error(field, f"is mapped to column {mapping[field]!r}, which the "
                                      "file lacks")
    if mapping["question"] not in record.data:
        raise record.error(mapping["question"], "no question column; map the column of the "
                                                "questions to question (the Data tab's "
                                                "mapping row, or --map question=COLUMN)")
    used = set(mapping.values())
    meta: dict[str, Any] = {
        key: value for key, value in record.data.items()
        if key not in used and value not in (None, "")
    }
    has_id = record.has(mapping["id"]) and record.data[mapping["id"]] != ""
    passages = _with_scores(record, mapping.get("passage_scores"),
                            _passages(record, mapping["passages"]))
    if HISTORY in mapping:
        history = history_field(record, mapping[HISTORY])
        if history:
            meta[HISTORY] = history
    return Sample(
        id=record.identifier(mapping["id"]) if has_id else fallback_id,
        question=record.text(mapping["question"]),
        passages=passages,
        reference_answers=[a for a in record.texts(mapping["answers"]) if a.strip()],
        answerable=_answerable(record, mapping["answerable"]),
        meta=meta,
        given_answer=given_answer(
            record, {f: mapping[f] for f in ANSWER_FIELDS if f in mapping}, len(passages)),
    )
