"""Datasets in the store: importing samples, counting them, and reading them back as Samples."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Iterator

from sqlalchemy import case, func, insert, select
from sqlalchemy.orm import Session, selectinload

from ragshield.store.database import Store
from ragshield.store.models import Dataset as DatasetRow
from ragshield.store.models import Passage as PassageRow
from ragshield.store.models import Sample as SampleRow
from ragshield.types import Passage, Sample

BATCH_SIZE = 1000


class UnknownDatasetError(LookupError):
    """No dataset has the name asked for."""


class UnknownSampleError(LookupError):
    """The dataset has no sample with the id asked for."""


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    added: int
    skipped: int  # ids already in the dataset (or repeated in the input): not added again
    samples: int  # in the dataset after the import


@dataclass(frozen=True)
class DatasetSummary:
    name: str
    samples: int
    answerable: int
    unanswerable: int
    unlabelled: int  # answerable is unknown (null)


@dataclass(frozen=True)
class SampleSummary:
    id: str
    question: str
    answerable: bool | None
    passages: int


def _batches(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    iterator = iter(samples)
    while batch := list(islice(iterator, size)):
        yield batch


def _insert(session: Session, dataset_id: int, samples: list[Sample]) -> None:
    # Plain executemany, then one query for the new row ids: RETURNING in parameter order
    # makes SQLite insert one row per statement, several times slower.
    session.execute(insert(SampleRow), [
        {"dataset_id": dataset_id, "external_id": s.id, "question": s.question,
         "reference_answers": list(s.reference_answers), "answerable": s.answerable,
         "meta": dict(s.meta)}
        for s in samples
    ])
    row_ids = dict(session.execute(
        select(SampleRow.external_id, SampleRow.id).where(
            SampleRow.dataset_id == dataset_id,
            SampleRow.external_id.in_([s.id for s in samples]),
        )
    ).tuples().all())
    passages = [
        {"sample_id": row_ids[sample.id], "position": position, "doc_id": p.doc_id,
         "title": p.title, "text": p.text, "score": p.score, "meta": dict(p.meta)}
        for sample in samples
        for position, p in enumerate(sample.passages)
    ]
    if passages:
        session.execute(insert(PassageRow), passages)


def import_samples(
    store: Store, name: str, samples: Iterable[Sample], *, source: str | None = None,
    license: str | None = None, description: str | None = None, batch_size: int = BATCH_SIZE,
) -> ImportResult:
    """Add `samples` to the dataset `name` (created when new) in ONE transaction: if anything
    fails, including the iterator, nothing of the import stays.

    A sample whose id the dataset already holds is skipped, so importing the same file again
    adds nothing. `samples` is consumed in batches and never held whole.
    """
    with store.session() as session:
        dataset = session.scalar(select(DatasetRow).where(DatasetRow.name == name))
        if dataset is None:
            dataset = DatasetRow(name=name, source=source, license=license, description=description)
            session.add(dataset)
            session.flush()
        known = set(session.scalars(
            select(SampleRow.external_id).where(SampleRow.dataset_id == dataset.id)
        ))
        before = len(known)
        seen = 0
        for batch in _batches(samples, batch_size):
            seen += len(batch)
            new = []
            for sample in batch:
                if sample.id not in known:
                    known.add(sample.id)
                    new.append(sample)
            if new:
                _insert(session, dataset.id, new)
    added = len(known) - before
    return ImportResult(dataset=name, added=added, skipped=seen - added, samples=len(known))


def has_dataset(store: Store, name: str) -> bool:
    with store.session() as session:
        return session.scalar(select(DatasetRow.id).where(DatasetRow.name == name)) is not None


def dataset_id_of(session: Session, name: str) -> int:
    dataset_id = session.scalar(select(DatasetRow.id).where(DatasetRow.name == name))
    if dataset_id is None:
        names = session.scalars(select(DatasetRow.name).order_by(DatasetRow.name)).all()
        known = ", ".join(names) if names else "none yet"
        raise UnknownDatasetError(f"no dataset named {name!r} (datasets: {known})")
    return dataset_id


def list_datasets(store: Store) -> list[DatasetSummary]:
    """Every dataset with its sample counts, by name."""
    answerable = SampleRow.answerable
    query = (
        select(
            DatasetRow.name,
            func.count(SampleRow.id),
            func.count(case((answerable.is_(True), 1))),
            func.count(case((answerable.is_(False), 1))),
        )
        .outerjoin(SampleRow, SampleRow.dataset_id == DatasetRow.id)
        .group_by(DatasetRow.id, DatasetRow.name)
        .order_by(DatasetRow.name)
    )
    with store.session() as session:
        return [
            DatasetSummary(name=name, samples=total, answerable=yes, unanswerable=no,
                           unlabelled=total - yes - no)
            for name, total, yes, no in session.execute(query)
        ]


def list_samples(store: Store, name: str, *, limit: int | None = None,
                 offset: int = 0) -> list[SampleSummary]:
    """The samples of a dataset in import order, with their passage counts."""
    passage_count = (
        select(func.count(PassageRow.id)).where(PassageRow.sample_id == SampleRow.id)
        .scalar_subquery()
    )
    with store.session() as session:
        query = (
            select(SampleRow.external_id, SampleRow.question, SampleRow.answerable, passage_count)
            .where(SampleRow.dataset_id == dataset_id_of(session, name))
            .order_by(SampleRow.id)
            .offset(offset)
            .limit(limit)
        )
        return [SampleSummary(*row) for row in session.execute(query)]


def _to_sample(row: SampleRow) -> Sample:
    return Sample(
        id=row.external_id,
        question=row.question,
        passages=[
            Passage(text=p.text, title=p.title, doc_id=p.doc_id, score=p.score, meta=dict(p.meta))
            for p in row.passages
        ],
        reference_answers=list(row.reference_answers),
        answerable=row.answerable,
        meta=dict(row.meta),
    )


def load_sample(store: Store, name: str, sample_id: str) -> Sample:
    """One sample of a dataset, with its passages in their original order."""
    with store.session() as session:
        row = session.scalar(
            select(SampleRow)
            .where(SampleRow.dataset_id == dataset_id_of(session, name),
                   SampleRow.external_id == sample_id)
            .options(selectinload(SampleRow.passages))
        )
        if row is None:
            raise UnknownSampleError(f"dataset {name!r} has no sample {sample_id!r}")
        return _to_sample(row)


def iter_samples(store: Store, name: str, *, batch_size: int = 500) -> Iterator[Sample]:
    """Every sample of a dataset in import order, read in batches (one short session each)."""
    return (sample for _, sample in iter_sample_rows(store, name, batch_size=batch_size))


def iter_sample_rows(store: Store, name: str, *, limit: int | None = None,
                     batch_size: int = 500) -> Iterator[tuple[int, Sample]]:
    """(row id, sample) for the first `limit` samples of a dataset in import order. The
    dataset is looked up now, so an unknown name fails before the first item is asked for."""
    with store.session() as session:
        dataset_id = dataset_id_of(session, name)
    return islice(_iter_batches(store, dataset_id, batch_size), limit)


def _iter_batches(store: Store, dataset_id: int, batch_size: int) -> Iterator[tuple[int, Sample]]:
    last_id = 0
    while True:
        with store.session() as session:
            rows: list[Any] = session.scalars(
                select(SampleRow)
                .where(SampleRow.dataset_id == dataset_id, SampleRow.id > last_id)
                .order_by(SampleRow.id)
                .limit(batch_size)
                .options(selectinload(SampleRow.passages))
            ).all()
            samples = [(row.id, _to_sample(row)) for row in rows]
        if not samples:
            return
        last_id = rows[-1].id
        yield from samples


def count_samples(store: Store, name: str) -> int:
    with store.session() as session:
        return session.scalar(
            select(func.count(SampleRow.id)).where(SampleRow.dataset_id == dataset_id_of(session, name))
        ) or 0
