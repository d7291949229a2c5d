"""One sample of a run as stored: the sample's row, the run's answers to it by role, and the
verdicts on the main answer with their traces (what a case study shows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, VerdictRow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.runs import MAIN, RunRecord, get_run
from ragshield.store.samples import UnknownSampleError


@dataclass(frozen=True)
class SampleCase:
    run: RunRecord
    sample: dict[str, Any]  # external_id, question, reference_answers, answerable, meta
    answers: dict[str, dict[str, Any]]  # role -> the answer row's columns
    verdicts: list[dict[str, Any]]  # on the main answer, in the order they were saved


def _columns(row: Any) -> dict[str, Any]:
    return {column.key: getattr(row, column.key) for column in row.__table__.columns}


def sample_case(store: Store, run_id: int, sample_id: str) -> SampleCase:
    """The run's answers and verdicts on one sample (the dataset's own id), traces included.
    Raises UnknownRunError, or UnknownSampleError when the sample is not in the run."""
    run = get_run(store, run_id)
    with store.session() as session:
        sample = session.scalar(select(SampleRow).where(
            SampleRow.dataset_id == run.dataset_id, SampleRow.external_id == sample_id))
        if sample is None:
            raise UnknownSampleError(f"run {run_id} (dataset {run.dataset!r}) has no sample "
                                     f"{sample_id!r}")
        answers = {row.role: _columns(row) for row in session.scalars(
            select(AnswerRow).where(AnswerRow.run_id == run_id, AnswerRow.sample_id == sample.id)
            .order_by(AnswerRow.id))}
        if MAIN not in answers:
            raise UnknownSampleError(f"run {run_id} has no answer for sample {sample_id!r} "
                                     f"yet (not reached, or failed)")
        verdicts = [_columns(row) for row in session.scalars(
            select(VerdictRow).where(VerdictRow.answer_id == answers[MAIN]["id"])
            .order_by(VerdictRow.id))]
        return SampleCase(run=run, sample=_columns(sample), answers=answers, verdicts=verdicts)
