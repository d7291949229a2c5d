"""One span of an OpenInference export read whatever its shape (Phoenix's dataframe records,
its REST API's and JSON export's span objects, OTLP-JSON; formats/openinference.py describes
them): its ids, parent, start time and kind, its attributes under their flat OpenInference
names, and a RETRIEVER span's documents as Passages. Errors name the field as the line spells
it, and `attributes.<name>` for an attribute."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ragshield import strict_json
from ragshield.datasets.records import Record, json_type
from ragshield.types import Passage

TRACE_ID = ("context.trace_id", "trace_id", "traceId")
SPAN_ID = ("context.span_id", "span_id", "spanId")
PARENT_ID = ("parent_id", "parent_span_id", "parentSpanId")
START_TIME = ("start_time", "start_time_unix_nano", "startTimeUnixNano")
ATTRIBUTES = "attributes"
KIND = "openinference.span.kind"
DOCUMENTS = "retrieval.documents"

_INDEX = re.compile(r"[0-9]{1,9}")
_OTLP_SCALARS = {"stringvalue", "boolvalue", "intvalue", "doublevalue", "bytesvalue"}


def sniff(first: Any) -> bool:
    """A span: a trace id (flat, in `context` or OTLP's) and attributes."""
    if not isinstance(first, dict):
        return False
    context = first.get("context")
    traced = ("context.trace_id" in first
              or (isinstance(context, dict) and "trace_id" in context)
              or ({"trace_id", "traceId"} & first.keys() and {"span_id", "spanId"} & first.keys()))
    return bool(traced) and (ATTRIBUTES in first
                             or any(key.startswith("attributes.") for key in first))


def first_present(record: Record, names: tuple[str, ...]) -> str:
    """The first of `names` the record has (not null), else the first (to say it is missing)."""
    return next((name for name in names if record.has(name)), names[0])


def span_record(value: Any, path: Path, where: str) -> Record:
    """The span's top-level fields, with those of an object `context` as `context.<key>`."""
    record = Record(value, path, where)
    context = record.mapping("context")
    if not context:
        return record
    return Record({**record.data, **{f"context.{key}": item for key, item in context.items()}},
                  path, where)


def identifier_of(record: Record, names: tuple[str, ...]) -> str:
    name = first_present(record, names)
    value = record.identifier(name)
    if not value.strip():
        raise record.error(name, "is empty")
    return value


def parent_of(record: Record) -> str | None:
    name = first_present(record, PARENT_ID)
    if record.data.get(name) in (None, ""):  # OTLP writes a root's parent as ""
        return None
    return record.identifier(name)


def start_of(value: Any) -> float | None:
    """A start time as a number, for ordering only: epoch numbers (in any unit, as numbers or
    digits) and ISO text are read; anything else is unknown."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            if value.isascii() and value.isdigit():
                return float(value)
            return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _flatten(value: Any, key: str, out: dict[str, Any]) -> None:
    """`value` at `key` as flat OpenInference keys in `out`: objects and lists of objects are
    walked (`a.b`, `a.0.b`), metadata objects kept whole, nulls left out."""
    whole = key == "metadata" or key.endswith(".metadata")
    if isinstance(value, dict) and not whole:
        for name, item in value.items():
            _flatten(item, f"{key}.{name}" if key else name, out)
    elif (isinstance(value, list) and not whole
          and any(isinstance(item, dict) for item in value)):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                _flatten(item, f"{key}.{index}", out)
    elif value is not None:
        out[key] = value


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue ({"string_value": ...}, {"intValue": "3"}, {"array_value": {"values":
    [...]}}) as a plain value; None for an empty or unknown one."""
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        kind = key.replace("_", "").lower()
        if kind == "arrayvalue":
            values = item.get("values") if isinstance(item, dict) else None
            return [_otlp_value(v) for v in values] if isinstance(values, list) else None
        if kind == "intvalue" and isinstance(item, str):
            try:
                return int(item)
            except ValueError:  # not digits, or more than int() converts
                return item
        if kind in _OTLP_SCALARS:
            return item
    return None


def attributes_of(record: Record) -> Record:
    """The span's attributes under their flat OpenInference names, whatever the shape; errors
    name them `attributes.<name>`."""
    flat: dict[str, Any] = {}
    value = record.data.get(ATTRIBUTES)
    if isinstance(value, list):  # OTLP: [{"key": ..., "value": {...}}, ...]
        for item in record.records(ATTRIBUTES):
            _flatten(_otlp_value(item.data.get("value")), item.text("key"), flat)
    else:
        _flatten(record.mapping(ATTRIBUTES), "", flat)
    for key, item in record.data.items():
        if key.startswith("attributes."):
            _flatten(item, key.removeprefix("attributes."), flat)
    return Record(flat, record.path, record.where, "attributes.")


def kind_of(record: Record, attributes: Record) -> str | None:
    if attributes.has(KIND):
        return attributes.text(KIND).upper()
    if record.has("span_kind"):
        return record.text("span_kind").upper()
    return None


def passages_of(attributes: Record) -> list[Passage]:
    """The documents of a RETRIEVER span, in index order."""
    if attributes.has(DOCUMENTS) and attributes.data[DOCUMENTS] != []:
        raise attributes.error(DOCUMENTS, "expected a list of document objects, found "
                                          f"{json_type(attributes.data[DOCUMENTS])}")
    documents: dict[int, dict[str, Any]] = {}
    prefix = DOCUMENTS + "."
    for key, value in attributes.data.items():
        if key.startswith(prefix):
            index, _, rest = key.removeprefix(prefix).partition(".")
            if _INDEX.fullmatch(index) and rest:
                documents.setdefault(int(index), {})[rest] = value
    return [_passage(Record(documents[index], attributes.path, attributes.where,
                            f"{attributes.prefix}{prefix}{index}."))
            for index in sorted(documents)]


def _passage(document: Record) -> Passage:
    doc_id = document.identifier("document.id") if document.has("document.id") else None
    passage = Passage(text=document.text("document.content"), doc_id=doc_id,
                      score=document.optional_number("document.score"))
    metadata = _metadata(document)
    if metadata is not None:
        passage.meta["metadata"] = metadata
    return passage


def _metadata(document: Record) -> Any:
    """`document.metadata`: an object, a JSON text of one (parsed), anything else as it is;
    keys flattened below it (`document.metadata.author`) are gathered into an object."""
    value = document.data.get("document.metadata")
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            parsed = strict_json.loads(value)
        except ValueError:  # not JSON (often a Python repr): kept as text
            parsed = None
        value = parsed if isinstance(parsed, dict) else value
    below = {key.removeprefix("document.metadata."): item for key, item in document.data.items()
             if key.startswith("document.metadata.")}
    if below:
        return {**below, **value} if isinstance(value, dict) else below
    return value
