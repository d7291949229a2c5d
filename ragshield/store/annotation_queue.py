"""Which sample an annotator labels next.

Strategies: `unlabelled` (samples with the fewest current labels first, in dataset order),
`disagreement` (samples whose judges disagree most in a run first, so labels go where they
teach most; among equals, the later sample first), `random` (a seeded pseudo-random walk),
`value` (a mix, `ValueMix`: samples in a policy's defer band, samples the judges disagree
on, and samples of the random slice kept apart for checking the policy), `uncertain_sentence`
(the answers whose weakest sentence the support judge scored nearest its threshold first, so
sentence labels go where its mark is least sure; a sample whose sentences the annotator
labelled is done for them). `overlap` k hands
each sample to k different annotators (for agreement); a sample the annotator labelled or
skipped is not offered again. Each query stops at the first eligible sample, so it stays fast
on large datasets (see scripts/bench_labels.py).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Literal

from sqlalchemy import ColumnElement, and_, bindparam, exists, func, not_, select
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased

from ragshield.errors import OptionError
from ragshield.holdout import HOLDOUT_SHARE, in_holdout
from ragshield.store.database import Store, remembered
from ragshield.store.labels import annotator_id_of
from ragshield.store.models import (AnswerRow, Label, Run, Sample, SentenceLabel, Skip,
                                    VerdictRow)
from ragshield.store.run_errors import UnknownRunError
from ragshield.store.runs import MAIN
from ragshield.store.samples import dataset_id_of

Strategy = Literal["unlabelled", "disagreement", "random", "value", "uncertain_sentence"]
STRATEGIES: tuple[str, ...] = ("unlabelled", "disagreement", "random", "value",
                               "uncertain_sentence")
SUPPORT_JUDGE = "support"
SUPPORT_THRESHOLD = 0.5  # the support judge's own, for verdicts that do not record theirs
BATCH = 64  # candidate ids read at a time where some are passed over in Python


@dataclass(frozen=True)
class ValueMix:
    """The `value` queue: the share of labels that goes to each source.

    The default splits the labels that teach between the policy's defer band (where its
    score cannot decide: labels there move its thresholds) and the samples the judges
    disagree on (where a better judge or a stacked one learns most), and sends one in five
    to the random slice: without labels nobody chose, the watch cannot tell whether the
    policy keeps its promise. The band and disagreement sources never hand out a sample of
    the slice, so its labels stay a uniform sample."""

    band: float = 0.4
    disagreement: float = 0.4
    random: float = 0.2
    # The defer band: samples whose `judge` score in the run is in [low, high).
    judge: str | None = None
    low: float = float("-inf")
    high: float = float("-inf")
    holdout: float = HOLDOUT_SHARE  # the random slice's share of the dataset

    def __post_init__(self) -> None:
        shares = (self.band, self.disagreement, self.random)
        if min(shares) < 0 or sum(shares) <= 0:
            raise OptionError(f"the value mix needs shares >= 0 with a positive sum, got "
                              f"band={self.band}, disagreement={self.disagreement}, "
                              f"random={self.random}")


# A sample's row id in a query: Sample.id, or a column of a subquery or alias.
SampleId = ColumnElement[int] | InstrumentedAttribute[int]


def _is_current(label: Any) -> ColumnElement[bool]:  # Label, or an alias of it
    newer = aliased(Label)
    return and_(label.retracted.is_(False), ~exists().where(
        newer.sample_id == label.sample_id, newer.annotator_id == label.annotator_id,
        newer.id > label.id))


def _labellers(sample_id: SampleId = Sample.id, outer: Any = Sample):
    """How many annotators hold a current label on the sample (correlated to `outer`)."""
    label = aliased(Label)
    return (select(func.count()).select_from(label)
            .where(label.sample_id == sample_id, _is_current(label))
            .correlate(outer).scalar_subquery())


def _open_to(sample_id: SampleId = Sample.id, outer: Any = Sample
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
# Open samples from row id :start on, and before it (a walk that wraps around).
_FROM_ALL = _ELIGIBLE_IDS.where(Sample.id >= bindparam("start")).order_by(Sample.id)
_BEFORE_ALL = _ELIGIBLE_IDS.where(Sample.id < bindparam("start")).order_by(Sample.id)
_FROM, _BEFORE = _FROM_ALL.limit(1), _BEFORE_ALL.limit(1)
_JUDGED = _ELIGIBLE_IDS.join(AnswerRow, and_(AnswerRow.sample_id == Sample.id,
                                             AnswerRow.run_id == bindparam("run_id"),
                                             AnswerRow.role == MAIN))
_DISAGREED = (
    _JUDGED.where(AnswerRow.disagreement.is_not(None))
    # Ties: the later sample first, so that one backward index scan (run, disagreement,
    # sample) serves the whole ordering.
    .order_by(AnswerRow.disagreement.desc(), AnswerRow.sample_id.desc()))
_MOST_DISAGREED = _DISAGREED.limit(1)
# Samples whose :judge score in the run lies in [:low, :high), the band a policy defers.
_IN_BAND = (_JUDGED.join(VerdictRow, and_(VerdictRow.answer_id == AnswerRow.id,
                                          VerdictRow.judge == bindparam("judge")))
            .where(VerdictRow.score >= bindparam("low"), VerdictRow.score < bindparam("high"))
            .order_by(Sample.id))

# Answers of the run by how near the support judge's score (its weakest sentence's) is to
# the threshold it used, nearest first; none the annotator labelled sentences of.
_MINE_SENTENCE = aliased(SentenceLabel)
_UNCERTAIN = (
    _JUDGED.join(VerdictRow, and_(VerdictRow.answer_id == AnswerRow.id,
                                  VerdictRow.judge == SUPPORT_JUDGE))
    .where(VerdictRow.score.is_not(None),
           ~exists().where(_MINE_SENTENCE.sample_id == Sample.id,
                           _MINE_SENTENCE.annotator_id == bindparam("annotator_id"),
                           _MINE_SENTENCE.retracted.is_(False)))
    .order_by(func.abs(VerdictRow.score - func.coalesce(
        VerdictRow.details["threshold"].as_float(), SUPPORT_THRESHOLD)), Sample.id)
    .limit(1))


def _unlabelled(session: Session, params: dict[str, int]) -> str | None:
    # One ordered scan per label count (0, 1, ... k-1) stops at the first hit; ordering the
    # whole dataset by count would sort every sample on each request.
    for count in range(params["overlap"]):
        found = session.scalar(_WITH_COUNT, {**params, "count": count})
        if found is not None:
            return found
    return None


def _labels_given(session: Session, annotator_id: int) -> int:
    return session.scalar(select(func.count()).select_from(Label)
                          .where(Label.annotator_id == annotator_id)) or 0


def _random_start(session: Session, params: dict[str, Any], seed: int,
                  done: int) -> int | None:
    """A pseudo-random row id of the dataset that moves on with each label given (`done`:
    how many the annotator has given)."""
    low, high = session.execute(select(func.min(Sample.id), func.max(Sample.id))
                                .where(Sample.dataset_id == params["dataset_id"])).one()
    if low is None:
        return None
    annotator_id = params["annotator_id"]
    return low + zlib.crc32(f"{seed}:{annotator_id}:{done}".encode()) % (high - low + 1)


def _random(session: Session, params: dict[str, int], seed: int) -> str | None:
    start = _random_start(session, params, seed,
                          _labels_given(session, params["annotator_id"]))
    if start is None:
        return None
    return (session.scalar(_FROM, {**params, "start": start})
            or session.scalar(_BEFORE, {**params, "start": start}))


def _first_passing(session: Session, query: Any, params: dict[str, Any],
                   passes: Callable[[str], bool]) -> str | None:
    """The first id `query` yields that `passes`, read BATCH at a time."""
    offset = 0
    while True:
        ids = session.scalars(query.limit(BATCH).offset(offset), params).all()
        found = next((i for i in ids if passes(i)), None)
        if found is not None or len(ids) < BATCH:
            return found
        offset += BATCH


def _value(session: Session, params: dict[str, Any], seed: int, run_id: int | None,
           mix: ValueMix) -> str | None:
    """The source the mix draws for this label first, then the others in the order band,
    disagreement, random slice (a teaching source with nothing left passes its turn to the
    other one before the slice gets more than its share)."""
    def kept_apart(sample_id: str) -> bool:
        return in_holdout(sample_id, mix.holdout)

    def teaching(sample_id: str) -> bool:
        return not kept_apart(sample_id)

    def band() -> str | None:
        if run_id is None or mix.judge is None or mix.band == 0:
            return None
        return _first_passing(session, _IN_BAND, {**params, "run_id": run_id, "judge": mix.judge,
                                                  "low": mix.low, "high": mix.high}, teaching)

    def disagreement() -> str | None:
        if run_id is None or mix.disagreement == 0:
            return None
        return _first_passing(session, _DISAGREED, {**params, "run_id": run_id}, teaching)

    def random_slice() -> str | None:
        start = None if mix.random == 0 else _random_start(session, params, seed, done)
        if start is None:
            return None
        at = {**params, "start": start}
        return (_first_passing(session, _FROM_ALL, at, kept_apart)
                or _first_passing(session, _BEFORE_ALL, at, kept_apart))

    sources = [(mix.band, band), (mix.disagreement, disagreement), (mix.random, random_slice)]
    done = _labels_given(session, params["annotator_id"])
    draw = zlib.crc32(f"value:{seed}:{params['annotator_id']}:{done}".encode()) / 2**32
    total, cumulative, first = sum(share for share, _ in sources), 0.0, 0
    for index, (share, _) in enumerate(sources):
        cumulative += share / total
        if draw < cumulative:
            first = index
            break
    for _, source in [sources[first], *sources[:first], *sources[first + 1:]]:
        found = source()
        if found is not None:
            return found
    return _first_passing(session, _FROM_ALL, {**params, "start": 0}, teaching)


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


def next_sample(store: Store, dataset: str, annotator: str, *, strategy: str = "unlabelled",
                overlap: int = 1, seed: int = 0, run_id: int | None = None,
                mix: ValueMix | None = None) -> str | None:
    """The id of the sample to label next, or None when the annotator is done.
    `disagreement` and `uncertain_sentence` use `run_id` (default: the dataset's newest run)
    and fall back to `unlabelled` once no judged sample is left; `value` draws from `mix`
    (default: no band) on that run."""
    if strategy not in STRATEGIES:
        raise OptionError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if overlap < 1:
        raise OptionError(f"overlap must be at least 1, got {overlap}")
    with store.session() as session:
        dataset_id = dataset_id_of(session, dataset)
        person = annotator_id_of(session, annotator)
        if strategy not in ("disagreement", "value", "uncertain_sentence"):
            run_for_dataset(session, dataset_id, run_id)  # a wrong --run is an error anyway
        params = {"dataset_id": dataset_id, "annotator_id": person, "overlap": overlap}
        if strategy == "random":
            return _random(session, params, seed)
        if strategy == "value":
            return _value(session, params, seed, run_for_dataset(session, dataset_id, run_id),
                          mix or ValueMix())
        if strategy in ("disagreement", "uncertain_sentence"):
            run = run_for_dataset(session, dataset_id, run_id)
            query = _MOST_DISAGREED if strategy == "disagreement" else _UNCERTAIN
            found = session.scalar(query, {**params, "run_id": run}) if run is not None else None
            if found is not None:
                return found
        return _unlabelled(session, params)


