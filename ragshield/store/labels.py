"""Human answerability labels: adding them (idempotently), their history, undo and skip,
progress, per-dataset guidelines, and the current labels the metrics read.

A label is never updated: a change adds a row, and a person's current label on a sample is
their newest row. An undo adds a row too (restoring the state before the undone row, or a
`retracted` row when there was none), so the history shows every step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from ragshield.errors import UserError
from ragshield.names import check_name, name_list
from ragshield.store.database import Store, remembered
from ragshield.store.models import (LABEL_VALUES, Annotator, AnswerRow, Dataset, Label, Sample,
                                    Skip, utcnow)
from ragshield.store.samples import UnknownSampleError, dataset_id_of


class UnknownAnnotatorError(UserError, LookupError):
    """No annotator has the name asked for."""


class LabelValueError(UserError, ValueError):
    """A label field has a value that is not allowed."""


class RequestIdReusedError(LabelValueError):
    """A request id came back with a different label than the one it was first sent with."""


class ConcurrentLabelChangeError(LabelValueError):
    """Another request changed the same label at the same moment; nothing was done."""


REQUEST_ID_REUSED = ("request id {!r} was already used for another label; nothing was stored "
                     "(send each new label with a new request id)")
UNDO_RACED = ("the label changed at the same moment (another tab or a double click); nothing "
              "was undone")


# A submission that loses a race for the next version re-reads and decides again; each
# retry means another request succeeded, so a few suffice even with many people at once.
RACE_ATTEMPTS = 8
REQUEST_ID_MAX_LENGTH = 64  # the column's size
MAX_PASSAGES_SHOWN = 1000
T = TypeVar("T")
ROLE_MAX_LENGTH = 100  # the column's size


@dataclass(frozen=True)
class LabelRecord:
    id: int
    sample_id: str  # the dataset's own id
    annotator: str
    label: str
    answer_correct: bool | None
    note: str | None
    passages_shown: list[Any]
    retracted: bool
    created_at: datetime
    stored: bool = True  # False: an identical submission was already there


@dataclass(frozen=True)
class CurrentSentenceLabel:
    """A person's current label on one span of one answer text (store/sentence_labels.py)."""
    annotator_id: int
    answer_sha256: str
    start: int
    end: int
    label: str  # supported | unsupported | unsure


@dataclass(frozen=True)
class CurrentLabel:
    annotator_id: int
    label: str | None  # answerable | unanswerable | unsure; None: sentence labels only
    answer_correct: bool | None
    answer_text: str | None = None  # the answer `answer_correct` was given on, when shown
    # The person's sentence labels on the sample (sentence_labels.with_sentence_labels).
    sentences: tuple[CurrentSentenceLabel, ...] = ()


@dataclass(frozen=True)
class Progress:
    annotator: str
    labelled: int
    skipped: int
    total: int


def check_request_id(request_id: str | None) -> None:
    if request_id is not None and not 0 < len(request_id) <= REQUEST_ID_MAX_LENGTH:
        raise LabelValueError(f"field 'request_id' must be 1 to {REQUEST_ID_MAX_LENGTH} characters")


def check_label_value(label: str) -> str:
    if label not in LABEL_VALUES:
        raise LabelValueError(f"field 'label' must be one of {', '.join(LABEL_VALUES)}, "
                              f"got {label!r}")
    return label


# -- annotators ---------------------------------------------------------------------------

def add_annotator(store: Store, name: str, role: str | None = None) -> int:
    """The annotator's id, creating them when new (a given role replaces the old one)."""
    name = check_name(name, "annotator")
    if role is None and name in store.annotator_ids:
        return store.annotator_ids[name]
    role = check_name(role, "role", ROLE_MAX_LENGTH) if role is not None else None
    try:
        annotator_id = _add_annotator(store, name, role)
    except IntegrityError:
        # Another request added the same new name meanwhile (two tabs, a double click):
        # a second look finds that row.
        annotator_id = _add_annotator(store, name, role)
    store.annotator_ids[name] = annotator_id
    return annotator_id


def _add_annotator(store: Store, name: str, role: str | None) -> int:
    with store.session() as session:
        annotator = session.scalar(select(Annotator).where(Annotator.name == name))
        if annotator is None:
            annotator = Annotator(name=name, role=role)
            session.add(annotator)
        elif role is not None:
            annotator.role = role
        session.flush()
        return annotator.id


def annotator_names(session: Session) -> dict[int, str]:
    return dict(session.execute(select(Annotator.id, Annotator.name)).tuples().all())


def annotator_id_of(session: Session, name: str) -> int:
    """The annotator's row id, looked up once per session (`remembered`)."""
    return remembered(session, "annotator_ids", name, lambda: _annotator_id(session, name))


def _annotator_id(session: Session, name: str) -> int:
    annotator_id = session.scalar(select(Annotator.id).where(Annotator.name == name))
    if annotator_id is None:
        known = list(session.scalars(select(Annotator.name).order_by(Annotator.name)))
        raise UnknownAnnotatorError(
            f"no annotator named {name!r} (annotators: {name_list(known)}; add one with "
            "`python -m ragshield labels annotator NAME`)")
    return annotator_id


