"""ragshield's unified JSONL, one sample per line:

{id, source, license, question, passages: [{title, text, id?, score?}], reference_answers,
answerable: true|false|null, label, extra: {...}, history?,
answer?, answer_model?, answer_logprobs?, cited_passages?}

`source`, `license`, `label` and the keys of `extra` go into Sample.meta, and so does
`history`, the conversation before the question (datasets/history.py). A passage's `score`
is the retrieval score an outside system gave it (a number). `answer` and the fields after
it are the answer an outside system gave, which `run --answers given` judges as it is:
its text, the model that wrote it, its tokens' log-probs ([{"token", "logprob"}, ...] or
[[token, logprob], ...]) and the indices of the passages it cites, counted from 0 (see
datasets/given_answers.py). to_record() writes a Sample back in this layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragshield.conversation import HISTORY
from ragshield.datasets.given_answers import SAME_NAMES, given_answer
from ragshield.datasets.history import history_field
from ragshield.datasets.loader_spec import LoaderSpec, LocatedSample
from ragshield.datasets.reading import iter_json_lines
from ragshield.datasets.records import Record, passage_from_record
from ragshield.types import GivenAnswer, Sample

TOP_LEVEL_META = ("source", "license", "label")


def sniff(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and {"id", "question", "passages"} <= first.keys()
        and ("reference_answers" in first or "answerable" in first)
    )


def sample_from_record(record: Record) -> Sample:
    meta = record.mapping("extra")
    meta.update({key: record.text(key) for key in TOP_LEVEL_META if record.has(key)})
    history = history_field(record, HISTORY)
    if history:
        meta[HISTORY] = history
    passages = [passage_from_record(item, score_field="score")
                for item in record.records("passages")]
    return Sample(
        id=record.identifier("id"),
        question=record.text("question"),
        passages=passages,
        reference_answers=record.texts("reference_answers"),
        answerable=record.flag("answerable"),
        meta=meta,
        given_answer=given_answer(record, SAME_NAMES, len(passages)),
    )


def read(path: Path) -> Iterator[LocatedSample]:
    for number, value in iter_json_lines(path):
        where = f"line {number}"
        yield where, sample_from_record(Record(value, path, where))


def to_record(sample: Sample) -> dict[str, Any]:
    """The unified JSON object of a sample (the inverse of sample_from_record)."""
    extra = dict(sample.meta)
    top = {key: extra.pop(key) for key in TOP_LEVEL_META if key in extra}
    history = extra.pop(HISTORY, None)
    passages = [
        {**({"id": p.doc_id} if p.doc_id is not None else {}), "title": p.title, "text": p.text,
         **({"score": p.score} if p.score is not None else {})}
        for p in sample.passages
    ]
    return {
        "id": sample.id,
        "source": top.get("source"),
        "license": top.get("license"),
        "question": sample.question,
        "passages": passages,
        "reference_answers": sample.reference_answers,
        "answerable": sample.answerable,
        "label": top.get("label"),
        "extra": extra,
        **({HISTORY: history} if history else {}),
        **_answer_record(sample.given_answer),
    }


def _answer_record(given: GivenAnswer | None) -> dict[str, Any]:
    """The given-answer fields of a record; none without a given answer."""
    if given is None:
        return {}
    tokens = None if given.tokens is None else [
        {"token": t.token, "logprob": t.logprob} for t in given.tokens]
    return {"answer": given.text, "answer_model": given.model, "answer_logprobs": tokens,
            "cited_passages": given.cited}


SPEC = LoaderSpec(
    name="unified",
    description="ragshield's unified JSONL (id, question, passages, reference_answers, answerable)",
    read=read,
    sniff=sniff,
)
