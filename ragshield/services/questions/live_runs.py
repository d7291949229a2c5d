"""Every asked question is kept: the Demo's and `ragshield ask`'s questions, answers and
verdicts go into a "live" run, one per day, dataset and setting, so that they can be
browsed, labelled and counted like any run's.

A typed question becomes a sample of the dataset `live` (its id a digest of the question, and
of the passages and answer when they came with it: the guard API judges other systems'
answers); a stored sample stays in its own dataset. The answer row keeps the passages the answerer
was shown (retrieved, or the sample's own plus noise), and a fallback answer is kept under
the role a run gives it (No-RAG: `norag`, the larger model: `larger`). Asking the same
question again with the same settings on the same day keeps the first record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from ragshield.config import Settings
from ragshield.pipeline import code_version
from ragshield.policies.policy import rule_fields
from ragshield.run_config import RunConfig
from ragshield.services.questions.ask_types import LARGER_FALLBACK, NORAG_FALLBACK, AskResult
from ragshield.store import runs as run_store
from ragshield.store.database import Store
from ragshield.store.labels import sample_row_id
from ragshield.store.models import Run
from ragshield.store.runs import MAIN, RoleAnswer
from ragshield.store.sample_import import ensure_sample
from ragshield.types import Sample

LIVE_DATASET = "live"
LIVE_STATUS = "live"
FALLBACK_ROLES = {NORAG_FALLBACK: "norag", LARGER_FALLBACK: "larger"}
# Asks kept at the same moment (the guard API serves several, its replicas share a database,
# and the app may run beside them) must not both create today's live run: the run's name is
# not unique, so its creation is one process at a time (`Store.lock`). Everything else
# an ask writes has a unique key (a dataset's sample, a run's answer to it), so asks on a
# database server keep in parallel, and one that loses a race to insert the same row starts
# again and finds it. On SQLite only one writer writes at a time anyway: the threads of one
# process queue on this lock rather than poll the database's.
_KEEPING = threading.Lock()
_ATTEMPTS = 3
LOCK_NAME = "live runs"


@dataclass(frozen=True)
class LiveRecord:
    run_id: int
    dataset: str
    sample_id: str
    stored: bool  # False: today's live run already held this question with these settings


def live_config(result: AskResult, settings: Settings) -> RunConfig:
    """The settings that make a live run: the same settings go into the same run."""
    request = result.prepared.request
    retrieved = request.sample_id is None and request.passages is None
    return RunConfig(
        dataset=LIVE_DATASET if request.sample_id is None else request.dataset,
        answerer=result.prepared.answerer.name,
        judges=[judge.name for judge in result.prepared.judges],
        **rule_fields(result.prepared.rule),
        retrieval=request.mode if retrieved else "given", corpus=request.corpus,
        k=request.k if retrieved else 0, noise=request.noise, backend=settings.backend,
        model=result.model, judge_model=result.prepared.readers.every,
        judge_readers=result.prepared.readers.recorded(j.name for j in result.prepared.judges),
        fallback=request.fallback == NORAG_FALLBACK,
        switch=request.fallback == LARGER_FALLBACK, live=True)


def _run_name(config: RunConfig) -> str:
    digest = hashlib.sha256(json.dumps(config.to_dict(), sort_keys=True).encode()).hexdigest()
    # The UTC day, as the store's times: replicas in other time zones share one run a day.
    return f"live {datetime.now(timezone.utc).date().isoformat()} {digest[:8]}"


def _found_live_run(store: Store, config: RunConfig) -> int | None:
    with store.session() as session:
        return session.scalar(select(Run.id).where(Run.name == _run_name(config))
                              .order_by(Run.id).limit(1))


def _new_live_run(store: Store, config: RunConfig) -> int:
    run_id = run_store.create_run(store, dataset=config.dataset, config=config.to_dict(),
                                  seed=0, code_version=code_version(), samples_total=0,
                                  name=_run_name(config))
    run_store.set_run_status(store, run_id, LIVE_STATUS)
    return run_id


def _sample_row(store: Store, result: AskResult) -> tuple[str, str, int]:
    """(dataset, sample id, row id) of the asked question; a typed one is added to the live
    dataset the first time it is asked."""
    request, sample = result.prepared.request, result.prepared.sample
    if request.sample_id is not None:
        with store.session() as session:
            return (request.dataset, request.sample_id,
                    sample_row_id(session, request.dataset, request.sample_id))
    sample_id = _typed_sample_id(result)
    row_id = ensure_sample(
        store, LIVE_DATASET, Sample(id=sample_id, question=sample.question,
                                    passages=sample.passages, given_answer=request.given_answer),
        description="Questions asked in the Demo, with `ragshield ask` or through the guard API")
    return LIVE_DATASET, sample_id, row_id


def _typed_sample_id(result: AskResult) -> str:
    """The live sample of a typed question: the question alone when we retrieved and
    answered, else the question with everything of the passages and the answer it came with
    (titles, scores, the answer's model, log-probs and cited passages all reach the judges):
    a call that differs in any of them is another sample. Judges and rule are the run's."""
    request, sample = result.prepared.request, result.prepared.sample
    parts: list[object] = [sample.question]
    if request.passages is not None or request.given_answer is not None:
        given = request.given_answer
        parts += [[run_store.passage_dict(passage) for passage in request.passages or ()],
                  given.to_dict() if given else None]
    text = sample.question if len(parts) == 1 else json.dumps(parts, sort_keys=True)
    return "q-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def keep_asked(store: Store, settings: Settings, result: AskResult) -> LiveRecord:
    """Keep one ask in today's live run for its dataset and settings: the run and a typed
    question's sample when they are new, and the answers and verdicts, in one transaction,
    so that a crash (kill -9 in a burst of calls) leaves all of it or none: never a live
    sample without its answer."""
    judged, passages = result.judged, result.prepared.sample.passages
    answers = {MAIN: RoleAnswer(judged.answer, result.answer_model, passages)}
    fallback = result.fallback
    if fallback is not None and fallback.answer is not None:
        answers[FALLBACK_ROLES[fallback.strategy]] = RoleAnswer(
            fallback.answer, fallback.model,
            [] if fallback.strategy == NORAG_FALLBACK else passages)
    config = live_config(result, settings)
    attempt = 1
    while True:
        try:
            with _KEEPING if store.is_sqlite else contextlib.nullcontext():
                return _keep(store, result, config, answers)
        except IntegrityError:  # another ask inserted the same sample or answer first
            if attempt == _ATTEMPTS:
                raise
            attempt += 1


def _keep(store: Store, result: AskResult, config: RunConfig,
          answers: dict[str, RoleAnswer]) -> LiveRecord:
    with store.writing():
        run_id = _found_live_run(store, config)
        if run_id is None:  # today's first ask with these settings: created one at a time,
            store.lock(LOCK_NAME)  # locked before the sample's insert (two locks, one order)
        dataset, sample_id, row_id = _sample_row(store, result)
        if run_id is None:
            run_id = _found_live_run(store, config) or _new_live_run(store, config)
        stored = run_store.add_live_sample(store, run_id, row_id, answers,
                                           result.judged.verdicts)
    return LiveRecord(run_id, dataset, sample_id, stored)
