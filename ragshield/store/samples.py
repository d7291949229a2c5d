"""Datasets in the store read back: their names, counts and origins, and their samples as
Samples (store/sample_import.py writes them)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterator, Sequence

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session, selectinload

from ragshield.errors import UserError
from ragshield.names import name_list
from ragshield.store.database import Store, remembered
from ragshield.store.models import Dataset as DatasetRow
from ragshield.store.models import Passage as PassageRow
from ragshield.store.models import Sample as SampleRow
from ragshield.types import GivenAnswer, Passage, Sample


class UnknownDatasetError(UserError, LookupError):
    """No dataset has the name asked for."""


class UnknownSampleError(UserError, LookupError):
    """The dataset has no sample with the id asked for."""


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


def has_dataset(store: Store, name: str) -> bool:
    with store.session() as session:
        return session.scalar(select(DatasetRow.id).where(DatasetRow.name == name)) is not None


def has_sample(store: Store, name: str, sample_id: str) -> bool:
    """Whether the dataset exists and holds the sample."""
    with store.session() as session:
        return session.scalar(
            select(SampleRow.id).join(DatasetRow, DatasetRow.id == SampleRow.dataset_id)
            .where(DatasetRow.name == name, SampleRow.external_id == sample_id)) is not None


DATASET_IDS = "dataset_ids"  # dataset_id_of's ids in session.info (`remembered`)


def dataset_id_of(session: Session, name: str) -> int:
    """The dataset's row id, looked up once per session (`remembered`)."""
    return remembered(session, DATASET_IDS, name, lambda: _dataset_id(session, name))


def _dataset_id(session: Session, name: str) -> int:
    dataset_id = session.scalar(select(DatasetRow.id).where(DatasetRow.name == name))
    if dataset_id is None:
        names = list(session.scalars(select(DatasetRow.name).order_by(DatasetRow.name)))
        raise UnknownDatasetError(f"no dataset named {name!r} (datasets: {name_list(names)})")
    return dataset_id


def dataset_names(store: Store) -> list[str]:
    """Every dataset's name, sorted (no counts: cheap enough for every page load)."""
    with store.session() as session:
        return list(session.scalars(select(DatasetRow.name).order_by(DatasetRow.name)))


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


def dataset_origins(store: Store) -> dict[str, tuple[str | None, str | None]]:
    """Every dataset's (source, licence) by name: where its first import came from."""
    with store.session() as session:
        return {name: (source, license) for name, source, license in session.execute(
            select(DatasetRow.name, DatasetRow.source, DatasetRow.license))}


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
        given_answer=None if row.given_answer is None else GivenAnswer.from_dict(row.given_answer),
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
            rows: Sequence[Any] = session.scalars(
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
            select(func.count(SampleRow.id))
            .where(SampleRow.dataset_id == dataset_id_of(session, name))
        ) or 0


def count_given_answers(store: Store, name: str, limit: int | None = None) -> tuple[int, int]:
    """(samples, samples with a given answer) among the dataset's first `limit` samples in
    import order (all without a limit); UnknownDatasetError for an unknown name."""
    with store.session() as session:
        taken = (select(SampleRow.given_answer)
                 .where(SampleRow.dataset_id == dataset_id_of(session, name))
                 .order_by(SampleRow.id).limit(limit).subquery())
        samples, given = session.execute(
            select(func.count(), func.count(taken.c.given_answer)).select_from(taken)).one()
    return samples or 0, given or 0
