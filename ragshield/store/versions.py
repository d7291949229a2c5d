"""Cheap version queries: numbers that change whenever a run's answers or verdicts, its
dataset's labels, or a dataset's samples and passages change, so that caches of what was
built from them (ragshield.services.runs.run_tables) know when to build again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, Dataset, Label, Passage, SentenceLabel, VerdictRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import get_run


@dataclass(frozen=True)
class RunVersion:
    # The run's answer count, newest answer id, newest verdict id, and its dataset's name
    # (renaming the dataset rewrites the run's config, which the records hold).
    records: tuple[Any, ...]
    # The newest answer label and sentence label (or retraction) of the run's dataset.
    labels: tuple[int | None, int | None]


def run_version(store: Store, run_id: int) -> RunVersion:
    """Changes whenever an answer, a verdict or a label of the run's dataset is added, and
    when the dataset is renamed."""
    run = get_run(store, run_id)
    with store.session() as session:
        answers = session.execute(
            select(func.count(AnswerRow.id), func.max(AnswerRow.id))
            .where(AnswerRow.run_id == run_id)).one()
        verdicts = session.scalar(
            select(func.max(VerdictRow.id)).join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
            .where(AnswerRow.run_id == run_id))
        answer_label, sentence_label = (session.scalar(
            select(func.max(table.id)).join(SampleRow, SampleRow.id == table.sample_id)
            .where(SampleRow.dataset_id == run.dataset_id)) if run.dataset_id else None
            for table in (Label, SentenceLabel))
    return RunVersion(records=(*answers, verdicts, run.dataset),
                      labels=(answer_label, sentence_label))


def dataset_version(store: Store, dataset: str) -> tuple[Any, ...]:
    """Changes when a sample or passage is added to the dataset, and when a re-import
    rewrites samples (their passages are inserted again, with new ids; on SQLite, whose ids
    can be reused, not when the rewritten passages were the newest ones)."""
    with store.session() as session:
        samples = session.execute(
            select(func.count(SampleRow.id), func.max(SampleRow.id))
            .join(Dataset, Dataset.id == SampleRow.dataset_id).where(Dataset.name == dataset)).one()
        passages = session.execute(
            select(func.count(Passage.id), func.max(Passage.id))
            .join(SampleRow, SampleRow.id == Passage.sample_id)
            .join(Dataset, Dataset.id == SampleRow.dataset_id).where(Dataset.name == dataset)).one()
    return (*samples, *passages)
