"""When the truth of each answer of a run became known, so that a policy's watch can follow
its labels in the order they came: a person's label has its own time; a reference answer or
a dataset flag is known as soon as the answer is stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, Label
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import MAIN


@dataclass(frozen=True)
class TruthTimes:
    """By the dataset's own sample id, for the samples the run answered."""

    answered: dict[str, datetime]  # when the run stored the sample's main answer
    labelled: dict[str, datetime]  # the newest of the sample's current labels by people


def truth_times(store: Store, run_id: int) -> TruthTimes:
    """When each answer of the run was stored and when its current labels were last given
    (a person's current label is their newest row, unless that row retracts it)."""
    main = (AnswerRow.sample_id == Label.sample_id) & (AnswerRow.run_id == run_id) & (
        AnswerRow.role == MAIN)
    current = (select(func.max(Label.id).label("id")).join(AnswerRow, main)
               .group_by(Label.sample_id, Label.annotator_id).subquery())
    with store.session() as session:
        answered = session.execute(
            select(SampleRow.external_id, AnswerRow.created_at)
            .join(SampleRow, SampleRow.id == AnswerRow.sample_id)
            .where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN)).tuples().all()
        labelled = session.execute(
            select(SampleRow.external_id, func.max(Label.created_at))
            .join(current, current.c.id == Label.id)
            .join(SampleRow, SampleRow.id == Label.sample_id)
            .where(Label.retracted.is_(False))
            .group_by(SampleRow.external_id)).tuples().all()
    return TruthTimes(dict(answered), dict(labelled))
