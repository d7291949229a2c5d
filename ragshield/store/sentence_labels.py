"""People's labels of the sentences of an answer: supported by the passages, not supported,
or can't tell (models.SentenceLabel).

A sentence label is kept like an answerability label (store/labels.py): rows are never
updated, a change adds a version, an undo adds one too, a request id is stored once, and two
people, or two clicks, racing for the same version are settled by the database. It belongs to
the answer's text and the sentence's span in it: the client says which text it showed, and a
label for an answer whose text has changed since, or for a span outside it, is refused.

An answer's label follows from its sentences (`answer_flag`): every sentence of the answer
(claims.split_claims) covered by "supported" labels makes it faithful, one "unsupported"
sentence makes it unfaithful, anything else says nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ragshield.claims import split_claims
from ragshield.store.database import Store
from ragshield.store.labels import (REQUEST_ID_REUSED, CurrentLabel, CurrentSentenceLabel,
                                    LabelValueError, RequestIdReusedError, annotator_id_of,
                                    check_request_id, sample_row_id, settle_races)
from ragshield.store.models import SENTENCE_LABEL_VALUES, AnswerRow, Sample, SentenceLabel
from ragshield.store.samples import dataset_id_of

SUPPORTED, UNSUPPORTED, UNSURE = SENTENCE_LABEL_VALUES


class AnswerChangedError(LabelValueError):
    """The answer's text is not the one the label was given on."""


@dataclass(frozen=True)
class SentenceLabelRecord:
    id: int
    sample_id: str  # the dataset's own id
    annotator: str
    start: int
    end: int
    sentence: str
    label: str
    retracted: bool
    created_at: datetime
    stored: bool = True  # False: an identical submission was already there


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_sentence_label(label: str) -> str:
    if label not in SENTENCE_LABEL_VALUES:
        raise LabelValueError(f"field 'label' must be one of {', '.join(SENTENCE_LABEL_VALUES)}, "
                              f"got {label!r}")
    return label


def _answer_text(session: Session, sample: int, answer_id: int) -> str:
    row = session.get(AnswerRow, answer_id)
    if row is None or row.sample_id != sample:
        raise LabelValueError(f"field 'answer_id': answer {answer_id} is not an answer of this "
                              "sample; nothing stored")
    if not row.text:
        raise LabelValueError(f"field 'answer_id': answer {answer_id} has no text to label")
    return row.text


def _check_span(text: str, start: int, end: int) -> None:
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        raise LabelValueError("fields 'start' and 'end' must be whole numbers")
    if not 0 <= start < end <= len(text):
        raise LabelValueError(f"span {start}..{end} is outside the answer (0..{len(text)}); "
                              "nothing stored")
    if not text[start:end].strip():
        raise LabelValueError(f"span {start}..{end} holds no words of the answer; nothing stored")


def _record(row: SentenceLabel, sample_id: str, annotator: str,
            stored: bool = True) -> SentenceLabelRecord:
    return SentenceLabelRecord(row.id, sample_id, annotator, row.span_start, row.span_end,
                               row.sentence, row.label, row.retracted, row.created_at, stored)


def _key_of(row: SentenceLabel) -> dict[str, Any]:
    return {"sample_id": row.sample_id, "answer_sha256": row.answer_sha256,
            "span_start": row.span_start, "span_end": row.span_end,
            "annotator_id": row.annotator_id}


def _newest(session: Session, key: dict[str, Any], before: int | None = None
            ) -> SentenceLabel | None:
    """The newest version of a person's label on a sentence (`key`: _key_of), older than row
    `before` when given."""
    query = select(SentenceLabel).filter_by(**key)
    if before is not None:
        query = query.where(SentenceLabel.id < before)
    return session.scalar(query.order_by(SentenceLabel.id.desc()).limit(1))


def add_sentence_label(store: Store, dataset: str, sample_id: str, annotator: str, *,
                       answer_id: int, start: int, end: int, label: str,
                       answer_text: str | None = None,
                       request_id: str | None = None) -> SentenceLabelRecord:
    """Label answer[start:end] of the stored answer `answer_id`. `answer_text` is the text
    the person was shown: when it is not the stored text, nothing is stored. Submitting the
    person's current label again, or a request id seen before with the same content, stores
    nothing (stored=False); a request id seen with other content is an error."""
    check_sentence_label(label)
    check_request_id(request_id)

    def attempt() -> SentenceLabelRecord:
        with store.session() as session:
            sample = sample_row_id(session, dataset, sample_id)
            person = annotator_id_of(session, annotator)
            text = _answer_text(session, sample, answer_id)
            if answer_text is not None and answer_text != text:
                raise AnswerChangedError(
                    f"the answer of {sample_id} changed since it was shown; nothing stored "
                    "(open the sample again)")
            _check_span(text, start, end)
            key = {"sample_id": sample, "answer_sha256": text_digest(text),
                   "span_start": start, "span_end": end, "annotator_id": person}
            if request_id is not None:
                seen = session.scalar(select(SentenceLabel)
                                      .where(SentenceLabel.request_id == request_id))
                if seen is not None:
                    if (_key_of(seen), seen.label) != (key, label):
                        raise RequestIdReusedError(REQUEST_ID_REUSED.format(request_id))
                    return _record(seen, sample_id, annotator, stored=False)
            current = _newest(session, key)
            if current is not None and not current.retracted and current.label == label:
                return _record(current, sample_id, annotator, stored=False)
            row = SentenceLabel(**key, answer_id=answer_id, sentence=text[start:end],
                                label=label, request_id=request_id,
                                previous_id=current.id if current is not None else None)
            session.add(row)
            session.flush()
            return _record(row, sample_id, annotator)

    return settle_races(attempt)


