"""Exporting every label version (the whole history) to CSV, JSONL or Parquet, and
importing such a file back: all or nothing, with errors that name the row.

A file holds one row per label version, oldest first. `label_id` and `reverts_label_id`
are the exporting database's ids; an import maps them to its own, so export -> import
into another database with the same datasets keeps labels, annotators, times and history.
Importing a file twice adds nothing the second time.
"""

from __future__ import annotations

import csv
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal

from sqlalchemy import select

from ragshield.store.database import Store
from ragshield.store.labels import LabelValueError, check_label_value
from ragshield.store.models import Annotator, Dataset, Label, Sample

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
COLUMNS = ("label_id", "dataset", "sample_id", "annotator", "annotator_role", "label",
           "answer_correct", "note", "passages_shown", "retracted", "request_id",
           "reverts_label_id", "created_at")


class LabelImportError(ValueError):
    """A row of an import file cannot be used; nothing of the import was kept."""


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None:  # SQLite hands back naive UTC
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def export_rows(store: Store, dataset: str | None = None) -> list[dict[str, Any]]:
    query = (select(Label, Dataset.name, Sample.external_id, Annotator.name, Annotator.role)
             .join(Sample, Sample.id == Label.sample_id)
             .join(Dataset, Dataset.id == Sample.dataset_id)
             .join(Annotator, Annotator.id == Label.annotator_id).order_by(Label.id))
    if dataset is not None:
        query = query.where(Dataset.name == dataset)
    with store.session() as session:
        return [
            {"label_id": label.id, "dataset": name, "sample_id": sample, "annotator": person,
             "annotator_role": role, "label": label.label, "answer_correct": label.answer_correct,
             "note": label.note, "passages_shown": json.dumps(label.passages_shown),
             "retracted": label.retracted, "request_id": label.request_id,
             "reverts_label_id": label.reverts_id, "created_at": _utc(label.created_at)}
            for label, name, sample, person, role in session.execute(query).tuples()
        ]


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def export_labels(store: Store, path: Path, format: str, dataset: str | None = None) -> int:
    """Write the label history to `path`; returns the number of rows."""
    rows = export_rows(store, dataset)
    if format == "csv":
        with open(path, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(COLUMNS)
            writer.writerows([_csv_cell(row[c]) for c in COLUMNS] for row in rows)
    elif format == "jsonl":
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    elif format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("label_id", pa.int64()), ("dataset", pa.string()),
                            ("sample_id", pa.string()), ("annotator", pa.string()),
                            ("annotator_role", pa.string()), ("label", pa.string()),
                            ("answer_correct", pa.bool_()), ("note", pa.string()),
                            ("passages_shown", pa.string()), ("retracted", pa.bool_()),
                            ("request_id", pa.string()), ("reverts_label_id", pa.int64()),
                            ("created_at", pa.string())])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    else:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    return len(rows)


# -- import -------------------------------------------------------------------------------

