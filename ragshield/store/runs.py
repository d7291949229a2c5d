"""Runs in the store: creating them, saving each sample's answers and verdicts in one
transaction, recording failures, and reading runs back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Collection, Iterable, Iterator, Sequence

from sqlalchemy import Select, case, delete, func, null, select, update
from sqlalchemy.orm import Session

from ragshield import strict_json
from ragshield.metrics.judge_disagreement import disagreement
from ragshield.store.database import Store, changed_rows
from ragshield.store.models import AnswerRow, Dataset, Run, RunFailure, VerdictRow, utcnow
from ragshield.store.models import Sample as SampleRow
from ragshield.store.run_errors import UnknownRunError
from ragshield.store.run_owner import shown_status
from ragshield.store.samples import dataset_id_of
from ragshield.types import Answer, LLMCall, Passage, Sample, TokenLogprob, Verdict

MAIN = "main"  # the answer the judges judge; other roles: "norag", "larger"


@dataclass(frozen=True)
class RunRecord:
    id: int
    dataset: str | None
    dataset_id: int | None
    config: dict[str, Any]
    seed: int
    status: str
    samples_total: int


@dataclass(frozen=True)
class RunSummary:
    id: int
    name: str | None
    dataset: str | None
    status: str
    done: int
    total: int
    failures: int
    created_at: datetime
    finished_at: datetime | None


@dataclass
class RoleAnswer:
    """An answer to save, with the model that wrote it and the passages it was shown."""

    answer: Answer
    model: str | None  # None: not known (a given answer without its model)
    passages: list[Passage]


def create_run(store: Store, *, dataset: str, config: dict[str, Any], seed: int,
               code_version: str, samples_total: int, name: str | None = None) -> int:
    with store.session() as session:
        run = Run(name=name, dataset_id=dataset_id_of(session, dataset), config=config,
                  seed=seed, code_version=code_version, status="pending",
                  samples_total=samples_total)
        session.add(run)
        session.flush()
        return run.id


def get_run(store: Store, run_id: int) -> RunRecord:
    with store.session() as session:
        row = session.execute(
            select(Run, Dataset.name).outerjoin(Dataset, Dataset.id == Run.dataset_id)
            .where(Run.id == run_id)
        ).first()
        if row is None:
            raise UnknownRunError(f"no run with id {run_id} (see `python -m ragshield runs list`)")
        run, dataset = row
        return RunRecord(id=run.id, dataset=dataset, dataset_id=run.dataset_id,
                         config=dict(run.config), seed=run.seed,
                         status=shown_status(run), samples_total=run.samples_total)


def set_run_status(store: Store, run_id: int, status: str, *, finished: bool = False) -> None:
    with store.session() as session:
        session.execute(update(Run).where(Run.id == run_id).values(
            status=status, finished_at=utcnow() if finished else None))


def add_run_judges(store: Store, run_id: int, judges: Sequence[str]) -> None:
    """Add `judges` to the run config's judge list, reading the config where it is written
    (locked on PostgreSQL): a re-judge takes hours, and a dataset renamed meanwhile rewrites
    the config; writing back the config read at the start undid that."""
    with store.session() as session:
        run = session.scalars(select(Run).where(Run.id == run_id).with_for_update()).one()
        listed = list(run.config.get("judges") or [])
        run.config = {**run.config, "judges": list(dict.fromkeys([*listed, *judges]))}


def set_run_config(store: Store, run_id: int, config: dict[str, Any]) -> None:
    """Replace the run's stored config (scripts/make_demo_run.py refreshes the shipped demo
    run's readers and rule with it)."""
    with store.session() as session:
        session.scalars(select(Run).where(Run.id == run_id).with_for_update()).one().config = config


def done_sample_ids(store: Store, run_id: int) -> set[int]:
    """Row ids of the samples whose main answer (and so its verdicts) is saved."""
    with store.session() as session:
        return set(session.scalars(
            select(AnswerRow.sample_id).where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN)
        ))


