"""Datasets in the store, on real SQLite and real PostgreSQL: import, re-import (updates in
place), rollback, counts, reading samples back, and deleting a dataset."""

from __future__ import annotations

import dataclasses
import json
from typing import Iterator

import pytest
from sqlalchemy import func, select

from ragshield.datasets import DatasetFormatError, load_dataset
from ragshield.services.data.datasets import import_file
from ragshield.store.dataset_deletion import DatasetInUseError, dataset_usage, delete_dataset
from ragshield.store.labels import add_annotator, add_label, label_history, skip
from ragshield.store.models import AnswerRow, Dataset, Label, Passage, Run, Skip, VerdictRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import RoleAnswer, create_run, save_sample
from ragshield.store.sample_import import (ConcurrentImportError, ensure_sample, ImportResult,
                                           RepeatedSampleIdError, import_samples)
from ragshield.store.samples import (DatasetSummary, UnknownDatasetError, UnknownSampleError,
                                     dataset_names, has_dataset, iter_samples, list_datasets,
                                     list_samples, load_sample)
from ragshield.types import Answer, GivenAnswer, Sample, Verdict
from ragshield.types import Passage as PassageData
from tests.concurrency import at_once
from tests.conftest import TEST_DATA

SQUAD_RAW = TEST_DATA / "raw" / "squad2_dev_part_a_squad_format.json"  # 180 questions
HOTPOT_RAW = TEST_DATA / "raw" / "hotpot_dev_distractor_first53.json"


def row_counts(store) -> tuple[int, int, int]:
    with store.session() as session:
        return tuple(session.scalar(select(func.count()).select_from(table))
                     for table in (Dataset, SampleRow, Passage))


def test_import_counts_and_reads_back_in_order(store):
    result = import_file(store, "squad2", SQUAD_RAW)
    assert result == ImportResult(dataset="squad2", added=180, updated=0, unchanged=0,
                                  missing=0, samples=180)
    import_file(store, "hotpot", HOTPOT_RAW, limit=5)
    import_file(store, "nq", TEST_DATA / "raw" / "NQ-open.dev.jsonl", limit=7)
    assert list_datasets(store) == [
        DatasetSummary("hotpot", 5, 5, 0, 0),
        DatasetSummary("nq", 7, 0, 0, 7),
        DatasetSummary("squad2", 180, 90, 90, 0),
    ]
    assert dataset_names(store) == ["hotpot", "nq", "squad2"]
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


def test_two_imports_of_a_new_dataset_at_once_keep_one_and_say_so(store):
    """The loser said only "UNIQUE constraint failed"; it now says what happened, and its
    import leaves nothing half done."""
    samples = [Sample(id=f"s{i}", question=f"q{i}?") for i in range(200)]
    outcomes = at_once(lambda: import_samples(store, "new", samples), 2, ConcurrentImportError)
    assert any(isinstance(o, ImportResult) and o.added == 200 for o in outcomes)
    assert row_counts(store)[:2] == (1, 200)
    assert import_samples(store, "new", samples).unchanged == 200


def test_samples_come_back_equal_with_passages_in_order_and_their_meta(store):
    originals = list(load_dataset(HOTPOT_RAW, limit=5))
    import_samples(store, "hotpot", originals)
    for original in originals:
        assert load_sample(store, "hotpot", original.id) == original
    assert list(iter_samples(store, "hotpot", batch_size=2)) == originals
    assert [p.title for p in load_sample(store, "hotpot", originals[0].id).passages][:2] == [
        "Ed Wood (film)", "Scott Derrickson"]


def test_reimporting_the_same_file_changes_nothing(store):
    import_file(store, "squad2", SQUAD_RAW, limit=100)
    before = row_counts(store)
    again = import_file(store, "squad2", SQUAD_RAW, limit=100)
    assert (again.added, again.updated, again.unchanged, again.missing) == (0, 0, 100, 0)
    assert row_counts(store) == before == (1, 100, 100)
    more = import_file(store, "squad2", SQUAD_RAW, limit=120)  # only the new tail is added
    assert (more.added, more.updated, more.unchanged, more.samples) == (20, 0, 100, 120)
    fewer = import_file(store, "squad2", SQUAD_RAW, limit=60)  # the rest is kept
    assert (fewer.unchanged, fewer.missing, fewer.samples) == (60, 60, 120)