def _read(path: Path, format: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number as a person would count it in the file, row)."""
    if format == "csv":
        with open(path, newline="", encoding="utf-8") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=2):  # line 1: header
                yield number, row
    elif format == "jsonl":
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise LabelImportError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
    elif format == "parquet":
        import pyarrow.parquet as pq

        for number, row in enumerate(pq.read_table(path).to_pylist(), start=1):
            yield number, row
    else:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")


def format_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"{path}: cannot tell the format from the extension; use one of "
                         f"{', '.join('.' + f for f in FORMATS)} or give --format")
    return suffix


def _flag(value: Any, field: str) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise LabelValueError(f"field {field!r} must be true, false or empty, got {value!r}")


def _text(value: Any, field: str, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise LabelValueError(f"field {field!r} is missing")
        return None
    return str(value)


def _int(value: Any, field: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise LabelValueError(f"field {field!r} must be an integer, got {value!r}") from None


def _parsed(row: dict[str, Any]) -> dict[str, Any]:
    try:
        created = datetime.fromisoformat(_text(row.get("created_at"), "created_at", True) or "")
    except ValueError:
        raise LabelValueError(f"field 'created_at' is not an ISO 8601 time: {row.get('created_at')!r}") from None
    shown = row.get("passages_shown") or "[]"
    try:
        passages = json.loads(shown) if isinstance(shown, str) else list(shown)
    except (json.JSONDecodeError, TypeError):
        raise LabelValueError(f"field 'passages_shown' must be a JSON list, got {shown!r}") from None
    return {
        "label_id": _int(row.get("label_id"), "label_id"),
        "dataset": _text(row.get("dataset"), "dataset", True),
        "sample_id": _text(row.get("sample_id"), "sample_id", True),
        "annotator": _text(row.get("annotator"), "annotator", True),
        "annotator_role": _text(row.get("annotator_role"), "annotator_role"),
        "label": check_label_value(_text(row.get("label"), "label", True) or ""),
        "answer_correct": _flag(row.get("answer_correct"), "answer_correct"),
        "note": _text(row.get("note"), "note"),
        "passages_shown": passages,
        "retracted": bool(_flag(row.get("retracted"), "retracted")),
        "request_id": _text(row.get("request_id"), "request_id"),
        "reverts_label_id": _int(row.get("reverts_label_id"), "reverts_label_id"),
        "created_at": created if created.tzinfo else created.replace(tzinfo=timezone.utc),
    }


def import_labels(store: Store, path: Path, format: str | None = None) -> tuple[int, int]:
    """Import a label file in one transaction; returns (added, already there). Annotators
    are created when new; datasets and samples must exist."""
    format = format or format_of(path)
    added = skipped = 0
    with store.session() as session:
        samples: dict[tuple[str, str], int] = {}
        annotators = dict(session.execute(select(Annotator.name, Annotator.id)).tuples().all())
        new_ids: dict[int, int] = {}
        try:
            for number, raw in _read(path, format):
                try:
                    row = _parsed(raw)
                    key = (row["dataset"], row["sample_id"])
                    if key not in samples:
                        found = session.scalar(select(Sample.id).join(Dataset).where(
                            Dataset.name == key[0], Sample.external_id == key[1]))
                        if found is None:
                            raise LookupError(f"no sample {key[1]!r} in dataset {key[0]!r}")
                        samples[key] = found
                except (LabelValueError, LookupError) as exc:
                    raise LabelImportError(f"{path}, row {number}: {exc}") from None
                if row["annotator"] not in annotators:
                    person = Annotator(name=row["annotator"], role=row["annotator_role"])
                    session.add(person)
                    session.flush()
                    annotators[row["annotator"]] = person.id
                label_id = _existing(session, samples[key], annotators[row["annotator"]], row)
                if label_id is None:
                    label = Label(
                        sample_id=samples[key], annotator_id=annotators[row["annotator"]],
                        label=row["label"], answer_correct=row["answer_correct"],
                        note=row["note"], passages_shown=row["passages_shown"],
                        retracted=row["retracted"], request_id=row["request_id"],
                        reverts_id=new_ids.get(row["reverts_label_id"] or -1),
                        created_at=row["created_at"])
                    session.add(label)
                    session.flush()
                    label_id, added = label.id, added + 1
                else:
                    skipped += 1
                if row["label_id"] is not None:
                    new_ids[row["label_id"]] = label_id
        except (OSError, UnicodeDecodeError) as exc:
            raise LabelImportError(f"cannot read {path}: {exc}") from None
    return added, skipped


def _existing(session, sample: int, annotator: int, row: dict[str, Any]) -> int | None:
    """The id of an identical version already stored (same person, sample, time, value)."""
    candidates = session.scalars(select(Label).where(
        Label.sample_id == sample, Label.annotator_id == annotator,
        Label.label == row["label"], Label.retracted == row["retracted"]))
    for label in candidates:
        if _utc(label.created_at) == _utc(row["created_at"]) and label.note == row["note"]:
            return label.id
    return None
