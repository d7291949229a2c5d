"""OpenInference traces exported from Arize Phoenix, read as a dataset of given answers.

Phoenix (github.com/Arize-ai/phoenix) collects the spans that OpenInference instrumentations
(LlamaIndex, LangChain, OpenAI, DSPy, ...) send it. This format reads them as JSON Lines, one
span object per line, in the shapes Phoenix gives out:

- `px.Client().get_spans_dataframe(limit=...)` (or `Client().spans.get_spans_dataframe`)
  written with `.to_json(path, orient="records", lines=True)`: flat column names
  `context.trace_id`, `context.span_id`, `parent_id`, `span_kind`, `start_time`, and one
  `attributes.<name>` column per attribute (`attributes.input.value`; the documents in
  `attributes.retrieval.documents`, a list of {"document.content", "document.score", ...});
- the span objects of Phoenix's REST API (`GET /v1/projects/{project}/spans`, the `data` of
  each page) and of its older JSON export: `context: {trace_id, span_id}`, `parent_id`,
  `span_kind`, `start_time` and `attributes`, one object whose keys are flattened
  (`"retrieval.documents.0.document.content"`), nested (`{"input": {"value": ...}}`,
  `{"retrieval": {"documents": [{"document": {...}}]}}`) or both;
- OTLP-JSON spans (`GET /v1/projects/{project}/spans/otlpv1`): `trace_id`, `span_id`,
  `parent_span_id` (or their camelCase names), `start_time_unix_nano`, and `attributes` as a
  list of {"key", "value": {"string_value" | "int_value" | "double_value" | "bool_value" |
  "array_value": ...}}.

The attributes read, as named by the OpenInference semantic conventions
(openinference-semantic-conventions), and nothing else: `openinference.span.kind` (else the
span's `span_kind`), `input.value`, `output.value`, `llm.output_messages.N.message.content`,
`llm.model_name`, and for each retrieved document `retrieval.documents.N.document.content`,
`.document.id`, `.document.score` and `.document.metadata`.

Spans are grouped by trace id. A trace is a question answered with retrieved passages when one
of its spans below the root (one with a parent) is a RETRIEVER span; each such trace gives one
sample:

- id: the trace id; meta["root_span_id"]: the root span's id (to annotate it in Phoenix);
- question: the root span's `input.value`, or, when that is a JSON object, its `query`,
  `question` or `input` key (the first present);
- the given answer: the root span's `output.value`, or, when that is a JSON object, its
  `answer`, `output`, `response` or `result` key; a root without `output.value` gives the
  content of its last `llm.output_messages`. Its model: the `llm.model_name` of the trace's
  last LLM span that names one. No token log-probs: OpenInference has no attribute for them;
- passages: the documents of the trace's RETRIEVER spans, span after span, each span's in
  index order: content, id and score become Passage.text, doc_id and score, the metadata
  (an object, or a JSON text of one, kept as it is otherwise) Passage.meta["metadata"].

"Last" and "span after span" follow `start_time` when every span concerned has one (epoch
numbers or ISO text), else the line order; the samples come in the same order of their roots.

Other traces are skipped: those of only non-answering spans, with no retrieval below their
root (embedding or indexing jobs, stand-alone LLM, tool or evaluator calls, bare retrieval calls
whose root is the retriever). A file with none but such traces is an error, as is, for a
question-answer trace: no root span (a span whose parent id is null; an export cut off by a
limit loses them: `get_spans_dataframe` returns 1000 spans unless given another `limit`), more
than one root, a root without a question or an answer, a document without content. Each error
names the file, the line of the span at fault (the trace's first line for a missing root) and
the field: `context.trace_id`, `parent_id`, ... as the line spells it, and `attributes.<name>`
for an attribute in any of the shapes. A span id seen twice in a trace is an error (a file
holding two overlapping exports), as are more than MAX_TRACE_SPANS spans in a trace or more
than MAX_PASSAGES documents in its RETRIEVER spans.

A trace's spans may be anywhere in the file, so the whole file is read before the first
sample comes; only the attributes above are kept from each span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Iterator, TypeVar

from ragshield import strict_json
from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, json_type
from ragshield.types import GivenAnswer, Passage, Sample

MAX_TRACE_SPANS = 10_000  # a question answered with retrieval is a few to a few hundred spans
MAX_PASSAGES = 1_000  # documents retrieved in one trace, all RETRIEVER spans together

TRACE_ID = ("context.trace_id", "trace_id", "traceId")
SPAN_ID = ("context.span_id", "span_id", "spanId")
PARENT_ID = ("parent_id", "parent_span_id", "parentSpanId")
START_TIME = ("start_time", "start_time_unix_nano", "startTimeUnixNano")
ATTRIBUTES = "attributes"

KIND = "openinference.span.kind"
INPUT, OUTPUT = "input.value", "output.value"
MODEL_NAME = "llm.model_name"
DOCUMENTS = "retrieval.documents"
RETRIEVER, LLM = "RETRIEVER", "LLM"
QUESTION_KEYS = ("query", "question", "input")
ANSWER_KEYS = ("answer", "output", "response", "result")

_INDEX = re.compile(r"[0-9]{1,9}")
_MESSAGE_CONTENT = re.compile(r"llm\.output_messages\.([0-9]{1,9})\.message\.content")
_OTLP_SCALARS = {"stringvalue", "boolvalue", "intvalue", "doublevalue", "bytesvalue"}

T = TypeVar("T")


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


@dataclass
class _Timed(Generic[T]):
    """Something read from the span at `line`, which started at `start` (when known)."""

    start: float | None
    line: int
    value: T


@dataclass
class _Root:
    span_id: str
    attributes: Record  # only the attributes a root is read for


@dataclass
class _Trace:
    first_line: int
    parent_field: str  # the name its first span gives the parent id, for messages
    spans: dict[str, int] = field(default_factory=dict)  # span id -> line
    roots: list[_Timed[_Root]] = field(default_factory=list)
    retrievals: list[_Timed[list[Passage]]] = field(default_factory=list)
    models: list[_Timed[str]] = field(default_factory=list)
    passages: int = 0
    retrieves_below_root: bool = False


def _in_order(items: list[_Timed[T]]) -> list[_Timed[T]]:
    """By start time when all have one, else by line."""
    if all(item.start is not None for item in items):
        return sorted(items, key=lambda item: (item.start, item.line))
    return sorted(items, key=lambda item: item.line)


def _present(record: Record, names: tuple[str, ...]) -> str:
    """The first of `names` the record has (not null), else the first (to say it is missing)."""
    return next((name for name in names if record.has(name)), names[0])


def _span_record(value: Any, path: Path, where: str) -> Record:
    """The span's top-level fields, with those of an object `context` as `context.<key>`."""
    record = Record(value, path, where)
    context = record.mapping("context")
    if not context:
        return record
    return Record({**record.data, **{f"context.{key}": item for key, item in context.items()}},
                  path, where)


