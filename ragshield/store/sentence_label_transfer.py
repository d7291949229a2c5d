"""Sentence labels in and out of the store: every version exported to CSV (formula-safe, as
label_transfer's), JSONL or Parquet, and files imported back, all or nothing, with errors that
name the file, the line and the field.

An import reads two shapes of row:
- one label per row (what `export_sentence_labels` writes, or a mapping of a team's own
  file): dataset (default: the one asked for), sample_id, annotator, label (supported,
  unsupported or unsure), the sentence as a span (start, end), a number (sentence_index,
  1-based, as claims.split_claims numbers the answer) or its text (sentence, found in the
  answer), and optionally the answer's text, created_at and request_id;
- LFQA-Verification's rows (Chen et al. 2023): an `id`, and `sentences`, each with its text
  and `annotator_labels`, one per annotator; the k-th becomes person `<prefix>k`.
  "partially" counts as unsupported, as that set calls an answer faithful only when every
  sentence is fully supported.
A label belongs to an answer's text: the row's `answer` when it has one, else the sample's
given answer, else the answer of the dataset's newest run. Importing a file twice adds nothing
the second time: a row with a time is there when the same version at that time is (so a whole
history reads back as it was), a row without one when it is the person's current label.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ragshield.claims import split_claims
from ragshield.names import check_name
from ragshield.output_files import writable_target, write_atomically
from ragshield.store.annotation_queue import latest_run_id
from ragshield.store.database import Store
from ragshield.store.label_transfer import (FORMATS, LabelExportError, LabelImportError,
                                            flag_field, format_of, import_errors, int_field,
                                            read_rows,
                                            text_field, time_field, utc_text, write_csv,
                                            write_jsonl, write_parquet)
from ragshield.store.labels import REQUEST_ID_MAX_LENGTH, LabelValueError
from ragshield.store.models import (Annotator, AnswerRow, Dataset, Sample, SentenceLabel,
                                    utcnow)
from ragshield.store.runs import MAIN
from ragshield.store.samples import UnknownSampleError, dataset_id_of
from ragshield.store.sentence_labels import (SUPPORTED, UNSUPPORTED, check_sentence_label,
                                             text_digest)

COLUMNS = ("dataset", "sample_id", "annotator", "answer", "start", "end", "sentence", "label",
           "retracted", "request_id", "created_at")
PARQUET_COLUMNS = tuple((name, "int64" if name in ("start", "end") else
                         "bool_" if name == "retracted" else "string") for name in COLUMNS)
LFQA_LABELS = {"supported": SUPPORTED, "not_supported": UNSUPPORTED, "partially": UNSUPPORTED}
LFQA_PREFIX = "lfqa-"


# -- export -------------------------------------------------------------------------------

def export_sentence_rows(store: Store, dataset: str | None = None) -> list[dict[str, Any]]:
    """Every sentence label version, oldest first, with the answer text it belongs to (from
    the answer row it was given on, else from the sentence alone when that row is gone)."""
    query = (select(SentenceLabel, Dataset.name, Sample.external_id, Annotator.name,
                    AnswerRow.text)
             .join(Sample, Sample.id == SentenceLabel.sample_id)
             .join(Dataset, Dataset.id == Sample.dataset_id)
             .join(Annotator, Annotator.id == SentenceLabel.annotator_id)
             .outerjoin(AnswerRow, AnswerRow.id == SentenceLabel.answer_id)
             .order_by(SentenceLabel.id))
    with store.session() as session:
        if dataset is not None:
            query = query.where(Dataset.id == dataset_id_of(session, dataset))
        return [{"dataset": name, "sample_id": sample, "annotator": person,
                 "answer": text if text and text_digest(text) == row.answer_sha256 else None,
                 "start": row.span_start, "end": row.span_end, "sentence": row.sentence,
                 "label": row.label, "retracted": row.retracted, "request_id": row.request_id,
                 "created_at": utc_text(row.created_at)}
                for row, name, sample, person, text in session.execute(query).tuples()]


WRITERS: dict[str, Callable[[list[dict[str, Any]], Path], None]] = {
    "csv": lambda rows, path: write_csv(rows, path, COLUMNS), "jsonl": write_jsonl,
    "parquet": lambda rows, path: write_parquet(rows, path, PARQUET_COLUMNS)}


def export_sentence_labels(store: Store, path: Path, format: str,
                           dataset: str | None = None) -> int:
    """Write every sentence label version to `path`, whole or not at all; the row count."""
    if format not in WRITERS:
        raise LabelExportError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    writable_target(path, LabelExportError)
    rows = export_sentence_rows(store, dataset)
    write_atomically(path, lambda temporary: WRITERS[format](rows, temporary), LabelExportError)
    return len(rows)


# -- import -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    dataset: str
    sample_id: str
    annotator: str
    label: str
    answer: str | None
    span: tuple[int, int] | None
    sentence_index: int | None
    sentence: str | None
    retracted: bool
    request_id: str | None
    created_at: datetime | None


def _one_label(raw: dict[str, Any], dataset: str | None) -> _Row:
    start, end = int_field(raw.get("start"), "start"), int_field(raw.get("end"), "end")
    if (start is None) != (end is None):
        raise LabelValueError("fields 'start' and 'end' come together")
    index = int_field(raw.get("sentence_index"), "sentence_index")
    sentence = text_field(raw.get("sentence"), "sentence")
    if start is None and index is None and sentence is None:
        raise LabelValueError("a row names its sentence by 'start' and 'end', "
                              "'sentence_index' or 'sentence'")
    created = raw.get("created_at")
    return _Row(
        dataset=text_field(raw.get("dataset") or dataset, "dataset", True) or "",
        sample_id=text_field(raw.get("sample_id"), "sample_id", True) or "",
        annotator=check_name(text_field(raw.get("annotator"), "annotator", True), "annotator"),
        label=check_sentence_label(text_field(raw.get("label"), "label", True) or ""),
        answer=text_field(raw.get("answer"), "answer"),
        span=(start, end) if start is not None and end is not None else None,
        sentence_index=index, sentence=sentence if start is None and index is None else None,
        retracted=bool(flag_field(raw.get("retracted"), "retracted")),
        request_id=text_field(raw.get("request_id"), "request_id",
                              max_length=REQUEST_ID_MAX_LENGTH),
        created_at=time_field(created) if created not in (None, "") else None)


def _lfqa_labels(raw: dict[str, Any], dataset: str | None, prefix: str) -> list[_Row]:
    if dataset is None and not raw.get("dataset"):
        raise LabelValueError("LFQA-Verification rows need the dataset to import into")
    sentences = raw.get("sentences")
    if not isinstance(sentences, list):
        raise LabelValueError("field 'sentences' must be a list")
    rows = []
    for number, sentence in enumerate(sentences):
        where = f"sentences[{number}]"
        if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str):
            raise LabelValueError(f"field '{where}.text' must be text")
        votes = sentence.get("annotator_labels")
        if not isinstance(votes, list):
            raise LabelValueError(f"field '{where}.annotator_labels' must be a list")
        for person, vote in enumerate(votes, start=1):
            if vote not in LFQA_LABELS:
                raise LabelValueError(f"field '{where}.annotator_labels' holds {vote!r}; "
                                      f"known: {', '.join(LFQA_LABELS)}")
            rows.append(_Row(
                dataset=text_field(raw.get("dataset") or dataset, "dataset", True) or "",
                sample_id=text_field(raw.get("id"), "id", True) or "",
                annotator=f"{prefix}{person}", label=LFQA_LABELS[vote],
                answer=text_field(raw.get("answer"), "answer"), span=None,
                sentence_index=None, sentence=sentence["text"], retracted=False,
                request_id=None, created_at=None))
    return rows


def _rows(raw: Any, dataset: str | None, prefix: str) -> list[_Row]:
    if not isinstance(raw, dict):
        raise LabelValueError(f"a row must be an object of fields, got {type(raw).__name__}")
    if "sentences" in raw and "annotator" not in raw:
        return _lfqa_labels(raw, dataset, prefix)
    return [_one_label(raw, dataset)]


class _Import:
    """What an import has looked up: samples, their answers' texts, people, and the newest
    version of each (sample, text, span, person) it wrote or found."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.samples: dict[tuple[str, str], int] = {}
        self.answers: dict[int, tuple[str, int | None]] = {}
        self.people: dict[str, int] = {}
        self.newest: dict[tuple[Any, ...], SentenceLabel | None] = {}

    def sample(self, dataset: str, sample_id: str) -> int:
        if (dataset, sample_id) not in self.samples:
            found = self.session.scalar(select(Sample.id).join(Dataset).where(
                Dataset.name == dataset, Sample.external_id == sample_id))
            if found is None:
                raise UnknownSampleError(f"no sample {sample_id!r} in dataset {dataset!r}")
            self.samples[dataset, sample_id] = found
        return self.samples[dataset, sample_id]

    def answer(self, sample: int) -> tuple[str, int | None]:
        """The sample's given answer, else its newest run's answer (text, answer row id)."""
        if sample not in self.answers:
            row = self.session.get_one(Sample, sample)
            given = row.given_answer.get("text") if isinstance(row.given_answer, dict) else None
            run = latest_run_id(self.session, row.dataset_id)
            answer = self.session.execute(select(AnswerRow.id, AnswerRow.text).where(
                AnswerRow.run_id == run, AnswerRow.sample_id == sample,
                AnswerRow.role == MAIN)).first() if run is not None else None
            if isinstance(given, str) and given:
                self.answers[sample] = (given, answer[0] if answer and answer[1] == given
                                        else None)
            elif answer is not None and answer[1]:
                self.answers[sample] = (answer[1], answer[0])
            else:
                raise LabelValueError(f"field 'answer': sample {row.external_id!r} has no "
                                      "given answer and no run's answer; give its text")
        return self.answers[sample]

    def person(self, name: str) -> int:
        if name not in self.people:
            found = self.session.scalar(select(Annotator.id).where(Annotator.name == name))
            if found is None:
                person = Annotator(name=name)
                self.session.add(person)
                self.session.flush()
                found = person.id
            self.people[name] = found
        return self.people[name]

    def current(self, key: dict[str, Any]) -> SentenceLabel | None:
        marker = tuple(key.values())
        if marker not in self.newest:
            self.newest[marker] = self.session.scalar(
                select(SentenceLabel).filter_by(**key).order_by(SentenceLabel.id.desc()).limit(1))
        return self.newest[marker]

    def add(self, row: _Row, sample: int) -> bool:
        """Store the row as the next version of its sentence; False when it is already the
        person's current label there."""
        text, answer_id = (row.answer, None) if row.answer else self.answer(sample)
        start, end = _span(text, row)
        key = {"sample_id": sample, "answer_sha256": text_digest(text), "span_start": start,
               "span_end": end, "annotator_id": self.person(row.annotator)}
        current = self.current(key)
        if row.created_at is not None:
            if self._stored(key, row):
                return False
        elif current is not None and (current.label, current.retracted) == (row.label,
                                                                             row.retracted):
            return False
        if row.request_id and self.session.scalar(select(func.count()).where(
                SentenceLabel.request_id == row.request_id)):
            raise LabelValueError(f"field 'request_id': {row.request_id!r} already belongs to "
                                  "another label")
        label = SentenceLabel(**key, answer_id=answer_id, sentence=text[start:end],
                              label=row.label, retracted=row.retracted,
                              request_id=row.request_id, created_at=row.created_at or utcnow(),
                              previous_id=current.id if current is not None else None)
        self.session.add(label)
        self.session.flush()
        self.newest[tuple(key.values())] = label
        return True


    def _stored(self, key: dict[str, Any], row: _Row) -> bool:
        """A version of the same label at the same moment is there (an earlier import)."""
        assert row.created_at is not None
        return any(utc_text(found) == utc_text(row.created_at) for found in self.session.scalars(
            select(SentenceLabel.created_at).filter_by(**key, label=row.label,
                                                        retracted=row.retracted)))