def _answer_row(run_id: int, sample_id: int, role: str, item: RoleAnswer) -> AnswerRow:
    answer, calls = item.answer, item.answer.calls
    return AnswerRow(
        run_id=run_id, sample_id=sample_id, role=role, answerer=answer.answerer,
        model=item.model, text=answer.text, raw=answer.raw, evidence=list(answer.evidence),
        refusal=answer.refusal, parse_error=answer.parse_error,
        cites_internal_knowledge=answer.cites_internal_knowledge,
        passages=[passage_dict(p) for p in item.passages], messages=list(answer.messages),
        trace=[call.to_dict() for call in calls],
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        seconds=sum(c.seconds for c in calls),
    )


def _verdict_row(answer_id: int, verdict: Verdict) -> VerdictRow:
    cost = verdict.cost
    return VerdictRow(
        answer_id=answer_id, judge=verdict.judge, keep=verdict.keep,
        score=strict_json.finite(verdict.score),  # a score that means nothing is absent
        rationale=verdict.rationale, available=verdict.available, error=verdict.error,
        parse_error=verdict.parse_error, details=verdict.details,
        trace=[call.to_dict() for call in verdict.trace], calls=cost.calls,
        prompt_tokens=cost.prompt_tokens, completion_tokens=cost.completion_tokens,
        cached_prompt_tokens=cost.cached_prompt_tokens, cache_hits=cost.cache_hits,
        seconds=cost.seconds,
    )


def save_sample(store: Store, run_id: int, sample_id: int, answers: dict[str, RoleAnswer],
                verdicts: Iterable[Verdict]) -> None:
    """Save one sample's answers (by role) and the verdicts on its main answer, and clear
    its failure, all in one transaction: a crash leaves the sample either whole or absent."""
    with store.session() as session:
        _save(session, run_id, sample_id, answers, verdicts)
        session.execute(delete(RunFailure).where(RunFailure.run_id == run_id,
                                                 RunFailure.sample_id == sample_id))


def _save(session: Session, run_id: int, sample_id: int, answers: dict[str, RoleAnswer],
          verdicts: Iterable[Verdict]) -> None:
    verdicts = list(verdicts)
    rows = {role: _answer_row(run_id, sample_id, role, item) for role, item in answers.items()}
    rows[MAIN].disagreement = disagreement([v.keep for v in verdicts])
    session.add_all(rows.values())
    session.flush()
    session.add_all(_verdict_row(rows[MAIN].id, v) for v in verdicts)


def add_live_sample(store: Store, run_id: int, sample_id: int, answers: dict[str, RoleAnswer],
                    verdicts: Iterable[Verdict]) -> bool:
    """Save an asked sample into a live run and count it in the run's total, in one
    transaction; False (nothing saved) when the run holds the sample already. An ask that
    saves the same sample at the same moment makes this raise IntegrityError: the caller
    starts its transaction again (`live_runs.keep_asked`). The total is updated last, so
    that its row lock, which the run's other asks wait on, is held only until the commit."""
    with store.session() as session:
        held = session.scalar(select(AnswerRow.id).where(
            AnswerRow.run_id == run_id, AnswerRow.sample_id == sample_id,
            AnswerRow.role == MAIN))
        if held is not None:
            return False
        _save(session, run_id, sample_id, answers, verdicts)
        session.flush()
        session.execute(update(Run).where(Run.id == run_id).values(
            samples_total=Run.samples_total + 1))
    return True


