"""Agreement of the annotators among themselves and of each judge, and of the automatic
answerability label, with the human majority (docs/METHODS.md 5.5), read from the store."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from ragshield.metrics.agreement import agreement_summary, agreement_with_majority, majority_by_item
from ragshield.metrics.labels import passages_support, reference_in_passages
from ragshield.store.annotation_queue import latest_run_id
from ragshield.store.database import Store
from ragshield.store.labels import current_label_table
from ragshield.store.models import AnswerRow, Dataset, Sample, VerdictRow
from ragshield.store.runs import MAIN
from ragshield.store.samples import dataset_id_of


def automatic_labels(store: Store, dataset: str | None) -> dict[int, bool]:
    """Sample row id -> the automatic "passages support an answer" label (dataset flag,
    else a reference found in a passage)."""
    query = select(Sample).options(selectinload(Sample.passages))
    if dataset is not None:
        query = query.join(Dataset).where(Dataset.name == dataset)
    with store.session() as session:
        return {
            row.id: passages_support(None, row.answerable, reference_in_passages(
                [str(r) for r in row.reference_answers], [p.text for p in row.passages]))
            for row in session.scalars(query)
        }


def _judge_keeps(store: Store, dataset: str) -> dict[str, dict[int, bool]]:
    """judge -> sample row id -> keep, from the dataset's newest run."""
    with store.session() as session:
        run_id = latest_run_id(session, dataset_id_of(session, dataset))
        if run_id is None:
            return {}
        rows = session.execute(
            select(VerdictRow.judge, AnswerRow.sample_id, VerdictRow.keep)
            .join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
            .where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN,
                   VerdictRow.keep.is_not(None))).tuples().all()
    keeps: dict[str, dict[int, bool]] = {}
    for judge, sample, keep in rows:
        keeps.setdefault(judge, {})[sample] = keep
    return keeps


def label_agreement(store: Store, dataset: str | None = None) -> dict[str, Any]:
    """`percent`, `cohen` ({"a|b": kappa}), `fleiss`, `krippendorff_alpha`, `n_items`,
    plus `automatic` and (for one dataset with a run) `judges`: each one's agreement with
    the human majority label."""
    ratings = current_label_table(store, dataset)
    summary = agreement_summary(ratings)
    majority = majority_by_item(ratings)
    summary["automatic"] = agreement_with_majority(automatic_labels(store, dataset), majority)
    summary["judges"] = ({judge: agreement_with_majority(keeps, majority)
                          for judge, keeps in _judge_keeps(store, dataset).items()}
                         if dataset is not None else {})
    return summary
