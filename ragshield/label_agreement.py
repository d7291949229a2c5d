"""The keep decisions that agreement with the human majority label compares (docs/METHODS.md
5.5), read from the store: the automatic answerability label of each sample, the judges'
decisions in a dataset's newest run, and the claim judge's marks on each sentence there.
Samples are named by their row id, as labels name them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from ragshield.metrics.labels import passages_support, reference_in_passages
from ragshield.store.annotation_queue import latest_run_id
from ragshield.store.database import Store
from ragshield.store.models import AnswerRow, Dataset, Sample, VerdictRow
from ragshield.store.runs import MAIN
from ragshield.store.samples import dataset_id_of
from ragshield.store.sentence_labels import text_digest


def automatic_labels(store: Store, dataset: str | None) -> dict[int, bool]:
    """Sample row id -> the automatic "passages support an answer" label (dataset flag,
    else a reference found in a passage), of `dataset` (None: of every dataset). The
    passages are those of the dataset's newest run where it answered the sample (what the
    annotators were shown, and what the run's tables judge), else the dataset's own."""
    query = select(Sample).options(selectinload(Sample.passages))
    if dataset is not None:
        query = query.join(Dataset).where(Dataset.name == dataset)
    with store.session() as session:
        rows = session.scalars(query).all()
        shown = _newest_runs_passages(session, {row.dataset_id for row in rows})
        return {
            row.id: passages_support(None, row.answerable, reference_in_passages(
                [str(r) for r in row.reference_answers],
                shown.get(row.id, [p.text for p in row.passages])))
            for row in rows
        }


def _newest_runs_passages(session: Session, dataset_ids: set[int]) -> dict[int, list[str]]:
    """Sample row id -> the passages its dataset's newest run answered it from."""
    runs = [run for run in (latest_run_id(session, d) for d in dataset_ids) if run is not None]
    if not runs:
        return {}
    return {sample: [str(p.get("text", "")) for p in passages or [] if isinstance(p, dict)]
            for sample, passages in session.execute(
                select(AnswerRow.sample_id, AnswerRow.passages)
                .where(AnswerRow.run_id.in_(runs), AnswerRow.role == MAIN))}


def newest_run_keeps(store: Store, dataset: str) -> dict[str, dict[int, bool]]:
    """judge -> sample row id -> keep, from the dataset's newest run ({} without a run)."""
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
        keeps.setdefault(judge, {})[sample] = bool(keep)  # never None: the query leaves those
    return keeps


SentenceKey = tuple[int, str, int, int]  # sample row id, answer text's sha256, span


def run_claims(store: Store, dataset: str, judge: str = "support", run_id: int | None = None
               ) -> dict[SentenceKey, tuple[float | None, bool | None]]:
    """Each claim the `judge` marked in the run (default: the dataset's newest) -> (its score,
    its mark), keyed as sentence labels are: by sample, answer text and span ({} without a
    run)."""
    with store.session() as session:
        if run_id is None:
            run_id = latest_run_id(session, dataset_id_of(session, dataset))
        if run_id is None:
            return {}
        rows = session.execute(
            select(AnswerRow.sample_id, AnswerRow.text, VerdictRow.details)
            .join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
            .where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN,
                   VerdictRow.judge == judge)).tuples().all()
    found: dict[SentenceKey, tuple[float | None, bool | None]] = {}
    for sample, text, details in rows:
        claims = details.get("claims") if isinstance(details, dict) and text else None
        for claim in claims if isinstance(claims, list) else []:
            if isinstance(claim, dict) and isinstance(claim.get("start"), int) \
                    and isinstance(claim.get("end"), int):
                score = claim.get("score")
                found[sample, text_digest(text), claim["start"], claim["end"]] = (
                    float(score) if isinstance(score, (int, float)) else None,
                    claim.get("supported") if isinstance(claim.get("supported"), bool)
                    else None)
    return found
