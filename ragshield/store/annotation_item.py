"""What an annotator sees for one sample: the question, the passages, the answer of a run
with its judges' verdicts, other people's current labels, their own current label and the
guidelines. Blind mode leaves out the verdicts and the other people's labels, so that
neither can sway the label."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from ragshield.store.annotation_queue import run_for_dataset
from ragshield.store.database import Store
from ragshield.store.labels import annotator_id_of, annotator_names, current_labels, sample_row_id
from ragshield.store.models import AnswerRow, Dataset, Sample, VerdictRow
from ragshield.store.runs import MAIN


@dataclass
class AnnotationItem:
    dataset: str
    sample_id: str
    question: str
    passages: list[dict[str, Any]]  # what the answer was given (the run's), else the dataset's
    answer: str | None = None
    answer_id: int | None = None
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # empty in blind mode
    others: list[dict[str, Any]] = field(default_factory=list)  # empty in blind mode
    mine: dict[str, Any] | None = None
    guidelines: str | None = None
    blind: bool = False
    meta: dict[str, Any] = field(default_factory=dict)  # the sample's (its `history`, ...)


def annotation_item(store: Store, dataset: str, sample_id: str, annotator: str, *,
                    blind: bool = False, run_id: int | None = None) -> AnnotationItem:
    with store.session() as session:
        row_id = sample_row_id(session, dataset, sample_id)
        person = annotator_id_of(session, annotator)
        sample = session.scalars(select(Sample).where(Sample.id == row_id)
                                 .options(selectinload(Sample.passages))).one()
        dataset_row = session.get_one(Dataset, sample.dataset_id)
        run_id = run_for_dataset(session, sample.dataset_id, run_id)
        answer = session.scalar(select(AnswerRow).where(
            AnswerRow.run_id == run_id, AnswerRow.sample_id == row_id,
            AnswerRow.role == MAIN)) if run_id is not None else None
        passages = ([_shown_fields(p) for p in answer.passages if isinstance(p, dict)]
                    if answer is not None and answer.passages else
                    [{"text": p.text, "title": p.title, "doc_id": p.doc_id}
                     for p in sample.passages])
        item = AnnotationItem(dataset=dataset, sample_id=sample_id, question=sample.question,
                              passages=passages, answer=answer.text if answer else None,
                              answer_id=answer.id if answer else None,
                              guidelines=dataset_row.guidelines, blind=blind,
                              meta=dict(sample.meta or {}))
        if answer is not None and not blind:
            item.verdicts = [
                {"judge": v.judge, "keep": v.keep, "score": v.score, "rationale": v.rationale,
                 "details": v.details}
                for v in session.scalars(select(VerdictRow).where(
                    VerdictRow.answer_id == answer.id).order_by(VerdictRow.id))]
    labels = current_labels(store, sample.dataset_id, row_id).get(row_id, [])
    with store.session() as session:
        # Read after the labels, which may hold a person's first label made meanwhile (each
        # SQLite read, and each PostgreSQL statement, sees the newest commits).
        names = annotator_names(session)
    for label in labels:
        entry = {"annotator": names[label.annotator_id], "label": label.label,
                 "answer_correct": label.answer_correct}
        if label.annotator_id == person:
            item.mine = entry
        elif not blind:
            item.others.append(entry)
    return item


def _shown_fields(passage: dict[str, Any]) -> dict[str, Any]:
    """A run's passage as an annotator is shown it and a label records it: its plain fields
    (text, title, id, score), without the nested metadata a retriever may add."""
    return {key: value for key, value in passage.items()
            if value is None or isinstance(value, (str, int, float))}
