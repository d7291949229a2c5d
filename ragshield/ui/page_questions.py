"""One Demo question at a time per page: a new question ends what is left of the one before.

A question is answered in a background thread (the model work: answer, then each judge),
which posts its steps to the page's generator. Before issue 55 a second click on Ask while
the first question's slower judges ran was dropped by Gradio (a click's default
trigger_mode, "once"), and the first question held the model for minutes more. Now:

- every Ask starts its question at once (demo_tab: trigger_mode "multiple"), and a new
  question of a page (a Gradio session), whatever asked it (Ask, Enter, an example button,
  an API client), stops the page's earlier one (`PageQuestions`), whose event then ends
  without showing anything more: only the newest question of a page is shown;
- a question stopped posts nothing more: at its next step (a streamed token, a verdict)
  its thread ends and lets go of the model (the new question says, meanwhile, that it
  waits for the model), or it leaves at once while it waits for the model itself;
- an event Gradio cancels (the page closed) stops its question too, at once: the wait for
  its next step is abandoned (`read_in_threads`).

Gradio's own `cancels` cannot serve here: a cancelled generator's event is never reported
complete to the page (Gradio 6.31), so a click held back behind it ("always_last") would
never start.

A stopped question is not kept in the live dataset: its judging was not finished.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from queue import Queue
from typing import Union

import anyio.to_thread

from ragshield.services.guarding.guard import Turn
from ragshield.services.questions.ask_events import AskEvent, Status


@dataclass(frozen=True)
class Failed:
    """The question's thread raised: the page shows a user's error, re-raises any other."""

    error: Exception


@dataclass(frozen=True)
class Ended:
    """The question's thread is done (or the question was stopped)."""


END = Ended()
Event = Union[AskEvent, Failed, Ended]  # from the model thread to the page
WAIT_SLICE_S = 0.2  # how often a question waiting for the model looks whether it was stopped
WAITING = "Waiting for the model: another question is being judged…"


class QuestionStopped(Exception):
    """Raised in a question's thread at its next step once the question was stopped."""


class Asking:
    """One question being answered: the events its thread posts, and whether it was stopped."""

    def __init__(self) -> None:
        self.events: Queue[Event] = Queue()
        self._stopped = threading.Event()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def post(self, event: AskEvent) -> None:
        """Hand the page one step; QuestionStopped once the question was stopped."""
        self.check()
        self.events.put(event)

    def check(self) -> None:
        if self.stopped:
            raise QuestionStopped

    def stop(self) -> None:
        """End what is left of the question; the page's generator wakes up and ends."""
        self._stopped.set()
        self.events.put(END)


@contextmanager
def holding(turn: Turn, asking: Asking) -> Iterator[None]:
    """The question's turn at the models (ModelGate.turn), for `asking`: waited for in slices
    (saying so on the page), so that a question stopped while it waits leaves at once."""
    if not turn.acquire(blocking=False):
        asking.post(Status(WAITING))
        while not turn.acquire(timeout=WAIT_SLICE_S):
            asking.check()
    try:
        yield
    finally:
        turn.release()


class PageQuestions:
    """The question each page (a Gradio session) is having answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asking: dict[str, Asking] = {}

    def begin(self, page: str | None) -> Asking:
        """A new question of `page`, the page's earlier one stopped (None: no page, as a
        test's direct call)."""
        asking = Asking()
        if page is None:
            return asking
        with self._lock:
            earlier, self._asking[page] = self._asking.get(page), asking
        if earlier is not None:
            earlier.stop()
        return asking

    def end(self, page: str | None, asking: Asking) -> None:
        """Forget `asking`, which ended, unless a newer question took its place."""
        with self._lock:
            if page is not None and self._asking.get(page) is asking:
                del self._asking[page]


async def read_in_threads(steps: Iterator[str], asking: Asking) -> AsyncIterator[str]:
    """The steps of a question's generator (which blocks between steps), each read in a
    worker thread. When Gradio cancels the event, the wait is abandoned at once (the thread
    wakes and ends as the question stops); however the event ends, so does the question."""
    try:
        while (step := await anyio.to_thread.run_sync(next, steps, None,
                                                       abandon_on_cancel=True)) is not None:
            yield step
    finally:
        asking.stop()
