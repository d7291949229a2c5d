"""A new Demo question ends what is left of the one before (issue 55: a second Ask while the
first question's judges ran was dropped): a page's new question stops its earlier one, a
stopped question ends at its next step and lets go of the model, or leaves at once while it
waits for it, a cancelled event stops its question at once, and the Ask event starts a new
question while one runs. The launched app, in
chromium and through gradio_client: tests/reliability/test_probe_round4_files.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from ragshield.judges.calibration import QUESTION as CALIBRATION_QUESTION
from ragshield.services.questions.ask_events import Partial, Status
from ragshield.store.database import open_store
from ragshield.store.sample_import import import_samples
from ragshield.types import Passage, Sample
from ragshield.ui.app import build_app
from ragshield.ui.context import UiContext
from ragshield.ui.demo_tab import STORED, DemoForm, ask
from ragshield.ui.page_questions import (END, WAITING, Asking, PageQuestions, QuestionStopped,
                                         holding, read_in_threads)
from tests.fakes import ScriptedLLM, ScriptedReply

JUDGES = ("p_true", "calibration", "trivial")  # run cheapest first: trivial, calibration, p_true


def test_a_new_question_of_a_page_stops_its_earlier_one_only() -> None:
    questions = PageQuestions()
    first = questions.begin("page-1")
    other = questions.begin("page-2")
    second = questions.begin("page-1")
    assert first.stopped and not second.stopped and not other.stopped
    questions.end("page-1", first)  # the earlier one ending forgets nothing of the newer
    assert questions.begin("page-1") is not second and second.stopped
    assert not questions.begin(None).stopped and not other.stopped  # no page: on its own


def test_a_stopped_question_posts_nothing_more() -> None:
    asking = Asking()
    asking.post(Status("Answering…"))
    asking.stop()
    with pytest.raises(QuestionStopped):
        asking.post(Partial("Paris"))
    assert [asking.events.get_nowait() for _ in range(2)] == [Status("Answering…"), END]


def test_a_question_waiting_for_the_model_says_so_and_leaves_once_stopped() -> None:
    lock, asking, left = threading.Lock(), Asking(), threading.Event()
    lock.acquire()  # another question holds the model

    def wait() -> None:
        try:
            with holding(lock, asking):
                pass
        except QuestionStopped:
            left.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert asking.events.get(timeout=5) == Status(WAITING)
    asking.stop()
    assert left.wait(timeout=2)  # while the model is still held
    waiter.join()
    lock.release()


@pytest.fixture
def context(settings) -> Iterator[UiContext]:
    settings = settings.model_copy(update={"judge_model": "self"})
    store = open_store(settings.database_url)
    import_samples(store, "toy", [Sample(id="q1", question="What is the capital of France?",
                                         passages=[Passage(text="Paris is the capital.")])])
    yield UiContext(settings=settings, store=store)
    store.close()


def test_a_stopped_question_ends_at_its_next_step_and_lets_go_of_the_model(context) -> None:
    """Stopped while calibration's call runs, the question asks p_true nothing and shows no
    frame after; the model is free again."""
    calibrating, release = threading.Event(), threading.Event()

    def respond(messages) -> ScriptedReply:
        last = messages[-1]["content"]
        if last == CALIBRATION_QUESTION:
            calibrating.set()
            release.wait(timeout=10)
            return ScriptedReply("0.9")
        if "Is the proposed answer" in last:
            return ScriptedReply("yes", top={"yes": -0.1, "no": -2.5})
        return ScriptedReply("Answer: Paris\nEvidence: ## Passage-1 ##")

    llm = ScriptedLLM(respond=respond)
    context.models._opened[None] = llm
    asking = Asking()
    steps = ask(context, DemoForm(source=STORED, dataset="toy", sample_id="q1", judges=JUDGES,
                                  rule="majority"), asking=asking)
    frames = [next(steps), next(steps)]  # finding the passages, then the passages
    reader = threading.Thread(target=lambda: frames.extend(steps))
    reader.start()
    assert calibrating.wait(timeout=10)
    shown = len(frames)
    asking.stop()
    release.set()
    reader.join(timeout=10)
    assert not reader.is_alive() and len(frames) == shown  # nothing shown after the stop
    assert not any("Done in" in frame for frame in frames)
    assert context.model_lock.acquire(timeout=5)  # the question let go of the model
    context.model_lock.release()
    assert not any("Is the proposed answer" in call[-1]["content"] for call in llm.seen)


def test_a_cancelled_event_stops_its_question_at_once() -> None:
    """Gradio cancels the task of a cancelled event: the wait for the next step is dropped
    at once, though the generator's thread is blocked, and the question stops."""
    asking = Asking()

    def steps() -> Iterator[str]:
        yield "first"
        asking.events.get()  # a step that would take long: woken only by the stop
        yield "never shown"

    async def consume(seen: list[str]) -> None:
        async for step in read_in_threads(steps(), asking):
            seen.append(step)

    async def cancel_after_first() -> tuple[list[str], float]:
        seen: list[str] = []
        task = asyncio.ensure_future(consume(seen))
        while not seen:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen, time.monotonic() - started

    seen, seconds = asyncio.run(cancel_after_first())
    assert seen == ["first"] and asking.stopped and seconds < 1


def test_a_click_on_ask_while_a_question_runs_starts_the_new_one(settings) -> None:
    """The page's side (Gradio's frontend): an event of trigger_mode "once" (a click's
    default) drops a click while it runs; "multiple" starts it."""
    dependencies = build_app(settings).get_config_file()["dependencies"]
    asking = next(dep for dep in dependencies if dep.get("api_name") == "demo_ask")
    assert asking["trigger_mode"] == "multiple"
    assert {event for _, event in asking["targets"]} == {"click", "submit"}


def test_a_question_to_a_model_server_takes_the_servers_turn_not_the_in_process_lock(
        settings) -> None:
    """The Demo takes its turn as the guard does (ModelGate): a served model admits its own
    share of calls, so a question does not wait on the in-process model's lock."""
    served = settings.model_copy(update={"judge_model": "self", "backend": "openai",
                                         "concurrency": 2})
    store = open_store(served.database_url)
    import_samples(store, "toy", [Sample(id="q1", question="What is the capital of France?",
                                         passages=[Passage(text="Paris is the capital.")])])
    context = UiContext(settings=served, store=store)
    context.models._opened[None] = ScriptedLLM(
        respond=lambda messages: ScriptedReply("Answer: Paris\nEvidence: ## Passage-1 ##"))
    asking = Asking()
    frames: list[str] = []
    question = threading.Thread(target=lambda: frames.extend(ask(
        context, DemoForm(source=STORED, dataset="toy", sample_id="q1", judges=("trivial",),
                          rule="trivial"), asking=asking)))
    assert context.model_lock.acquire()  # the in-process model is busy elsewhere
    try:
        question.start()
        question.join(timeout=30)
        done = not question.is_alive()
    finally:
        asking.stop()  # a question left waiting on the lock leaves at its next look
        context.model_lock.release()
        question.join(timeout=10)
        store.close()
    assert done and not any(WAITING in frame for frame in frames)
    assert "Done in" in frames[-1]
