"""Samples into a dataset: an import brings a dataset up to date with a file's samples in one
transaction (new ids added, changed ones rewritten in place, the rest kept), a preview
counts what it would do without writing, and a live ask adds its one sample."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Iterator

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ragshield import strict_json
from ragshield.errors import UserError
from ragshield.names import check_name
from ragshield.store.database import Store
from ragshield.store.models import Dataset as DatasetRow
from ragshield.store.models import Passage as PassageRow
from ragshield.store.models import Sample as SampleRow
from ragshield.types import Passage, Sample

BATCH_SIZE = 1000


class ConcurrentImportError(UserError, RuntimeError):
    """Another import added the same dataset or samples at the same moment."""


class RepeatedSampleIdError(UserError, ValueError):
    """The samples given to one import hold the same id twice (which one would win?)."""


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    added: int  # ids new to the dataset
    updated: int  # ids the dataset held with other content: rewritten in place, same row id
    unchanged: int  # ids the dataset held with the same content
    missing: int  # samples of the dataset that the input lacks: kept as they were
    samples: int  # in the dataset after the import


def _batches(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    iterator = iter(samples)
    while batch := list(islice(iterator, size)):
        yield batch


def _sample_values(sample: Sample) -> dict[str, Any]:
    given = sample.given_answer
    return {"question": sample.question, "reference_answers": list(sample.reference_answers),
            "answerable": sample.answerable, "meta": dict(sample.meta),
            "given_answer": None if given is None else given.to_dict()}


def _passage_values(passage: Passage) -> dict[str, Any]:
    return {"doc_id": passage.doc_id, "title": passage.title, "text": passage.text,
            "score": strict_json.finite(passage.score), "meta": dict(passage.meta)}


def _content(sample: Sample) -> dict[str, Any]:
    """What the store keeps of a sample, as JSON values (a tuple becomes the list it is
    stored as), so that it compares equal to what `_stored_contents` reads back."""
    return json.loads(strict_json.dumps(
        {**_sample_values(sample), "passages": [_passage_values(p) for p in sample.passages]}))


def _stored_contents(session: Session, dataset_id: int,
                     external_ids: list[str]) -> dict[str, tuple[int, dict[str, Any]]]:
    """external id -> (row id, content as `_content` gives it) for those of `external_ids`
    that the dataset holds."""
    rows = session.execute(
        select(SampleRow.external_id, SampleRow.id, SampleRow.question,
               SampleRow.reference_answers, SampleRow.answerable, SampleRow.meta,
               SampleRow.given_answer)
        .where(SampleRow.dataset_id == dataset_id, SampleRow.external_id.in_(external_ids))
    ).tuples().all()
    stored = {
        external_id: (row_id, {"question": question, "reference_answers": answers,
                               "answerable": answerable, "meta": meta, "given_answer": given,
                               "passages": []})
        for external_id, row_id, question, answers, answerable, meta, given in rows
    }
    by_row = {row_id: content for row_id, content in stored.values()}
    for sample_id, doc_id, title, text, score, meta in session.execute(
        select(PassageRow.sample_id, PassageRow.doc_id, PassageRow.title, PassageRow.text,
               PassageRow.score, PassageRow.meta)
        .where(PassageRow.sample_id.in_(list(by_row)))
        .order_by(PassageRow.sample_id, PassageRow.position)
    ).tuples():
        by_row[sample_id]["passages"].append(
            {"doc_id": doc_id, "title": title, "text": text, "score": score, "meta": meta})
    return stored


def _insert_passages(session: Session, row_ids: dict[str, int], samples: list[Sample]) -> None:
    passages = [
        {"sample_id": row_ids[sample.id], "position": position, **_passage_values(p)}
        for sample in samples
        for position, p in enumerate(sample.passages)
    ]
    if passages:
        session.execute(insert(PassageRow), passages)


def _insert(session: Session, dataset_id: int, samples: list[Sample]) -> None:
    # Plain executemany, then one query for the new row ids: RETURNING in parameter order
    # makes SQLite insert one row per statement, several times slower.
    session.execute(insert(SampleRow), [
        {"dataset_id": dataset_id, "external_id": s.id, **_sample_values(s)} for s in samples
    ])
    row_ids = dict(session.execute(
        select(SampleRow.external_id, SampleRow.id).where(
            SampleRow.dataset_id == dataset_id,
            SampleRow.external_id.in_([s.id for s in samples]),
        )
    ).tuples().all())
    _insert_passages(session, row_ids, samples)


def _update(session: Session, changed: list[tuple[int, Sample]]) -> None:
    """Rewrite samples in place (same row ids); their passages are replaced."""
    session.execute(update(SampleRow),
                    [{"id": row_id, **_sample_values(sample)} for row_id, sample in changed])
    session.execute(delete(PassageRow).where(PassageRow.sample_id.in_([r for r, _ in changed])))
    _insert_passages(session, {s.id: row_id for row_id, s in changed}, [s for _, s in changed])


def _compared(session: Session, name: str, dataset_id: int | None, samples: Iterable[Sample],
              batch_size: int) -> Iterator[tuple[list[Sample], list[tuple[int, Sample]], int]]:
    """For each batch of `samples`: those new to the dataset, the (row id, sample) of those
    whose question, answers, answerable flag, meta, given answer or passages differ from the
    stored ones, and the batch's size. An id repeated within `samples` is an error."""
    seen: set[str] = set()
    for batch in _batches(samples, batch_size):
        for sample in batch:
            if sample.id in seen:
                raise RepeatedSampleIdError(
                    f"sample id {sample.id!r} occurs more than once in the input of "
                    f"dataset {name!r}")
            seen.add(sample.id)
        stored = (_stored_contents(session, dataset_id, [s.id for s in batch])
                  if dataset_id is not None else {})
        new = [s for s in batch if s.id not in stored]
        changed = [(stored[s.id][0], s) for s in batch
                   if s.id in stored and _content(s) != stored[s.id][1]]
        yield new, changed, len(batch)


