"""Datasets in the store: importing samples, counting them, and reading them back as Samples."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Iterator

from sqlalchemy import case, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from ragshield import strict_json
from ragshield.errors import UserError
from ragshield.names import check_name, name_list
from ragshield.store.database import Store, remembered
from ragshield.store.models import Dataset as DatasetRow
from ragshield.store.models import Passage as PassageRow
from ragshield.store.models import Sample as SampleRow
from ragshield.types import GivenAnswer, Passage, Sample

BATCH_SIZE = 1000


class UnknownDatasetError(UserError, LookupError):
    """No dataset has the name asked for."""


class UnknownSampleError(UserError, LookupError):
    """The dataset has no sample with the id asked for."""


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