def add_verdicts(store: Store, answer_id: int, verdicts: Iterable[Verdict]) -> None:
    """Add verdicts to a saved answer (re-judging without re-generating), in one transaction,
    replacing a verdict of the same judge (one that failed or could not run), and update the
    answer's judge disagreement."""
    verdicts = list(verdicts)
    with store.session() as session:
        session.execute(delete(VerdictRow).where(
            VerdictRow.answer_id == answer_id,
            VerdictRow.judge.in_([v.judge for v in verdicts])))
        session.flush()
        session.add_all(_verdict_row(answer_id, v) for v in verdicts)
        session.flush()
        keeps = session.scalars(select(VerdictRow.keep).where(VerdictRow.answer_id == answer_id))
        session.execute(update(AnswerRow).where(AnswerRow.id == answer_id)
                        .values(disagreement=disagreement(list(keeps))))


def delete_verdicts(store: Store, run_id: int, judges: Collection[str]) -> int:
    """Delete the run's verdicts of `judges`, so that judging the run again (rejudge_run)
    recomputes them; returns how many went. Judging again sets each answer's disagreement."""
    with store.session() as session:
        answers = select(AnswerRow.id).where(AnswerRow.run_id == run_id)
        return changed_rows(session.execute(delete(VerdictRow).where(
            VerdictRow.answer_id.in_(answers), VerdictRow.judge.in_(list(judges)))))


def record_failure(store: Store, run_id: int, sample_id: int, error: str) -> None:
    with store.session() as session:
        failure = session.scalar(select(RunFailure).where(RunFailure.run_id == run_id,
                                                          RunFailure.sample_id == sample_id))
        if failure is None:
            session.add(RunFailure(run_id=run_id, sample_id=sample_id, error=error))
        else:
            failure.error, failure.attempts, failure.updated_at = (
                error, failure.attempts + 1, utcnow())


def failures(store: Store, run_id: int) -> dict[str, str]:
    """The dataset's sample id -> the error of its latest attempt."""
    with store.session() as session:
        return dict(session.execute(
            select(SampleRow.external_id, RunFailure.error)
            .join(SampleRow, SampleRow.id == RunFailure.sample_id)
            .where(RunFailure.run_id == run_id).order_by(RunFailure.sample_id)
        ).tuples().all())


def list_runs(store: Store) -> list[RunSummary]:
    done = (select(func.count(AnswerRow.id))
            .where(AnswerRow.run_id == Run.id, AnswerRow.role == MAIN).scalar_subquery())
    failed = select(func.count(RunFailure.id)).where(RunFailure.run_id == Run.id).scalar_subquery()
    query = (select(Run, Dataset.name, done, failed)
             .outerjoin(Dataset, Dataset.id == Run.dataset_id).order_by(Run.id))
    with store.session() as session:
        return [
            RunSummary(id=run.id, name=run.name, dataset=dataset, status=shown_status(run),
                       done=n_done, total=run.samples_total, failures=n_failed,
                       created_at=run.created_at, finished_at=run.finished_at)
            for run, dataset, n_done, n_failed in session.execute(query)
        ]


# -- reading saved answers back ---------------------------------------------------------

def passage_dict(passage: Passage) -> dict[str, Any]:
    return {"text": passage.text, "title": passage.title, "doc_id": passage.doc_id,
            "score": passage.score, "meta": dict(passage.meta)}


def _call(data: dict[str, Any]) -> LLMCall:
    logprobs = data.get("logprobs")
    return LLMCall(**{**data, "logprobs": None if logprobs is None
                      else [TokenLogprob(**t) for t in logprobs]})


def answer_of(row: AnswerRow) -> Answer:
    """The Answer a saved row was made from, ready to be judged again."""
    return Answer(
        answerer=row.answerer, text=row.text or "", raw=row.raw or "",
        messages=list(row.messages), evidence=list(row.evidence),
        cites_internal_knowledge=row.cites_internal_knowledge, refusal=row.refusal,
        parse_error=row.parse_error, calls=[_call(c) for c in row.trace],
    )


@dataclass
class SavedAnswer:
    answer_id: int
    sample_id: int
    sample: Sample  # with the passages the answerer was shown
    answer: Answer
    judges: set[str]  # judges that already have a verdict on it


