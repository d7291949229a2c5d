"""Exporting every label version (the whole history) to CSV, JSONL or Parquet, and
importing such a file back: all or nothing, with errors that name the row.

A file holds one row per label version, oldest first. `label_id` and `reverts_label_id`
are the exporting database's ids; an import maps them to its own, so export -> import
into another database with the same datasets keeps labels, annotators, times and history.
Importing a file twice adds nothing the second time. Every field is checked for its type
and shape, and a bad one fails the whole import with its row and field named.

An export is written under a temporary name and renamed at the end, so a full disk leaves
an earlier export whole. CSV cells that a spreadsheet would run as a formula (`=...`,
`+...`, `-...`, `@...`) get a leading apostrophe, which the import takes off again.
"""

from __future__ import annotations

import csv
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Literal

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ragshield import strict_json
from ragshield.csv_fields import allow_long_fields
from ragshield.datasets.reading import utf8_problem
from ragshield.errors import OptionError, UserError
from ragshield.names import check_name
from ragshield.output_files import writable_target, write_atomically
from ragshield.store.database import Store
from ragshield.store.labels import (REQUEST_ID_MAX_LENGTH, ROLE_MAX_LENGTH, LabelValueError,
                                    check_label_value, check_passages_shown)
from ragshield.store.models import Annotator, Dataset, Label, Sample, as_utc
from ragshield.store.samples import UnknownSampleError, dataset_id_of

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
COLUMNS = ("label_id", "dataset", "sample_id", "annotator", "annotator_role", "label",
           "answer_correct", "note", "passages_shown", "retracted", "request_id",
           "reverts_label_id", "created_at")


# A spreadsheet runs a cell starting with one of these as a formula (OWASP's list); the
# apostrophe is there so that a value starting with one survives the round trip.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


class LabelImportError(UserError, ValueError):
    """A row of an import file cannot be used; nothing of the import was kept."""


class LabelExportError(UserError, ValueError):
    """The export file cannot be written; nothing was changed."""


def utc_text(moment: datetime) -> str:
    return as_utc(moment).astimezone(timezone.utc).isoformat()