TOY = [
    Sample(id="a", question="Who?", passages=[PassageData(text="Ada wrote it.", title="A")],
           reference_answers=["Ada"], answerable=True, meta={"domain": "x"}),
    Sample(id="b", question="What?", passages=[PassageData(text="p1"), PassageData(text="p2")],
           answerable=False),
    Sample(id="c", question="When?", passages=[PassageData(text="In 1843.", meta={"rel": 1})],
           reference_answers=["1843"], answerable=True),
]


def sample_row_ids(store, name: str) -> dict[str, int]:
    with store.session() as session:
        return dict(session.execute(
            select(SampleRow.external_id, SampleRow.id).join(Dataset)
            .where(Dataset.name == name)).tuples().all())


def add_run_over(store, name: str, sample: str) -> int:
    """A run of dataset `name` with one saved answer (and verdict) on `sample`."""
    run_id = create_run(store, dataset=name, config={}, seed=0, code_version="test",
                        samples_total=1)
    answer = Answer(answerer="vanilla", text="Ada", raw="Ada", messages=[])
    save_sample(store, run_id, sample_row_ids(store, name)[sample],
                {"main": RoleAnswer(answer, "m", [])}, [Verdict(judge="trivial", keep=True)])
    return run_id


def test_reimport_updates_changed_samples_in_place_adds_new_and_keeps_missing(store):
    import_samples(store, "toy", TOY)
    ids = sample_row_ids(store, "toy")
    add_annotator(store, "ann")
    add_label(store, "toy", "b", "ann", "unanswerable")
    run_id = add_run_over(store, "toy", "b")
    changed_b = dataclasses.replace(TOY[1], question="What now?", passages=[PassageData("p3")],
                                    answerable=True)
    d = Sample(id="d", question="Where?")
    result = import_samples(store, "toy", [TOY[0], changed_b, d])
    assert result == ImportResult(dataset="toy", added=1, updated=1, unchanged=1, missing=1,
                                  samples=4)
    after = sample_row_ids(store, "toy")
    assert after == {**ids, "d": after["d"]} and after["d"] not in ids.values()
    assert [load_sample(store, "toy", i) for i in "abcd"] == [TOY[0], changed_b, TOY[2], d]
    assert [s.id for s in list_samples(store, "toy")] == ["a", "b", "c", "d"]
    assert [h.label for h in label_history(store, "toy", "b")] == ["unanswerable"]
    with store.session() as session:
        assert session.scalars(select(AnswerRow.sample_id).where(AnswerRow.run_id == run_id)
                               ).all() == [ids["b"]]
    assert row_counts(store) == (1, 4, 3)


@pytest.mark.parametrize("change", [
    {"question": "Who wrote it?"}, {"reference_answers": ["Ada", "Lovelace"]},
    {"answerable": None}, {"meta": {"domain": "y"}}, {"passages": []},
    {"passages": [PassageData(text="Ada wrote it.", title="B")]},
    {"passages": [PassageData(text="Ada wrote it.", title="A", score=0.5)]},
    {"passages": [PassageData(text="Ada wrote it.", title="A", meta={"rel": 0})]},
])
def test_any_change_of_a_sample_is_an_update(store, change):
    import_samples(store, "toy", TOY[:1])
    changed = dataclasses.replace(TOY[0], **change)
    result = import_samples(store, "toy", [changed])
    assert (result.updated, result.unchanged) == (1, 0)
    assert load_sample(store, "toy", "a") == changed
    assert import_samples(store, "toy", [changed]).unchanged == 1


def test_a_failed_reimport_leaves_the_old_versions(store):
    import_samples(store, "toy", TOY)
    changed = [dataclasses.replace(s, question=s.question + " (new)") for s in TOY]
    with pytest.raises(DatasetFormatError):
        import_samples(store, "toy", failing_after(changed, 3), batch_size=2)
    assert [load_sample(store, "toy", s.id) for s in TOY] == TOY


def failing_after(samples: list[Sample], count: int) -> Iterator[Sample]:
    yield from samples[:count]
    raise DatasetFormatError("x.jsonl", "broken", where=f"line {count + 1}")