def _identifier(record: Record, names: tuple[str, ...]) -> str:
    name = _present(record, names)
    value = record.identifier(name)
    if not value.strip():
        raise record.error(name, "is empty")
    return value


def _parent(record: Record) -> str | None:
    name = _present(record, PARENT_ID)
    if record.data.get(name) in (None, ""):  # OTLP writes a root's parent as ""
        return None
    return record.identifier(name)


def _start(value: Any) -> float | None:
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


def _attributes(record: Record) -> Record:
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


def _kind(record: Record, attributes: Record) -> str | None:
    if attributes.has(KIND):
        return attributes.text(KIND).upper()
    if record.has("span_kind"):
        return record.text("span_kind").upper()
    return None


def _passages(attributes: Record) -> list[Passage]:
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


def _root(span_id: str, attributes: Record) -> _Root:
    kept = {key: value for key, value in attributes.data.items()
            if key in (INPUT, OUTPUT) or _MESSAGE_CONTENT.fullmatch(key)}
    return _Root(span_id, Record(kept, attributes.path, attributes.where, attributes.prefix))


def _add_span(traces: dict[str, _Trace], path: Path, number: int, value: Any) -> None:
    """Read one span into its trace."""
    record = _span_record(value, path, f"line {number}")
    trace_id = _identifier(record, TRACE_ID)
    span_id = _identifier(record, SPAN_ID)
    parent = _parent(record)
    start = _start(record.data.get(_present(record, START_TIME)))
    attributes = _attributes(record)
    kind = _kind(record, attributes)
    trace = traces.setdefault(trace_id, _Trace(number, _present(record, PARENT_ID)))
    if span_id in trace.spans:
        raise record.error(_present(record, SPAN_ID), f"span {span_id!r} of trace {trace_id!r} "
                           f"is repeated (first at line {trace.spans[span_id]})")
    if len(trace.spans) >= MAX_TRACE_SPANS:
        raise record.error(_present(record, TRACE_ID), f"trace {trace_id!r} has more than "
                           f"{MAX_TRACE_SPANS} spans")
    trace.spans[span_id] = number
    if parent is None:
        trace.roots.append(_Timed(start, number, _root(span_id, attributes)))
    if kind == RETRIEVER:
        passages = _passages(attributes)
        trace.passages += len(passages)
        if trace.passages > MAX_PASSAGES:
            raise attributes.error(DOCUMENTS, f"trace {trace_id!r} retrieves more than "
                                              f"{MAX_PASSAGES} documents")
        trace.retrievals.append(_Timed(start, number, passages))
        trace.retrieves_below_root |= parent is not None
    elif kind == LLM and attributes.has(MODEL_NAME):
        trace.models.append(_Timed(start, number, attributes.text(MODEL_NAME)))