def iter_main_answers(store: Store, run_id: int, *, batch_size: int = 200) -> Iterator[SavedAnswer]:
    """The run's main answers in sample order, with the judges already run on each."""
    last_id = 0
    while True:
        with store.session() as session:
            rows = session.execute(
                select(AnswerRow, SampleRow).join(SampleRow, SampleRow.id == AnswerRow.sample_id)
                .where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN,
                       AnswerRow.sample_id > last_id)
                .order_by(AnswerRow.sample_id).limit(batch_size)
            ).tuples().all()
            judged = _judges_by_answer(session, [row.id for row, _ in rows])
            batch = [
                SavedAnswer(answer_id=row.id, sample_id=row.sample_id,
                            sample=_shown_sample(sample, row.passages), answer=answer_of(row),
                            judges=judged.get(row.id, set()))
                for row, sample in rows
            ]
        if not batch:
            return
        last_id = batch[-1].sample_id
        yield from batch


def _shown_sample(row: SampleRow, passages: list[dict[str, Any]]) -> Sample:
    return Sample(id=row.external_id, question=row.question,
                  passages=[Passage(**p) for p in passages],
                  reference_answers=list(row.reference_answers), answerable=row.answerable,
                  meta=dict(row.meta))


def _judges_by_answer(session: Session, answer_ids: list[int]) -> dict[int, set[str]]:
    """The judges with a verdict on each answer; one that failed or could not run (a live
    run keeps those) does not count: judging again replaces it."""
    result: dict[int, set[str]] = {}
    for answer_id, judge in session.execute(
        select(VerdictRow.answer_id, VerdictRow.judge).where(
            VerdictRow.answer_id.in_(answer_ids), VerdictRow.error.is_(None),
            VerdictRow.available.is_not(False))
    ):
        result.setdefault(answer_id, set()).add(judge)
    return result


# -- flat records for metrics and reports ----------------------------------------------

def _dicts(session: Session, query: Select) -> list[dict[str, Any]]:
    """The query's rows as plain dicts (zip with the keys: row._mapping is several
    times slower on runs with 100k verdicts)."""
    result = session.execute(query)
    keys = list(result.keys())
    return [dict(zip(keys, row)) for row in result]


def answer_records(store: Store, run_id: int) -> list[dict[str, Any]]:
    """Every answer of the run (all roles) with its sample's question, references, flag
    and metadata: one plain dict each."""
    query = (
        select(AnswerRow.id, AnswerRow.sample_id, AnswerRow.role, AnswerRow.text,
               AnswerRow.refusal, AnswerRow.passages, SampleRow.external_id, SampleRow.question,
               SampleRow.reference_answers, SampleRow.answerable, SampleRow.meta)
        .join(SampleRow, SampleRow.id == AnswerRow.sample_id)
        .where(AnswerRow.run_id == run_id).order_by(AnswerRow.sample_id, AnswerRow.id)
    )
    with store.session() as session:
        return _dicts(session, query)


def verdict_records(store: Store, run_id: int, *,
                    details_of: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every verdict on the run's main answers: sample row id, judge, keep, score, details.
    With `details_of`, only those judges' details are read (None for the others): decoding
    every verdict's JSON is most of the cost on large runs."""
    details: Any = VerdictRow.details
    if details_of is not None:
        details = case((VerdictRow.judge.in_(list(details_of)), VerdictRow.details),
                       else_=null()).label("details")
    query = (
        select(AnswerRow.sample_id, VerdictRow.judge, VerdictRow.keep, VerdictRow.score,
               details, VerdictRow.available, VerdictRow.error)
        .join(AnswerRow, AnswerRow.id == VerdictRow.answer_id)
        .where(AnswerRow.run_id == run_id, AnswerRow.role == MAIN)
        .order_by(AnswerRow.sample_id, VerdictRow.id)
    )
    with store.session() as session:
        return _dicts(session, query)
