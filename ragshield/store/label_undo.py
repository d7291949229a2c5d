"""Undo: take back a person's newest step in a dataset, whichever kind it was (an answer
label, a sentence label or a skip). A skip is removed; a label change is taken back by a
new version (store/labels.py, store/sentence_labels.py), so the history shows every step."""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from ragshield.store import sentence_labels
from ragshield.store.database import Store
from ragshield.store.labels import (UNDO_RACED, ConcurrentLabelChangeError, annotator_id_of,
                                    newest_label)
from ragshield.store.models import Label, Sample, SentenceLabel, Skip
from ragshield.store.samples import dataset_id_of


def undo(store: Store, dataset: str, annotator: str) -> str | None:
    """Take back the annotator's newest step in the dataset that is not undone yet. Returns
    the sample's id, or None when there is nothing to undo. An undo that races another change
    of the same label (a double click) does nothing and says so, rather than taking back a
    second step."""
    try:
        return _undo(store, dataset, annotator)
    except IntegrityError:
        raise ConcurrentLabelChangeError(UNDO_RACED) from None


def _undo(store: Store, dataset: str, annotator: str) -> str | None:
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
        person = annotator_id_of(session, annotator)
        label = _newest_undoable(session, Label, dataset_id, person)
        sentence = _newest_undoable(session, SentenceLabel, dataset_id, person)
        skipped = session.execute(
            select(Skip, Sample.external_id).join(Sample, Sample.id == Skip.sample_id)
            .where(Sample.dataset_id == dataset_id, Skip.annotator_id == person)
            .order_by(Skip.created_at.desc(), Skip.id.desc()).limit(1)).first()
        steps: dict[int, tuple[Any, str]] = {
            kind: (step[0], step[1]) for kind, step in enumerate((label, sentence, skipped))
            if step is not None}
        if not steps:
            return None
        # The newest; on the same moment a skip, then a sentence label, goes first.
        kind = max(steps, key=lambda kind: (steps[kind][0].created_at, kind))
        row, external = steps[kind]
        if kind == 2:
            session.delete(row)
        elif kind == 1:
            sentence_labels.revert(session, row)
            _one_revert(session, SentenceLabel, row.id)
        else:
            _revert_label(session, row)
            _one_revert(session, Label, row.id)
        return external


Versioned = type[Label] | type[SentenceLabel]


def _newest_undoable(session: Session, table: Versioned, dataset_id: int, person: int
                     ) -> tuple[Any, str] | None:
    """The person's newest row of `table` in the dataset that is no undo and is not undone
    yet, with its sample's own id."""
    undone = aliased(table)
    found = session.execute(
        select(table, Sample.external_id).join(Sample, Sample.id == table.sample_id)
        .where(Sample.dataset_id == dataset_id, table.annotator_id == person,
               table.reverts_id.is_(None), ~exists().where(undone.reverts_id == table.id))
        .order_by(table.id.desc()).limit(1)).first()
    return (found[0], found[1]) if found is not None else None


def _one_revert(session: Session, table: Versioned, row_id: int) -> None:
    """Another undo may have reverted the same row since it was read (its revert then
    became the newest version, so previous_id did not collide): one revert each."""
    session.flush()
    if (session.scalar(select(func.count()).where(table.reverts_id == row_id)) or 0) > 1:
        raise ConcurrentLabelChangeError(UNDO_RACED)


def _revert_label(session: Session, row: Label) -> None:
    before = newest_label(session, row.sample_id, row.annotator_id, before=row.id)
    newest = newest_label(session, row.sample_id, row.annotator_id)
    assert newest is not None  # `row` itself, at least
    session.add(Label(
        sample_id=row.sample_id, annotator_id=row.annotator_id, reverts_id=row.id,
        label=before.label if before else row.label,
        answer_correct=before.answer_correct if before else None,
        note=before.note if before else None,
        passages_shown=list(before.passages_shown) if before else [],
        retracted=before.retracted if before else True,
        previous_id=newest.id))