def sample_row_id(session: Session, dataset: str, sample_id: str) -> int:
    row_id = session.scalar(select(Sample.id).where(
        Sample.dataset_id == dataset_id_of(session, dataset), Sample.external_id == sample_id))
    if row_id is None:
        raise UnknownSampleError(f"dataset {dataset!r} has no sample {sample_id!r}")
    return row_id


# -- labels -------------------------------------------------------------------------------

def _record(label: Label, sample_id: str, annotator: str, stored: bool = True) -> LabelRecord:
    shown = label.passages_shown
    return LabelRecord(id=label.id, sample_id=sample_id, annotator=annotator, label=label.label,
                       answer_correct=label.answer_correct, note=label.note,
                       # Rows imported before fields were checked may hold any JSON here.
                       passages_shown=list(shown) if isinstance(shown, list) else [shown],
                       retracted=label.retracted,
                       created_at=label.created_at, stored=stored)


def newest_label(session: Session, sample: int, annotator: int,
                 before: int | None = None) -> Label | None:
    query = select(Label).where(Label.sample_id == sample, Label.annotator_id == annotator)
    if before is not None:
        query = query.where(Label.id < before)
    return session.scalar(query.order_by(Label.id.desc()).limit(1))


def check_passages_shown(value: Any) -> list[Any]:
    """What an annotator was shown, as stored: a list of passage ids (text or numbers) or of
    passages (objects of text, numbers or null), at most MAX_PASSAGES_SHOWN of them."""
    if not isinstance(value, list):
        raise LabelValueError(f"field 'passages_shown' must be a list, got {type(value).__name__}")
    if len(value) > MAX_PASSAGES_SHOWN:
        raise LabelValueError(f"field 'passages_shown' holds {len(value)} passages; "
                              f"at most {MAX_PASSAGES_SHOWN}")
    for item in value:
        if isinstance(item, dict):
            if all(isinstance(k, str) and _is_scalar(v) for k, v in item.items()):
                continue
        elif _is_scalar(item) and item is not None:
            continue
        raise LabelValueError("field 'passages_shown' must list passage ids or passages "
                              f"(objects of text, numbers or null), got {item!r:.80}")
    return value