def revert(session: Session, row: SentenceLabel) -> None:
    """Take back `row` with a new version: the one before it, or a retracted row when there
    was none (label_undo checks that no other undo reverted it meanwhile)."""
    before = _newest(session, _key_of(row), before=row.id)
    newest = _newest(session, _key_of(row))
    session.add(SentenceLabel(
        **_key_of(row), answer_id=row.answer_id, sentence=row.sentence,
        label=before.label if before else row.label,
        retracted=before.retracted if before else True, reverts_id=row.id,
        previous_id=newest.id if newest is not None else None))


# -- reading ------------------------------------------------------------------------------

def current_sentence_labels(store: Store, dataset_id: int, sample: int | None = None
                            ) -> dict[int, list[CurrentSentenceLabel]]:
    """Sample row id -> every person's current, not retracted, sentence labels (`sample`:
    that sample's only), oldest first."""
    newest = (select(func.max(SentenceLabel.id).label("label_id"))
              .join(Sample, Sample.id == SentenceLabel.sample_id)
              .where(Sample.dataset_id == dataset_id,
                     *([SentenceLabel.sample_id == sample] if sample is not None else []))
              .group_by(SentenceLabel.sample_id, SentenceLabel.answer_sha256,
                        SentenceLabel.span_start, SentenceLabel.span_end,
                        SentenceLabel.annotator_id)
              .subquery())
    result: dict[int, list[CurrentSentenceLabel]] = {}
    with store.session() as session:
        for row in session.scalars(
                select(SentenceLabel).join(newest, SentenceLabel.id == newest.c.label_id)
                .where(SentenceLabel.retracted.is_(False)).order_by(SentenceLabel.id)):
            result.setdefault(row.sample_id, []).append(CurrentSentenceLabel(
                row.annotator_id, row.answer_sha256, row.span_start, row.span_end, row.label))
    return result


def sentence_labels_of(store: Store, dataset: str, sample_id: str, answer_text: str
                       ) -> list[tuple[int, CurrentSentenceLabel]]:
    """(sample row id, label) for the current sentence labels on this text of the sample's
    answer, of every person."""
    with store.session() as session:
        sample = sample_row_id(session, dataset, sample_id)
        dataset_id = dataset_id_of(session, dataset)
    digest = text_digest(answer_text)
    return [(sample, label) for label in current_sentence_labels(store, dataset_id, sample)
            .get(sample, []) if label.answer_sha256 == digest]


def answer_flag(answer_text: str, labels: list[CurrentSentenceLabel]) -> bool | None:
    """One person's sentence labels on `answer_text` as a label of the whole answer: False
    when a sentence is marked unsupported, True when every claim of the answer lies inside
    a span marked supported, else None. Labels on other texts are not read."""
    digest = text_digest(answer_text)
    mine = [label for label in labels if label.answer_sha256 == digest]
    if any(label.label == UNSUPPORTED for label in mine):
        return False
    supported = [(label.start, label.end) for label in mine if label.label == SUPPORTED]
    claims = split_claims(answer_text)
    if claims and all(any(start <= c.start and c.end <= end for start, end in supported)
                      for c in claims):
        return True
    return None


def with_sentence_labels(labels: dict[int, list[CurrentLabel]],
                         sentences: dict[int, list[CurrentSentenceLabel]]
                         ) -> dict[int, list[CurrentLabel]]:
    """The current answer labels (labels.current_labels) with each person's sentence labels
    on the sample joined in: someone who labelled sentences only gets a label of None."""
    joined = {sample: list(current) for sample, current in labels.items()}
    for sample, rows in sentences.items():
        people: dict[int, list[CurrentSentenceLabel]] = {}
        for row in rows:
            people.setdefault(row.annotator_id, []).append(row)
        current = joined.setdefault(sample, [])
        given = {label.annotator_id: index for index, label in enumerate(current)}
        for person, mine in people.items():
            if person in given:
                current[given[person]] = replace(current[given[person]], sentences=tuple(mine))
            else:
                current.append(CurrentLabel(person, None, None, sentences=tuple(mine)))
    return joined


def person_flag(label: CurrentLabel, answer_text: str | None,
                sentences_say: bool | None) -> bool | None:
    """What one person says of the whole answer `answer_text`: their own flag on it when they
    gave one (a flag on another answer says nothing of this one), else what their sentence
    labels on it add up to (`sentences_say`: answer_flag of them)."""
    if label.answer_correct is not None and label.answer_text in (None, answer_text):
        return label.answer_correct
    return sentences_say