def test_a_failed_import_leaves_nothing(store):
    samples = list(load_dataset(SQUAD_RAW))
    with pytest.raises(DatasetFormatError):  # after two full batches were written
        import_samples(store, "squad2", failing_after(samples, 150), batch_size=60)
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


def test_an_id_repeated_in_the_input_fails_the_import(store):
    sample = Sample(id="a", question="Who?")
    with pytest.raises(RepeatedSampleIdError, match="sample id 'a' occurs more than once"):
        import_samples(store, "d", [sample, Sample(id="b", question="What?"), sample])
    assert row_counts(store) == (0, 0, 0)


def test_unknown_dataset_and_sample(store):
    import_samples(store, "known", [Sample(id="a", question="Who?")])
    with pytest.raises(UnknownDatasetError, match=r"no dataset named 'nope' \(datasets: 'known'\)"):
        list_samples(store, "nope")
    with pytest.raises(UnknownDatasetError):
        iter_samples(store, "nope")
    with pytest.raises(UnknownSampleError, match="dataset 'known' has no sample 'zz'"):
        load_sample(store, "known", "zz")


def table_counts(store) -> dict[str, int]:
    with store.session() as session:
        return {table.__name__: session.scalar(select(func.count()).select_from(table))
                for table in (Dataset, SampleRow, Passage, Run, AnswerRow, VerdictRow, Label, Skip)}


def test_deleting_an_unused_dataset_leaves_the_others(store):
    import_samples(store, "toy", TOY)
    import_samples(store, "other", TOY[:1])
    usage = delete_dataset(store, "toy")
    assert (usage.samples, usage.passages, usage.runs, usage.labels) == (3, 4, [], 0)
    assert [d.name for d in list_datasets(store)] == ["other"]
    assert load_sample(store, "other", "a") == TOY[0]
    assert row_counts(store) == (1, 1, 1)
    with pytest.raises(UnknownDatasetError, match="no dataset named 'toy'"):
        delete_dataset(store, "toy")


def test_a_dataset_in_use_is_deleted_only_when_forced_with_its_runs_and_labels(store):
    import_samples(store, "toy", TOY)
    import_samples(store, "other", TOY[:1])
    for name in ("ann", "bob"):
        add_annotator(store, name)
    add_label(store, "toy", "a", "ann", "answerable")
    add_label(store, "toy", "a", "ann", "unsure")
    add_label(store, "toy", "b", "bob", "unanswerable")
    skip(store, "toy", "c", "bob")
    add_label(store, "other", "a", "bob", "answerable")
    runs = [add_run_over(store, "toy", "a"), add_run_over(store, "toy", "b")]
    kept_run = add_run_over(store, "other", "a")
    before = table_counts(store)
    with pytest.raises(DatasetInUseError, match=(
            rf"dataset 'toy' is used by run\(s\) {runs[0]}, {runs[1]} and 3 label\(s\) by 2 "
            r"annotator\(s\); delete with --force")):
        delete_dataset(store, "toy")
    assert table_counts(store) == before
    assert dataset_usage(store, "toy").runs == runs
    usage = delete_dataset(store, "toy", force=True)
    assert (usage.samples, usage.passages, usage.runs, usage.labels, usage.annotators) == (
        3, 4, runs, 3, 2)
    assert table_counts(store) == {"Dataset": 1, "Sample": 1, "Passage": 1, "Run": 1,
                                   "AnswerRow": 1, "VerdictRow": 1, "Label": 1, "Skip": 0}
    with store.session() as session:
        assert session.scalar(select(Run.id)) == kept_run
    assert [h.label for h in label_history(store, "other", "a")] == ["answerable"]


def test_ensure_sample_adds_once_and_leaves_an_existing_sample_as_it_is(store):
    first = Sample(id="q-1", question="Who?", passages=[PassageData(text="A", doc_id="d")],
                   given_answer=GivenAnswer("Them", model="m"))
    row_id = ensure_sample(store, "asked", first, description="asked questions")
    again = ensure_sample(store, "asked", Sample(id="q-1", question="Changed?"))
    assert again == row_id
    assert load_sample(store, "asked", "q-1") == first
    other = ensure_sample(store, "asked", Sample(id="q-2", question="Where?"))
    assert other != row_id and [s.id for s in list_samples(store, "asked")] == ["q-1", "q-2"]
