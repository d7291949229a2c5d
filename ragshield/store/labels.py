"""Human answerability labels in the store, as the metrics read them: each annotator's
newest label per sample (a change adds a row; older rows are history)."""

from __future__ import annotations

from dataclasses import dataclass
from sqlalchemy import func, select

from ragshield.store.database import Store
from ragshield.store.models import Label, Sample


@dataclass(frozen=True)
class CurrentLabel:
    annotator_id: int
    label: str  # answerable | unanswerable | unsure
    answer_correct: bool | None


def current_labels(store: Store, dataset_id: int) -> dict[int, list[CurrentLabel]]:
    """Sample row id -> the current label of every annotator who labelled it."""
    newest = (
        select(Label.sample_id, Label.annotator_id, func.max(Label.id).label("label_id"))
        .join(Sample, Sample.id == Label.sample_id)
        .where(Sample.dataset_id == dataset_id)
        .group_by(Label.sample_id, Label.annotator_id)
        .subquery()
    )
    query = select(Label).join(newest, Label.id == newest.c.label_id).order_by(Label.id)
    result: dict[int, list[CurrentLabel]] = {}
    with store.session() as session:
        for label in session.scalars(query):
            result.setdefault(label.sample_id, []).append(
                CurrentLabel(label.annotator_id, label.label, label.answer_correct))
    return result
