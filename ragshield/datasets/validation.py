"""Checks every loader's samples get: an id that fits the store, a question, no repeated ids,
text that any database can store."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from ragshield.datasets.errors import DatasetFormatError
from ragshield.datasets.loader_spec import LocatedSample
from ragshield.types import Sample

MAX_ID_LENGTH = 200  # samples.external_id is VARCHAR(200)
MAX_MODEL_LENGTH = 300  # answers.model is VARCHAR(300)


def _check_text(path: Path, where: str, field: str, value: str | None) -> None:
    """Say here, rather than mid-import, what no database can store: a NUL character
    (PostgreSQL text) or a lone surrogate (a valid JSON escape, but not Unicode text)."""
    if value is None:
        return
    if "\x00" in value:
        raise DatasetFormatError(path, "contains a NUL character", where=where, field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DatasetFormatError(
            path, f"contains a lone surrogate (\\u{ord(value[exc.start]):04x}), which is not text",
            where=where, field=field) from None


def _check_json(path: Path, where: str, field: str, value: Any) -> None:
    """_check_text on every key and string inside a JSON value."""
    if isinstance(value, str):
        _check_text(path, where, field, value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(path, where, field, str(key))
            _check_json(path, where, f"{field}.{key}", item)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(path, where, f"{field}[{index}]", item)


def check_sample(path: Path, where: str, sample: Sample) -> None:
    if not sample.id.strip():
        raise DatasetFormatError(path, "the sample id is empty", where=where, field="id")
    if len(sample.id) > MAX_ID_LENGTH:
        raise DatasetFormatError(path, f"the sample id is longer than {MAX_ID_LENGTH} characters",
                                 where=where, field="id")
    if not sample.question.strip():
        raise DatasetFormatError(path, "the question is empty", where=where, field="question")
    _check_text(path, where, "id", sample.id)
    _check_text(path, where, "question", sample.question)
    _check_json(path, where, "reference_answers", sample.reference_answers)
    _check_json(path, where, "meta", sample.meta)
    for index, passage in enumerate(sample.passages):
        for name in ("text", "title", "doc_id"):
            _check_text(path, where, f"passages[{index}].{name}", getattr(passage, name))
        _check_json(path, where, f"passages[{index}].meta", passage.meta)
    given = sample.given_answer
    if given is not None:
        _check_text(path, where, "answer", given.text)
        _check_text(path, where, "answer_model", given.model)
        if given.model is not None and len(given.model) > MAX_MODEL_LENGTH:
            raise DatasetFormatError(path, f"the model name is longer than {MAX_MODEL_LENGTH} "
                                     "characters", where=where, field="answer_model")
        for index, token in enumerate(given.tokens or []):
            _check_text(path, where, f"answer_logprobs[{index}].token", token.token)


def checked_samples(path: Path, located: Iterable[LocatedSample]) -> Iterator[Sample]:
    """The samples of `located`, each checked; fails on the first bad one or on an empty file."""
    first_seen: dict[str, str] = {}
    for where, sample in located:
        check_sample(path, where, sample)
        if sample.id in first_seen:
            raise DatasetFormatError(
                path, f"duplicate sample id {sample.id!r} (first seen at {first_seen[sample.id]})",
                where=where, field="id",
            )
        first_seen[sample.id] = where
        yield sample
    if not first_seen:
        raise DatasetFormatError(path, "the file holds no samples")
