"""Sentence labels by people (issue 57): the sentences of the answer an annotator is shown,
each with the support judge's mark and the current labels on it, and storing a label on one.

The sentences are the support judge's spans where the answer has its verdict (what the judge
marked is what people check), else the answer split as that judge would split it
(claims.split_claims). Blind mode leaves out the judge's marks and other people's labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select

from ragshield.claims import split_claims
from ragshield.errors import UserError
from ragshield.services.data.datasets import ensure_demo_dataset
from ragshield.services.questions.claim_marks import SUPPORT
from ragshield.store.annotation_item import AnnotationItem, annotation_item
from ragshield.store.database import Store
from ragshield.store.labels import LabelValueError, annotator_id_of, annotator_names
from ragshield.store.models import SENTENCE_LABEL_VALUES, VerdictRow
from ragshield.store.sentence_label_transfer import (export_sentence_labels,
                                                    import_sentence_labels)
from ragshield.store.sentence_labels import (SentenceLabelRecord, add_sentence_label,
                                             sentence_labels_of)

__all__ = ["SENTENCE_LABEL_VALUES", "AnswerSentence", "SentenceView", "export_sentence_labels",
           "import_sentence_label_file", "item_sentences", "label_sentence", "sentence_view",
           "sentences_of"]


@dataclass(frozen=True)
class AnswerSentence:
    index: int  # 1-based, as people count them
    start: int
    end: int
    text: str  # answer[start:end]
    score: float | None = None  # the support judge's, None in blind mode or without a verdict
    supported: bool | None = None  # the judge's mark
    mine: str | None = None  # the annotator's current label on it
    others: dict[str, str] = field(default_factory=dict)  # name -> label; empty in blind mode


@dataclass(frozen=True)
class SentenceView:
    item: AnnotationItem
    sentences: list[AnswerSentence]


def _judge_claims(store: Store, answer_id: int, answer: str) -> list[dict[str, Any]] | None:
    """The claims of the answer's support verdict, when it has one whose every span lies
    inside the answer (read here, not from the item: a blind item carries no verdict, and
    its sentences are still the judge's)."""
    with store.session() as session:
        details = session.scalar(select(VerdictRow.details).where(
            VerdictRow.answer_id == answer_id, VerdictRow.judge == SUPPORT)
            .order_by(VerdictRow.id.desc()).limit(1))
    claims = details.get("claims") if isinstance(details, dict) else None
    if isinstance(claims, list) and claims and all(
            isinstance(c, dict) and isinstance(c.get("start"), int)
            and isinstance(c.get("end"), int) and 0 <= c["start"] < c["end"] <= len(answer)
            for c in claims):
        return claims
    return None


def sentences_of(answer: str, claims: list[dict[str, Any]] | None) -> list[AnswerSentence]:
    """The answer's sentences: the support judge's `claims` with its marks, else the answer
    split as that judge splits it."""
    if claims is None:
        return [AnswerSentence(i, c.start, c.end, answer[c.start:c.end])
                for i, c in enumerate(split_claims(answer), 1)]
    return [AnswerSentence(i, c["start"], c["end"], answer[c["start"]:c["end"]],
                           c["score"] if isinstance(c.get("score"), (int, float)) else None,
                           c["supported"] if isinstance(c.get("supported"), bool) else None)
            for i, c in enumerate(claims, 1)]


def sentence_view(store: Store, dataset: str, sample_id: str, annotator: str, *,
                  blind: bool = False, run_id: int | None = None) -> SentenceView:
    """What the annotator is shown of the sample, with the sentences of its answer (none
    without an answer) and the labels on them."""
    item = annotation_item(store, dataset, sample_id, annotator, blind=blind, run_id=run_id)
    return SentenceView(item, item_sentences(store, item, annotator))


def item_sentences(store: Store, item: AnnotationItem, annotator: str) -> list[AnswerSentence]:
    """The sentences of the item's answer with the labels on them; the judge's marks and
    other people's labels only when the item is not blind."""
    if not item.answer or item.answer_id is None:
        return []
    sentences = sentences_of(item.answer, _judge_claims(store, item.answer_id, item.answer))
    labels = sentence_labels_of(store, item.dataset, item.sample_id, item.answer)
    with store.session() as session:
        person = annotator_id_of(session, annotator)
        names = annotator_names(session)
    by_span: dict[tuple[int, int], dict[int, str]] = {}
    for _, label in labels:
        by_span.setdefault((label.start, label.end), {})[label.annotator_id] = label.label
    shown = []
    for sentence in sentences:
        on_it = by_span.get((sentence.start, sentence.end), {})
        shown.append(replace(
            sentence, mine=on_it.get(person),
            score=None if item.blind else sentence.score,
            supported=None if item.blind else sentence.supported,
            others={} if item.blind else {names[who]: value for who, value in on_it.items()
                                          if who != person}))
    return shown


class SentenceMissingError(UserError, LookupError):
    """The answer has no sentence of the number asked for."""


def label_sentence(store: Store, dataset: str, sample_id: str, annotator: str, label: str, *,
                   index: int | None = None, span: tuple[int, int] | None = None,
                   answer_text: str | None = None, run_id: int | None = None,
                   request_id: str | None = None) -> SentenceLabelRecord:
    """Label one sentence of the answer the annotator is shown (that of the dataset's
    newest run, or of `run_id`): by its number (`index`, 1-based) or its `span`.
    `answer_text` is the text the person saw: a label on a changed answer is refused."""
    if (index is None) == (span is None):
        raise LabelValueError("give the sentence's number or its span, one of the two")
    item = annotation_item(store, dataset, sample_id, annotator, blind=True, run_id=run_id)
    if item.answer_id is None or not item.answer:
        raise LabelValueError(f"{sample_id} has no answer to label sentences of")
    if index is not None:  # the sentences as numbered on screen; the labels on them unread
        sentences = sentences_of(item.answer, _judge_claims(store, item.answer_id, item.answer))
        if not 1 <= index <= len(sentences):
            raise SentenceMissingError(f"the answer of {sample_id} has {len(sentences)} "
                                       f"sentence(s); there is no sentence {index}")
        span = (sentences[index - 1].start, sentences[index - 1].end)
    assert span is not None
    return add_sentence_label(store, dataset, sample_id, annotator, answer_id=item.answer_id,
                              start=span[0], end=span[1], label=label,
                              answer_text=answer_text, request_id=request_id)


def import_sentence_label_file(store: Store, path: Path, format: str | None = None, *,
                               dataset: str | None = None) -> tuple[int, int]:
    """Import sentence labels (store/sentence_label_transfer.py), all rows or none; (added,
    already there). The demo set is put in first, as its labels may be in the file."""
    ensure_demo_dataset(store)
    return import_sentence_labels(store, path, format, dataset=dataset)
