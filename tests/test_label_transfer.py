"""Label export -> import round trips for CSV, JSONL and Parquet (labels, annotators,
times and history unchanged), idempotent re-import, and bad rows rolled back."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from ragshield.store.database import open_store
from ragshield.store.label_transfer import (LabelImportError, export_labels, export_rows,
                                            import_labels)
from ragshield.store.label_undo import undo
from ragshield.store.labels import add_annotator, add_label, skip
from ragshield.store.models import Label
from ragshield.store.sample_import import import_samples
from ragshield.types import Sample

SAMPLES = [Sample(id=f"s{i}", question=f"q{i}") for i in range(4)]
# The Annotate tab keeps the passages shown whole: over the 131,072 characters of a CSV cell
# that Python's csv reads by default.
LONG_PASSAGE = "A long passage. " * 10_000


def fresh(url):
    store = open_store(url)
    import_samples(store, "toy", SAMPLES)
    return store


@pytest.fixture
def source(tmp_path):
    store = fresh(f"sqlite:///{tmp_path / 'a.db'}")
    add_annotator(store, "ann", role="expert")
    add_annotator(store, "bob")
    add_label(store, "toy", "s0", "ann", "answerable",
              note='says "Paris", then, a comma\nand a line')
    add_label(store, "toy", "s0", "ann", "unanswerable", answer_correct=False)
    add_label(store, "toy", "s1", "bob", "unsure", note="Größe 東京", request_id="r-1",
              passages_shown=["Passage-0", LONG_PASSAGE])
    add_label(store, "toy", "s2", "bob", "answerable", answer_correct=True)
    undo(store, "toy", "bob")  # retracts s2
    undo(store, "toy", "ann")  # back to "answerable" on s0
    skip(store, "toy", "s3", "ann")
    yield store
    store.close()


def comparable(rows):
    """Rows without database ids; an undo row points at the position of the row it reverts."""
    position = {row["label_id"]: i for i, row in enumerate(rows)}
    return [{**{k: v for k, v in row.items() if k not in ("label_id", "reverts_label_id")},
             "reverts": position.get(row["reverts_label_id"])} for row in rows]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_round_trip_is_lossless(source, tmp_path, store_url, fmt):
    path = tmp_path / f"labels.{fmt}"
    assert export_labels(source, path, fmt) == 6
    target = fresh(store_url)
    try:
        assert import_labels(target, path) == (6, 0)
        assert comparable(export_rows(target)) == comparable(export_rows(source))
        assert import_labels(target, path) == (0, 6)  # importing again adds nothing
    finally:
        target.close()


def test_export_content(source, tmp_path):
    path = tmp_path / "labels.jsonl"
    export_labels(source, path, "jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["label"] for r in rows] == ["answerable", "unanswerable", "unsure", "answerable",
                                          "answerable", "answerable"]
    assert [r["retracted"] for r in rows] == [False, False, False, False, True, False]
    assert rows[0]["annotator_role"] == "expert" and rows[2]["request_id"] == "r-1"
    assert rows[5]["reverts_label_id"] == rows[1]["label_id"]
    assert all(r["created_at"].endswith("+00:00") for r in rows)


@pytest.mark.parametrize("change, fragment", [
    ({"label": "maybe"}, "line 3: field 'label' must be one of"),
    ({"sample_id": "s99"}, "line 3: no sample 's99' in dataset 'toy'"),
    ({"created_at": "yesterday"}, "line 3: field 'created_at' is not an ISO 8601 time"),
    ({"answer_correct": "perhaps"}, "line 3: field 'answer_correct' must be true, false"),
    ({"annotator": ""}, "line 3: field 'annotator' is missing"),
])
def test_a_bad_row_is_named_and_nothing_is_kept(source, tmp_path, change, fragment):
    good = tmp_path / "good.jsonl"
    export_labels(source, good, "jsonl")
    rows = [json.loads(line) for line in good.read_text().splitlines()]
    rows[2].update(change)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    target = fresh(f"sqlite:///{tmp_path / 'b.db'}")
    with pytest.raises(LabelImportError, match=fragment.replace("(", r"\(")):
        import_labels(target, bad)
    with target.session() as session:
        assert session.scalar(select(func.count()).select_from(Label)) == 0
    target.close()


def test_a_latin_1_file_is_refused_at_its_line(source, tmp_path):
    path = tmp_path / "labels.csv"
    export_labels(source, path, "csv")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b",", "\u00e9,".encode("latin-1"), 1)  # a spreadsheet's é
    path.write_bytes(b"".join(lines))
    target = fresh(f"sqlite:///{tmp_path / 'l.db'}")
    with pytest.raises(LabelImportError, match=rf"line {len(lines)}: not valid UTF-8 \(byte "
                                               r"0xe9 at column \d+\); save the file as UTF-8"):
        import_labels(target, path)
    target.close()


def test_csv_errors_count_the_header_line(source, tmp_path):
    path = tmp_path / "labels.csv"
    export_labels(source, path, "csv")
    lines = path.read_text().splitlines(keepends=True)
    # the first record spans two lines (its note has a line break); break the next record
    text = "".join(lines).replace(",unanswerable,", ",wrong,", 1)
    path.write_text(text)
    target = fresh(f"sqlite:///{tmp_path / 'c.db'}")
    with pytest.raises(LabelImportError, match="line 4: field 'label'"):  # where it starts
        import_labels(target, path)
    target.close()
