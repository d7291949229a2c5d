"""Bad input: every problem is a DatasetError naming the file, the line or record, the field."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from ragshield.datasets import (
    DatasetError,
    DatasetFileError,
    DatasetFormatError,
    load_dataset,
    parse_mapping,
)

GOOD = {"id": "a", "question": "Who?", "passages": [{"title": "T", "text": "Ada."}],
        "reference_answers": ["Ada"], "answerable": True}


def unified_file(path: Path, *lines: str | dict) -> Path:
    path.write_text("".join((json.dumps(line) if isinstance(line, dict) else line) + "\n"
                            for line in lines), encoding="utf-8")
    return path


def load_error(path: Path, format: str | None = "unified", **options) -> DatasetFormatError:
    with pytest.raises(DatasetFormatError) as caught:
        list(load_dataset(path, format, **options))
    return caught.value


def test_malformed_json_line_names_file_and_line(tmp_path):
    path = unified_file(tmp_path / "d.jsonl", GOOD, "", '{"id": "b", "question": ')
    error = load_error(path)
    assert (error.path, error.where) == (path, "line 3")
    assert str(error).startswith(f"{path}, line 3: invalid JSON")
    # A line cut short mid-record: the column is where it ends, not 1 (its line break).
    path = unified_file(tmp_path / "e.jsonl", '{"id": "b", "question": "q"', GOOD)
    assert load_error(path).reason == "invalid JSON: Expecting ',' delimiter (column 28)"


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"question": None}, "question", "is null"),
        ({"question": 42}, "question", "expected a string, found a number"),
        ({"passages": [{"title": "T", "text": "x"}, {"text": ["x"]}]}, "passages[1].text",
         "expected a string, found an array"),
        ({"passages": "text"}, "passages", "expected a list, found a string"),
        ({"reference_answers": ["a", 1]}, "reference_answers[1]", "expected a string"),
        ({"answerable": "yes"}, "answerable", "expected true, false or null"),
        ({"extra": []}, "extra", "expected an object, found an array"),
        ({"id": True}, "id", "expected a string or integer id"),
    ],
)
def test_wrong_field_names_the_field(tmp_path, change, field, reason):
    path = unified_file(tmp_path / "d.jsonl", GOOD, {**GOOD, "id": "b", **change})
    error = load_error(path)
    assert (error.where, error.field) == ("line 2", field)
    assert reason in error.reason


def test_missing_field_and_non_object_line(tmp_path):
    record = {key: value for key, value in GOOD.items() if key != "question"}
    error = load_error(unified_file(tmp_path / "d.jsonl", record))
    assert (error.where, error.field, error.reason) == ("line 1", "question", "missing")
    error = load_error(unified_file(tmp_path / "e.jsonl", GOOD, "[1, 2]"))
    assert (error.where, error.reason) == ("line 2", "expected an object, found an array")


def test_duplicate_ids_name_both_places(tmp_path):
    error = load_error(unified_file(tmp_path / "d.jsonl", GOOD, {**GOOD, "id": "b"}, GOOD))
    assert (error.where, error.field) == ("line 3", "id")
    assert error.reason == "duplicate sample id 'a' (first seen at line 1)"


def test_empty_question_and_id(tmp_path):
    error = load_error(unified_file(tmp_path / "d.jsonl", {**GOOD, "question": "  \n"}))
    assert (error.field, error.reason) == ("question", "the question is empty")
    error = load_error(unified_file(tmp_path / "e.jsonl", {**GOOD, "id": " "}))
    assert (error.field, error.reason) == ("id", "the sample id is empty")
    error = load_error(unified_file(tmp_path / "f.jsonl", {**GOOD, "id": "x" * 201}))
    assert "longer than 200" in error.reason


def test_nul_characters_are_refused_before_reaching_the_database(tmp_path):
    bad = {**GOOD, "passages": [{"title": "T", "text": "a\u0000b"}]}
    error = load_error(unified_file(tmp_path / "d.jsonl", bad))
    assert (error.field, error.reason) == ("passages[0].text", "contains a NUL character")


@pytest.mark.parametrize(("fmt", "record", "field"), [
    ("unified", {**GOOD, "question": "Who\ud800?"}, "question"),
    ("unified", {**GOOD, "extra": {"note": "x\udfff"}}, "meta.note"),
    ("unified", {**GOOD, "reference_answers": ["Ada", "\ud83d"]}, "reference_answers[1]"),
    ("nomiracl", {"query_id": "\ud800", "query": "Who?", "positive_passages": []}, "id"),
])
def test_lone_surrogates_are_refused_before_reaching_the_database(tmp_path, fmt, record, field):
    """A JSON escape such as \\ud800 parses, but no database can store it as text."""
    error = load_error(unified_file(tmp_path / "d.jsonl", record), fmt)
    assert (error.where, error.field) == ("line 1", field)
    assert "lone surrogate" in error.reason


def test_non_utf8_bytes_name_line_and_column(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b'\n{"id": "b", "question": "caf\xe9"}\n')
    error = load_error(path)
    assert error.where == "line 2"
    assert error.reason == "not valid UTF-8 (byte 0xe9 at column 29)"


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    assert [s.id for s in load_dataset(path, "unified")] == ["a"]


def test_empty_and_blank_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(DatasetFormatError, match="the file is empty"):
        load_dataset(empty)  # raised at once, before iterating
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n")
    assert load_error(blank).reason == "the file holds no samples"
    with pytest.raises(DatasetFormatError, match="only blank lines"):
        load_dataset(blank)  # detection has nothing to look at


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DatasetFileError, match="no such file"):
        load_dataset(tmp_path / "absent.jsonl", "unified")
    with pytest.raises(DatasetFileError, match="is a folder"):
        load_dataset(tmp_path, "unified")


@pytest.mark.parametrize(("value", "reason"), [
    ("NaN", "NaN is not a finite number"),
    ("-Infinity", "-Infinity is not a finite number"),
    ("1e999", "1e999 is not a finite number"),  # json.loads makes it inf
    ("9" * 5000, "an integer of 5000 digits is too long"),
])
def test_non_finite_numbers_and_huge_integers_are_invalid_json(tmp_path, value, reason):
    line = '{"id": "a", "extra": {"scores": [1, %s]}}' % value
    error = load_error(unified_file(tmp_path / "d.jsonl", GOOD, line))
    assert (error.where, error.field, error.reason) == (
        "line 2", "extra.scores[1]", f"invalid JSON: {reason}")


@pytest.mark.parametrize(("depth", "field"), [
    (100, "extra"),  # parsed, then refused, named by the outermost field
    (5000, None),  # beyond what the parser itself reaches
])
def test_json_nested_deeper_than_any_record_is_refused(tmp_path, depth, field):
    line = '{"id": "a", "extra": {"deep": %s}}' % ("[" * depth + "]" * depth)
    error = load_error(unified_file(tmp_path / "d.jsonl", line))
    assert (error.where, error.field, error.reason) == (
        "line 1", field, "invalid JSON: nested deeper than 100 levels")


def test_corrupt_compressed_file(tmp_path):
    path = tmp_path / "d.jsonl.bz2"
    path.write_bytes(bz2.compress(json.dumps(GOOD).encode() * 50)[:60])
    assert "cannot read or decompress" in load_error(path).reason


def test_squad_document_errors_name_the_json_path(tmp_path):
    document = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [
        {"id": "q1", "question": "Q?", "answers": [], "is_impossible": True},
        {"id": "q2", "answers": []},
    ]}]}]}
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(document))
    error = load_error(path, "squad2")
    assert error.field == "data[0].paragraphs[0].qas[1].question"
    path.write_text(json.dumps(document, indent=1)[:-5])
    error = load_error(path, "squad2")
    assert error.where.startswith("line ") and "invalid JSON" in error.reason


def test_hotpot_malformed_context(tmp_path):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([{"_id": "a", "question": "Q?", "context": [["T", "not a list"]]}]))
    error = load_error(path, "hotpotqa")
    assert (error.where, error.field) == ("record index 0", "context[0]")


def test_csv_errors(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("q,a\nWho?,Ada\nWhat?,x,extra\n")
    error = load_error(path, None, mapping={"question": "q"})
    assert error.where == "line 3" and "header's 2 cells" in error.reason
    path.write_text("q,a\nWho?,Ada\n")
    error = load_error(path, None, mapping={"question": "q", "answers": "answer"})
    # the field that was mapped, then the column the file lacks (they were swapped)
    assert (error.field, error.reason) == ("answers", "is mapped to column 'answer', which "
                                                      "the file lacks")
    error = load_error(path, "csv")  # no mapping: there is no column called "question"
    assert error.field == "question" and "--map question=COLUMN" in error.reason
    path.write_text("q,q\nWho?,Ada\n")
    assert "repeated column names" in load_error(path, None, mapping={"question": "q"}).reason


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_csv_errors_name_the_line_where_the_row_starts(tmp_path, newline):
    """Quoted line breaks make a row span lines; blank lines are skipped but counted."""
    lines = ["q,a", '"Who', 'wrote it?",Ada', "", '"What', 'now?",x,y']
    path = tmp_path / "d.csv"
    path.write_bytes((newline.join(lines) + newline).encode())
    error = load_error(path, None, mapping={"question": "q"})
    assert error.where == "line 5" and "header's 2 cells" in error.reason
    path.write_bytes((newline.join(lines[:4]) + newline).encode() + b'"caf\xe9",x\n')
    error = load_error(path, None, mapping={"question": "q"})
    assert (error.where, error.reason) == ("line 5", "not valid UTF-8 (byte 0xe9 at column 5)")


def test_csv_fallback_ids_are_the_lines_where_rows_start(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('q,a\n"Who\nwrote it?",Ada\nWhat?,x\n')
    samples = list(load_dataset(path, None, mapping={"question": "q"}))
    assert [s.id for s in samples] == ["line-2", "line-4"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("question", "write FIELD=COLUMN"),
        ("question=q,colour=c", "unknown field 'colour'"),
        ("question=q,question=r", "mapped twice"),
        (" , ", "the column mapping is empty"),
    ],
)
def test_bad_column_mappings(text, message):
    with pytest.raises(DatasetError, match=message):
        parse_mapping(text)


def test_a_mapping_for_a_format_that_takes_none(tmp_path):
    path = unified_file(tmp_path / "d.jsonl", GOOD)
    with pytest.raises(DatasetError, match="format 'unified' takes no column mapping"):
        load_dataset(path, "unified", mapping={"question": "q"})
