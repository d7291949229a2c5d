"""Which sample an annotator labels next.

Strategies: `unlabelled` (samples with the fewest current labels first, in dataset order),
`disagreement` (samples whose judges disagree most in a run first, so labels go where they
teach most; among equals, the later sample first), `random` (a seeded pseudo-random walk). `overlap` k hands each sample to k
different annotators (for agreement); a sample the annotator labelled or skipped is not
offered again. Each query stops at the first eligible sample, so it stays fast on large
datasets (see scripts/bench_labels.py).
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, bindparam, exists, func, not_, select
from sqlalchemy.orm import Session, aliased

from ragshield.errors import OptionError
from ragshield.store.database import Store, remembered
from ragshield.store.labels import annotator_id_of
from ragshield.store.models import AnswerRow, Label, Run, Sample, Skip
from ragshield.store.runs import MAIN, UnknownRunError
from ragshield.store.samples import dataset_id_of

Strategy = Literal["unlabelled", "disagreement", "random"]
STRATEGIES: tuple[str, ...] = ("unlabelled", "disagreement", "random")


def _is_current(label: type[Label] | Label) -> ColumnElement[bool]:
    newer = aliased(Label)
    return and_(label.retracted.is_(False), ~exists().where(
        newer.sample_id == label.sample_id, newer.annotator_id == label.annotator_id,
        newer.id > label.id))


def _labellers(sample_id: ColumnElement[int] = Sample.id, outer: Any = Sample):
    """How many annotators hold a current label on the sample (correlated to `outer`)."""
    label = aliased(Label)
    return (select(func.count()).select_from(label)
            .where(label.sample_id == sample_id, _is_current(label))
            .correlate(outer).scalar_subquery())


def _open_to(sample_id: ColumnElement[int] = Sample.id, outer: Any = Sample
             ) -> ColumnElement[bool]:
    """Samples that :annotator_id has neither labelled nor skipped and that fewer than
    :overlap annotators hold a current label on."""
    mine = aliased(Label)
    return and_(
        not_(exists().where(mine.sample_id == sample_id,
                            mine.annotator_id == bindparam("annotator_id"), _is_current(mine))),
        not_(exists().where(Skip.sample_id == sample_id,
                            Skip.annotator_id == bindparam("annotator_id"))),
        _labellers(sample_id, outer) < bindparam("overlap"),
    )


# The queries are built once, with bound parameters: building them per request (aliases,
# correlated subqueries) cost more than running them (about 20 of 30 ms on SQLite).
_ELIGIBLE_IDS = select(Sample.external_id).where(
    Sample.dataset_id == bindparam("dataset_id"), _open_to())
# The dataset's samples in order, read lazily. OFFSET 0 keeps the database from merging the
# subquery into the filter: PostgreSQL otherwise guessed that the label counts keep one row,
# counted the labels of every sample of the dataset and sorted them (110 ms at 10k samples)
# instead of stopping at the first open sample. Both databases pass the subquery's rows on
# in its order.
_IN_ORDER = (select(Sample.id, Sample.external_id)
             .where(Sample.dataset_id == bindparam("dataset_id"))
             .order_by(Sample.id).offset(0).subquery("in_order"))
# Open samples holding exactly :count current labels, the first in dataset order.
_WITH_COUNT = (select(_IN_ORDER.c.external_id)
               .where(_open_to(_IN_ORDER.c.id, _IN_ORDER),
                      _labellers(_IN_ORDER.c.id, _IN_ORDER) == bindparam("count"))
               .limit(1))
_FROM = _ELIGIBLE_IDS.where(Sample.id >= bindparam("start")).order_by(Sample.id).limit(1)
_BEFORE = _ELIGIBLE_IDS.where(Sample.id < bindparam("start")).order_by(Sample.id).limit(1)
_MOST_DISAGREED = (
    _ELIGIBLE_IDS.join(AnswerRow, and_(AnswerRow.sample_id == Sample.id,
                                       AnswerRow.run_id == bindparam("run_id"),
                                       AnswerRow.role == MAIN))
    .where(AnswerRow.disagreement.is_not(None))
    # Ties: the later sample first, so that one backward index scan (run, disagreement,
    # sample) serves the whole ordering.
    .order_by(AnswerRow.disagreement.desc(), AnswerRow.sample_id.desc()).limit(1))


def _unlabelled(session: Session, params: dict[str, int]) -> str | None:
    # One ordered scan per label count (0, 1, ... k-1) stops at the first hit; ordering the
    # whole dataset by count would sort every sample on each request.
    for count in range(params["overlap"]):
        found = session.scalar(_WITH_COUNT, {**params, "count": count})
        if found is not None:
            return found
    return None


def _random(session: Session, params: dict[str, int], seed: int) -> str | None:
    low, high = session.execute(select(func.min(Sample.id), func.max(Sample.id))
                                .where(Sample.dataset_id == params["dataset_id"])).one()
    if low is None:
        return None
    annotator_id = params["annotator_id"]
    done = session.scalar(select(func.count()).select_from(Label)
                          .where(Label.annotator_id == annotator_id)) or 0
    start = low + zlib.crc32(f"{seed}:{annotator_id}:{done}".encode()) % (high - low + 1)
    return (session.scalar(_FROM, {**params, "start": start})
            or session.scalar(_BEFORE, {**params, "start": start}))


def latest_run_id(session: Session, dataset_id: int) -> int | None:
    """The dataset's newest run, looked up once per session (`remembered`)."""
    return remembered(session, "latest_run_ids", dataset_id, lambda: session.scalar(
        select(Run.id).where(Run.dataset_id == dataset_id).order_by(Run.id.desc()).limit(1)))


def run_for_dataset(session: Session, dataset_id: int, run_id: int | None) -> int | None:
    """`run_id` when that run judged the dataset, the dataset's newest run when None, and
    an error for a run that does not exist or judged another dataset."""
    if run_id is None:
        return latest_run_id(session, dataset_id)
    if session.scalar(select(Run.dataset_id).where(Run.id == run_id)) != dataset_id:
        raise UnknownRunError(f"no run {run_id} of this dataset (see `python -m ragshield "
                              "runs list`)")
    return run_id


def _disagreement(session: Session, params: dict[str, int], run_id: int | None) -> str | None:
    if run_id is None:
        return None
    return session.scalar(_MOST_DISAGREED, {**params, "run_id": run_id})


def next_sample(store: Store, dataset: str, annotator: str, *, strategy: str = "unlabelled",
                overlap: int = 1, seed: int = 0, run_id: int | None = None) -> str | None:
    """The id of the sample to label next, or None when the annotator is done.
    `disagreement` uses `run_id` (default: the dataset's newest run) and falls back to
    `unlabelled` once no judged sample is left."""
    if strategy not in STRATEGIES:
        raise OptionError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if overlap < 1:
        raise OptionError(f"overlap must be at least 1, got {overlap}")
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
        person = annotator_id_of(session, annotator)
        if strategy != "disagreement":
            run_for_dataset(session, dataset_id, run_id)  # a wrong --run is an error anyway
        params = {"dataset_id": dataset_id, "annotator_id": person, "overlap": overlap}
        if strategy == "random":
            return _random(session, params, seed)
        if strategy == "disagreement":
            found = _disagreement(session, params, run_for_dataset(session, dataset_id, run_id))
            if found is not None:
                return found
        return _unlabelled(session, params)


