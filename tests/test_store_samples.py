"""Datasets in the store, on real SQLite and real PostgreSQL: import, re-import, rollback,
counts and reading samples back."""

from __future__ import annotations

import json
from typing import Iterator

import pytest
from sqlalchemy import func, select

from ragshield.datasets import DatasetFormatError, load_dataset
from ragshield.datasets.importing import import_file
from ragshield.store.models import Dataset, Passage, Sample as SampleRow
from ragshield.store.samples import (
    DatasetSummary,
    ImportResult,
    UnknownDatasetError,
    UnknownSampleError,
    has_dataset,
    import_samples,
    iter_samples,
    list_datasets,
    list_samples,
    load_sample,
)
from ragshield.types import Sample
from tests.conftest import SHARED_DATA

SQUAD_RAW = SHARED_DATA / "raw" / "squad2_dev_part_a_squad_format.json"
HOTPOT_RAW = SHARED_DATA / "raw" / "hotpot_dev_distractor_first53.json"


def row_counts(store) -> tuple[int, int, int]:
    with store.session() as session:
        return tuple(session.scalar(select(func.count()).select_from(table))
                     for table in (Dataset, SampleRow, Passage))


def test_import_counts_and_reads_back_in_order(store):
    result = import_file(store, "squad2", SQUAD_RAW)
    assert result == ImportResult(dataset="squad2", added=2805, skipped=0, samples=2805)
    import_file(store, "hotpot", HOTPOT_RAW, limit=5)
    import_file(store, "nq", SHARED_DATA / "raw" / "NQ-open.dev.jsonl", limit=7)
    assert list_datasets(store) == [
        DatasetSummary("hotpot", 5, 5, 0, 0),
        DatasetSummary("nq", 7, 0, 0, 7),
        DatasetSummary("squad2", 2805, 1278, 1527, 0),
    ]
    first = list_samples(store, "squad2", limit=2)
    assert [(s.id, s.question, s.answerable, s.passages) for s in first] == [
        ("68cf05f67fd29c6f129fe2fb9", "In what country is Normandy located?", True, 1),
        ("f5fead9187d56af2bdbfcb921", "When were the Normans in Normandy?", True, 1),
    ]
    assert [s.id for s in list_samples(store, "squad2", limit=2, offset=1)][0] == first[1].id
    with store.session() as session:
        dataset = session.scalar(select(Dataset).where(Dataset.name == "squad2"))
        assert (dataset.license, dataset.source) == (
            "CC BY-SA 4.0", "squad2_dev_part_a_squad_format.json (squad2)")


def test_samples_come_back_equal_with_passages_in_order_and_their_meta(store):
    originals = list(load_dataset(HOTPOT_RAW, limit=5))
    import_samples(store, "hotpot", originals)
    for original in originals:
        assert load_sample(store, "hotpot", original.id) == original
    assert list(iter_samples(store, "hotpot", batch_size=2)) == originals
    assert [p.title for p in load_sample(store, "hotpot", originals[0].id).passages][:2] == [
        "Ed Wood (film)", "Scott Derrickson"]


def test_reimporting_the_same_file_adds_nothing(store):
    import_file(store, "squad2", SQUAD_RAW, limit=1500)
    before = row_counts(store)
    again = import_file(store, "squad2", SQUAD_RAW, limit=1500)
    assert (again.added, again.skipped, again.samples) == (0, 1500, 1500)
    assert row_counts(store) == before == (1, 1500, 1500)
    more = import_file(store, "squad2", SQUAD_RAW, limit=1600)  # only the new tail is added
    assert (more.added, more.skipped, more.samples) == (100, 1500, 1600)


def failing_after(samples: list[Sample], count: int) -> Iterator[Sample]:
    yield from samples[:count]
    raise DatasetFormatError("x.jsonl", "broken", where=f"line {count + 1}")


def test_a_failed_import_leaves_nothing(store):
    samples = list(load_dataset(SQUAD_RAW, limit=2500))
    with pytest.raises(DatasetFormatError):
        import_samples(store, "squad2", failing_after(samples, 2400), batch_size=1000)
    assert row_counts(store) == (0, 0, 0)
    assert not has_dataset(store, "squad2")


def test_a_failed_import_into_an_existing_dataset_keeps_it_as_it_was(store, tmp_path):
    import_file(store, "mixed", SQUAD_RAW, limit=10)
    before = row_counts(store)
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps({"id": f"n{i}", "question": f"Q{i}?", "passages": [{"text": "p"}],
                         "answerable": True}) for i in range(1200)]
    bad.write_text("\n".join(lines + ['{"id": "broken"']) + "\n")
    with pytest.raises(DatasetFormatError, match="line 1201"):
        import_file(store, "mixed", bad)
    assert row_counts(store) == before
    assert list_datasets(store) == [DatasetSummary("mixed", 10, 6, 4, 0)]


def test_repeated_ids_in_the_input_are_added_once(store):
    sample = Sample(id="a", question="Who?")
    result = import_samples(store, "d", [sample, Sample(id="b", question="What?"), sample])
    assert (result.added, result.skipped, result.samples) == (2, 1, 2)


def test_unknown_dataset_and_sample(store):
    import_samples(store, "known", [Sample(id="a", question="Who?")])
    with pytest.raises(UnknownDatasetError, match=r"no dataset named 'nope' \(datasets: known\)"):
        list_samples(store, "nope")
    with pytest.raises(UnknownDatasetError):
        iter_samples(store, "nope")
    with pytest.raises(UnknownSampleError, match="dataset 'known' has no sample 'zz'"):
        load_sample(store, "known", "zz")
