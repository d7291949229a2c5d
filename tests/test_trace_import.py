"""OpenInference traces exported from Arize Phoenix as a dataset of given answers (issue 15):
the span shapes Phoenix writes (its spans dataframe as JSON lines, its REST API's spans with
flat or nested attributes, OTLP-JSON spans) read alike, one sample per traced RAG answer,
traces without retrieval skipped, every bad span named by file, line and field, and the
import into the store all or nothing."""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragshield.cli.app import app
from ragshield.datasets import DatasetError, DatasetFormatError, detect_format, load_dataset
from ragshield.datasets.formats import openinference
from ragshield.services.data.datasets import import_file
from ragshield.store.database import open_store
from ragshield.store.samples import has_dataset, iter_samples, load_sample
from ragshield.types import GivenAnswer, Passage, Sample

TRACE = "6a1f0e29c1b34c6e8b0e3b7d1c9a4f21"
OTHER_TRACE = "0b7c2d4e6f8091a2b3c4d5e6f7081929"
T0 = datetime(2025, 3, 4, 10, 0, tzinfo=timezone.utc)
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
MODEL = "gpt-4o-mini-2024-07-18"
DOCUMENTS = [
    {"document.content": "Paris is the capital and largest city of France.",
     "document.id": "france.txt#0", "document.score": 0.8731,
     "document.metadata": {"file_name": "france.txt", "page": 1}},
    {"document.content": "Lyon is the third-largest city of France.",
     "document.id": "france.txt#7", "document.score": 0.4412},
]


def rag_spans(trace: str = TRACE, question: str = QUESTION, answer: str = ANSWER,
              start: datetime = T0) -> list[dict[str, Any]]:
    """A LlamaIndex-like query: the root CHAIN, its RETRIEVER (with an EMBEDDING below it)
    and its LLM call, as (span fields, flat OpenInference attributes)."""
    root, retriever, embedding, llm = (f"{trace[:12]}{n:04x}" for n in range(4))
    messages = [{"message.role": "assistant", "message.content": answer}]
    return [
        {"name": "query", "span_id": root, "parent_id": None, "kind": "CHAIN", "start": start,
         "attributes": {"input.value": question, "input.mime_type": "text/plain",
                        "output.value": answer}},
        {"name": "retrieve", "span_id": retriever, "parent_id": root, "kind": "RETRIEVER",
         "start": start + timedelta(milliseconds=5),
         "attributes": {"input.value": question, "retrieval.documents": DOCUMENTS}},
        {"name": "embed", "span_id": embedding, "parent_id": retriever, "kind": "EMBEDDING",
         "start": start + timedelta(milliseconds=6),
         "attributes": {"embedding.model_name": "BAAI/bge-small-en-v1.5"}},
        {"name": "llm", "span_id": llm, "parent_id": root, "kind": "LLM",
         "start": start + timedelta(milliseconds=90),
         "attributes": {"llm.model_name": MODEL, "llm.output_messages": messages,
                        "llm.token_count.prompt": 412, "llm.token_count.completion": 9,
                        "output.value": answer}},
    ]


def expected_sample(trace: str = TRACE, question: str = QUESTION,
                    answer: str = ANSWER) -> Sample:
    return Sample(
        id=trace, question=question,
        passages=[Passage("Paris is the capital and largest city of France.",
                          doc_id="france.txt#0", score=0.8731,
                          meta={"metadata": {"file_name": "france.txt", "page": 1}}),
                  Passage("Lyon is the third-largest city of France.", doc_id="france.txt#7",
                          score=0.4412)],
        given_answer=GivenAnswer(answer, MODEL), meta={"root_span_id": f"{trace[:12]}0000"})


# -- the shapes Phoenix writes ------------------------------------------------------------

