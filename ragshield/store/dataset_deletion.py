"""Deleting a dataset with its samples and passages, unless runs or labels still use it.

The rows go by the database's own ON DELETE CASCADE (samples -> passages, labels, skips,
answers -> verdicts), so one DELETE per table touched suffices on SQLite and PostgreSQL alike.
Runs point at their dataset with ON DELETE SET NULL; a forced delete removes them explicitly,
since a run without its samples has no answers left to show.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ragshield.errors import UserError
from ragshield.store.database import Store, forget
from ragshield.store.models import Dataset, Label, Passage, Run, Sample
from ragshield.store.samples import DATASET_IDS, dataset_id_of


@dataclass(frozen=True)
class DatasetUsage:
    """What deleting a dataset removes."""

    dataset: str
    samples: int
    passages: int
    runs: list[int]  # ids of the runs over the dataset
    labels: int  # label rows (every version) on its samples
    annotators: int  # people who gave those labels

    @property
    def in_use(self) -> bool:
        return bool(self.runs or self.labels)

    def references(self) -> str:
        """The runs and labels that refer to the dataset, for a person to read."""
        parts = []
        if self.runs:
            parts.append(f"run(s) {', '.join(map(str, self.runs))}")
        if self.labels:
            parts.append(f"{self.labels} label(s) by {self.annotators} annotator(s)")
        return " and ".join(parts)


class DatasetInUseError(UserError, ValueError):
    """Runs or labels refer to the dataset and the deletion was not forced."""

    def __init__(self, usage: DatasetUsage) -> None:
        self.usage = usage
        super().__init__(
            f"dataset {usage.dataset!r} is used by {usage.references()}; "
            "delete with --force to remove them too"
        )


def _usage(session: Session, name: str) -> tuple[int, DatasetUsage]:
    dataset_id = dataset_id_of(session, name)
    sample_ids = select(Sample.id).where(Sample.dataset_id == dataset_id)
    labels, annotators = session.execute(
        select(func.count(Label.id), func.count(func.distinct(Label.annotator_id)))
        .where(Label.sample_id.in_(sample_ids))
    ).one()
    usage = DatasetUsage(
        dataset=name,
        samples=session.scalar(select(func.count()).select_from(sample_ids.subquery())) or 0,
        passages=session.scalar(
            select(func.count(Passage.id)).where(Passage.sample_id.in_(sample_ids))) or 0,
        runs=list(session.scalars(
            select(Run.id).where(Run.dataset_id == dataset_id).order_by(Run.id))),
        labels=labels,
        annotators=annotators,
    )
    return dataset_id, usage


def dataset_usage(store: Store, name: str) -> DatasetUsage:
    """What `delete_dataset(store, name)` would remove; UnknownDatasetError if none is named so."""
    with store.session() as session:
        return _usage(session, name)[1]


def delete_dataset(store: Store, name: str, *, force: bool = False) -> DatasetUsage:
    """Delete the dataset, its samples and passages in one transaction, and return what went.

    When runs or labels refer to it, raise DatasetInUseError unless `force`; with `force` its
    runs (with their answers and verdicts) and the labels on its samples go too.
    """
    with store.session() as session:
        dataset_id, usage = _usage(session, name)
        if usage.in_use and not force:
            raise DatasetInUseError(usage)
        if usage.runs:
            session.execute(delete(Run).where(Run.id.in_(usage.runs)))
        session.execute(delete(Dataset).where(Dataset.id == dataset_id))
        forget(session, DATASET_IDS, name)
    return usage