def export_rows(store: Store, dataset: str | None = None,
                notes_of: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every label version, oldest first. `notes_of`: the annotators whose notes the rows
    carry (None: everyone's); another annotator's note is left out (None)."""
    query = (select(Label, Dataset.name, Sample.external_id, Annotator.name, Annotator.role)
             .join(Sample, Sample.id == Label.sample_id)
             .join(Dataset, Dataset.id == Sample.dataset_id)
             .join(Annotator, Annotator.id == Label.annotator_id).order_by(Label.id))
    with store.session() as session:
        if dataset is not None:
            query = query.where(Dataset.id == dataset_id_of(session, dataset))
        return [
            {"label_id": label.id, "dataset": name, "sample_id": sample, "annotator": person,
             "annotator_role": role, "label": label.label, "answer_correct": label.answer_correct,
             "note": label.note if notes_of is None or person in notes_of else None,
             "passages_shown": json.dumps(label.passages_shown),
             "retracted": label.retracted, "request_id": label.request_id,
             "reverts_label_id": label.reverts_id, "created_at": utc_text(label.created_at)}
            for label, name, sample, person, role in session.execute(query).tuples()
        ]


def csv_cell(value: Any) -> str:
    """A cell a spreadsheet shows as text. Cells starting with = + - @ (or a tab or carriage
    return) would be run as formulas, so they get a leading apostrophe, which spreadsheets
    hide; a cell that itself starts with an apostrophe gets one more, so that the import
    (_csv_value) takes exactly one off and gives back the value as it was."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv_value(cell: str | None) -> str | None:
    return cell[1:] if cell and cell.startswith("'") else cell


def write_csv(rows: list[dict[str, Any]], path: Path, columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([csv_cell(row[c]) for c in columns] for row in rows)


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_parquet(rows: list[dict[str, Any]], path: Path,
                  columns: tuple[tuple[str, str], ...]) -> None:
    """`columns`: (name, pyarrow type name: int64, string or bool_)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in columns])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


PARQUET_COLUMNS = (("label_id", "int64"), ("dataset", "string"), ("sample_id", "string"),
                   ("annotator", "string"), ("annotator_role", "string"), ("label", "string"),
                   ("answer_correct", "bool_"), ("note", "string"),
                   ("passages_shown", "string"), ("retracted", "bool_"),
                   ("request_id", "string"), ("reverts_label_id", "int64"),
                   ("created_at", "string"))
Writer = Callable[[list[dict[str, Any]], Path], None]
WRITERS: dict[str, Writer] = {
    "csv": lambda rows, path: write_csv(rows, path, COLUMNS), "jsonl": write_jsonl,
    "parquet": lambda rows, path: write_parquet(rows, path, PARQUET_COLUMNS)}


def export_labels(store: Store, path: Path, format: str, dataset: str | None = None,
                  notes_of: Collection[str] | None = None) -> int:
    """Write the label history to `path` (with the notes of `notes_of` only, as
    export_rows); returns the number of rows. The file appears whole or not at all: it is
    written beside `path` under a temporary name and renamed over it at the end, so a full
    disk or a crash leaves an earlier export as it was."""
    if format not in WRITERS:
        raise LabelExportError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    writable_target(path, LabelExportError)  # before the query: a bad path fails at once
    rows = export_rows(store, dataset, notes_of)
    write_atomically(path, lambda temporary: WRITERS[format](rows, temporary), LabelExportError)
    return len(rows)


# -- import -------------------------------------------------------------------------------

def read_rows(path: Path, format: str) -> Iterator[tuple[str, Any]]:
    """(where the row is, as a person finds it: "line N" of a text file, where a CSV row
    starts, or "row N" of a Parquet table; the row)."""
    if format == "csv":
        # utf-8-sig: a byte-order mark (Excel writes one) must not stick to the first column.
        allow_long_fields()
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            start = 2  # line 1: the header
            try:
                for row in reader:
                    yield f"line {start}", {key: _csv_value(value) for key, value in row.items()
                                  if isinstance(key, str)}
                    start = reader.line_num + 1
            except csv.Error as exc:
                raise LabelImportError(f"{path}, line {start}: not valid CSV ({exc})") from None
    elif format == "jsonl":
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"line {number}", _json_line(path, number, line)
    elif format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except pa.ArrowException as exc:
            raise LabelImportError(f"{path}: not a readable Parquet file ({exc})") from None
        for number, row in enumerate(table.to_pylist(), start=1):
            yield f"row {number}", row
    else:
        raise LabelImportError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")


def _json_line(path: Path, number: int, line: str) -> Any:
    try:
        return strict_json.loads(line)
    except json.JSONDecodeError as exc:
        raise LabelImportError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
    except ValueError as exc:  # NaN, 1e999, nesting too deep
        raise LabelImportError(f"{path}, line {number}: {exc}") from None


def format_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise OptionError(f"{path}: cannot tell the format from the extension; use one of "
                         f"{', '.join('.' + f for f in FORMATS)} or give --format")
    return suffix


def flag_field(value: Any, field: str) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise LabelValueError(f"field {field!r} must be true, false or empty, got {value!r:.80}")


def text_field(value: Any, field: str, required: bool = False,
          max_length: int | None = None) -> str | None:
    if value is None or value == "":
        if required:
            raise LabelValueError(f"field {field!r} is missing")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # an id written as a number
    if not isinstance(value, str):
        raise LabelValueError(f"field {field!r} must be text, got {type(value).__name__}")
    if max_length is not None and len(value) > max_length:
        raise LabelValueError(f"field {field!r} must be at most {max_length} characters")
    if "\x00" in value:  # PostgreSQL's text cannot hold it
        raise LabelValueError(f"field {field!r} holds a NUL character, which no store keeps")
    return value


def int_field(value: Any, field: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    raise LabelValueError(f"field {field!r} must be an integer, got {value!r:.80}")


def _passages(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = strict_json.loads(value, "passages_shown")
        except ValueError:
            raise LabelValueError("field 'passages_shown' must be a JSON list, "
                                  f"got {value!r:.80}") from None
    return check_passages_shown(value)


def time_field(value: Any) -> datetime:
    text = text_field(value, "created_at", required=True) or ""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise LabelValueError(f"field 'created_at' is not an ISO 8601 time: {text!r:.80}") from None
    return as_utc(moment)


def _parsed(row: Any) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise LabelValueError(f"a row must be an object of fields, got {type(row).__name__}")
    role = row.get("annotator_role")
    return {
        "label_id": int_field(row.get("label_id"), "label_id"),
        "dataset": text_field(row.get("dataset"), "dataset", True),
        "sample_id": text_field(row.get("sample_id"), "sample_id", True),
        "annotator": check_name(text_field(row.get("annotator"), "annotator", True), "annotator"),
        "annotator_role": check_name(role, "annotator_role", ROLE_MAX_LENGTH) if role else None,
        "label": check_label_value(text_field(row.get("label"), "label", True) or ""),
        "answer_correct": flag_field(row.get("answer_correct"), "answer_correct"),
        "note": text_field(row.get("note"), "note"),
        "passages_shown": _passages(row.get("passages_shown")),
        "retracted": bool(flag_field(row.get("retracted"), "retracted")),
        "request_id": text_field(row.get("request_id"), "request_id",
                                 max_length=REQUEST_ID_MAX_LENGTH),
        "reverts_label_id": int_field(row.get("reverts_label_id"), "reverts_label_id"),
        "created_at": time_field(row.get("created_at")),
    }


@dataclass
class _Import:
    """What an import has learnt so far: row ids of samples and annotators, the newest
    version of each (sample, annotator), and the ids of the file's rows in this database."""

    session: Session
    samples: dict[tuple[str, str], int] = field(default_factory=dict)
    annotators: dict[str, int] = field(default_factory=dict)
    newest: dict[tuple[int, int], int | None] = field(default_factory=dict)
    new_ids: dict[int, int] = field(default_factory=dict)

    def sample(self, dataset: str, sample_id: str) -> int:
        key = (dataset, sample_id)
        if key not in self.samples:
            found = self.session.scalar(select(Sample.id).join(Dataset).where(
                Dataset.name == dataset, Sample.external_id == sample_id))
            if found is None:
                raise UnknownSampleError(f"no sample {sample_id!r} in dataset {dataset!r}")
            self.samples[key] = found
        return self.samples[key]

    def annotator(self, name: str, role: str | None) -> int:
        if name not in self.annotators:
            found = self.session.scalar(select(Annotator.id).where(Annotator.name == name))
            if found is None:
                person = Annotator(name=name, role=role)
                self.session.add(person)
                self.session.flush()
                found = person.id
            self.annotators[name] = found
        return self.annotators[name]

    def previous(self, sample: int, person: int) -> int | None:
        if (sample, person) not in self.newest:
            self.newest[(sample, person)] = self.session.scalar(
                select(func.max(Label.id)).where(Label.sample_id == sample,
                                                 Label.annotator_id == person))
        return self.newest[(sample, person)]

    def add(self, row: dict[str, Any], sample: int, person: int) -> int:
        clash = row["request_id"] and self.session.scalar(
            select(Label.id).where(Label.request_id == row["request_id"]))
        if clash:
            raise LabelValueError(f"field 'request_id': {row['request_id']!r} already belongs "
                                  "to another label")
        label = Label(
            sample_id=sample, annotator_id=person, label=row["label"],
            answer_correct=row["answer_correct"], note=row["note"],
            passages_shown=row["passages_shown"], retracted=row["retracted"],
            request_id=row["request_id"],
            reverts_id=self.new_ids.get(row["reverts_label_id"] or -1),
            previous_id=self.previous(sample, person), created_at=row["created_at"])
        self.session.add(label)
        self.session.flush()
        self.newest[(sample, person)] = label.id
        return label.id


def import_labels(store: Store, path: Path, format: str | None = None) -> tuple[int, int]:
    """Import a label file in one transaction; returns (added, already there). Annotators
    are created when new; datasets and samples must exist. Rows are appended after any
    labels the database holds, as new versions."""
    format = format or format_of(path)
    added = skipped = 0
    with import_errors(path), store.session() as session:
        state = _Import(session)
        for where, raw in read_rows(path, format):
            try:
                row = _parsed(raw)
                sample = state.sample(row["dataset"], row["sample_id"])
                person = state.annotator(row["annotator"], row["annotator_role"])
                label_id = _existing(session, sample, person, row)
                if label_id is None:
                    label_id, added = state.add(row, sample, person), added + 1
                else:
                    skipped += 1
            except (ValueError, LookupError) as exc:  # a field's value: name the row
                raise LabelImportError(f"{path}, {where}: {exc}") from None
            if row["label_id"] is not None:
                state.new_ids[row["label_id"]] = label_id
    return added, skipped


@contextmanager
def import_errors(path: Path, what: str = "labels") -> Iterator[None]:
    """An import's failures as LabelImportError naming the file: it cannot be read, is not
    UTF-8, or `what` of its samples changed meanwhile (a race: nothing was kept)."""
    try:
        yield
    except OSError as exc:
        raise LabelImportError(f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError:
        raise LabelImportError(f"{utf8_problem(path)}; save the file as UTF-8") from None
    except IntegrityError:
        raise LabelImportError(f"{path}: {what} of these samples changed while importing; "
                               "nothing was imported, run the import again") from None


def _existing(session: Session, sample: int, annotator: int, row: dict[str, Any]) -> int | None:
    """The id of an identical version already stored (same person, sample, time, value)."""
    candidates = session.scalars(select(Label).where(
        Label.sample_id == sample, Label.annotator_id == annotator,
        Label.label == row["label"], Label.retracted == row["retracted"]))
    for label in candidates:
        if utc_text(label.created_at) == utc_text(row["created_at"]) and label.note == row["note"]:
            return label.id
    return None