def dataframe_lines(spans: list[dict[str, Any]], trace: str = TRACE,
                    date_format: str = "iso") -> list[dict[str, Any]]:
    """What `px.Client().get_spans_dataframe().to_json(orient="records", lines=True)` writes:
    one column per attribute, named `attributes.<convention>`, documents and messages as lists
    of objects with flat keys, absent values as null; times as ISO text, or as epoch
    milliseconds (pandas' default before 4, deprecated)."""
    import pandas as pd

    rows = [{"name": s["name"], "span_kind": s["kind"], "parent_id": s["parent_id"],
             "start_time": s["start"], "end_time": s["start"] + timedelta(milliseconds=1),
             "status_code": "OK", "status_message": "", "events": [],
             "context.span_id": s["span_id"], "context.trace_id": trace,
             **{f"attributes.{key}": value for key, value in
                {**s["attributes"], "openinference.span.kind": s["kind"]}.items()}}
            for s in spans]
    frame = pd.DataFrame(rows).set_index("context.span_id", drop=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns that "epoch" is deprecated
        text = frame.to_json(orient="records", lines=True, date_format=date_format)
    return [json.loads(line) for line in text.splitlines()]


def _nested(attributes: dict[str, Any]) -> dict[str, Any]:
    """Flat OpenInference keys as Phoenix stores them: nested objects, lists for indices."""
    nested: dict[str, Any] = {}
    for key, value in attributes.items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = [_nested(item) for item in value]
        node[last] = value
    return nested


def _flat(attributes: dict[str, Any]) -> dict[str, Any]:
    """Flat OpenInference keys with list indices spelled out, as Phoenix's REST API gives."""
    flat: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for index, item in enumerate(value):
                flat.update({f"{key}.{index}.{k}": v for k, v in _flat(item).items()})
        else:
            flat[key] = value
    return flat


def api_lines(spans: list[dict[str, Any]], trace: str = TRACE, *,
              nested: bool = False) -> list[dict[str, Any]]:
    """Phoenix's REST API spans (`GET /v1/projects/{p}/spans`; nested: its older JSON
    export, attributes as stored), document metadata as JSON text."""
    lines = []
    for s in spans:
        attributes = {key: value if key != "retrieval.documents" else [
            {k: json.dumps(v) if k == "document.metadata" else v for k, v in document.items()}
            for document in value] for key, value in s["attributes"].items()}
        lines.append({
            "id": "U3BhbjoxMjM=", "name": s["name"],
            "context": {"trace_id": trace, "span_id": s["span_id"]}, "span_kind": s["kind"],
            "parent_id": s["parent_id"], "start_time": s["start"].isoformat(),
            "end_time": (s["start"] + timedelta(milliseconds=1)).isoformat(),
            "status_code": "OK", "status_message": "",
            "attributes": _nested(attributes) if nested else _flat(attributes), "events": []})
    return lines


def _otlp(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool_value": value}
    if isinstance(value, int):
        return {"int_value": str(value)}
    if isinstance(value, float):
        return {"double_value": value}
    if isinstance(value, list):
        return {"array_value": {"values": [_otlp(item) for item in value]}}
    return {"string_value": value if isinstance(value, str) else json.dumps(value)}


def otlp_lines(spans: list[dict[str, Any]], trace: str = TRACE) -> list[dict[str, Any]]:
    """OTLP-JSON spans (`GET /v1/projects/{p}/spans/otlpv1`): attributes as key-values."""
    return [{
        "trace_id": trace, "span_id": s["span_id"], "parent_span_id": s["parent_id"] or "",
        "name": s["name"], "kind": "SPAN_KIND_INTERNAL",
        "start_time_unix_nano": str(int(s["start"].timestamp() * 1e9)),
        "attributes": [{"key": key, "value": _otlp(value)} for key, value in
                       _flat({**s["attributes"], "openinference.span.kind": s["kind"]}).items()],
        "status": {"code": 1}} for s in spans]


SHAPES = {"dataframe": dataframe_lines, "api": api_lines,
          "dataframe_epoch": lambda spans, trace=TRACE: dataframe_lines(spans, trace, "epoch"),
          "nested": lambda spans, trace=TRACE: api_lines(spans, trace, nested=True),
          "otlp": otlp_lines}


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def load_error(path: Path) -> DatasetFormatError:
    with pytest.raises(DatasetFormatError) as caught:
        list(load_dataset(path, "openinference"))
    return caught.value


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_phoenix_shape_gives_the_traced_answer_with_its_passages(tmp_path, shape):
    path = write_lines(tmp_path / "spans.jsonl", SHAPES[shape](rag_spans()))
    assert detect_format(path) == "openinference"
    (sample,) = load_dataset(path)
    assert sample == expected_sample()


def test_a_retriever_with_two_documents_gives_two_scored_passages(tmp_path):
    path = write_lines(tmp_path / "spans.jsonl", dataframe_lines(rag_spans()))
    (sample,) = load_dataset(path, "openinference")
    assert [(p.text, p.doc_id, p.score) for p in sample.passages] == [
        ("Paris is the capital and largest city of France.", "france.txt#0", 0.8731),
        ("Lyon is the third-largest city of France.", "france.txt#7", 0.4412)]
    assert sample.given_answer == GivenAnswer(ANSWER, MODEL)
    assert sample.reference_answers == [] and sample.answerable is None


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_spans_are_ordered_by_start_time_whatever_the_line_order(tmp_path, shape):
    """Phoenix's REST API lists the newest spans first: retrievals, models and samples still
    come in start order, whichever way the times are written."""
    write = SHAPES[shape]
    later = rag_spans(OTHER_TRACE, "What is the capital of Italy?", "Rome.",
                      start=T0 + timedelta(minutes=1))
    spans = rag_spans()
    second = {**spans[1], "span_id": "f" * 16, "start": T0 + timedelta(milliseconds=50),
              "attributes": {"retrieval.documents": [
                  {"document.content": "France borders Italy.", "document.score": 0.2}]}}
    rewriter = {**spans[3], "span_id": "e" * 16, "start": T0 + timedelta(milliseconds=1),
                "attributes": {"llm.model_name": "query-rewriter"}}
    lines = write([*spans, second, rewriter]) + write(later, OTHER_TRACE)
    first, last = load_dataset(write_lines(tmp_path / "spans.jsonl", lines[::-1]))
    assert [s.id for s in (first, last)] == [TRACE, OTHER_TRACE]
    assert [p.text for p in first.passages][-1] == "France borders Italy."
    assert len(first.passages) == 3 and first.given_answer.model == MODEL
    assert last.question == "What is the capital of Italy?"


def test_json_object_inputs_and_outputs_are_read_at_their_question_and_answer_keys(tmp_path):
    """LangChain's chains log their input and output dicts as JSON text; a root LLM span
    without output.value gives its last output message."""
    spans = rag_spans(question=json.dumps({"input": QUESTION, "chat_history": []}),
                      answer=json.dumps({"input": QUESTION, "context": [], "answer": ANSWER}))
    other = rag_spans(OTHER_TRACE, question=json.dumps({"query": "Capital of Italy?"}),
                      start=T0 + timedelta(minutes=1))
    del other[0]["attributes"]["output.value"]
    other[0]["attributes"]["llm.output_messages"] = [
        {"message.role": "assistant", "message.content": "Thinking..."},
        {"message.role": "assistant", "message.content": "Rome."}]
    braced = rag_spans("1" * 32, question="{curly} is not JSON", start=T0 + timedelta(hours=1))
    lines = (dataframe_lines(spans) + dataframe_lines(other, OTHER_TRACE)
             + dataframe_lines(braced, "1" * 32))
    first, second, third = load_dataset(write_lines(tmp_path / "spans.jsonl", lines))
    assert (first.question, first.given_answer.text) == (QUESTION, ANSWER)
    assert (second.question, second.given_answer.text) == ("Capital of Italy?", "Rome.")
    assert third.question == "{curly} is not JSON"


def test_traces_without_retrieval_below_the_root_are_skipped(tmp_path):
    """Indexing jobs, stand-alone LLM calls and bare retrieval calls are not answers."""
    indexing = [{"name": "embed", "span_id": "1" * 16, "parent_id": None, "kind": "EMBEDDING",
                 "start": T0, "attributes": {"embedding.model_name": "bge"}}]
    llm_call = [{"name": "chat", "span_id": "2" * 16, "parent_id": None, "kind": "LLM",
                 "start": T0, "attributes": {"input.value": '{"messages": []}',
                                             "llm.model_name": MODEL}}]
    search = [{"name": "search", "span_id": "3" * 16, "parent_id": None, "kind": "RETRIEVER",
               "start": T0, "attributes": {"input.value": "paris",
                                           "retrieval.documents": DOCUMENTS}}]
    others = api_lines(indexing, "a" * 32) + api_lines(llm_call, "b" * 32) + api_lines(
        search, "c" * 32)
    path = write_lines(tmp_path / "spans.jsonl", others + api_lines(rag_spans()))
    assert [s.id for s in load_dataset(path)] == [TRACE]
    error = load_error(write_lines(tmp_path / "none.jsonl", others))
    assert (error.where, error.field) == (None, None)
    assert "none of its 3 trace(s) has a RETRIEVER span below its root span" in error.reason


# -- errors: file, line and field ------------------------------------------------------------

def _without(attributes: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if key not in keys}


def _drop_root(lines: list[dict[str, Any]]) -> None:
    del lines[0]


def _second_root(lines: list[dict[str, Any]]) -> None:
    lines.append({**lines[0], "context": {"trace_id": TRACE, "span_id": "9" * 16}})


def _attributes(span: int, change: dict[str, Any], *drop: str):
    def mutate(lines: list[dict[str, Any]]) -> None:
        lines[span]["attributes"] = {**_without(lines[span]["attributes"], *drop), **change}
    return mutate


def _top(span: int, change: dict[str, Any]):
    def mutate(lines: list[dict[str, Any]]) -> None:
        lines[span] = {**lines[span], **change}
    return mutate


DOC = "attributes.retrieval.documents"


@pytest.mark.parametrize(("mutate", "line", "field", "reason"), [
    (_drop_root, 1, "parent_id", f"trace {TRACE!r} has no root span"),
    (_second_root, 5, "parent_id", "has 2 root spans (lines 1, 5), where one is expected"),
    (_attributes(0, {}, "input.value"), 1, "attributes.input.value",
     "missing: the root span of trace"),
    (_attributes(0, {}, "output.value"), 1, "attributes.output.value",
     "records no answer (no output.value, no llm.output_messages)"),
    (_attributes(0, {"input.value": '{"messages": [], "temperature": 0}'}), 1,
     "attributes.input.value", "a JSON object without a query, question or input key"),
    (_attributes(0, {"output.value": '{"answer": 3}'}), 1, "attributes.output.value.answer",
     "expected a string, found a number"),
    (_attributes(1, {}, "retrieval.documents.1.document.content"), 2,
     "attributes.retrieval.documents.1.document.content", "missing"),
    (_attributes(1, {"retrieval.documents.0.document.score": "high"}), 2,
     "attributes.retrieval.documents.0.document.score", "expected a number, found a string"),
    (_attributes(1, {"retrieval.documents.0.document.id": [1]}), 2,
     "attributes.retrieval.documents.0.document.id", "expected a string or integer id"),
    (_attributes(1, {"retrieval.documents": "Paris; Lyon"}), 2, DOC,
     "expected a list of document objects, found a string"),
    (_attributes(3, {"llm.model_name": 4}), 4, "attributes.llm.model_name",
     "expected a string, found a number"),
    (_top(2, {"context": {"trace_id": TRACE, "span_id": "6a1f0e29c1b30000"}}), 3,
     "context.span_id", "is repeated (first at line 1)"),
    (_top(2, {"context": {"span_id": "77"}}), 3, "context.trace_id", "missing"),
    (_top(2, {"context": {"trace_id": "", "span_id": "77"}}), 3, "context.trace_id",
     "is empty"),
    (_top(2, {"context": "6a1f0e29"}), 3, "context", "expected an object, found a string"),
    (_top(2, {"span_kind": 7}), 3, "span_kind", "expected a string, found a number"),
    (_top(2, {"attributes": "input.value=x"}), 3, "attributes", "expected an object"),
    (_top(0, {"attributes": {"input.value": "Capital?", "output.value": "Pa\x00ris"}}), 1,
     "answer", "NUL character"),
])
def test_a_bad_span_is_named_with_its_file_line_and_field(tmp_path, mutate, line, field,
                                                          reason):
    lines = api_lines(rag_spans())
    mutate(lines)
    path = write_lines(tmp_path / "spans.jsonl", lines)
    error = load_error(path)
    assert (error.path, error.where, error.field) == (path, f"line {line}", field)
    assert reason in error.reason
    assert str(error).startswith(f"{path}, line {line}, field {field!r}: ")


def test_the_dataframe_shape_names_the_same_fields(tmp_path):
    spans = rag_spans()
    spans[1]["attributes"]["retrieval.documents"] = [
        DOCUMENTS[0], {"document.id": "x", "document.score": 0.1}]
    error = load_error(write_lines(tmp_path / "spans.jsonl", dataframe_lines(spans)))
    assert (error.where, error.field) == ("line 2", f"{DOC}.1.document.content")
    lines = dataframe_lines(rag_spans())
    lines[0]["attributes.output.value"] = None
    error = load_error(write_lines(tmp_path / "spans.jsonl", lines))
    assert (error.where, error.field) == ("line 1", "attributes.output.value")


def test_sizes_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(openinference, "MAX_TRACE_SPANS", 3)
    path = write_lines(tmp_path / "spans.jsonl", api_lines(rag_spans()))
    error = load_error(path)
    assert (error.where, error.field) == ("line 4", "context.trace_id")
    assert "has more than 3 spans" in error.reason
    monkeypatch.setattr(openinference, "MAX_TRACE_SPANS", 10)
    monkeypatch.setattr(openinference, "MAX_PASSAGES", 1)
    error = load_error(path)
    assert (error.where, error.field) == ("line 2", DOC)
    assert "retrieves more than 1 documents" in error.reason


def test_bad_lines_and_empty_files_are_dataset_errors(tmp_path):
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(api_lines(rag_spans())[0]) + "\n{not json\n", encoding="utf-8")
    assert load_error(path).where == "line 2"
    path.write_text("\n\n", encoding="utf-8")
    assert "no spans" in load_error(path).reason
    path.write_text("[1, 2]\n", encoding="utf-8")
    assert "expected an object, found an array" in load_error(path).reason


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=12)
KEYS = st.sampled_from([
    "context", "context.trace_id", "context.span_id", "trace_id", "span_id", "parent_id",
    "parent_span_id", "span_kind", "start_time", "attributes", "attributes.input.value",
    "attributes.output.value", "attributes.retrieval.documents", "attributes.llm.model_name",
    "attributes.llm.output_messages", "attributes.openinference.span.kind"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=st.lists(st.dictionaries(KEYS, JSON_VALUES, max_size=8), min_size=1, max_size=5),
       base=st.booleans())
def test_hostile_spans_raise_only_dataset_errors(tmp_path_factory, spans, base):
    lines = [*(api_lines(rag_spans()) if base else []), *spans]
    path = write_lines(tmp_path_factory.mktemp("fuzz") / "spans.jsonl", lines)
    try:
        samples = list(load_dataset(path, "openinference"))
    except DatasetError:
        return
    assert samples and all(s.question.strip() for s in samples)


# -- the store and the command line -------------------------------------------------------------

def test_an_imported_trace_file_reads_back_with_its_given_answers(store, tmp_path):
    later = rag_spans(OTHER_TRACE, "What is the capital of Italy?", "Rome.",
                      start=T0 + timedelta(minutes=1))
    path = write_lines(tmp_path / "spans.jsonl",
                       dataframe_lines(rag_spans()) + dataframe_lines(later, OTHER_TRACE))
    result = import_file(store, "phoenix", path)
    assert (result.added, result.samples) == (2, 2)
    stored = list(iter_samples(store, "phoenix"))
    assert stored == list(load_dataset(path))
    assert stored[0] == expected_sample()
    italy = load_sample(store, "phoenix", OTHER_TRACE)
    assert italy.given_answer == GivenAnswer("Rome.", MODEL)
    assert [p.score for p in italy.passages] == [0.8731, 0.4412]
    again = import_file(store, "phoenix", path, format="openinference")
    assert (again.added, again.unchanged) == (0, 2)


def test_a_bad_trace_stores_nothing(store, tmp_path):
    good = dataframe_lines(rag_spans())
    bad = dataframe_lines(rag_spans(OTHER_TRACE, start=T0 + timedelta(minutes=1)),
                          OTHER_TRACE)[1:]  # its root span is missing
    path = write_lines(tmp_path / "spans.jsonl", good + bad)
    with pytest.raises(DatasetFormatError, match="line 5, field 'parent_id'.*no root span"):
        import_file(store, "phoenix", path)
    assert not has_dataset(store, "phoenix")


def test_the_import_command_takes_the_format(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("RAGSHIELD_DATABASE_URL", url)
    path = write_lines(tmp_path / "spans.jsonl", api_lines(rag_spans()))
    result = CliRunner().invoke(app, ["datasets", "import", "phoenix", str(path), "--format",
                                      "openinference", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 1
    store = open_store(url)
    try:
        assert load_sample(store, "phoenix", TRACE) == expected_sample()
    finally:
        store.close()
    listed = CliRunner().invoke(app, ["datasets", "formats", "--json"])
    assert "openinference" in {row["name"] for row in json.loads(listed.stdout)}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_llm_spans_earlier_turns_become_the_samples_history(tmp_path, shape):
    """Issue 57, item 5: a chat's earlier user and assistant turns (the LLM span's input
    messages before its last user message; system messages left out) are the history."""
    spans = rag_spans(question="And the second largest?")
    spans[3]["attributes"]["llm.input_messages"] = [
        {"message.role": "system", "message.content": "Answer from the context."},
        {"message.role": "user", "message.content": "Which city is the capital of France?"},
        {"message.role": "assistant", "message.content": "Paris."},
        {"message.role": "user", "message.content": "Context: ...\nAnd the second largest?"}]
    (sample,) = load_dataset(write_lines(tmp_path / "spans.jsonl", SHAPES[shape](spans)))
    assert sample.meta["history"] == [
        {"role": "user", "content": "Which city is the capital of France?"},
        {"role": "assistant", "content": "Paris."}]