def _span(text: str, row: _Row) -> tuple[int, int]:
    if row.span is not None:
        start, end = row.span
        if not 0 <= start < end <= len(text):
            raise LabelValueError(f"fields 'start' and 'end': span {start}..{end} is outside "
                                  f"the answer (0..{len(text)})")
        return start, end
    if row.sentence_index is not None:
        claims = split_claims(text)
        if not 1 <= row.sentence_index <= len(claims):
            raise LabelValueError(f"field 'sentence_index': the answer has {len(claims)} "
                                  f"sentence(s), not {row.sentence_index}")
        claim = claims[row.sentence_index - 1]
        return claim.start, claim.end
    sentence = (row.sentence or "").strip()
    start = text.find(sentence) if sentence else -1
    if start < 0:
        raise LabelValueError(f"field 'sentence': {sentence!r:.80} is not in the answer")
    return start, start + len(sentence)


def import_sentence_labels(store: Store, path: Path, format: str | None = None, *,
                           dataset: str | None = None,
                           lfqa_prefix: str = LFQA_PREFIX) -> tuple[int, int]:
    """Import a sentence label file in one transaction: (added, already there). Datasets and
    samples must exist; people are added when new."""
    format = format or format_of(path)
    added = present = 0
    with import_errors(path, "sentence labels"), store.session() as session:
        state = _Import(session)
        for where, raw in read_rows(path, format):
            try:
                for row in _rows(raw, dataset, lfqa_prefix):
                    if state.add(row, state.sample(row.dataset, row.sample_id)):
                        added += 1
                    else:
                        present += 1
            except (ValueError, LookupError) as exc:
                raise LabelImportError(f"{path}, {where}: {exc}") from None
    return added, present