def _sample_count(session: Session, dataset_id: int | None) -> int:
    if dataset_id is None:
        return 0
    return session.scalar(
        select(func.count(SampleRow.id)).where(SampleRow.dataset_id == dataset_id)) or 0


@dataclass
class _Tally:
    name: str
    before: int  # samples in the dataset before the import
    added: int = 0
    updated: int = 0
    unchanged: int = 0

    def count(self, new: list[Sample], changed: list[tuple[int, Sample]], size: int) -> None:
        self.added += len(new)
        self.updated += len(changed)
        self.unchanged += size - len(new) - len(changed)

    def result(self) -> ImportResult:
        return ImportResult(dataset=self.name, added=self.added, updated=self.updated,
                            unchanged=self.unchanged,
                            missing=self.before - self.updated - self.unchanged,
                            samples=self.before + self.added)


def import_samples(
    store: Store, name: str, samples: Iterable[Sample], *, source: str | None = None,
    license: str | None = None, description: str | None = None, batch_size: int = BATCH_SIZE,
) -> ImportResult:
    """Bring the dataset `name` (created when new) up to date with `samples`, in ONE
    transaction: if anything fails, including the iterator, nothing of the import stays.

    A new id is added. A known id whose question, answers, answerable flag, meta, given
    answer or passages differ is updated in place: its row id stays, so the labels and run
    answers attached to it stay attached. Samples of the dataset that `samples` lacks are
    kept (counted as `missing`). Importing the same file again therefore changes nothing. An
    id repeated within `samples` is an error. `samples` is consumed in batches and never
    held whole.
    """
    name = check_name(name, "dataset name")
    try:
        with store.session() as session:
            dataset = session.scalar(select(DatasetRow).where(DatasetRow.name == name))
            if dataset is None:
                dataset = DatasetRow(name=name, source=source, license=license,
                                     description=description)
                session.add(dataset)
                session.flush()
            tally = _Tally(name, _sample_count(session, dataset.id))
            for new, changed, size in _compared(session, name, dataset.id, samples,
                                                batch_size):
                if new:
                    _insert(session, dataset.id, new)
                if changed:
                    _update(session, changed)
                tally.count(new, changed, size)
    except IntegrityError:  # the only unique keys written: the dataset's name, sample ids
        raise ConcurrentImportError(
            f"another import into dataset {name!r} added the same samples at the same moment; "
            "nothing of this one was kept: import it again (it then updates what the other "
            "added)") from None
    return tally.result()


def preview_import(store: Store, name: str, samples: Iterable[Sample], *,
                   batch_size: int = BATCH_SIZE) -> ImportResult:
    """What `import_samples(store, name, samples)` would do, read without writing anything:
    the same comparison, so the counts are the ones the import will report (unless the
    dataset changes in between)."""
    name = check_name(name, "dataset name")
    with store.session() as session:
        dataset_id = session.scalar(select(DatasetRow.id).where(DatasetRow.name == name))
        tally = _Tally(name, _sample_count(session, dataset_id))
        for new, changed, size in _compared(session, name, dataset_id, samples, batch_size):
            tally.count(new, changed, size)
    return tally.result()


def ensure_sample(store: Store, name: str, sample: Sample, *,
                  description: str | None = None) -> int:
    """The row id of `sample` in the dataset `name`, adding it (and the dataset) when it is
    not there; an existing sample is left as it is. One short transaction: the guard API
    adds a sample per call, where `import_samples`' comparisons would cost more than the
    call itself."""
    name = check_name(name, "dataset name")
    with store.session() as session:
        found = session.scalar(
            select(SampleRow.id).join(DatasetRow, DatasetRow.id == SampleRow.dataset_id)
            .where(DatasetRow.name == name, SampleRow.external_id == sample.id))
        if found is not None:
            return found
        dataset_id = session.scalar(select(DatasetRow.id).where(DatasetRow.name == name))
        if dataset_id is None:
            dataset = DatasetRow(name=name, description=description)
            session.add(dataset)
            session.flush()
            dataset_id = dataset.id
        row = SampleRow(dataset_id=dataset_id, external_id=sample.id, **_sample_values(sample))
        session.add(row)
        session.flush()
        _insert_passages(session, {sample.id: row.id}, [sample])
        return row.id
