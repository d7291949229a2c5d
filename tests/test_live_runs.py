"""Keeping asked questions in live runs when two processes keep at the same moment."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select

from ragshield.services import live_runs
from ragshield.services.asking import AskRequest, ask
from ragshield.store import runs as run_store
from ragshield.store.database import open_store
from ragshield.store.models import AnswerRow, Run
from ragshield.store.samples import import_samples
from ragshield.types import Passage, Sample
from tests.fakes import FakeModels, ScriptedLLM, ScriptedReply


def test_two_processes_keeping_one_question_at_once_share_one_live_run(store_url, settings,
                                                                       monkeypatch):
    """The app and the guard API (a store each, so a connection each, and no thread lock in
    common) keep the same question at the same moment on a day with no live run yet: both
    look for today's run before either creates it (they meet before creating). One run is
    made, the question is stored once, and the other ask finds it there."""
    stores = [open_store(store_url) for _ in range(2)]
    try:
        import_samples(stores[0], "toy", [Sample(
            id="q1", question="What is the capital of France?",
            passages=[Passage(text="Paris is the capital of France.", doc_id="fr")],
            reference_answers=["Paris"])])
        model = FakeModels(ScriptedLLM(respond=lambda _: ScriptedReply("Answer: Paris")))
        result = ask(stores[0], settings, model, AskRequest(
            sample_id="q1", dataset="toy", judges=("trivial",), keep_record=False))

        monkeypatch.setattr(live_runs, "_KEEPING", contextlib.nullcontext())
        both_looked = threading.Barrier(len(stores))
        create_run = run_store.create_run

        def meet_then_create(*args, **kwargs):
            with contextlib.suppress(threading.BrokenBarrierError):
                both_looked.wait(timeout=3)  # broken: the other process waits for our lock
            return create_run(*args, **kwargs)

        monkeypatch.setattr(run_store, "create_run", meet_then_create)
        with ThreadPoolExecutor(len(stores)) as processes:
            records = list(processes.map(
                lambda store: live_runs.keep_asked(store, settings, result), stores))

        assert records[0].run_id == records[1].run_id, records
        assert sorted(record.stored for record in records) == [False, True]
        with stores[0].session() as session:
            assert session.scalar(select(func.count(Run.id))) == 1
            assert session.scalar(select(Run.samples_total)) == 1
    finally:
        for store in stores:
            store.close()


def _typed(store, settings, question: str):
    """An ask of a typed question with its own passage, judged by `trivial`, not yet kept."""
    model = FakeModels(ScriptedLLM(respond=lambda _: ScriptedReply("Answer: Paris")))
    return ask(store, settings, model, AskRequest(
        question=question, passages=(Passage(text="Paris is the capital of France."),),
        judges=("trivial",), keep_record=False))


def test_asks_into_one_live_run_on_a_database_server_keep_in_parallel(postgres_url, settings,
                                                                      monkeypatch):
    """Today's live run exists: two replicas keep two new questions at the same moment. The
    first stops inside its transaction (its sample written) until the second has kept its
    own: they do not take turns on one lock (the whole cluster would then keep one ask at a
    time, a few milliseconds each), and both are stored."""
    stores = [open_store(postgres_url) for _ in range(2)]
    try:
        live_runs.keep_asked(stores[0], settings, _typed(stores[0], settings, "Warm-up?"))
        first, second = (_typed(stores[0], settings, q) for q in ("Capital?", "City?"))
        second_kept = threading.Event()
        sample_row = live_runs._sample_row

        def wait_for_the_second(store, result):
            row = sample_row(store, result)
            if result is first:
                assert second_kept.wait(timeout=10), "the second ask waited for the first"
            return row

        monkeypatch.setattr(live_runs, "_sample_row", wait_for_the_second)

        def keep_second():
            record = live_runs.keep_asked(stores[1], settings, second)
            second_kept.set()
            return record

        with ThreadPoolExecutor(2) as replicas:
            kept = replicas.submit(live_runs.keep_asked, stores[0], settings, first)
            records = [replicas.submit(keep_second).result(timeout=20), kept.result(timeout=20)]

        assert [record.stored for record in records] == [True, True]
        assert records[0].run_id == records[1].run_id
        with stores[0].session() as session:
            assert session.scalar(select(Run.samples_total)) == 3
    finally:
        for store in stores:
            store.close()


def test_two_replicas_keeping_the_same_new_question_store_it_once(store_url, settings,
                                                                  monkeypatch):
    """Two replicas keep the same typed question at the same moment into an existing live
    run. The first writes the question's sample and waits; the second, not seeing that
    uncommitted row, inserts it too and waits on the unique key until the first commits,
    then fails there and starts again: it finds the question kept and answers `stored:
    false`. Nothing is stored twice and the run counts the question once. (SQLite lets one
    writer in at a time: the second waits for the first's commit instead.)"""
    stores = [open_store(store_url) for _ in range(2)]
    try:
        live_runs.keep_asked(stores[0], settings, _typed(stores[0], settings, "Warm-up?"))
        result = _typed(stores[0], settings, "Capital?")
        monkeypatch.setattr(live_runs, "_KEEPING", contextlib.nullcontext())
        both_inserted = threading.Barrier(len(stores))
        sample_row, keep, attempts = live_runs._sample_row, live_runs._keep, []
        first_attempt = threading.local()

        def insert_then_meet(store, asked):
            row = sample_row(store, asked)
            if not getattr(first_attempt, "over", False):
                first_attempt.over = True
                with contextlib.suppress(threading.BrokenBarrierError):
                    both_inserted.wait(timeout=2)  # broken: the other waits on our insert
            return row

        def counted(*args):
            attempts.append(1)
            return keep(*args)

        monkeypatch.setattr(live_runs, "_sample_row", insert_then_meet)
        monkeypatch.setattr(live_runs, "_keep", counted)
        with ThreadPoolExecutor(len(stores)) as replicas:
            records = list(replicas.map(
                lambda store: live_runs.keep_asked(store, settings, result), stores))

        assert sorted(record.stored for record in records) == [False, True]
        assert records[0].sample_id == records[1].sample_id
        assert len(attempts) == (2 if stores[0].is_sqlite else 3)
        with stores[0].session() as session:
            assert session.scalar(select(Run.samples_total)) == 2
            assert session.scalar(select(func.count(AnswerRow.id))) == 2
    finally:
        for store in stores:
            store.close()
