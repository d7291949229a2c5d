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
from ragshield.store.models import Run
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
