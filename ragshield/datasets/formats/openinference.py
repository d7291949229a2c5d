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
`llm.input_messages.N.message.role` and `.content`, `llm.model_name`, and for each retrieved
document `retrieval.documents.N.document.content`,
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
- history (meta["history"]): the user and assistant turns the trace's last LLM span with input
  messages was given before its last user message: the conversation the question came in;
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
from pathlib import Path
from typing import Any, Generic, Iterator, TypeVar

from ragshield import strict_json
from ragshield.conversation import HISTORY
from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.history import MAX_TURN_CHARS, MAX_TURNS
from ragshield.datasets.formats.openinference_spans import (DOCUMENTS, PARENT_ID, SPAN_ID,
                                                          START_TIME, TRACE_ID, attributes_of,
                                                          first_present, identifier_of, kind_of,
                                                          parent_of, passages_of, sniff,
                                                          span_record, start_of)
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record
from ragshield.types import GivenAnswer, Passage, Sample

MAX_TRACE_SPANS = 10_000  # a question answered with retrieval is a few to a few hundred spans
MAX_PASSAGES = 1_000  # documents retrieved in one trace, all RETRIEVER spans together

INPUT, OUTPUT = "input.value", "output.value"
MODEL_NAME = "llm.model_name"
RETRIEVER, LLM = "RETRIEVER", "LLM"
QUESTION_KEYS = ("query", "question", "input")
ANSWER_KEYS = ("answer", "output", "response", "result")

_MESSAGE_CONTENT = re.compile(r"llm\.output_messages\.([0-9]{1,9})\.message\.content")
_INPUT_MESSAGE = re.compile(r"llm\.input_messages\.([0-9]{1,9})\.message\.(role|content)")

T = TypeVar("T")


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
    conversations: list[_Timed[list[dict[str, str]]]] = field(default_factory=list)
    passages: int = 0
    retrieves_below_root: bool = False


def _in_order(items: list[_Timed[T]]) -> list[_Timed[T]]:
    """By start time when all have one, else by line."""
    if all(item.start is not None for item in items):
        return sorted(items, key=lambda item: (item.start, item.line))
    return sorted(items, key=lambda item: item.line)


def _root(span_id: str, attributes: Record) -> _Root:
    kept = {key: value for key, value in attributes.data.items()
            if key in (INPUT, OUTPUT) or _MESSAGE_CONTENT.fullmatch(key)}
    return _Root(span_id, Record(kept, attributes.path, attributes.where, attributes.prefix))


def _add_span(traces: dict[str, _Trace], path: Path, number: int, value: Any) -> None:
    """Read one span into its trace."""
    record = span_record(value, path, f"line {number}")
    trace_id = identifier_of(record, TRACE_ID)
    span_id = identifier_of(record, SPAN_ID)
    parent = parent_of(record)
    start = start_of(record.data.get(first_present(record, START_TIME)))
    attributes = attributes_of(record)
    kind = kind_of(record, attributes)
    trace = traces.setdefault(trace_id, _Trace(number, first_present(record, PARENT_ID)))
    if span_id in trace.spans:
        raise record.error(first_present(record, SPAN_ID), f"span {span_id!r} of trace "
                           f"{trace_id!r} is repeated (first at line {trace.spans[span_id]})")
    if len(trace.spans) >= MAX_TRACE_SPANS:
        raise record.error(first_present(record, TRACE_ID), f"trace {trace_id!r} has more than "
                           f"{MAX_TRACE_SPANS} spans")
    trace.spans[span_id] = number
    if parent is None:
        trace.roots.append(_Timed(start, number, _root(span_id, attributes)))
    if kind == RETRIEVER:
        passages = passages_of(attributes)
        trace.passages += len(passages)
        if trace.passages > MAX_PASSAGES:
            raise attributes.error(DOCUMENTS, f"trace {trace_id!r} retrieves more than "
                                              f"{MAX_PASSAGES} documents")
        trace.retrievals.append(_Timed(start, number, passages))
        trace.retrieves_below_root |= parent is not None
    elif kind == LLM:
        if attributes.has(MODEL_NAME):
            trace.models.append(_Timed(start, number, attributes.text(MODEL_NAME)))
        earlier = _earlier_turns(attributes)
        if earlier:
            trace.conversations.append(_Timed(start, number, earlier))


def _earlier_turns(attributes: Record) -> list[dict[str, str]]:
    """The turns an LLM span's input messages hold before the last user message (the
    question, with the passages as a rule): the conversation it answers in, system messages
    left out. At most history.MAX_TURNS, the newest."""
    parts: dict[int, dict[str, str]] = {}
    for key, value in attributes.data.items():
        match = _INPUT_MESSAGE.fullmatch(key)
        if match and isinstance(value, str):
            parts.setdefault(int(match.group(1)), {})[match.group(2)] = value
    turns = [parts[n] for n in sorted(parts) if {"role", "content"} <= parts[n].keys()]
    last_user = max((i for i, turn in enumerate(turns) if turn["role"] == "user"), default=-1)
    return [{"role": turn["role"], "content": turn["content"][:MAX_TURN_CHARS]}
            for turn in turns[:max(last_user, 0)]
            if turn["role"] in ("user", "assistant")][-MAX_TURNS:]


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
    conversations = _in_order(trace.conversations)
    meta: dict[str, Any] = {"root_span_id": root.value.span_id}
    if conversations:
        meta[HISTORY] = conversations[-1].value
    return _Timed(root.start, root.line, Sample(
        id=trace_id, question=question, passages=passages, given_answer=given, meta=meta))


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