def _unwrapped(attributes: Record, name: str, keys: tuple[str, ...], what: str) -> str:
    """The text of the attribute `name`, or of the first of `keys` when it is a JSON object."""
    text = attributes.text(name)
    if not text.lstrip().startswith("{"):
        return text
    try:
        data = strict_json.loads(text)
    except ValueError:  # text that only starts with a brace
        return text
    inner = Record(data, attributes.path, attributes.where, f"{attributes.prefix}{name}.")
    key = next((key for key in keys if inner.has(key)), None)
    if key is None:
        raise attributes.error(name, f"a JSON object without a {', '.join(keys[:-1])} or "
                                     f"{keys[-1]} key to read the {what} from")
    return inner.text(key)


def _answer(attributes: Record, trace_id: str) -> str:
    if attributes.has(OUTPUT):
        return _unwrapped(attributes, OUTPUT, ANSWER_KEYS, "answer")
    messages = {int(match.group(1)): key for key in attributes.data
                if (match := _MESSAGE_CONTENT.fullmatch(key))}
    if messages:
        return attributes.text(messages[max(messages)])
    raise attributes.error(OUTPUT, f"missing: the root span of trace {trace_id!r} records no "
                                   "answer (no output.value, no llm.output_messages)")


def _sample(path: Path, trace_id: str, trace: _Trace) -> _Timed[Sample]:
    if not trace.roots:
        raise DatasetFormatError(
            path, f"trace {trace_id!r} has no root span (a span whose parent id is null); an "
                  "export cut off by a limit loses them: get_spans_dataframe returns 1000 "
                  "spans unless given another limit",
            where=f"line {trace.first_line}", field=trace.parent_field)
    if len(trace.roots) > 1:
        lines = ", ".join(str(root.line) for root in trace.roots[:5])
        raise DatasetFormatError(
            path, f"trace {trace_id!r} has {len(trace.roots)} root spans (lines {lines}), "
                  "where one is expected", where=f"line {trace.roots[1].line}",
            field=trace.parent_field)
    root = trace.roots[0]
    attributes = root.value.attributes
    if not attributes.has(INPUT):
        raise attributes.error(INPUT, f"missing: the root span of trace {trace_id!r} records "
                                      "no question")
    question = _unwrapped(attributes, INPUT, QUESTION_KEYS, "question")
    models = _in_order(trace.models)
    given = GivenAnswer(_answer(attributes, trace_id), models[-1].value if models else None)
    passages = [passage for retrieval in _in_order(trace.retrievals)
                for passage in retrieval.value]
    return _Timed(root.start, root.line, Sample(
        id=trace_id, question=question, passages=passages, given_answer=given,
        meta={"root_span_id": root.value.span_id}))


def read(path: Path) -> Iterator[LocatedSample]:
    traces: dict[str, _Trace] = {}
    for number, value in iter_json_lines(path):
        _add_span(traces, path, number, value)
    if not traces:
        raise DatasetFormatError(path, "the file holds no spans")
    answered = [_sample(path, trace_id, trace) for trace_id, trace in traces.items()
                if trace.retrieves_below_root]
    if not answered:
        raise DatasetFormatError(
            path, f"none of its {len(traces)} trace(s) has a RETRIEVER span below its root "
                  "span, so none is a question answered with retrieved passages")
    for item in _in_order(answered):
        yield f"line {item.line}", item.value


SPEC = LoaderSpec(
    name="openinference",
    description="OpenInference spans exported from Arize Phoenix (JSONL): one sample per "
                "traced RAG answer",
    read=read,
    sniff=sniff,
)