def _is_scalar(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _same_submission(row: Label, sample: int, person: int, label: str,
                     answer_correct: bool | None, note: str | None) -> bool:
    return (row.sample_id, row.annotator_id, row.label, row.answer_correct, row.note) == (
        sample, person, label, answer_correct, note)


def add_label(store: Store, dataset: str, sample_id: str, annotator: str, label: str, *,
              answer_correct: bool | None = None, note: str | None = None,
              passages_shown: list[Any] | None = None, answer_id: int | None = None,
              request_id: str | None = None) -> LabelRecord:
    """Record a label. Submitting what is already the annotator's current label, or a
    request id seen before with the same content, stores nothing and returns the existing
    row (stored=False); a request id seen with other content is an error.

    Concurrent submissions are settled by the database (see Label): the one that loses the
    race to add the next version reads the new current label and decides again."""
    check_label_value(label)
    note = note.strip() or None if note else None
    shown = check_passages_shown(list(passages_shown or []))
    check_request_id(request_id)

    def attempt() -> LabelRecord:
        with store.session() as session:
            sample = sample_row_id(session, dataset, sample_id)
            person = annotator_id_of(session, annotator)
            if request_id is not None:
                seen = session.scalar(select(Label).where(Label.request_id == request_id))
                if seen is not None:
                    if not _same_submission(seen, sample, person, label, answer_correct, note):
                        raise RequestIdReusedError(REQUEST_ID_REUSED.format(request_id))
                    return _record(seen, sample_id, annotator, stored=False)
            current = newest_label(session, sample, person)
            if (current is not None and not current.retracted
                    and _same_submission(current, sample, person, label, answer_correct, note)):
                return _record(current, sample_id, annotator, stored=False)
            row = Label(sample_id=sample, annotator_id=person, answer_id=answer_id,
                        label=label, answer_correct=answer_correct, note=note,
                        passages_shown=shown, request_id=request_id,
                        previous_id=current.id if current is not None else None)
            session.add(row)
            session.execute(delete(Skip).where(Skip.sample_id == sample,
                                               Skip.annotator_id == person))
            session.flush()
            return _record(row, sample_id, annotator)

    return settle_races(attempt)


def settle_races(attempt: Callable[[], T]) -> T:
    """`attempt()`, again while it loses a race for the next version (IntegrityError): the
    loser re-reads and decides again, and each loss means another request succeeded."""
    for tries in range(1, RACE_ATTEMPTS + 1):
        try:
            return attempt()
        except IntegrityError:
            if tries == RACE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def label_history(store: Store, dataset: str, sample_id: str) -> list[LabelRecord]:
    """Every label row of a sample, oldest first."""
    with store.session() as session:
        sample = sample_row_id(session, dataset, sample_id)
        rows = session.execute(
            select(Label, Annotator.name).join(Annotator, Annotator.id == Label.annotator_id)
            .where(Label.sample_id == sample).order_by(Label.id)).tuples().all()
        return [_record(label, sample_id, name) for label, name in rows]


def skip(store: Store, dataset: str, sample_id: str, annotator: str) -> None:
    """Pass over a sample. One the annotator labelled is refused (LabelValueError): it
    would count as labelled and as skipped (another tab still showing it, a client)."""
    try:
        with store.session() as session:
            sample = sample_row_id(session, dataset, sample_id)
            person = annotator_id_of(session, annotator)
            labelled = session.scalars(_current(dataset_id_of(session, dataset), sample)
                                       .where(Label.annotator_id == person)).first()
            if labelled is not None:
                raise LabelValueError(f"{sample_id} already has your label "
                                      f"({labelled.label}): nothing skipped")
            if session.scalar(select(Skip.id).where(Skip.sample_id == sample,
                                                    Skip.annotator_id == person)) is None:
                session.add(Skip(sample_id=sample, annotator_id=person))
    except IntegrityError:
        # The same skip was stored meanwhile by another request (a double click): done. Any
        # other integrity failure would be raised again by a fresh look.
        with store.session() as session:
            if session.scalar(select(Skip.id).where(
                    Skip.sample_id == sample_row_id(session, dataset, sample_id),
                    Skip.annotator_id == annotator_id_of(session, annotator))) is None:
                raise


# -- reading ------------------------------------------------------------------------------

def _current(dataset_id: int, sample: int | None = None) -> Select[Label]:
    """The current, not retracted, label rows of a dataset's samples (or of one sample)."""
    newest = (
        select(func.max(Label.id).label("label_id"))
        .join(Sample, Sample.id == Label.sample_id)
        .where(Sample.dataset_id == dataset_id,
               *([Label.sample_id == sample] if sample is not None else []))
        .group_by(Label.sample_id, Label.annotator_id)
        .subquery()
    )
    return (select(Label).join(newest, Label.id == newest.c.label_id)
            .where(Label.retracted.is_(False)))


def current_labels(store: Store, dataset_id: int,
                   sample: int | None = None) -> dict[int, list[CurrentLabel]]:
    """Sample row id -> the current label of every annotator who has one; `sample` (a row
    id) reads that sample's only."""
    result: dict[int, list[CurrentLabel]] = {}
    with store.session() as session:
        current = _current(dataset_id, sample).subquery()
        for label, text in session.execute(
                select(aliased(Label, current), AnswerRow.text)
                .outerjoin(AnswerRow, AnswerRow.id == current.c.answer_id)
                .order_by(current.c.id)):
            result.setdefault(label.sample_id, []).append(
                CurrentLabel(label.annotator_id, label.label, label.answer_correct, text))
    return result


def progress(store: Store, dataset: str) -> list[Progress]:
    """Per annotator who has labelled or skipped in the dataset: samples with a current
    label, samples skipped, and the dataset's size."""
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
        total = session.scalar(select(func.count(Sample.id)).where(Sample.dataset_id == dataset_id))
        current = _current(dataset_id).subquery()
        labelled = dict(session.execute(
            select(Annotator.name, func.count())
            .join(current, current.c.annotator_id == Annotator.id)
            .group_by(Annotator.name)).tuples().all())
        skipped = dict(session.execute(
            select(Annotator.name, func.count()).join(Skip, Skip.annotator_id == Annotator.id)
            .join(Sample, Sample.id == Skip.sample_id).where(Sample.dataset_id == dataset_id)
            .group_by(Annotator.name)).tuples().all())
    return [Progress(name, labelled.get(name, 0), skipped.get(name, 0), total or 0)
            for name in sorted(set(labelled) | set(skipped))]


# -- guidelines ---------------------------------------------------------------------------

def get_guidelines(store: Store, dataset: str) -> str | None:
    with store.session() as session:
        return session.scalar(select(Dataset.guidelines).where(
            Dataset.id == dataset_id_of(session, dataset)))


def set_guidelines(store: Store, dataset: str, markdown: str) -> None:
    with store.session() as session:
        row = session.get_one(Dataset, dataset_id_of(session, dataset))
        row.guidelines, row.guidelines_updated_at = markdown, utcnow()


def current_label_table(store: Store, dataset: str | None = None
                        ) -> list[tuple[int, str, str | None]]:
    """(sample row id, annotator name, label) for every current label, of one dataset or
    of all: the ratings the agreement statistics take."""
    with store.session() as session:
        dataset_ids = ([dataset_id_of(session, dataset)] if dataset is not None
                       else list(session.scalars(select(Dataset.id))))
    labels = [(sample, label) for dataset_id in dataset_ids
              for sample, current in current_labels(store, dataset_id).items()
              for label in current]
    with store.session() as session:
        names = annotator_names(session)  # after the labels: see annotation_item
    return [(sample, names[label.annotator_id], label.label) for sample, label in labels]
